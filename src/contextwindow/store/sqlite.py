"""``SQLiteStore``: the default store, one file (or memory) through ``sqlite3``.

Contract:

- Standard library only. The database runs in WAL mode (readers never wait
  for a writer), applies the schema's named migrations when it opens, and
  refuses a file whose schema is newer than this code (``StoreError``).
- Every write is one ``BEGIN IMMEDIATE`` transaction: the version check and
  the rows happen under SQLite's write lock, so processes sharing the file
  never lose or duplicate a message; a writer waits up to ``timeout`` seconds
  for the lock. A process killed in the middle of an append leaves the file
  as it was before that append (SQLite rolls the transaction back); a call
  that fails or is interrupted rolls its transaction back before it returns
  (and one an interrupt left open is rolled back by the next call), so the
  lock is never kept.
- ``synchronous="FULL"`` (the default) makes each acknowledged append
  survive a power cut; ``"NORMAL"`` is about a hundred times faster for
  single appends and still survives the writer's process being killed, but
  a power cut may undo the last appends (never corrupt the file).
- One connection per store, shared by threads under a lock; each process
  opens its own store.
- ``readonly=True`` opens an existing file read-only (a ``mode=ro`` URI),
  so reading never creates or changes anything and a read-only mount can
  be read; ``immutable=True`` also tells SQLite the file cannot change
  (no locks, no ``-wal``/``-shm`` files: for media nothing writes to). Such
  a store refuses writes, and reads a schema older than this code without
  upgrading it. A missing file is an error then, not a new database.
- A file of zero bytes is damage (a truncated database), never read as an
  empty store; one that another process is creating at that moment (SQLite
  makes the file, then writes its header) gets up to two seconds to grow.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

from contextwindow._args import check_bool, check_number, check_path, shown
from contextwindow.errors import ArgumentValueError, StoreError
from contextwindow.store._migrations import TABLE, check_applied
from contextwindow.store._sql import Cursor, SQLStore

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLStore):
    """Conversations in a SQLite file, or in memory with ``":memory:"``.

    Args:
        path: The database file (created when missing), or ``":memory:"``.
        timeout: Seconds a writer waits for another process's write lock.
        synchronous: ``"FULL"`` or ``"NORMAL"`` (see the module's contract).
        readonly: Open an existing file for reading only.
        immutable: Read-only, and the file never changes (see the contract).

    Raises:
        ArgumentError: A path, timeout or ``synchronous`` not of the kind
            taken, naming it.
        StoreError: The file cannot be opened, is not a database (or is
            empty), holds a schema newer than this code, or (read-only) is
            missing.

    Example:
        >>> from contextwindow import Message
        >>> with SQLiteStore(":memory:") as store:
        ...     v = store.append("c1", [Message.user("hi")], expected_version=0)
        ...     store.load("c1").messages[0].text
        'hi'
        >>> try:
        ...     SQLiteStore(":memory:", synchronous="OFF")
        ... except ValueError as exc:
        ...     print(type(exc).__name__, exc)
        ArgumentValueError synchronous: expected FULL or NORMAL, got 'OFF'
    """

    _dialect = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        timeout: float = 30.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        readonly: bool = False,
        immutable: bool = False,
    ) -> None:
        text = check_path(path, "path", "a file path or ':memory:'")
        self._path = text
        check_number(timeout, "timeout", low=0, high=1e6)
        check_bool(readonly, "readonly")
        check_bool(immutable, "immutable")
        self._readonly = readonly or immutable
        if synchronous not in ("FULL", "NORMAL"):
            raise ArgumentValueError(
                "synchronous", shown(synchronous), "FULL or NORMAL"
            )
        self._lock = threading.Lock()
        memory = self._path == ":memory:"
        file = Path(self._path)
        if not memory and _stays_empty(file, min(timeout, _CREATION_WAIT)):
            raise StoreError(
                f"cannot open {self!r}: the file is empty (0 bytes), not a "
                "database; was it truncated?"
            )
        if self._readonly and memory:
            raise ArgumentValueError(
                "immutable" if immutable else "readonly",
                "True",
                "False for ':memory:' (a new memory database holds nothing to read)",
            )
        if self._readonly and not file.is_file():
            raise StoreError(
                f"cannot read {self!r}: no such file (reading creates none)"
            )
        try:
            try:
                user_version = self._connect(timeout, synchronous, immutable)
            except sqlite3.OperationalError:
                if not self._unwritable() or immutable:
                    raise
                # A WAL database on a read-only mount: no writer can be at
                # work (it would need a -wal file here), so nothing changes.
                user_version = self._connect(timeout, synchronous, True)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self!r}: {exc}") from exc
        if not self._readonly:
            try:
                self._migrate(user_version)
            except BaseException:
                # A newer schema, a read-only file, an interrupt: what was
                # opened (the file, its -wal and -shm) is not left behind.
                self._conn.close()
                raise

    def _connect(self, timeout: float, synchronous: str, immutable: bool) -> int:
        """Open the connection; return the file's ``user_version``."""
        target, uri = self._path, False
        if self._readonly:
            mode = "immutable=1" if immutable else "mode=ro"
            target, uri = f"{Path(self._path).resolve().as_uri()}?{mode}", True
        self._conn = sqlite3.connect(
            target,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
            uri=uri,
        )
        try:
            if not self._readonly:
                if self._path != ":memory:":
                    self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            (user_version,) = self._conn.execute("PRAGMA user_version").fetchone()
            if self._readonly:
                self._check_schema(user_version)
        except BaseException:
            self._conn.close()
            raise
        return int(user_version)

    def _unwritable(self) -> bool:
        """Read-only, with no -wal file, in a folder that cannot be written."""
        folder = Path(self._path).resolve().parent
        wal = Path(f"{self._path}-wal")
        return self._readonly and not wal.exists() and not os.access(folder, os.W_OK)

    def _check_schema(self, user_version: int) -> None:
        """Read-only: the schema must be one this code reads; nothing is upgraded."""
        cur = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
        )
        if cur.fetchone() is None:
            raise StoreError(f"{self!r} holds no contextwindow conversations")
        names = [
            str(r[0])
            for r in self._conn.execute(f"SELECT name FROM {TABLE} ORDER BY name")
        ]
        check_applied(repr(self), names, user_version)

    @property
    def path(self) -> str:
        """The database file, or ``":memory:"``."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r}" + (
            ", readonly=True)" if self._readonly else ")"
        )

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self, write: bool) -> Generator[Cursor, None, None]:
        if write and self._readonly:
            raise StoreError(f"{self!r} is open read-only; it takes no writes")
        with self._lock:
            conn = self._conn
            done = False
            try:
                if conn.in_transaction:
                    # One a caller abandoned: interrupted (Ctrl-C) before its
                    # ROLLBACK could run. Nothing of it was committed.
                    conn.execute("ROLLBACK")
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn.cursor()
                conn.execute("COMMIT")
                done = True
            except sqlite3.Error as exc:
                raise StoreError(f"{self!r}: {exc}") from exc
            finally:
                if not done:
                    # Whatever ended it (an error, an interrupt inside the
                    # error's handling): the write lock goes now, not at the
                    # next call, so other processes are not kept waiting.
                    # Not asked first (``in_transaction``): the question
                    # itself could be interrupted; with none open, SQLite
                    # says so, and that is ignored.
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")

    def _record_schema(self, cur: Cursor, version: int) -> None:
        cur.execute(f"PRAGMA user_version = {int(version)}")


_CREATION_WAIT = 2.0
"""Seconds a zero-byte file gets to grow: another process may be creating it."""


def _stays_empty(file: Path, wait: float) -> bool:
    """``file`` exists and still holds zero bytes after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while file.is_file() and file.stat().st_size == 0:
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.01)
    return False
