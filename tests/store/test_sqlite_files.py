"""SQLite files as users hold them: read-only, on read-only mounts, truncated, old."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from contextwindow import ConflictError, Message, StoreError
from contextwindow.errors import ArgumentValueError
from contextwindow.store import SQLiteStore, open_store


def written(path: Path) -> None:
    with SQLiteStore(path) as store:
        store.append(
            "c1",
            [Message.user("hi", id="u1"), Message.assistant("hello", id="a1")],
            expected_version=0,
            tokens=[{"k": 3}, {"k": 4}],
        )


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


class TestReadOnly:
    def test_reads_and_changes_nothing(self, tmp_path: Path) -> None:
        """A read-only store reads the file and leaves its bytes as they were.

        (SQLite's readers of a WAL database may leave its -wal and -shm files,
        empty of changes, beside it.)
        """
        path = tmp_path / "chats.db"
        written(path)
        before = files(tmp_path)
        store = open_store(f"sqlite:///{path}", readonly=True)
        conv = store.load("c1")
        assert [m.id for m in conv.messages] == ["u1", "a1"]
        assert [dict(e.tokens) for e in conv.entries] == [{"k": 3}, {"k": 4}]
        assert [c.id for c in store.list_conversations()] == ["c1"]
        with pytest.raises(StoreError, match="read-only; it takes no writes"):
            store.append("c1", [Message.user("more")], expected_version=2)
        store.close()
        after = files(tmp_path)
        assert after["chats.db"] == before["chats.db"]
        assert set(after) <= {"chats.db", "chats.db-wal", "chats.db-shm"}
        assert after.get("chats.db-wal", b"") == b""

    def test_a_missing_file_is_not_created(self, tmp_path: Path) -> None:
        """Reading a mistyped path names it; no database appears."""
        with pytest.raises(StoreError, match=r"typo\.db.*no such file"):
            open_store(f"sqlite:///{tmp_path / 'typo.db'}?mode=ro")
        assert list(tmp_path.iterdir()) == []

    def test_url_options(self, tmp_path: Path) -> None:
        """?mode=ro and ?immutable=1 open read-only; other values are refused."""
        path = tmp_path / "chats.db"
        written(path)
        for query in ("mode=ro", "immutable=1"):
            store = open_store(f"sqlite:///{path}?{query}")
            assert "readonly=True" in repr(store)
            assert store.load("c1").version == 2
            store.close()
        with pytest.raises(StoreError, match=r"takes only .*\?mode=ro"):
            open_store(f"sqlite:///{path}?mode=rw")

    def test_an_older_schema_is_read_without_upgrading(self, tmp_path: Path) -> None:
        """A database from before counts were digested: read, counts left out."""
        path = tmp_path / "old.db"
        written(path)
        with sqlite3.connect(path) as conn:  # as the previous release wrote it
            conn.execute("DELETE FROM cw_migrations WHERE name = ?", (COUNTS,))
            conn.execute("PRAGMA user_version = 1")
            conn.execute("UPDATE cw_messages SET digest = substr(digest, 1, 32)")
        store = SQLiteStore(path, readonly=True)
        conv = store.load("c1")
        assert [m.text for m in conv.messages] == ["hi", "hello"]
        assert [dict(e.tokens) for e in conv.entries] == [{}, {}]
        store.close()
        # Opened to write, it is upgraded: the old counts are dropped once.
        SQLiteStore(path).close()
        with sqlite3.connect(path) as conn:
            tokens = [r[0] for r in conn.execute("SELECT tokens FROM cw_messages")]
        assert tokens == ["{}", "{}"]
        assert SQLiteStore(path).load("c1").version == 2

    def test_a_read_only_mount(self, tmp_path: Path) -> None:
        """On a read-only file system the file is still read (no -wal, no -shm)."""
        if shutil.which("unshare") is None or os.geteuid() != 0:
            pytest.skip("needs unshare and root to mount a folder read-only")
        folder = tmp_path / "ro"
        folder.mkdir()
        written(folder / "chats.db")
        script = (
            "from contextwindow.store import open_store\n"
            f"s = open_store('sqlite:///{folder}/chats.db', readonly=True)\n"
            "print([m.text for m in s.load('c1').messages])\n"
        )
        mount = (
            f"mount --bind {folder} {folder} && "
            f"mount -o remount,ro,bind {folder} && "
            f"touch {folder}/probe 2>/dev/null && exit 3; "
            f'exec "{sys.executable}" -c "$0"'
        )
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", mount, script],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        if done.returncode and "mount" in done.stderr:
            pytest.skip(f"cannot mount read-only here: {done.stderr.strip()}")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "['hi', 'hello']"


COUNTS = "0002_counts_in_digest"


class TestPaths:
    def test_a_path_no_file_system_takes(self, tmp_path: Path) -> None:
        """A NUL in the path is a bad argument named ``path``, not sqlite's error."""
        with pytest.raises(ArgumentValueError, match=r"^path: .*without NUL"):
            SQLiteStore(tmp_path / "a\0b.db")
        assert not list(tmp_path.iterdir())


class TestDamage:
    def test_a_file_of_zero_bytes(self, tmp_path: Path) -> None:
        """A truncated database is damage, not an empty store."""
        path = tmp_path / "chats.db"
        written(path)
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"")
        for readonly in (False, True):
            with pytest.raises(StoreError, match=r"empty \(0 bytes\), not a database"):
                SQLiteStore(path, readonly=readonly)
        assert path.stat().st_size == 0

    def test_a_file_being_created_is_not_damage(self, tmp_path: Path) -> None:
        """Zero bytes while another process creates it: opened once it grows.

        Eight processes opening one new file at once met this (SQLite makes
        the file, then writes its header); the open refused it as truncated.
        """
        source, path = tmp_path / "made.db", tmp_path / "chats.db"
        written(source)
        with SQLiteStore(source) as store:  # folds the -wal into the file
            store.load("c1")
        data = source.read_bytes()
        path.write_bytes(b"")
        creator = threading.Timer(0.3, path.write_bytes, (data,))
        creator.start()
        try:
            with SQLiteStore(path) as store:
                assert [m.id for m in store.load("c1").messages] == ["u1", "a1"]
        finally:
            creator.join()


class Interrupting:
    """A connection that Ctrl-C interrupts once, inside a failed write.

    ``at="check"``: as the failure's handler asks whether a transaction is
    open; ``at="rollback"``: as its ROLLBACK starts.
    """

    def __init__(self, conn: sqlite3.Connection, at: str) -> None:
        self.conn = conn
        self.at: str | None = at

    def __getattr__(self, name: str) -> object:
        if name == "in_transaction" and self.at == "check" and self.conn.in_transaction:
            self.at = None
            raise KeyboardInterrupt
        return getattr(self.conn, name)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "ROLLBACK" and self.at == "rollback":
            self.at = None
            raise KeyboardInterrupt
        return self.conn.execute(sql, *args)


class TestInterruptedWrites:
    def stale_append(self, store: SQLiteStore) -> None:
        """An append whose version check fails inside its transaction.

        Its ``ConflictError`` is what comes out where the interrupt found
        nothing to interrupt.
        """
        with pytest.raises((KeyboardInterrupt, ConflictError)):
            store.append("c1", [Message.user("late", id="x")], expected_version=0)

    def test_the_lock_goes_with_the_failed_call(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An interrupt as the error is handled still leaves no lock behind."""
        path = tmp_path / "chats.db"
        written(path)
        store = SQLiteStore(path)
        try:
            conn = store._conn
            monkeypatch.setattr(store, "_conn", Interrupting(conn, "check"))
            self.stale_append(store)
            assert not conn.in_transaction
            with SQLiteStore(path, timeout=0.2) as other:  # another process's
                other.append("c1", [Message.user("more", id="u2")], expected_version=2)
            assert store.version("c1") == 3
        finally:
            store.close()

    def test_the_next_call_ends_an_abandoned_transaction(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A transaction an interrupted ROLLBACK left open goes at the next call."""
        path = tmp_path / "chats.db"
        written(path)
        store = SQLiteStore(path)
        try:
            monkeypatch.setattr(store, "_conn", Interrupting(store._conn, "rollback"))
            self.stale_append(store)
            store.append("c1", [Message.user("more", id="u2")], expected_version=2)
            assert [m.id for m in store.load("c1").messages] == ["u1", "a1", "u2"]
        finally:
            store.close()


class TestFailedOpen:
    @pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists /proc")
    def test_a_newer_schema_leaves_no_file_open(self, tmp_path: Path) -> None:
        """A constructor refusing the schema closes the connection it opened:
        no descriptor of the file, its -wal or -shm is left behind."""
        path = tmp_path / "future.db"
        written(path)
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version = 99")
        conn.close()

        def held() -> list[str]:
            out = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    target = os.readlink(f"/proc/self/fd/{fd}")
                except OSError:
                    continue
                if target.startswith(str(path)):
                    out.append(target)
            return out

        for _ in range(5):
            with pytest.raises(StoreError, match="upgrade contextwindow"):
                SQLiteStore(path)
        assert held() == []
