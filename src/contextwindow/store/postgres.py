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
- Nothing waits without end: connecting, waiting for a pooled connection
  and the server's reply to each call (a transaction, a statement, the
  check of a connection taken out) are each bounded by ``timeout``. The
  server cancels a statement running past it (``statement_timeout``,
  unless the URL sets one): nothing of it is kept. A server that stops
  answering (stopped, frozen, a host gone behind a peer that still
  acknowledges) fails the call with ``StoreError`` a second later; its
  connection is dropped, never reused. TCP
  keepalives and ``tcp_user_timeout`` (unless the URL sets its own) find
  dead idle connections. After an outage the pool tries to reconnect for
  ``timeout`` seconds at a time, so the store works again within about
  ``timeout`` of the server's return.
- A constructor that fails (no server, a newer schema) closes what it
  opened: no pool, thread or connection is left behind.
- Tables are ``cw_conversations``, ``cw_messages``, ``cw_views``,
  ``cw_view_messages`` and ``cw_migrations``, in the connection's schema.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from contextwindow._args import check_int, check_number, check_str
from contextwindow._redact import display_url, scrub_url
from contextwindow.errors import ConflictError, StoreError
from contextwindow.store._codec import LogRow
from contextwindow.store._sql import Cursor, SQLStore

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool
    from typing_extensions import LiteralString

__all__ = ["PostgresStore", "redact"]

_SCHEMA_LOCK = 0x63770001
"""The advisory lock key migrations take (``cw`` and 1)."""
_READ: Final = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
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


_GRACE = 1.0
"""Seconds past ``timeout`` the watchdog gives a server to cancel a statement
itself."""


class _Watch:
    """One call on a connection, armed until it ends."""

    __slots__ = ("deadline", "fileno", "fired")

    def __init__(self, deadline: float, fileno: int) -> None:
        self.deadline = deadline
        self.fileno = fileno
        self.fired = False


class _Watchdog:
    """Ends calls a stalled server leaves waiting past their deadline.

    libpq waits for a reply without end: neither keepalives nor
    ``tcp_user_timeout`` fire while the peer's kernel still acknowledges
    (a stopped or frozen server), and ``statement_timeout`` is the stalled
    server's own to enforce. One thread per store shuts the socket of a call
    past its deadline down: libpq then fails the call at once, and the
    connection, broken, is dropped by the pool. The thread starts with the
    first call and ends once no call has been armed for a while.
    """

    _IDLE = 30.0
    """Seconds the thread outlives the last call."""

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._cond = threading.Condition()
        self._armed: set[_Watch] = set()
        self._thread: threading.Thread | None = None
        self._closed = False

    @contextmanager
    def watch(self, conn: Any) -> Generator[_Watch, None, None]:
        """Arm a deadline ``timeout`` from now for work on ``conn``."""
        w = _Watch(time.monotonic() + self._timeout, conn.fileno())
        with self._cond:
            wake = not self._armed
            self._armed.add(w)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="contextwindow-pg-watchdog", daemon=True
                )
                self._thread.start()
            elif wake:
                self._cond.notify()
        try:
            yield w
        finally:
            # Under the lock: the socket is never shut down once the call
            # has ended and its connection gone back to the pool.
            with self._cond:
                self._armed.discard(w)

    def close(self) -> None:
        """Stop the thread (armed calls are left to end on their own)."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def _run(self) -> None:
        idle_since = time.monotonic()
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for w in [w for w in self._armed if w.deadline <= now]:
                    self._armed.discard(w)
                    w.fired = True
                    _shut_down(w.fileno)
                if self._armed:
                    idle_since = now
                    wait = min(w.deadline for w in self._armed) - now
                elif now - idle_since >= self._IDLE:
                    break
                else:
                    wait = self._IDLE - (now - idle_since)
                self._cond.wait(wait)
            self._thread = None


def _shut_down(fileno: int) -> None:
    """Shut a socket down, both ways, through a duplicate of its descriptor.

    The connection keeps its descriptor (libpq closes it); the waiting read
    sees the end of the stream.
    """
    try:
        copy = os.dup(fileno)
    except OSError:  # already closed, or not a descriptor this platform dups
        return
    try:
        sock = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        return
    with sock, suppress(OSError):  # already shut down by the server
        sock.shutdown(socket.SHUT_RDWR)


def _keepalive_kwargs(psycopg: Any, conninfo: str, timeout: float) -> dict[str, Any]:
    """TCP keepalives and ``tcp_user_timeout``, where the URL sets none.

    A dead peer that never answers is found in about ``timeout`` seconds
    (unacknowledged data) or a few keepalive probes (an idle connection).
    """
    try:
        given = psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.Error:
        return {}  # the connection attempt reports it
    idle = max(1, round(timeout))
    out: dict[str, Any] = {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": max(1, round(timeout / 3)),
        "keepalives_count": 3,
    }
    if psycopg.pq.version() >= 120000:  # libpq 12 reads tcp_user_timeout
        out["tcp_user_timeout"] = max(1, round(timeout * 1000))
    return {k: v for k, v in out.items() if k not in given}


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
        timeout: Seconds to wait to connect, for a free connection, and for
            the server's reply to each call (a call that takes longer
            raises ``StoreError``: raise it for very large conversations).

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
        self._timeout = float(timeout)
        # The server cancels a statement past ``timeout`` itself (cleanly:
        # nothing of it is kept, the connection stays); the watchdog, a
        # second later, ends the wait on a server that cannot.
        self._watchdog = _Watchdog(self._timeout + _GRACE)
        self._set_timeout = (
            None
            if "statement_timeout" in url
            else f"SET statement_timeout = {max(1, round(timeout * 1000))}"
        )
        self._sql_cache: dict[str, str] = {}
        conninfo = _libpq(url)
        kwargs = {
            "autocommit": True,
            "connect_timeout": max(1, round(timeout)),
            **_keepalive_kwargs(psycopg, conninfo, timeout),
        }
        failure = None
        try:
            try:
                # A direct connection first: it fails with the server's own
                # reason, where a pool would only time out.
                psycopg.connect(conninfo, **kwargs).close()
                self._pool: ConnectionPool = pools.ConnectionPool(
                    conninfo,
                    min_size=1,
                    max_size=max(1, max_connections),
                    kwargs=kwargs,
                    timeout=timeout,
                    # Backing off for the default 5 minutes kept the store
                    # unusable about as long as an outage had lasted.
                    reconnect_timeout=max(1.0, self._timeout),
                    open=False,
                    configure=self._configure,
                    check=self._check,
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
            self._migrate()
        except BaseException:
            self.close()  # the pool's threads and connection, the watchdog
            raise

    def __repr__(self) -> str:
        return f"PostgresStore({redact(self._url)!r})"

    def close(self) -> None:
        """Close the pool's connections."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None:
            watchdog.close()

    def _configure(self, conn: Any) -> None:
        """Set up a new connection: the server's own statement timeout."""
        if self._set_timeout is not None:
            with self._watchdog.watch(conn):
                conn.execute(self._set_timeout)

    def _check(self, conn: Any) -> None:
        """The pool's check of a connection taken out, bounded like a call."""
        with self._watchdog.watch(conn):
            conn.execute("")

    @contextmanager
    def _watched(self, conn: Any) -> Generator[_Watch, None, None]:
        """Bound work on ``conn`` by ``timeout``; a stall is a ``StoreError``."""
        with self._watchdog.watch(conn) as w:
            try:
                yield w
            except self._errors as exc:
                if not w.fired:
                    raise
                raise StoreError(
                    f"{self!r}: no reply from the server within "
                    f"{self._timeout + _GRACE:g} s (the connection is dropped)"
                ) from exc

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
    def _checked_out(self, first: LiteralString) -> Generator[Cursor, None, None]:
        """A cursor on a pooled connection, ``first`` run on it.

        When ``first`` fails because the connection is broken, nothing of the
        work has reached the server: it is tried on another connection.
        """
        for attempt in range(self._retries):
            with (
                self._pool.connection() as conn,
                self._watched(conn) as w,
                conn.cursor() as cur,
            ):
                try:
                    cur.execute(first)
                except self._broken:
                    if w.fired or not conn.broken or attempt + 1 == self._retries:
                        raise
                    continue  # the pool drops the broken connection
                yield cur
                return

    @contextmanager
    def _statement(self) -> Generator[Cursor, None, None]:
        try:
            with (
                self._pool.connection() as conn,
                self._watched(conn),
                conn.cursor() as cur,
            ):
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
