"""A retried append writes nothing twice; a failed one skips nothing.

Appends are idempotent by message id on every backend: an append whose
messages the log already holds at the expected place (an earlier try was
written, its reply lost) is acknowledged. A manager recognises its own
messages when it catches up after a conflict, and its version moves only
with the history it stands for.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from tests.servers import unavailable

from contextwindow import ContextManager, Message, StoreError
from contextwindow.store import PostgresStore, RedisStore
from contextwindow.store.base import Store
from contextwindow.store.servers import free_port, redis_bin
from contextwindow.testing import FakeTokenizer

from ._faults import FaultyStore, cutting_proxy, once
from .conftest import Backend, make_backend


def managed(store: Store, cid: str = "c") -> ContextManager:
    return ContextManager(
        store=store, conversation_id=cid, token_limit=10_000, tokenizer=FakeTokenizer()
    )


def ids(store: Store, cid: str = "c") -> list[str]:
    return [m.id for m in store.load(cid).messages]


def msg(name: str) -> Message:
    return Message.user(f"message {name}", id=name)


class TestIdempotentAppend:
    def test_a_retry_after_a_lost_reply_is_acknowledged(self, backend: Backend) -> None:
        """The batch already at the expected place is acknowledged, not repeated."""
        store = backend.open()
        assert store.append("c", [msg("a1"), msg("a2")], expected_version=0) == 2
        assert store.append("c", [msg("b1")], expected_version=2) == 3
        # The first append again, as a writer whose reply was lost retries it.
        assert store.append("c", [msg("a1"), msg("a2")], expected_version=0) == 2
        assert ids(store) == ["a1", "a2", "b1"]

    def test_other_messages_at_the_place_still_conflict(self, backend: Backend) -> None:
        """Only the same ids acknowledge: another batch there is a conflict."""
        store = backend.open()
        store.append("c", [msg("a1"), msg("a2")], expected_version=0)
        with pytest.raises(StoreError, match="expected version 0, store is at 2"):
            store.append("c", [msg("a1"), msg("x")], expected_version=0)
        with pytest.raises(StoreError, match="expected version 1, store is at 2"):
            store.append("c", [msg("a1")], expected_version=1)
        assert ids(store) == ["a1", "a2"]

    def test_the_same_id_with_other_content_is_refused(self, backend: Backend) -> None:
        """An id names one message: another body under it is an error, not a copy."""
        store = backend.open()
        store.append("c", [msg("a1")], expected_version=0)
        with pytest.raises(StoreError, match=r"message 0 has id 'a1'.*other content"):
            store.append("c", [Message.user("else", id="a1")], expected_version=0)
        assert ids(store) == ["a1"]


class TestManagerAfterFailures:
    def test_a_failed_append_after_a_conflict_loses_nothing(
        self, backend: Backend
    ) -> None:
        """Conflict, read-back, then a failure: the next push still brings b1."""
        store = backend.open()
        a = managed(FaultyStore(store, once("append", "fail", nth=3)))
        b = managed(backend.open())
        a.push(msg("a1"))
        b.push(msg("b1"))
        with pytest.raises(StoreError, match="injected"):
            a.push(msg("a2"))
        a.push(msg("a3"))
        assert ids(store) == ["a1", "b1", "a3"]
        assert [m.id for m in a.history] == ["a1", "b1", "a3"]

    def test_its_own_message_after_a_conflict_is_recognised(
        self, backend: Backend
    ) -> None:
        """Written after a catch-up, its reply lost: the retry finds it, once."""
        store = backend.open()
        a = managed(FaultyStore(store, once("append", "lost", nth=3)))
        b = managed(backend.open())
        a.push(msg("a1"))
        b.push(msg("b1"))
        with pytest.raises(StoreError, match="injected"):
            a.push(msg("a2"))
        a.push(msg("a2"))
        b.push(msg("b2"))
        a.push(msg("a3"))
        assert ids(store) == ["a1", "b1", "a2", "b2", "a3"]
        assert [m.id for m in a.history] == ids(store)

    def test_a_lost_reply_retried_at_once(self, backend: Backend) -> None:
        """The plain retry of a push whose reply was lost appends nothing twice."""
        store = backend.open()
        a = managed(FaultyStore(store, once("append", "lost")))
        with pytest.raises(StoreError, match="injected"):
            a.push(msg("a1"))
        a.push(msg("a1"))
        a.push(msg("a2"))
        assert ids(store) == ["a1", "a2"]
        assert [m.id for m in a.history] == ["a1", "a2"]


def _through(url: str, port: int) -> str:
    parts = urlsplit(url)
    assert parts.hostname is not None
    netloc = parts.netloc.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{port}")
    return parts._replace(netloc=netloc).geturl()


def test_postgres_lost_reply_after_commit(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The connection cut after the append went through: the retry adds nothing."""
    backend = make_backend("postgres", request, tmp_path)
    target = urlsplit(backend.url)
    assert target.hostname is not None
    assert target.port is not None
    with cutting_proxy(target.hostname, target.port) as proxy:
        store = PostgresStore(_through(backend.url, proxy.port), timeout=5)
        try:
            a = managed(store)
            other = managed(backend.open())
            proxy.arm(b"INSERT INTO cw_messages")
            with pytest.raises(StoreError):
                a.push(msg("a1"))
            assert proxy.cuts == 1
            assert ids(backend.open()) == ["a1"]  # committed, though a was not told
            other.push(msg("b1"))
            a.push(msg("a1"))  # the caller's retry
            a.push(msg("a2"))
            assert ids(backend.open()) == ["a1", "b1", "a2"]
            assert [m.id for m in a.history] == ["a1", "b1", "a2"]
        finally:
            store.close()
            backend.close_all()


class _Redis:
    """A Redis server of our own that writes every command to its AOF, so it
    can be killed and started again with what it acknowledged."""

    def __init__(self, folder: Path) -> None:
        program = redis_bin()
        if program is None:
            unavailable("redis-server")
            return
        self.argv = [
            program,
            "--port",
            str(free_port()),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
            str(folder),
            "--logfile",
            str(folder / "server.log"),
        ]
        self.port = int(self.argv[2])
        self.process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(500):
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as s,
            ):
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return process
            time.sleep(0.01)
        process.kill()
        raise AssertionError("redis-server did not start again")

    def crash_and_restart(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = self._start()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def test_redis_crash_mid_append(tmp_path: Path) -> None:
    """The server ran the append, then died before its reply: retried, kept once."""
    server = _Redis(tmp_path)
    direct = f"redis://127.0.0.1:{server.port}/0"
    try:
        with cutting_proxy("127.0.0.1", server.port, server.crash_and_restart) as proxy:
            store = RedisStore(f"redis://127.0.0.1:{proxy.port}/0", timeout=5)
            a = managed(store)
            a.push(msg("a1"))
            proxy.arm(b"EVALSHA")
            try:
                a.push(msg("a2"))
            except StoreError:
                a.push(msg("a2"))  # the caller's retry, if the driver's did not do
            assert proxy.cuts == 1
            a.push(msg("a3"))
            check = RedisStore(direct)
            assert ids(check) == ["a1", "a2", "a3"]
            assert [m.id for m in a.history] == ["a1", "a2", "a3"]
            store.close()
            check.close()
    finally:
        server.stop()


def test_postgres_pooled_connections_after_a_restart(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Connections a restart broke are replaced at checkout: no operation fails."""
    backend = make_backend("postgres", request, tmp_path)
    store = PostgresStore(backend.url, max_connections=3)
    try:
        store.append("c", [msg("a1")], expected_version=0)
        with store._pool.connection(), store._pool.connection():
            pass  # the pool now holds more than one idle connection
        server = request.getfixturevalue("postgres_server")
        with psycopg.connect(server, autocommit=True) as admin:
            # What a restart does to every client: its server process ends.
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'"
            )
        assert ids(store) == ["a1"]
        assert store.append("c", [msg("a2")], expected_version=1) == 2
        assert store.version("c") == 2
        assert [c.id for c in store.list_conversations()] == ["c"]
    finally:
        store.close()
