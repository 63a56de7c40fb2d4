"""PostgreSQL calls are bounded: a stalled server, an outage, a failed open."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress

import psycopg
import pytest
from tests.servers import unavailable

from contextwindow import Message, StoreError
from contextwindow.store import PostgresStore
from contextwindow.store.servers import free_port, local_postgres, postgres_bin

from .conftest import Backend, make_backend

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads processes from /proc"
)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def _server_processes(url: str) -> list[int]:
    """The postmaster serving ``url`` and every process it started."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    own = int(row[0])  # this connection's backend, gone with it
    postmaster = _parent(own)
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != own:
            with suppress(OSError, IndexError, ValueError):
                if _parent(int(entry)) == postmaster:
                    children.append(int(entry))
    return [postmaster, *children]


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with suppress(ProcessLookupError):  # a backend that just ended
            os.kill(pid, sig)


@pytest.fixture
def own_server() -> Iterator[str]:
    """A PostgreSQL server of this test's own, free to stop."""
    if postgres_bin() is None:
        unavailable("PostgreSQL (initdb, pg_ctl)")
    with local_postgres(fast=True) as url:
        yield url


@pytest.fixture
def pg(request: pytest.FixtureRequest, tmp_path) -> Iterator[Backend]:  # type: ignore[no-untyped-def]
    """Fresh storage on the session's PostgreSQL server."""
    b = make_backend("postgres", request, tmp_path)
    yield b
    b.close_all()


def _in_thread(call, wait: float) -> tuple[object, float]:  # type: ignore[no-untyped-def]
    """``call()``'s result or exception and its duration; ``None`` if it is
    still running after ``wait`` seconds."""
    out: list[object] = []
    start = time.monotonic()

    def run() -> None:
        try:
            out.append(call())
        except Exception as exc:
            out.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(wait)
    return (out[0] if out else None), time.monotonic() - start


class TestStalledServer:
    @linux_only
    def test_a_stopped_server_fails_the_call_within_timeout(
        self, own_server: str
    ) -> None:
        """A server that stops answering (SIGSTOP) fails each call with a
        StoreError after about ``timeout``, not never; it works once resumed."""
        store = PostgresStore(own_server, timeout=1)
        try:
            store.append("c", [Message.user("a", id="a")], expected_version=0)
            stopped = _server_processes(own_server)
            try:
                _signal(stopped, signal.SIGSTOP)
                found, took = _in_thread(lambda: store.version("c"), 15)
            finally:
                _signal(stopped, signal.SIGCONT)
            assert isinstance(found, StoreError), found
            assert took < 5
            assert store.version("c") == 1
        finally:
            store.close()

    def test_a_statement_past_timeout_fails(self, pg: Backend) -> None:
        """A statement left waiting (a row another session holds locked) fails
        after about ``timeout``; the store is usable once the lock goes."""
        store = PostgresStore(pg.url, timeout=1)
        try:
            store.append("c", [Message.user("a", id="a")], expected_version=0)
            with psycopg.connect(pg.url) as other:
                other.execute("SELECT 1 FROM cw_conversations FOR UPDATE")
                for n in (1, 20):  # one statement; a COPY in a transaction
                    msgs = [Message.user("b") for _ in range(n)]
                    found, took = _in_thread(
                        lambda msgs=msgs: store.append("c", msgs, expected_version=1),
                        15,
                    )
                    assert isinstance(found, StoreError), found
                    assert "statement timeout" in str(found)
                    assert took < 5
                other.rollback()
            # Cancelled by the server: nothing of either append was kept.
            assert store.version("c") == 1
            store.append("c", [Message.user("b")], expected_version=1)
            assert store.version("c") == 2
        finally:
            store.close()


class _Proxy:
    """A TCP forwarder to the server that can be taken down and put back:
    an outage as clients see it (refused connections, broken ones)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = free_port()
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            socks, self._socks = self._socks, []
            listener, self._listener = self._listener, None
        for s in [*socks, *([listener] if listener else [])]:
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                self._socks += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with suppress(OSError):
            dst.shutdown(socket.SHUT_RDWR)


class TestOutage:
    def test_usable_soon_after_an_outage(self, pg: Backend) -> None:
        """After an outage of several seconds the store works again within
        about ``timeout`` of the server's return, not after a backoff that
        grew with the outage."""
        info = psycopg.conninfo.conninfo_to_dict(pg.url)
        proxy = _Proxy(str(info["host"]), int(str(info["port"])))
        url = pg.url.replace(f":{info['port']}/", f":{proxy.port}/")
        store = PostgresStore(url, timeout=1)
        try:
            store.append("c", [Message.user("a", id="a")], expected_version=0)
            proxy.down()
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                with pytest.raises(StoreError):
                    store.version("c")
            proxy.up()
            back = time.monotonic()
            while True:
                try:
                    assert store.version("c") == 1
                    break
                except StoreError:
                    assert time.monotonic() - back < 4, "still refused"
            assert time.monotonic() - back < 4
        finally:
            store.close()
            proxy.down()


class TestFailedOpen:
    def test_a_newer_schema_leaves_nothing_open(self, pg: Backend) -> None:
        """A constructor refusing the schema closes its pool: no thread, no
        connection left behind."""
        pg.open().close()
        assert pg.tamper is not None
        pg.tamper.future_schema()
        before = set(threading.enumerate())
        with psycopg.connect(pg.url, autocommit=True) as admin:

            def connections() -> int:
                row = admin.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()
                assert row is not None
                return int(row[0])

            held = connections()
            kept = []  # as a caller that logs or retries keeps the errors
            for _ in range(3):
                with pytest.raises(StoreError, match="upgrade contextwindow") as caught:
                    PostgresStore(pg.url, timeout=2)
                kept.append(caught.value)
            deadline = time.monotonic() + 5
            while connections() > held and time.monotonic() < deadline:
                time.sleep(0.05)  # the server notices closed sockets
            assert connections() <= held
        left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
        assert left == []
