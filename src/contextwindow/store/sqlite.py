"""``SQLiteStore``: the default store, one file (or memory) through ``sqlite3``.

Contract:

- Standard library only. The database runs in WAL mode (readers never wait
  for a writer), applies the schema's named migrations when it opens, and
  refuses a file whose schema is newer than this code (``StoreError``).
- Every write is one ``BEGIN IMMEDIATE`` transaction: the version check and
  the rows happen under SQLite's write lock, so processes sharing the file
  never lose or duplicate a message; a writer waits up to ``timeout`` seconds
  for the lock. A process killed in the middle of an append leaves the file
  as it was before that append (SQLite rolls the transaction back).
- ``synchronous="FULL"`` (the default) makes each acknowledged append
  survive a power cut; ``"NORMAL"`` is about a hundred times faster for
  single appends and still survives the writer's process being killed, but
  a power cut may undo the last appends (never corrupt the file).
- One connection per store, shared by threads under a lock; each process
  opens its own store.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Generator
from contextlib import contextmanager, suppress
from typing import Literal

from contextwindow._args import check_number, shown
from contextwindow.errors import ArgumentTypeError, ArgumentValueError, StoreError
from contextwindow.store._sql import Cursor, SQLStore

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLStore):
    """Conversations in a SQLite file, or in memory with ``":memory:"``.

    Args:
        path: The database file (created when missing), or ``":memory:"``.
        timeout: Seconds a writer waits for another process's write lock.
        synchronous: ``"FULL"`` or ``"NORMAL"`` (see the module's contract).

    Raises:
        ArgumentError: A path, timeout or ``synchronous`` not of the kind
            taken, naming it.
        StoreError: The file cannot be opened, is not a database, or holds a
            schema newer than this code.

    Example:
        >>> from contextwindow import Message
        >>> with SQLiteStore(":memory:") as store:
        ...     v = store.append("c1", [Message.user("hi")], expected_version=0)
        ...     store.load("c1").messages[0].text
        'hi'
        >>> SQLiteStore(":memory:", synchronous="OFF")
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: synchronous: expected FULL or NORMAL, got 'OFF'
    """

    _dialect = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        timeout: float = 30.0,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("path", shown(path), "a file path or ':memory:'")
        text = os.fspath(path)
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a PathLike of bytes
            raise ArgumentTypeError("path", shown(path), "a file path or ':memory:'")
        self._path = text
        check_number(timeout, "timeout", low=0, high=1e6)
        if synchronous not in ("FULL", "NORMAL"):
            raise ArgumentValueError(
                "synchronous", shown(synchronous), "FULL or NORMAL"
            )
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(
                self._path,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            if self._path != ":memory:":
                self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            (user_version,) = self._conn.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self!r}: {exc}") from exc
        self._migrate(user_version)

    @property
    def path(self) -> str:
        """The database file, or ``":memory:"``."""
        return self._path

    def __repr__(self) -> str:
        return f"SQLiteStore({self._path!r})"

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self, write: bool) -> Generator[Cursor, None, None]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn.cursor()
                conn.execute("COMMIT")
            except BaseException as exc:
                with suppress(sqlite3.Error):  # a closed connection has nothing to undo
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"{self!r}: {exc}") from exc
                raise

    def _record_schema(self, cur: Cursor, version: int) -> None:
        cur.execute(f"PRAGMA user_version = {int(version)}")
