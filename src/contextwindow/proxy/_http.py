"""The proxy's upstream client: HTTP/1.1 on asyncio, responses parsed by httptools.

Contract:

- ``Client.send(method, url, headers, body)`` writes the request at once
  (head and body in one write, not waiting for the upstream to take them)
  and returns a ``Response`` as soon as its status and headers are in. The
  headers go as given (raw bytes, their order and case kept), with ``host``
  and ``content-length`` set from the URL and the body; nothing else is
  added.
- ``Response.aiter_raw()`` yields the body as it arrives (a chunked transfer
  decoded, a content encoding kept), ``aclose()`` ends it: a connection
  whose answer was read to its end and that the upstream keeps alive goes
  back to the pool (at most ``max_idle`` idle ones per upstream), any other
  is closed. While the reader lags, the connection stops reading past
  ``BUFFER`` bytes held.
- ``https`` upstreams go through TLS with the system's certificates. No
  environment proxy (``HTTPS_PROXY``) is followed: the upstream is
  connected to directly.
- Errors: ``ConnectError`` (the upstream cannot be reached) and
  ``ProtocolError`` (a broken answer) are ``UpstreamError``; ``Dropped``,
  one too, is a connection closed before any byte of the answer (a
  kept-alive one the upstream closed while idle): the request never got an
  answer and may be sent again. ``UpstreamTimeout``: no connection in
  ``connect_timeout`` seconds, or no byte of the answer for
  ``read_timeout``.

Why not httpx: on this path its layers (request and header models, h11,
anyio's streams, which wait for the upstream to take each write) cost about
ten times the CPU of the exchange itself, and each wait is one more switch
between processes, which a loaded machine makes slow.

Example:
    >>> import asyncio
    >>> async def down() -> str:
    ...     client = Client(connect_timeout=1, read_timeout=1)
    ...     try:
    ...         await client.send("GET", "http://127.0.0.1:9/", [], b"")
    ...     except UpstreamError as exc:
    ...         return type(exc).__name__
    ...     finally:
    ...         await client.aclose()
    ...     return "answered"
    >>> asyncio.run(down())
    'ConnectError'
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import cast
from urllib.parse import urlsplit

import httptools

__all__ = [
    "BUFFER",
    "Client",
    "ConnectError",
    "Dropped",
    "ProtocolError",
    "Response",
    "UpstreamError",
    "UpstreamTimeout",
]

BUFFER = 1 << 20
"""Bytes of an answer held for a lagging reader before reading pauses."""


class UpstreamError(Exception):
    """The upstream could not be reached or broke the exchange."""


class ConnectError(UpstreamError):
    """No connection to the upstream."""


class ProtocolError(UpstreamError):
    """The upstream's answer is not HTTP/1.1 as this client reads it."""


class Dropped(UpstreamError):
    """The connection closed before any byte of the answer."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not connect or answer in time."""


_Key = tuple[str, str, int]


class _Conn(asyncio.Protocol):
    """One connection: the protocol, its parser's callbacks, one exchange at a time."""

    def __init__(self, key: _Key) -> None:
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.begin(head_only=False)

    def begin(self, *, head_only: bool) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.head_only = head_only
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.done = False
        self.received = False
        self.error: UpstreamError | None = None
        self.chunks: deque[bytes] = deque()
        self.held = 0
        self.paused = False
        self.sized = False
        self.keep_alive = False

    # -- asyncio.Protocol -------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.error = ProtocolError(f"the upstream's answer is not HTTP: {exc}")
            self._close()
        if self.held > BUFFER and not self.paused and self.transport is not None:
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.head_done and not self.done and not self.sized:
            self.done = True  # an answer without a length ends with its connection
        self._wake()

    # -- httptools callbacks -----------------------------------------------------

    def on_message_begin(self) -> None:
        self.headers = []

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (
            lower == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self.sized = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:
            return  # an interim answer: the real one follows
        self.status = status
        self.head_done = True
        if self.head_only or status in (204, 304):
            self.done = True

    def on_body(self, body: bytes) -> None:
        if self.head_only:
            return
        self.chunks.append(bytes(body))
        self.held += len(body)

    def on_message_complete(self) -> None:
        if self.head_done:
            self.done = True
            # Asked now: the parser forgets it once the message is over.
            self.keep_alive = self.parser.should_keep_alive()

    # -- waiting ---------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self, timeout: float) -> None:
        """Until more of the answer came, the connection closed, or ``timeout``."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self.waiter = waiter
        timer = loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self.waiter = None

    def take(self) -> bytes | None:
        """The next part of the body held, if any."""
        if not self.chunks:
            return None
        chunk = self.chunks.popleft()
        self.held -= len(chunk)
        if self.paused and self.held <= BUFFER // 2 and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return chunk

    def reusable(self) -> bool:
        return (
            self.done
            and not self.closed
            and self.error is None
            and not self.head_only
            and not self.chunks
            and self.keep_alive
        )

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self.closed = True


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(UpstreamTimeout("no answer in time"))


class Response:
    """An upstream's answer: status and headers now, the body as it comes."""

    def __init__(self, client: Client, conn: _Conn) -> None:
        self._client = client
        self._conn: _Conn | None = conn
        self.status_code = conn.status
        self.headers = conn.headers
        """The header pairs as the upstream sent them (raw bytes)."""

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's parts as they arrive.

        Raises:
            UpstreamTimeout: No byte came for ``read_timeout`` seconds.
            UpstreamError: The connection broke before the body's end.
        """
        conn = self._conn
        if conn is None:
            return
        timeout = self._client.read_timeout
        while True:
            chunk = conn.take()
            if chunk is not None:
                yield chunk
                continue
            if conn.error is not None:
                raise conn.error
            if conn.done:
                return
            if conn.closed:
                raise ProtocolError("the upstream closed the connection mid-answer")
            await conn.wait(timeout)

    async def aclose(self) -> None:
        """End the exchange: the connection goes back to the pool or is closed."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._client._release(conn)


class Client:
    """Upstream connections, kept alive and reused (see the module's contract)."""

    def __init__(
        self, *, connect_timeout: float, read_timeout: float, max_idle: int = 64
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle = max_idle
        self._idle: dict[_Key, list[_Conn]] = {}
        self._tls: ssl.SSLContext | None = None
        self._open: set[_Conn] = set()

    async def send(
        self,
        method: str,
        url: str,
        headers: Sequence[tuple[bytes, bytes]],
        body: bytes,
    ) -> Response:
        """Send one request; its answer once the status and headers are in.

        Raises:
            UpstreamTimeout: No connection, or no answer, in time.
            Dropped: The connection closed before any byte of the answer.
            UpstreamError: Any other failure of the exchange.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise ConnectError(f"not an http(s) URL: {scheme}://...")
        port = parts.port or (443 if scheme == "https" else 80)
        key: _Key = (scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {target} HTTP/1.1\r\nhost: {parts.netloc}\r\n".encode()]
        for name, value in headers:
            lines += (name, b": ", value, b"\r\n")
        if body or method not in ("GET", "HEAD", "OPTIONS", "DELETE"):
            lines.append(b"content-length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        if body:
            lines.append(body)
        conn = self._reuse(key) or await self._connect(key)
        conn.begin(head_only=method == "HEAD")
        assert conn.transport is not None
        try:
            conn.transport.writelines(lines)
            while not conn.head_done:
                if conn.error is not None:
                    raise conn.error
                if conn.closed:
                    if not conn.received:
                        raise Dropped("the upstream closed the connection unanswered")
                    raise ProtocolError("the upstream closed the connection mid-answer")
                await conn.wait(self.read_timeout)
        except BaseException:
            self._discard(conn)
            raise
        return Response(self, conn)

    def _reuse(self, key: _Key) -> _Conn | None:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn
            self._open.discard(conn)
        return None

    async def _connect(self, key: _Key) -> _Conn:
        scheme, host, port = key
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Conn(key),
                    host,
                    port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                ),
                self.connect_timeout,
            )
        except asyncio.TimeoutError as exc:
            raise UpstreamTimeout(f"no connection to {host}:{port} in time") from exc
        except OSError as exc:
            raise ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
        self._open.add(conn)
        return conn

    def _release(self, conn: _Conn) -> None:
        idle = self._idle.setdefault(conn.key, [])
        if conn.reusable() and len(idle) < self.max_idle:
            idle.append(conn)
        else:
            self._discard(conn)

    def _discard(self, conn: _Conn) -> None:
        conn.abort() if not conn.done else conn._close()
        self._open.discard(conn)

    async def aclose(self) -> None:
        """Close every connection."""
        for conn in list(self._open):
            conn._close()
        self._open.clear()
        self._idle.clear()
