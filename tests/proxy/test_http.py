"""The proxy's upstream client against real servers on loopback (raw sockets)."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow.proxy._http import (
    BUFFER,
    Client,
    Dropped,
    Response,
    UpstreamTimeout,
)

Reply = Callable[[bytes, socket.socket], bool]
"""Answers one request (its raw bytes) on the socket; whether to keep it open."""


@dataclass
class Server:
    url: str
    requests: list[bytes] = field(default_factory=list[bytes])
    connections: int = 0


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return None
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    size = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            size = int(value)
    while len(body) < size:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


@contextmanager
def serving(reply: Reply) -> Iterator[Server]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    server = Server(f"http://127.0.0.1:{listener.getsockname()[1]}")
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            while not stop.is_set():
                request = _read_request(conn)
                if request is None:
                    return
                server.requests.append(request)
                if not reply(request, conn):
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            server.connections += 1
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def _sized(body: bytes, *, close: bool = False) -> Reply:
    def reply(request: bytes, conn: socket.socket) -> bool:
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
        head += b"content-length: %d\r\n" % len(body)
        if close:
            head += b"connection: close\r\n"
        conn.sendall(head + b"\r\n" + (b"" if request.startswith(b"HEAD") else body))
        return not close

    return reply


async def _exchange(
    client: Client, url: str, method: str = "POST", body: bytes = b"{}"
) -> tuple[Response, bytes]:
    resp = await client.send(
        method, url, [(b"Content-Type", b"application/json"), (b"x-b", b"2")], body
    )
    try:
        got = b"".join([c async for c in resp.aiter_raw()])
    finally:
        await resp.aclose()
    return resp, got


def _client(read_timeout: float = 5) -> Client:
    return Client(connect_timeout=5, read_timeout=read_timeout)


async def _twice(url: str) -> list[bytes]:
    """The bodies of two exchanges with ``url`` through one client."""
    client = _client()
    try:
        return [(await _exchange(client, url))[1] for _ in range(2)]
    finally:
        await client.aclose()


def test_the_request_goes_as_given_and_the_connection_is_kept() -> None:
    async def run(url: str) -> list[bytes]:
        client = _client()
        try:
            bodies = []
            for body in (b'{"a": 1}', b'{"b": 2}'):
                resp, got = await _exchange(client, url + "/v1/x?q=1", body=body)
                assert resp.status_code == 200
                assert (b"content-type", b"text/plain") in resp.headers
                bodies.append(got)
            return bodies
        finally:
            await client.aclose()

    with serving(_sized(b"hello")) as server:
        assert asyncio.run(run(server.url)) == [b"hello", b"hello"]
    assert server.connections == 1  # kept alive and reused
    first = server.requests[0]
    host = server.url.removeprefix("http://").encode()
    assert first == (
        b"POST /v1/x?q=1 HTTP/1.1\r\nHost: " + host + b"\r\n"
        b"Content-Type: application/json\r\nx-b: 2\r\nContent-Length: 8\r\n\r\n"
        b'{"a": 1}'
    )


@settings(max_examples=30, deadline=None)
@given(
    st.binary(min_size=0, max_size=3_000),
    st.lists(st.integers(1, 700), min_size=1, max_size=8),
    st.lists(st.integers(1, 500), min_size=1, max_size=8),
)
def test_a_chunked_answer_arrives_whole(
    body: bytes, chunks: list[int], writes: list[int]
) -> None:
    """However the upstream cuts its chunks, and the network its writes, the
    body read is the body sent; the connection is reused after it."""
    wire = b""
    rest, i = body, 0
    while rest:
        n = chunks[i % len(chunks)]
        part, rest = rest[:n], rest[n:]
        wire += b"%x\r\n" % len(part) + part + b"\r\n"
        i += 1
    wire = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + wire + b"0\r\n\r\n"
    )

    def reply(request: bytes, conn: socket.socket) -> bool:
        data, k = wire, 0
        while data:
            n = writes[k % len(writes)]
            conn.sendall(data[:n])
            data, k = data[n:], k + 1
        return True

    with serving(reply) as server:
        assert asyncio.run(_twice(server.url)) == [body, body]
    assert server.connections == 1


def test_an_answer_without_a_length_ends_with_its_connection() -> None:
    def reply(request: bytes, conn: socket.socket) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\npart one, ")
        time.sleep(0.05)
        conn.sendall(b"part two")
        return False  # closed: that ends the body

    with serving(reply) as server:
        assert asyncio.run(_twice(server.url)) == [b"part one, part two"] * 2
    assert server.connections == 2  # not reused


def test_head_and_no_content_answers_have_no_body() -> None:
    def reply(request: bytes, conn: socket.socket) -> bool:
        if request.startswith(b"HEAD"):
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 50\r\n\r\n")
        else:
            conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        return True

    async def run(url: str) -> list[tuple[int, bytes]]:
        client = _client(read_timeout=2)
        try:
            out = []
            for method in ("HEAD", "DELETE", "HEAD"):
                resp, got = await _exchange(client, url, method, b"")
                out.append((resp.status_code, got))
            return out
        finally:
            await client.aclose()

    with serving(reply) as server:
        assert asyncio.run(run(server.url)) == [(200, b""), (204, b""), (200, b"")]


def test_a_large_answer_read_slowly_arrives_whole() -> None:
    """Past ``BUFFER`` bytes held the connection stops reading; it goes on as
    the reader takes them, and every byte arrives."""
    body = bytes(range(256)) * (3 * BUFFER // 256)

    async def run(url: str) -> bytes:
        client = _client()
        try:
            resp = await client.send("GET", url, [], b"")
            parts = []
            async for chunk in resp.aiter_raw():
                parts.append(chunk)
                if len(parts) == 1:
                    await asyncio.sleep(0.3)  # the upstream writes on meanwhile
            await resp.aclose()
            return b"".join(parts)
        finally:
            await client.aclose()

    with serving(_sized(body)) as server:
        assert asyncio.run(run(server.url)) == body


def test_a_silent_upstream_times_out_and_a_closing_one_is_dropped() -> None:
    def silent(request: bytes, conn: socket.socket) -> bool:
        time.sleep(1.0)
        return False

    def closing(request: bytes, conn: socket.socket) -> bool:
        return False

    async def run(url: str, error: type[Exception]) -> None:
        client = _client(read_timeout=0.3)
        try:
            with pytest.raises(error):
                await client.send("POST", url, [], b"{}")
        finally:
            await client.aclose()

    with serving(silent) as server:
        asyncio.run(run(server.url, UpstreamTimeout))
    with serving(closing) as server:
        asyncio.run(run(server.url, Dropped))


def test_an_encoded_answer_stays_encoded_and_no_cookie_is_kept() -> None:
    """The body's bytes go through as sent (no decompression), and a cookie
    the upstream sets is not sent back with the next request."""
    packed = gzip.compress(b'{"id": "x"}' * 50)

    def reply(request: bytes, conn: socket.socket) -> bool:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\nset-cookie: s=1; Path=/\r\n"
            b"content-length: %d\r\n\r\n" % len(packed) + packed
        )
        return True

    with serving(reply) as server:
        assert asyncio.run(_twice(server.url)) == [packed, packed]
    assert len(server.requests) == 2
    for request in server.requests:
        head = request.partition(b"\r\n\r\n")[0].lower()
        assert b"cookie" not in head
        assert b"user-agent" not in head
        assert b"accept" not in head


def test_an_answer_left_unread_closes_its_connection() -> None:
    """A connection whose answer was not read to its end is not reused: the
    next request gets its own answer, on a new connection."""
    body = bytes(range(256)) * (4 * BUFFER // 256)
    sized = _sized(body)

    def reply(request: bytes, conn: socket.socket) -> bool:
        try:
            return sized(request, conn)
        except OSError:  # the client closed it mid-answer
            return False

    async def run(url: str) -> int:
        client = _client()
        try:
            resp = await client.send("GET", url, [], b"")
            async for _ in resp.aiter_raw():
                break
            await resp.aclose()
            return len((await _exchange(client, url, "GET", b""))[1])
        finally:
            await client.aclose()

    with serving(reply) as server:
        assert asyncio.run(run(server.url)) == len(body)
    assert server.connections == 2
