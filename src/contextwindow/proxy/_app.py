"""The proxy's ASGI app: fitted endpoints, pass-through, health and metrics.

Contract:

- ``POST /v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` are
  fitted (``_fitter``) and forwarded; ``/v1/messages/count_tokens`` is
  counted and forwarded as it came (never fitted nor refused: its client
  wants the count); every other path and method goes to its upstream
  untouched (Anthropic's when the request carries ``anthropic-version`` or
  ``x-api-key``, else OpenAI's). ``GET /healthz`` answers
  ``{"status": "ok"}``, ``GET /metrics`` Prometheus text (endpoints by
  name, every other path as ``other``).
- A body in ``Content-Encoding`` gzip or deflate is decoded before it is
  read (the size limit holds for it decoded too); rewritten, it goes
  unencoded, else as it came. A body the proxy cannot read (not JSON,
  nested too deep, a number no float holds, another encoding) or whose
  fitting fails goes upstream untouched, the reason logged: never a 500.
- The upstream's answer streams back as it comes, chunk by chunk (server-sent
  events included), with its status and headers; an answer of known length
  up to ``WHOLE_BYTES`` that is not a stream of events (a JSON reply) is
  read whole first and sent in one piece, so one broken off comes back as
  a 502. The plan and the store's writes for the request run in one worker
  thread, the writes while the upstream answers, and the response ends once
  they are in (so a client's next request finds them on any replica). The
  body is read on the way only for the input tokens it reports (``usage``),
  which calibrate the model's counts (``Fitter.observe_usage``).
- The client's headers go upstream unchanged (``Authorization`` and
  ``x-api-key`` among them), but for hop-by-hop ones, ``expect``, the
  proxy's own key (``x-contextwindow-key``) and ``x-conversation-id`` (read
  as UTF-8; one that is not is a 400). An answer to ``HEAD`` keeps its
  ``content-length``. No header value is logged or echoed; with
  ``log_bodies`` a body is logged with every credential the request
  carried scrubbed.
- With ``api_key`` set, a request without that key in
  ``x-contextwindow-key`` (or ``Proxy-Authorization: Bearer``) gets 401.
- Errors come in the provider's own shape: pinned content over the window
  400 (OpenAI ``context_length_exceeded``, Anthropic
  ``invalid_request_error``); a body over ``max_body_bytes`` 413; more than
  ``max_concurrency`` requests at once 429 (with ``retry-after``; a
  request's slot is freed however it ends); a non-UTF-8
  ``x-conversation-id`` 400; an upstream that cannot be reached 502 (a
  connection that broke before any answer is tried once more first), one
  that does not answer in time 504. An upstream's own errors come back as
  it sent them.
- Every fitted response carries ``x-contextwindow-tokens-in``,
  ``-tokens-forwarded``, ``-compacted`` (tokens the fitting took out),
  ``-window`` (the window it was fitted into) and ``-conversation``, and
  ``x-contextwindow-model: unknown`` when the registry does not know the
  model (its window is then ``DEFAULT_MODEL_INFO``'s, unless configured);
  every request is one JSON line on the ``contextwindow.proxy`` logger, a
  fitted one with ``window`` and ``model_known`` among its fields. An
  unknown model is also warned of once per name (``_fitter``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import re
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Any, cast

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import Send

from contextwindow._redact import display_url
from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.proxy._fitter import (
    Fitter,
    FitterConfig,
    PassThrough,
    Plan,
    json_line,
    parse_body,
)
from contextwindow.proxy._http import Client, Dropped, UpstreamError, UpstreamTimeout
from contextwindow.proxy._http import Response as UpstreamResponse
from contextwindow.proxy._metrics import Metrics
from contextwindow.proxy._shapes import APIS, Api, Upstream, error_body
from contextwindow.store.base import Store
from contextwindow.store.urls import open_store
from contextwindow.summarizers._secret import scrub

__all__ = ["ProxyConfig", "create_app"]

log = logging.getLogger("contextwindow.proxy")

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
    }
)
ANSWERED_ANEW = HOP_BY_HOP | {b"date", b"server"}
"""Headers of the upstream's answer the client does not get: the server sets
its own ``date`` and ``server`` (two of each confuse a client)."""
OWN_HEADERS = frozenset({b"x-contextwindow-key", b"x-conversation-id"})
NOT_FORWARDED = HOP_BY_HOP | OWN_HEADERS | {b"expect"}
"""Headers of the client's request the upstream does not get (``expect``:
the server answered the client's ``100-continue`` itself, and the proxy
sends the body whole)."""
SECRET_HEADERS = (
    "authorization",
    "x-api-key",
    "x-contextwindow-key",
    "proxy-authorization",
    "api-key",
    "x-goog-api-key",
)
PLAN_THREADS = 16
"""Threads that plan requests and write their appends (the plans hold the
interpreter's lock while they count; the writes wait on the store)."""
SEND_WAIT = 0.05
"""Seconds a plan's write waits for the loop to send the request first."""
_USAGE = re.compile(
    rb'"(prompt_tokens|input_tokens|cache_read_input_tokens|'
    rb'cache_creation_input_tokens)"\s*:\s*(\d+)'
)


@dataclass(frozen=True, slots=True)
class ProxyConfig:
    """Everything the proxy is told.

    Its ``repr`` shows no secret: not ``api_key``, and every URL (the
    upstreams', the store's) in its display form, credentials masked.

    Example:
        >>> ProxyConfig(store=None).upstream_anthropic
        'https://api.anthropic.com'
        >>> c = ProxyConfig(store="redis://:pw@db:6379/0", api_key="sk-cw-123")
        >>> "sk-cw-123" in repr(c), "store='redis://:***@db:6379/0'" in repr(c)
        (False, True)
    """

    upstream_openai: str = "https://api.openai.com"
    upstream_anthropic: str = "https://api.anthropic.com"
    fitting: FitterConfig = field(default_factory=FitterConfig)
    store: str | Store | None = "sqlite:///contextwindow-proxy.db"
    """Where conversations are kept (a URL or a ``Store``); ``None`` fits
    each request alone."""
    api_key: str | None = field(default=None, repr=False)
    """The key the proxy demands of its clients (``None``: none)."""
    log_bodies: bool = False
    max_body_bytes: int = 32 * 1024 * 1024
    max_concurrency: int = 64
    connect_timeout: float = 10.0
    read_timeout: float = 600.0
    """Seconds an upstream may take to answer, and between two chunks."""

    def __repr__(self) -> str:
        shown: list[str] = []
        for f in fields(self):
            if not f.repr:
                continue
            value = getattr(self, f.name)
            text = display_url(value) if isinstance(value, str) else value
            shown.append(f"{f.name}={text!r}")
        return f"ProxyConfig({', '.join(shown)})"


class _Proxy:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.client: Client | None = None
        self.store: Store | None = None
        self.fitter = Fitter(config.fitting, None)
        self.active = 0
        self.pool: ThreadPoolExecutor | None = None
        """Where plans and their store writes run (while the app is up)."""

    @contextlib.asynccontextmanager  # pyright: ignore[reportDeprecated]  # the stub's deprecation, not Python's
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        cfg = self.config
        store = open_store(cfg.store) if isinstance(cfg.store, str) else cfg.store
        self.store = store
        self.fitter = Fitter(cfg.fitting, store, write_behind=True)
        client = Client(
            connect_timeout=cfg.connect_timeout, read_timeout=cfg.read_timeout
        )
        self.client = client
        self.pool = ThreadPoolExecutor(PLAN_THREADS, "contextwindow-proxy")
        try:
            yield
        finally:
            self.client = None
            await client.aclose()
            self.pool.shutdown(wait=True)
            self.pool = None
            if isinstance(cfg.store, str) and store is not None:
                store.close()

    # -- routes ------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics_text(self, request: Request) -> Response:
        return PlainTextResponse(
            self.metrics.text(), media_type="text/plain; version=0.0.4"
        )

    async def fitted(self, request: Request) -> Response:
        return await self._serve(request, APIS[request.url.path])

    async def other(self, request: Request) -> Response:
        return await self._serve(request, None)

    # -- serving -----------------------------------------------------------------

    async def _serve(self, request: Request, api: Api | None) -> Response:
        start = time.perf_counter()
        upstream = api.upstream if api is not None else _upstream_of(request)
        path = request.url.path
        info: dict[str, Any] = {"method": request.method, "path": path}
        refused = self._refusal(request, upstream)
        if refused is not None:
            self.metrics.request(path, refused.status_code)
            self._log(info | {"status": refused.status_code, "ms": _ms(start)})
            return refused
        self.active += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.active -= 1

        # The slot is given back however the request ends: by its response's
        # end (``_forward``), or here, by any error on the way to it.
        try:
            return await self._read_and_forward(
                request, api, upstream, info, start, release
            )
        except BaseException:
            release()
            raise

    async def _read_and_forward(
        self,
        request: Request,
        api: Api | None,
        upstream: Upstream,
        info: dict[str, Any],
        start: float,
        release: Callable[[], None],
    ) -> Response:
        """Read the request, plan it when it is one to fit, and forward it."""
        path = request.url.path
        limit = self.config.max_body_bytes
        raw = read = b""
        plan: Plan | None = None
        written: asyncio.Future[None] | None = None
        try:
            raw = read = await _body(request, limit)
            if api is not None and request.method == "POST":
                cid = _conversation_id(request)
                decoded = _decoded(raw, request.headers.get("content-encoding"), limit)
                if isinstance(decoded, bytes):
                    read = decoded
                    plan, written = await self._plan(api, read, cid, info)
                else:  # an encoding the proxy does not read: as it came
                    info["passed"] = decoded.reason
        except _TooLarge as exc:
            release()
            self.metrics.error("too_large")
            self.metrics.request(path, 413)
            msg = (
                f"contextwindow proxy: request body over {limit:,} bytes"
                f"{exc.what} (its limit)"
            )
            self._log(info | {"status": 413, "error": msg, "ms": _ms(start)})
            return _error(upstream, 413, msg)
        except _BadRequest as exc:
            release()
            self.metrics.error("bad_request")
            self.metrics.request(path, 400)
            msg = f"contextwindow proxy: {exc}"
            self._log(info | {"status": 400, "error": msg, "ms": _ms(start)})
            return _error(upstream, 400, msg)
        except BudgetError as exc:
            assert api is not None
            release()
            self.metrics.error("context_length")
            self.metrics.request(path, 400)
            msg = (
                f"contextwindow proxy: the request cannot fit the model's window: {exc}"
            )
            if info.get("model_known") is False:
                msg += (
                    f" (an unknown model: the default window of {info['window']:,} "
                    "tokens was assumed; --model-window MODEL=TOKENS gives its own)"
                )
            code = "context_length_exceeded" if upstream == "openai" else None
            self._log(info | {"status": 400, "ms": _ms(start)}, request, read)
            return _error(upstream, 400, msg, code, api.fields[-1])
        # A body rewritten goes as written; any other as it came (encoded or not).
        body = plan.body if plan is not None and plan.rewritten else raw
        return await self._forward(
            request, upstream, body, plan, written, info, start, read, release
        )

    def _refusal(self, request: Request, upstream: Upstream) -> Response | None:
        key = self.config.api_key
        if key is not None:
            given = request.headers.get("x-contextwindow-key")
            if given is None:
                auth = request.headers.get("proxy-authorization", "")
                given = auth[7:] if auth.lower().startswith("bearer ") else None
            if given is None or not hmac.compare_digest(given.encode(), key.encode()):
                self.metrics.error("unauthorized")
                return _error(
                    upstream,
                    401,
                    "contextwindow proxy: this proxy wants its key in the "
                    "x-contextwindow-key header",
                )
        if self.active >= self.config.max_concurrency:
            self.metrics.error("too_busy")
            r = _error(
                upstream,
                429,
                f"contextwindow proxy: {self.config.max_concurrency} requests "
                "already in progress (its limit); try again",
            )
            r.headers["retry-after"] = "1"
            return r
        return None

    async def _plan(
        self, api: Api, raw: bytes, cid: str | None, info: dict[str, Any]
    ) -> tuple[Plan | None, asyncio.Future[None] | None]:
        """The plan, and its store write running in the same thread after it.

        ``raw``: the body, decoded; ``cid``: the client's conversation id.
        ``(None, None)``: the request goes as it came (a body the proxy does
        not read, or whose fitting failed).

        Raises:
            BudgetError: Pinned content alone exceeds the window.
        """
        try:
            parsed = parse_body(raw)
        except ValueError as exc:
            info["passed"] = f"not read: {exc}"[:200]
            return None, None
        if not isinstance(parsed, dict):
            return None, None
        body = cast("dict[str, Any]", parsed)
        model = body.get("model")
        info["model"] = model if isinstance(model, str) else None
        info["stream"] = bool(body.get("stream"))
        loop = asyncio.get_running_loop()
        planned: asyncio.Future[Plan] = loop.create_future()
        written: asyncio.Future[None] = loop.create_future()
        sending = threading.Event()
        loop.run_in_executor(
            self.pool,
            _plan_then_write,
            loop,
            partial(self.fitter.plan, api, raw, body, cid),
            planned,
            written,
            sending,
        )
        try:
            try:
                plan = await planned
            finally:
                # Set once this task next waits: the request is on its way.
                loop.call_soon(sending.set)
        except PassThrough as exc:
            info["passed"] = str(exc)[:200]
            return None, None
        except BudgetError:
            if isinstance(model, str):  # read, and its window refused the request
                info["window"], info["model_known"] = self.fitter.window_of(model)
            raise
        except Exception as exc:
            # A store or strategy failure, or one of the proxy's own (a body
            # nested past what the fitting reads): the request goes as it came.
            # Its type alone is logged: its words may quote the body.
            self.metrics.error("fitting")
            info["fitting_error"] = type(exc).__name__
            return None, None
        info.update(
            conversation=plan.conversation,
            tokens_in=plan.tokens_in,
            tokens_forwarded=plan.tokens_forwarded,
            rewritten=plan.rewritten,
            compactions=plan.compactions,
            window=plan.window,
            model_known=plan.model_known,
        )
        return plan, written

    async def _forward(
        self,
        request: Request,
        upstream: Upstream,
        body: bytes,
        plan: Plan | None,
        written: asyncio.Future[None] | None,
        info: dict[str, Any],
        start: float,
        raw: bytes,
        release: Any,
    ) -> Response:
        assert self.client is not None
        base = (
            self.config.upstream_anthropic
            if upstream == "anthropic"
            else self.config.upstream_openai
        )
        # The path as the client wrote it (percent-escapes kept), not as decoded.
        raw_path: bytes = request.scope.get("raw_path") or request.url.path.encode()
        url = _join(base, raw_path.decode("latin-1"), request.url.query)
        raw_headers: list[tuple[bytes, bytes]] = request.scope["headers"]
        headers = [(k, v) for k, v in raw_headers if k not in NOT_FORWARDED]
        if plan is not None:
            drop = {b"accept-encoding"}
            if plan.rewritten:  # written anew, not encoded
                drop.add(b"content-encoding")
            headers = [(k, v) for k, v in headers if k not in drop]
            headers.append((b"accept-encoding", b"identity"))
        committed = _Commit(written, self.metrics, info)
        sent = time.perf_counter()
        try:
            resp = await self._send(request.method, url, headers, body)
        except UpstreamError as exc:
            await committed.wait()
            status, what = _unanswered(exc)
            return self._failed(
                upstream, status, what, info, start, request, raw, release
            )
        waited = time.perf_counter() - sent
        self.metrics.upstream(waited)
        out_headers = _answer_headers(resp, plan, head=request.method == "HEAD")
        info["status"] = resp.status_code
        info["upstream_ms"] = round(waited * 1000, 2)
        scan = plan is not None
        done = False

        async def finish() -> None:
            nonlocal done
            if done:
                return
            done = True
            await resp.aclose()
            release()
            self.metrics.request(
                request.url.path,
                resp.status_code,
                tokens_in=plan.tokens_in if plan else 0,
                forwarded=plan.tokens_forwarded if plan else 0,
                compactions=plan.compactions if plan else 0,
                rewritten=plan.rewritten if plan else False,
            )
            self._log(info | {"ms": _ms(start)}, request, raw)

        if _whole(request.method, resp.status_code, resp.headers):
            # A JSON answer of known length: read whole and sent in one piece
            # (its client waits for all of it anyway).
            content = await _read_whole(resp)
            await committed.wait()
            if isinstance(content, UpstreamError):
                await resp.aclose()
                status, what = _broken(content)
                return self._failed(
                    upstream,
                    status,
                    what,
                    info,
                    start,
                    request,
                    raw,
                    release,
                    reached=True,
                )
            if scan:
                self._observed(plan, info, _usage(content))
            return _Whole(content, resp.status_code, out_headers, finish)

        async def chunks() -> AsyncIterator[bytes]:
            usage: dict[bytes, int] = {}
            tail = b""
            try:
                async for chunk in resp.aiter_raw():
                    yield chunk
                    if scan and (
                        b"_tokens" in chunk or b"_tokens" in tail + chunk[:64]
                    ):
                        for m in _USAGE.finditer(tail + chunk):
                            usage[m.group(1)] = int(m.group(2))
                    tail = chunk[-64:]
            except UpstreamTimeout:
                info["error"] = "upstream timed out mid-stream"
                self.metrics.error("upstream_timeout")
                raise _BrokenOff from None
            except UpstreamError as exc:
                info["error"] = f"upstream failed mid-stream ({type(exc).__name__})"
                self.metrics.error("upstream_failed")
                raise _BrokenOff from None
            finally:
                await committed.wait()
                self._observed(plan, info, usage)
                await finish()

        return _Streamed(chunks(), resp.status_code, out_headers, finish)

    def _observed(
        self, plan: Plan | None, info: dict[str, Any], usage: Mapping[bytes, int]
    ) -> None:
        """Feed the input tokens the upstream reported to metrics and calibration."""
        if usage and plan is not None:
            reported = sum(usage.values())
            info["usage_input_tokens"] = reported
            self.metrics.usage(reported, plan.tokens_forwarded)
            with contextlib.suppress(ContextWindowError):
                self.fitter.observe_usage(plan, reported)

    async def _send(
        self, method: str, url: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> UpstreamResponse:
        """Send the request; once more when the connection broke before any answer.

        A kept-alive connection the upstream closed while idle breaks as it is
        reused (the request never reached the upstream's handler), the way
        the providers' SDKs see it too: they try again, and so does the proxy,
        once.
        """
        assert self.client is not None
        try:
            return await self.client.send(method, url, headers, body)
        except Dropped:
            self.metrics.error("upstream_retried")
            return await self.client.send(method, url, headers, body)

    def _failed(
        self,
        upstream: Upstream,
        status: int,
        what: str,
        info: dict[str, Any],
        start: float,
        request: Request,
        raw: bytes,
        release: Any,
        *,
        reached: bool = False,
    ) -> Response:
        """The error answering a request the upstream left unanswered.

        ``reached``: the upstream answered and broke its answer off (not a
        request that never reached it).
        """
        release()
        if status == 504:
            kind = "upstream_timeout"
        else:
            kind = "upstream_failed" if reached else "upstream_unreachable"
        self.metrics.error(kind)
        self.metrics.request(request.url.path, status)
        name = "Anthropic" if upstream == "anthropic" else "OpenAI"
        msg = f"contextwindow proxy: the {name} upstream {what}"
        self._log(
            info | {"status": status, "error": msg, "ms": _ms(start)}, request, raw
        )
        return _error(upstream, status, msg, kind)

    def _log(
        self,
        info: Mapping[str, Any],
        request: Request | None = None,
        raw: bytes = b"",
    ) -> None:
        """One JSON line for a request.

        Its body too, scrubbed, with ``log_bodies`` (none for a request
        refused before its body was read).
        """
        if not log.isEnabledFor(logging.INFO):
            return
        record = {"event": "request", **info}
        if self.config.log_bodies and request is not None:
            secrets = [
                v for k in SECRET_HEADERS if (v := request.headers.get(k)) is not None
            ]
            for v in list(secrets):
                if " " in v:
                    secrets.append(v.split(" ", 1)[1])
            if self.config.api_key:
                secrets.append(self.config.api_key)
            record["body"] = scrub(raw.decode("utf-8", "replace"), secrets)
        log.info(json_line(record))


async def _read_whole(resp: UpstreamResponse) -> bytes | UpstreamError:
    """The answer's body, or what broke it."""
    try:
        return b"".join([chunk async for chunk in resp.aiter_raw()])
    except UpstreamError as exc:
        return exc


def _unanswered(exc: UpstreamError) -> tuple[int, str]:
    """The status and words for a request that ``exc`` left unanswered.

    The words say why, as the client library put it (the host and port, and
    the system's reason: refused, no such name, unreachable); never a header
    or a body.

    Example:
        >>> from contextwindow.proxy._http import ConnectError
        >>> _unanswered(ConnectError("cannot connect to h:443: refused"))
        (502, 'cannot be reached (ConnectError: cannot connect to h:443: refused)')
    """
    if isinstance(exc, UpstreamTimeout):
        return 504, "did not answer in time"
    why = str(exc)
    kind = type(exc).__name__
    return (
        502,
        f"cannot be reached ({kind}: {why})" if why else f"cannot be reached ({kind})",
    )


def _answer_headers(
    resp: UpstreamResponse, plan: Plan | None, *, head: bool = False
) -> list[tuple[bytes, bytes]]:
    """The upstream answer's headers for the client, with the plan's figures.

    ``head``: the answer to a ``HEAD``, whose ``content-length`` (the length
    a ``GET`` would get, no body's own) goes as it came.
    """
    anew = ANSWERED_ANEW - {b"content-length"} if head else ANSWERED_ANEW
    out = [(k.lower(), v) for k, v in resp.headers if k.lower() not in anew]
    if plan is not None:
        out += [
            (b"x-contextwindow-tokens-in", b"%d" % plan.tokens_in),
            (b"x-contextwindow-tokens-forwarded", b"%d" % plan.tokens_forwarded),
            (
                b"x-contextwindow-compacted",
                b"%d" % (plan.tokens_in - plan.tokens_forwarded),
            ),
            (b"x-contextwindow-window", b"%d" % plan.window),
        ]
        if not plan.model_known:
            out.append((b"x-contextwindow-model", b"unknown"))
        if plan.conversation is not None:
            out.append((b"x-contextwindow-conversation", plan.conversation.encode()))
    return out


def _broken(exc: UpstreamError) -> tuple[int, str]:
    """The status and words for an answer broken off by ``exc``."""
    if isinstance(exc, UpstreamTimeout):
        return 504, "did not finish its answer in time"
    return 502, f"broke its answer ({type(exc).__name__})"


def _usage(content: bytes) -> dict[bytes, int]:
    """The token counts an answer reports (``usage``)."""
    return {m.group(1): int(m.group(2)) for m in _USAGE.finditer(content)}


def _plan_then_write(
    loop: asyncio.AbstractEventLoop,
    plan: Callable[[], Plan],
    planned: asyncio.Future[Plan],
    written: asyncio.Future[None],
    sending: threading.Event,
) -> None:
    """Plan, then write, in a worker thread.

    The plan goes to the loop at once; its store write (``Plan.commit``)
    follows in the same thread once the loop has sent the request on
    (``sending``; ``SEND_WAIT`` seconds at most), so the write's Python work
    does not hold the interpreter while the loop sends, and its sync
    overlaps the upstream's answer.
    """
    try:
        made = plan()
    except BaseException as exc:  # the loop raises it where the plan is awaited
        loop.call_soon_threadsafe(_settle, planned, None, exc)
        loop.call_soon_threadsafe(_settle, written, None, None)
        return
    loop.call_soon_threadsafe(_settle, planned, made, None)
    failed: BaseException | None = None
    if made.commit is not None:
        sending.wait(SEND_WAIT)
        try:
            made.commit()
        except Exception as exc:
            failed = exc
    loop.call_soon_threadsafe(_settle, written, None, failed)


def _settle(future: asyncio.Future[Any], value: Any, exc: BaseException | None) -> None:
    if future.done():  # its awaiter went (a client that disconnected)
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(value)


class _Commit:
    """A plan's store write, running in the plan's thread while the upstream answers."""

    def __init__(
        self,
        running: asyncio.Future[None] | None,
        metrics: Metrics,
        info: dict[str, Any],
    ):
        self.metrics, self.info = metrics, info
        self.running = running

    async def wait(self) -> None:
        """Until the write is in (the response ends only after it)."""
        running, self.running = self.running, None
        if running is None:
            return
        try:
            await running
        except Exception as exc:
            # Nothing was written: the next request reads the store again.
            self.metrics.error("store")
            self.info["store_error"] = type(exc).__name__


class _BrokenOff(Exception):
    """The upstream broke off a streamed answer: the client's answer is cut too."""


class _Streamed(StreamingResponse):
    """A streamed response with raw header pairs, finished once however it ends.

    An answer the upstream broke off (``_BrokenOff``) ends without its last
    chunk: the server then closes the connection, and the client sees the
    answer cut short (its SDK raises and may retry), as it would without the
    proxy, not a complete answer that stops early.
    """

    def __init__(
        self,
        content: AsyncIterator[bytes],
        status: int,
        headers: list[tuple[bytes, bytes]],
        finish: Any,
    ) -> None:
        super().__init__(content, status_code=status, background=BackgroundTask(finish))
        self.raw_headers = headers

    async def stream_response(self, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": self.status_code,
                "headers": self.raw_headers,
            }
        )
        try:
            async for chunk in self.body_iterator:
                await send(
                    {"type": "http.response.body", "body": chunk, "more_body": True}
                )
        except _BrokenOff:
            return  # no last chunk: the answer is cut, as the upstream's was
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _Whole(Response):
    """An answer read whole, sent with its raw header pairs and length."""

    def __init__(
        self,
        content: bytes,
        status: int,
        headers: list[tuple[bytes, bytes]],
        finish: Any,
    ) -> None:
        super().__init__(content, status_code=status, background=BackgroundTask(finish))
        self.raw_headers = [*headers, (b"content-length", b"%d" % len(content))]


WHOLE_BYTES = 1 << 20
"""The largest answer of known length read whole before it is sent on."""


def _whole(method: str, status: int, headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether an answer is read whole before it is sent on.

    One with a body of known length, at most ``WHOLE_BYTES``, that is not a
    stream of events (an answer to ``HEAD``, a 204 or a 304 has no body: its
    length header says another answer's; a ``HEAD``'s goes as it came,
    ``_answer_headers``).
    """
    if method == "HEAD" or status in (204, 304):
        return False
    size = None
    for k, v in headers:
        name = k.lower()
        if name == b"content-length":
            size = v
        elif name == b"transfer-encoding" or (
            name == b"content-type" and b"event-stream" in v
        ):
            return False
    return size is not None and size.isdigit() and int(size) <= WHOLE_BYTES


class _TooLarge(Exception):
    """A body over the limit: as received, or once decoded (``what``)."""

    def __init__(self, what: str = "") -> None:
        super().__init__(what)
        self.what = what
        """Words after the limit's in the error (`` decoded``), if any."""


class _BadRequest(Exception):
    """A request the proxy answers 400 (the words say what is wrong)."""


@dataclass(frozen=True, slots=True)
class _Undecoded:
    """A body in an encoding the proxy does not read, forwarded as it came."""

    reason: str


DECODED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": 0}
"""The content encodings read before planning, with ``zlib``'s window bits
(``deflate``: zlib's wrapper, or a raw stream as some clients send)."""


def _decoded(raw: bytes, encoding: str | None, limit: int) -> bytes | _Undecoded:
    """``raw`` with its content ``encoding`` undone (gzip, deflate).

    Raises:
        _TooLarge: The decoded body is over ``limit`` bytes (a zip bomb
            stops there).

    Example:
        >>> import gzip
        >>> _decoded(gzip.compress(b'{"a": 1}'), "gzip", 100)
        b'{"a": 1}'
        >>> _decoded(b"data", "br", 100)
        _Undecoded(reason='content-encoding br is not read')
        >>> _decoded(gzip.compress(b"0" * 1000), "gzip", 100)
        Traceback (most recent call last):
        ...
        contextwindow.proxy._app._TooLarge:  decoded
    """
    if encoding is None:
        return raw
    codings = [c.strip().lower() for c in encoding.split(",")]
    for coding in reversed(codings):  # applied in the order listed
        if coding in ("", "identity"):
            continue
        wbits = DECODED.get(coding)
        if wbits is None:
            return _Undecoded(f"content-encoding {coding[:40]} is not read")
        try:
            raw = _inflate(raw, wbits, limit)
        except zlib.error as exc:
            return _Undecoded(f"content-encoding {coding} broken: {exc}"[:200])
    return raw


def _inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """``data`` decompressed by ``zlib`` (``wbits`` 0: with its header or raw).

    Raises:
        _TooLarge: The result is over ``limit`` bytes.
        zlib.error: ``data`` is not whole and well formed.
    """
    if wbits == 0:  # deflate: zlib's wrapper as the HTTP spec says, else raw
        first = data[:2]
        wrapped = (
            len(first) == 2
            and first[0] & 0x0F == 8
            and (int.from_bytes(first, "big") % 31 == 0)
        )
        wbits = zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS
    out: list[bytes] = []
    size = 0
    while True:
        d = zlib.decompressobj(wbits)
        # At most one byte over the limit is made, whatever the ratio.
        chunk = d.decompress(data, limit + 1 - size)
        size += len(chunk)
        if size > limit:
            raise _TooLarge(" decoded")
        out.append(chunk)
        if not d.eof:
            raise zlib.error("the stream ends early")
        data = d.unused_data
        if not data or wbits != 16 + zlib.MAX_WBITS:
            break  # a gzip body may hold several members, one after another
    if data:
        raise zlib.error("bytes after the stream")
    return b"".join(out)


def _conversation_id(request: Request) -> str | None:
    """The request's ``x-conversation-id``, read as UTF-8 (``None``: none).

    Raises:
        _BadRequest: It is not UTF-8.
    """
    for k, v in request.scope["headers"]:
        if k == b"x-conversation-id":
            try:
                return v.decode() or None
            except UnicodeDecodeError:
                raise _BadRequest("the x-conversation-id header is not UTF-8") from None
    return None


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    parts: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        parts.append(chunk)
    return b"".join(parts)


def _upstream_of(request: Request) -> Upstream:
    h = request.headers
    if "anthropic-version" in h or "x-api-key" in h:
        return "anthropic"
    return "openai"


def _join(base: str, path: str, query: str) -> str:
    base = base.rstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        base = base[:-3]
    return base + path + (f"?{query}" if query else "")


def _error(
    upstream: Upstream,
    status: int,
    message: str,
    code: str | None = None,
    param: str | None = None,
) -> Response:
    return Response(
        error_body(upstream, status, message, code, param),
        status_code=status,
        media_type="application/json",
        headers={"x-contextwindow-error": "1"},
    )


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def create_app(config: ProxyConfig | None = None) -> Starlette:
    """The proxy as an ASGI app (serve it with uvicorn).

    Example:
        >>> from starlette.testclient import TestClient
        >>> app = create_app(ProxyConfig(store=None))
        >>> with TestClient(app) as client:
        ...     client.get("/healthz").json()
        {'status': 'ok'}
    """
    proxy = _Proxy(config or ProxyConfig())
    routes = [
        Route("/healthz", proxy.healthz, methods=["GET"]),
        Route("/metrics", proxy.metrics_text, methods=["GET"]),
        *(Route(path, proxy.fitted, methods=["POST"]) for path in APIS),
        Route(
            "/{path:path}",
            proxy.other,
            methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"],
        ),
    ]
    app = Starlette(routes=routes, lifespan=proxy.lifespan)
    app.state.proxy = proxy
    return app
