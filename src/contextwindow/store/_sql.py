"""``SQLStore``: the row operations in SQL, shared by SQLite and PostgreSQL.

Contract: statements are written once, in the SQL both dialects accept, with
``?`` for parameters (PostgreSQL's driver wants ``%s``: ``_sql`` converts).
A subclass supplies ``_transaction`` (one transaction, mapping driver errors
to ``StoreError``), the row lock its dialect needs (``FOR UPDATE`` on
PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already holds the write lock) and
the migrations' dialect. The version check and the rows of an append happen
in one transaction, under that lock.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from contextwindow.errors import ConflictError, StoreError
from contextwindow.store._backend import RowStore, Snapshot, ViewHead
from contextwindow.store._codec import (
    InfoRow,
    LogRow,
    ViewRow,
    decode_info,
    encode_meta,
)
from contextwindow.store._migrations import (
    MIGRATIONS,
    TABLE,
    Dialect,
    check_applied,
    create_table,
)

__all__ = ["Cursor", "SQLStore"]

_INFO = (
    "SELECT c.id, c.version, c.created, c.updated, c.meta, v.version "
    "FROM cw_conversations c LEFT JOIN cw_views v ON v.conversation = c.id"
)
_LOG = "SELECT position, id, agent, time, tokens, digest, body FROM cw_messages"
_VIEW_ROWS = (
    "SELECT idx, ref, kind, origins, digest, body FROM cw_view_messages "
    "WHERE conversation = ? ORDER BY idx"
)
_CHUNK = 500
"""Positions per ``IN (...)`` query (SQLite's old limit is 999 parameters)."""


class Cursor(Protocol):
    """What both drivers' cursors offer and the statements here use."""

    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...

    def executemany(self, sql: Any, params: Any, /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...

    @property
    def rowcount(self) -> int: ...


class SQLStore(RowStore):
    """The row operations of ``RowStore`` in SQL (see the module's contract)."""

    _dialect: ClassVar[Dialect]
    _for_update: ClassVar[str] = ""

    @abstractmethod
    def _transaction(self, write: bool) -> AbstractContextManager[Cursor]:
        """One transaction; ``write`` takes the database's write lock."""

    def _statement(self) -> AbstractContextManager[Cursor]:
        """A cursor for statements that each stand alone (no snapshot needed)."""
        return self._transaction(False)

    def _sql(self, statement: str) -> str:
        return statement

    def _run(self, cur: Cursor, statement: str, params: Sequence[Any] = ()) -> Any:
        return cur.execute(self._sql(statement), tuple(params))

    def _lock_schema(self, cur: Cursor) -> None:
        """Serialise migrations between processes (SQLite: the write lock does)."""

    def _record_schema(self, cur: Cursor, version: int) -> None:
        """Record the schema version where the dialect has a place for it."""

    def _applied(self, cur: Cursor) -> list[str]:
        self._run(cur, f"SELECT name FROM {TABLE} ORDER BY name")
        return [str(r[0]) for r in cur.fetchall()]

    def _migrate(self, user_version: int | None = None) -> int:
        """Apply the missing migrations; return the schema version."""
        with self._transaction(True) as cur:
            self._lock_schema(cur)
            self._run(cur, create_table(self._dialect))
            done = check_applied(repr(self), self._applied(cur), user_version)
            for m in MIGRATIONS[done:]:
                for statement in m.statements(self._dialect):
                    self._run(cur, statement)
                self._run(
                    cur, f"INSERT INTO {TABLE} VALUES (?, ?)", (m.name, time.time())
                )
            self._record_schema(cur, len(MIGRATIONS))
            return len(MIGRATIONS)

    # -- writing -----------------------------------------------------------------

    def _locked_version(self, cur: Cursor, cid: str) -> int | None:
        self._run(
            cur,
            f"SELECT version FROM cw_conversations WHERE id = ?{self._for_update}",
            (cid,),
        )
        row = cur.fetchone()
        if row is None:
            return None
        value = row[0]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise StoreError(f"conversation {cid!r}: version: corrupt value {value!r}")
        return value

    def _ensure(self, cur: Cursor, cid: str, meta: str, now: float) -> int:
        """The locked version of ``cid``, created (version 0) when missing."""
        version = self._locked_version(cur, cid)
        if version is None:
            self._run(
                cur,
                "INSERT INTO cw_conversations VALUES (?, 0, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (cid, now, now, meta),
            )
            version = self._locked_version(cur, cid)
        return version or 0

    def _append(self, cid: str, expected: int, rows: list[LogRow], now: float) -> int:
        with self._transaction(True) as cur:
            actual = self._locked_version(cur, cid)
            if actual is None and expected == 0:
                actual = self._ensure(cur, cid, "{}", now)
            if actual != expected:
                raise ConflictError(expected, actual or 0)
            if rows:
                cur.executemany(
                    self._sql(
                        "INSERT INTO cw_messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    ),
                    [(cid, *r) for r in rows],
                )
            version = expected + len(rows)
            self._run(
                cur,
                "UPDATE cw_conversations SET version = ?, updated = ? WHERE id = ?",
                (version, now, cid),
            )
            return version

    def _write_view(
        self,
        cid: str,
        version: int,
        rows: list[ViewRow],
        report: str | None,
        now: float,
    ) -> None:
        with self._transaction(True) as cur:
            if self._locked_version(cur, cid) is None:
                raise StoreError(f"no conversation {cid!r} in {self!r}")
            self._run(
                cur, "SELECT version FROM cw_views WHERE conversation = ?", (cid,)
            )
            saved = cur.fetchone()
            if saved is not None and saved[0] > version:
                raise ConflictError(version, saved[0])
            self._run(
                cur, "DELETE FROM cw_view_messages WHERE conversation = ?", (cid,)
            )
            self._run(
                cur,
                "INSERT INTO cw_views VALUES (?, ?, ?, ?) ON CONFLICT (conversation) "
                "DO UPDATE SET version = excluded.version, time = excluded.time, "
                "report = excluded.report",
                (cid, version, now, report),
            )
            if rows:
                cur.executemany(
                    self._sql(
                        "INSERT INTO cw_view_messages VALUES (?, ?, ?, ?, ?, ?, ?)"
                    ),
                    [(cid, *r) for r in rows],
                )
            self._run(
                cur, "UPDATE cw_conversations SET updated = ? WHERE id = ?", (now, cid)
            )

    def _create(self, cid: str, meta: str, now: float) -> InfoRow:
        with self._transaction(True) as cur:
            if self._locked_version(cur, cid) is not None:
                raise StoreError(f"conversation {cid!r} already exists in {self!r}")
            self._ensure(cur, cid, meta, now)
            return self._info_in(cur, cid) or (cid, 0, now, now, meta, None)

    def _update_meta(
        self, cid: str, meta: Mapping[str, Any], replace: bool, now: float
    ) -> InfoRow:
        with self._transaction(True) as cur:
            self._ensure(cur, cid, "{}", now)
            row = self._info_in(cur, cid)
            old: Mapping[str, Any] = {}
            if not replace and row is not None:
                old = decode_info(cid, row).meta
            self._run(
                cur,
                "UPDATE cw_conversations SET meta = ?, updated = ? WHERE id = ?",
                (encode_meta(cid, {**old, **meta}), now, cid),
            )
            found = self._info_in(cur, cid)
            assert found is not None  # created above, in this transaction
            return found

    def _delete(self, cid: str) -> bool:
        with self._transaction(True) as cur:
            for table in ("cw_messages", "cw_views", "cw_view_messages"):
                self._run(cur, f"DELETE FROM {table} WHERE conversation = ?", (cid,))
            self._run(cur, "DELETE FROM cw_conversations WHERE id = ?", (cid,))
            return bool(cur.rowcount)

    # -- reading -----------------------------------------------------------------

    def _info_in(self, cur: Cursor, cid: str) -> InfoRow | None:
        self._run(cur, f"{_INFO} WHERE c.id = ?", (cid,))
        row = cur.fetchone()
        return None if row is None else tuple(row)

    def _info(self, cid: str) -> InfoRow | None:
        with self._statement() as cur:
            return self._info_in(cur, cid)

    def _version(self, cid: str) -> object:
        with self._statement() as cur:
            self._run(cur, "SELECT version FROM cw_conversations WHERE id = ?", (cid,))
            row = cur.fetchone()
            return 0 if row is None else row[0]

    def _list(self) -> list[InfoRow]:
        with self._statement() as cur:
            self._run(cur, _INFO)
            return [tuple(r) for r in cur.fetchall()]

    def _snapshot(self, cid: str, since: int, view: bool) -> Snapshot | None:
        with self._transaction(False) as cur:
            info = self._info_in(cur, cid)
            if info is None:
                return None
            self._run(
                cur,
                f"{_LOG} WHERE conversation = ? AND position >= ? ORDER BY position",
                (cid, since),
            )
            log = cur.fetchall()
            head: ViewHead | None = None
            rows: Sequence[Sequence[Any]] = ()
            if view:
                head, rows = self._view_in(cur, cid)
            return Snapshot(info, log, head, rows)

    def _view_in(
        self, cur: Cursor, cid: str
    ) -> tuple[ViewHead | None, Sequence[Sequence[Any]]]:
        self._run(
            cur,
            "SELECT version, time, report FROM cw_views WHERE conversation = ?",
            (cid,),
        )
        head = cur.fetchone()
        if head is None:
            return None, []
        self._run(cur, _VIEW_ROWS, (cid,))
        return tuple(head), cur.fetchall()

    def _read_view(self, cid: str) -> tuple[ViewHead, Sequence[Sequence[Any]]] | None:
        with self._transaction(False) as cur:
            head, rows = self._view_in(cur, cid)
            return None if head is None else (head, rows)

    def _rows_at(self, cid: str, positions: Sequence[int]) -> list[Sequence[Any]]:
        out: list[Sequence[Any]] = []
        with self._transaction(False) as cur:
            for k in range(0, len(positions), _CHUNK):
                chunk = positions[k : k + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                self._run(
                    cur,
                    f"{_LOG} WHERE conversation = ? AND position IN ({marks})",
                    (cid, *chunk),
                )
                out += cur.fetchall()
        return out

    def _index(self, cid: str, upto: int) -> tuple[int, list[tuple[int, str, str]]]:
        with self._transaction(False) as cur:
            self._run(cur, "SELECT version FROM cw_conversations WHERE id = ?", (cid,))
            row = cur.fetchone()
            if row is None:
                raise StoreError(f"no conversation {cid!r} in {self!r}")
            self._run(
                cur,
                "SELECT position, id, digest FROM cw_messages "
                "WHERE conversation = ? AND position < ? ORDER BY position",
                (cid, upto),
            )
            return int(row[0]), [(int(p), str(i), str(d)) for p, i, d in cur.fetchall()]
