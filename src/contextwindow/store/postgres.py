"""``PostgresStore``: conversations in PostgreSQL, for many workers (psycopg 3).

Contract:

- Needs ``pip install 'contextwindow[postgres]'`` (psycopg 3 and
  psycopg_pool), imported when a store is made; without them the constructor
  raises ``StoreError`` saying what to install.
- Connections come from a pool (thread-safe; one pool per process), each
  checked when taken out, so one a server restart broke is replaced, not
  used; a transaction whose first statement fails on a broken connection
  (nothing of it reached the server) is tried again on another. The
  schema's named migrations are applied when the store opens, under an
  advisory lock, so workers starting together do not race; a schema newer
  than this code raises ``StoreError``.
- An ``UPDATE`` moves the version only if it is the expected one, and the
  rows go in, in the same transaction, only if it did: a short batch in the
  same statement (one round trip), a long one by ``COPY``. Concurrent
  writers queue on the conversation's row; a stale one gets
  ``ConflictError``. A client killed mid-append leaves nothing of it (the
  server rolls the transaction back).
- Reads of several tables run in one ``REPEATABLE READ, READ ONLY``
  transaction: the log, the version and the view come from one snapshot.
- Tables are ``cw_conversations``, ``cw_messages``, ``cw_views``,
  ``cw_view_messages`` and ``cw_migrations``, in the connection's schema.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from contextwindow._args import check_int, check_number, check_str
from contextwindow._redact import display_url, scrub_url
from contextwindow.errors import ConflictError, StoreError
from contextwindow.store._codec import LogRow
from contextwindow.store._sql import Cursor, SQLStore

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresStore", "redact"]

_SCHEMA_LOCK = 0x63770001
"""The advisory lock key migrations take (``cw`` and 1)."""
_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_CREATE = (
    "INSERT INTO cw_conversations VALUES (%s, 0, %s, %s, '{}') "
    "ON CONFLICT (id) DO NOTHING"
)
_COPY_FROM = 16
"""Batches this long go in by ``COPY`` (3x faster for 100 rows than one
statement with arrays, which wins for a few rows: one round trip)."""
_BUMP = (
    "UPDATE cw_conversations SET version = version + %s, updated = %s "
    "WHERE id = %s AND version = %s RETURNING version"
)
_COPY = (
    "COPY cw_messages (conversation, position, id, agent, time, tokens, digest, "
    "body) FROM STDIN"
)
_APPEND = """
WITH bumped AS (
    UPDATE cw_conversations SET version = version + %(n)s, updated = %(now)s
    WHERE id = %(cid)s AND version = %(expected)s
    RETURNING version
), added AS (
    INSERT INTO cw_messages
    SELECT %(cid)s, %(expected)s + r.k - 1, r.id, r.agent, %(now)s, r.tokens,
           r.digest, r.body
    FROM unnest(%(ids)s::text[], %(agents)s::text[], %(tokens)s::text[],
                %(digests)s::text[], %(bodies)s::text[])
         WITH ORDINALITY AS r(id, agent, tokens, digest, body, k)
    WHERE EXISTS (SELECT 1 FROM bumped)
)
SELECT version FROM bumped
"""


def redact(url: str) -> str:
    """``url`` as errors and reprs show it: its secrets masked, never raising.

    ``contextwindow._redact.display_url``: a password in the userinfo, in
    the query (``?password=``, ``?sslpassword=``) or in a libpq
    keyword/value string.

    Example:
        >>> redact("postgresql://ada:secret@db:5432/chats")
        'postgresql://ada:***@db:5432/chats'
        >>> redact("host=db user=ada password=secret")
        'host=db user=ada password=***'
    """
    return display_url(url)


def _libpq(url: str) -> str:
    """``url`` as libpq reads it: the scheme in lower case (it refuses others)."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() in ("postgresql", "postgres"):
        return f"{scheme.lower()}://{rest}"
    return url


def _driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(
            "PostgresStore needs psycopg 3 and psycopg_pool: "
            "pip install 'contextwindow[postgres]'"
        ) from exc
    return psycopg, psycopg_pool


class PostgresStore(SQLStore):
    """Conversations in a PostgreSQL database.

    Args:
        url: A libpq connection string or URL, e.g.
            ``postgresql://user:pass@host:5432/db``.
        max_connections: Most pooled connections (one is opened at once).
        timeout: Seconds to wait to connect, and for a free connection.

    Raises:
        StoreError: The driver is not installed, the server cannot be
            reached, or its schema is newer than this code.

    Example:
        >>> PostgresStore("postgresql://127.0.0.1:9/none", timeout=2)
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: cannot connect to PostgresStore(...): ...
    """

    _dialect = "postgres"
    _for_update = " FOR UPDATE"

    def __init__(
        self, url: str, *, max_connections: int = 4, timeout: float = 10.0
    ) -> None:
        check_str(url, "url", empty=False, secret=True)
        check_int(max_connections, "max_connections", low=1)
        check_number(timeout, "timeout", low=0, high=1e6, open_low=True)
        self._url = url
        psycopg, pools = _driver()
        self._errors: type[Exception] = psycopg.Error
        self._broken: type[Exception] = psycopg.OperationalError
        conninfo = _libpq(url)
        failure = None
        try:
            # A direct connection first: it fails with the server's own reason,
            # where a pool would only time out.
            psycopg.connect(conninfo, connect_timeout=max(1, round(timeout))).close()
            self._pool: ConnectionPool = pools.ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max(1, max_connections),
                kwargs={"autocommit": True},
                timeout=timeout,
                open=False,
                check=pools.ConnectionPool.check_connection,
            )
            self._retries = max(1, max_connections) + 1
            self._pool.open(wait=True, timeout=timeout)
        except psycopg.Error as exc:
            # The driver's message may quote the connection string, or a
            # piece of its password (as a host name): scrubbed, and the
            # driver's exception neither chained nor kept as the context.
            failure = scrub_url(str(exc), conninfo)
        if failure is not None:
            raise StoreError(f"cannot connect to {self!r}: {failure}")
        self._sql_cache: dict[str, str] = {}
        self._migrate()

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self._url)!r})"

    def close(self) -> None:
        """Close the pool's connections."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()

    def _sql(self, statement: str) -> str:
        found = self._sql_cache.get(statement)
        if found is None:
            found = self._sql_cache[statement] = statement.replace("?", "%s")
        return found

    @contextmanager
    def _transaction(self, write: bool) -> Generator[Cursor, None, None]:
        try:
            with self._checked_out("BEGIN" if write else _READ) as cur:
                done = False
                try:
                    yield cur
                    done = True
                finally:
                    cur.execute("COMMIT" if done else "ROLLBACK")
        except self._errors as exc:
            raise StoreError(f"{self!r}: {scrub_url(str(exc), self._url)}") from exc

    @contextmanager
    def _checked_out(self, first: str) -> Generator[Cursor, None, None]:
        """A cursor on a pooled connection, ``first`` run on it.

        When ``first`` fails because the connection is broken, nothing of the
        work has reached the server: it is tried on another connection.
        """
        for attempt in range(self._retries):
            with self._pool.connection() as conn, conn.cursor() as cur:
                try:
                    cur.execute(first)
                except self._broken:
                    if not conn.broken or attempt + 1 == self._retries:
                        raise
                    continue  # the pool drops the broken connection
                yield cur
                return

    @contextmanager
    def _statement(self) -> Generator[Cursor, None, None]:
        try:
            with self._pool.connection() as conn, conn.cursor() as cur:
                yield cur
        except self._errors as exc:
            raise StoreError(f"{self!r}: {scrub_url(str(exc), self._url)}") from exc

    def _append(self, cid: str, expected: int, rows: list[LogRow], now: float) -> int:
        for _ in range(3):
            many = len(rows) >= _COPY_FROM
            done = (self._copy if many else self._one_statement)(
                cid, expected, rows, now
            )
            if done is not None:
                return done
            with self._statement() as cur:
                cur.execute(
                    "SELECT version FROM cw_conversations WHERE id = %s", (cid,)
                )
                found = cur.fetchone()
                if found is None and expected == 0:
                    cur.execute(_CREATE, (cid, now, now))
                elif found is None or found[0] != expected:
                    raise ConflictError(expected, 0 if found is None else int(found[0]))
        raise StoreError(f"{self!r}: conversation {cid!r} changed under three appends")

    def _one_statement(
        self, cid: str, expected: int, rows: list[LogRow], now: float
    ) -> int | None:
        """The new version, or ``None`` when the version was not ``expected``.

        One statement, so one round trip: the version moves only if it is the
        expected one, and the rows go in only if it moved.
        """
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        params = {
            "cid": cid,
            "expected": expected,
            "n": len(rows),
            "now": now,
            "ids": list(columns[1]),
            "agents": list(columns[2]),
            "tokens": list(columns[4]),
            "digests": list(columns[5]),
            "bodies": list(columns[6]),
        }
        with self._statement() as cur:
            cur.execute(_APPEND, params)
            row = cur.fetchone()
        return None if row is None else int(row[0])

    def _copy(
        self, cid: str, expected: int, rows: list[LogRow], now: float
    ) -> int | None:
        """Like ``_one_statement``, for many rows: the version moves, then ``COPY``."""
        with self._transaction(True) as cur:
            cur.execute(_BUMP, (len(rows), now, cid, expected))
            row = cur.fetchone()
            if row is None:
                return None
            copy_cursor: Any = cur
            with copy_cursor.copy(_COPY) as copy:
                for r in rows:
                    copy.write_row((cid, *r))
            return int(row[0])

    def _lock_schema(self, cur: Cursor) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
