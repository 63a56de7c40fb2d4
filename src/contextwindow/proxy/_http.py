"""The proxy's upstream client: a thin layer over aiohttp's client.

Contract:

- ``Client.send(method, url, headers, body)`` sends the request and returns
  a ``Response`` as soon as its status and headers are in. The headers go
  as given (their order and case kept), with ``host`` and
  ``content-length`` set from the URL and the body; nothing else is added
  (no ``User-Agent``, ``Accept``, ``Accept-Encoding`` or ``Content-Type``
  of aiohttp's own), no cookie is kept between requests, the URL's path
  and query go as written, and no redirect is followed.
- ``Response.aiter_raw()`` yields the body as it arrives (a chunked transfer
  decoded, a content encoding kept), ``aclose()`` ends it: a connection
  whose answer was read to its end and that the upstream keeps alive goes
  back to aiohttp's pool, any other is closed. While the reader lags,
  aiohttp stops reading past about ``BUFFER`` bytes held.
- ``https`` upstreams go through TLS with the system's certificates. No
  environment proxy (``HTTPS_PROXY``) is followed: the upstream is
  connected to directly.
- Errors: ``ConnectError`` (the upstream cannot be reached) and
  ``ProtocolError`` (a broken answer) are ``UpstreamError``; ``Dropped``,
  one too, is a connection closed or reset before the answer's status and
  headers (a kept-alive one the upstream closed while idle): the request
  got no answer and may be sent again. ``UpstreamTimeout``: no connection
  in ``connect_timeout`` seconds, or no byte of the answer for
  ``read_timeout``.

aiohttp itself sends an idempotent request (``GET``, ``HEAD``, ...) once
more when a kept-alive connection broke before its answer; a ``POST`` it
leaves to the caller (the proxy retries it once on ``Dropped``).

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
import ssl
from collections.abc import AsyncIterator, Sequence

import aiohttp
from multidict import CIMultiDict
from yarl import URL

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

_SKIP = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
"""Headers aiohttp would add on its own: only the caller's go."""


class UpstreamError(Exception):
    """The upstream could not be reached or broke the exchange."""


class ConnectError(UpstreamError):
    """No connection to the upstream."""


class ProtocolError(UpstreamError):
    """The upstream's answer is not HTTP/1.1 as this client reads it."""


class Dropped(UpstreamError):
    """The connection closed before the answer's status and headers."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not connect or answer in time."""


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _mid_answer(exc: BaseException) -> UpstreamError:
    """What a failure while the body is read means."""
    if isinstance(exc, asyncio.TimeoutError):  # aiohttp's read timeouts are these
        return UpstreamTimeout("no answer in time")
    return ProtocolError(f"the upstream broke the answer ({type(exc).__name__})")


class Response:
    """An upstream's answer: status and headers now, the body as it comes."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self._resp: aiohttp.ClientResponse | None = resp
        self.status_code = resp.status
        self.headers: list[tuple[bytes, bytes]] = list(resp.raw_headers)
        """The header pairs as the upstream sent them (raw bytes)."""

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's parts as they arrive.

        Raises:
            UpstreamTimeout: No byte came for ``read_timeout`` seconds.
            UpstreamError: The connection broke before the body's end.
        """
        resp = self._resp
        if resp is None:
            return
        try:
            async for chunk in resp.content.iter_any():
                yield chunk
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            raise _mid_answer(exc) from None

    async def aclose(self) -> None:
        """End the exchange: the connection goes back to the pool or is closed."""
        resp, self._resp = self._resp, None
        if resp is not None:
            resp.release()  # closes the connection unless the answer was read whole


class Client:
    """Upstream connections, kept alive and reused (see the module's contract)."""

    def __init__(self, *, connect_timeout: float, read_timeout: float) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the running event loop.
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=0, ssl=ssl.create_default_context()
                ),
                timeout=aiohttp.ClientTimeout(
                    total=None,
                    connect=self.connect_timeout,
                    sock_read=self.read_timeout,
                ),
                skip_auto_headers=_SKIP,
                auto_decompress=False,
                trust_env=False,
                cookie_jar=aiohttp.DummyCookieJar(),
                read_bufsize=BUFFER // 2,
            )
        return self._session

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
            Dropped: The connection closed before the answer's head.
            UpstreamError: Any other failure of the exchange.
        """
        try:
            target = URL(url, encoded=True)
        except ValueError:
            raise ConnectError("not an http(s) URL") from None
        if target.scheme not in ("http", "https") or not target.host:
            raise ConnectError(f"not an http(s) URL: {target.scheme}://...")
        given = CIMultiDict((_text(k), _text(v)) for k, v in headers)
        try:
            resp = await self._open().request(
                method,
                target,
                headers=given,
                data=body if body or method not in _NO_BODY else None,
                allow_redirects=False,
            )
        except (aiohttp.ConnectionTimeoutError, aiohttp.SocketTimeoutError):
            raise UpstreamTimeout("no connection or no answer in time") from None
        except aiohttp.ClientConnectorError as exc:
            raise ConnectError(
                f"cannot connect to {target.host}:{target.port}: {exc.os_error}"
            ) from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            raise Dropped("the upstream closed the connection unanswered") from None
        except asyncio.TimeoutError:
            raise UpstreamTimeout("no answer in time") from None
        except (aiohttp.ClientError, ValueError) as exc:
            raise ProtocolError(
                f"the upstream's answer is not HTTP ({type(exc).__name__})"
            ) from None
        return Response(resp)

    async def aclose(self) -> None:
        """Close every connection."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
