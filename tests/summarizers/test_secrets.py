"""No piece of an API key in any error, repr, traceback or log line.

Ten key shapes (a trailing newline, spaces around, a space or a newline
inside, tabs and CRLF, ESC and DEL, non-ASCII, quotes and backslashes, HTML and URL
specials, a very long key) go to a real HTTP server on loopback that answers
401, 403, 429, 500, a 502 HTML page, never (it hangs), or is down; it echoes
the key it received in its error body and in its response headers, whole and
masked the way OpenAI does. Both LLM summarizers, sync and async, with DEBUG
logging of every logger captured. The key, and every 8-character piece of
it, must appear in none of: the exception's text, repr and args, its
formatted traceback with every chained exception, and every log record
(message, arguments, exception text). A key no header can carry is refused
before any request, naming its variable. A key echoed at every offset of a
body longer than what errors show leaves no prefix behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from contextwindow import Message
from contextwindow.errors import SummarizerError
from contextwindow.summarizers import (
    AnthropicSummarizer,
    OpenAICompatibleSummarizer,
    _secret,
)
from contextwindow.summarizers._llm import DETAIL_CHARS, LLMSummarizer

ENV = "CW_SECRETS_TEST_KEY"

SHAPES: dict[str, str] = {
    "trailing newline": "sk-test-SECRET123\n",
    "spaces around": "  sk-test-SECRET456xyz  ",
    "tabs and CRLF": "\tsk-test-CRLF678abc\r\n",
    "quotes and backslash": "sk-\"test\\SECRET901'q",
    "html and url specials": "sk-test-&<>%SECRET234=/+",
    "very long": "sk-" + "".join(f"{i:04x}Ab9_" for i in range(700)),
    "space inside": "sk-test-SEC RET345abc",
    "newline inside": "sk-test-SEC\nRET012abc",
    "control characters": "sk-test-\x1b[0mESC\x7f567abc",
    "non-ascii": "sk-tëst-SECRET789abcü",
}
REFUSED = {"space inside", "newline inside", "control characters", "non-ascii"}

MODES = ["401", "403", "429", "500", "502-html", "hang", "down"]

FILLER = "The request was refused by the upstream service because " * 6

CONV = [Message.user("Fix the parser in src/parse.py."), Message.assistant("Done.")]


def pieces(key: str) -> set[str]:
    """The key and every 8-character piece of it, raw and escaped."""
    out: set[str] = set()
    for form in {key, key.strip(), repr(key)[1:-1], json.dumps(key)[1:-1]}:
        if len(form) < 8:
            out.add(form)
        out.update(form[i : i + 8] for i in range(len(form) - 7))
    return out


class Echo(BaseHTTPRequestHandler):
    """Answers every POST as ``mode`` says, echoing the key it was sent."""

    mode: ClassVar[str] = "401"
    offset: ClassVar[int | None] = None
    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        auth = self.headers.get("authorization") or ""
        key = auth.removeprefix("Bearer ") or self.headers.get("x-api-key") or ""
        self.seen.append(key)
        if self.mode == "hang":
            time.sleep(1.0)
            return
        status = int(self.mode.split("-")[0])
        at = len(FILLER) // 2 if self.offset is None else self.offset
        masked = f"{key[:8]}****{key[-4:]}"
        said = f"{FILLER[:at]}{key}{FILLER[at:]} (key {masked}, {key[:20]}...)"
        if self.mode == "502-html":
            ctype = "text/html"
            data = f"<html><body><h1>502 Bad Gateway</h1><p>{said}</p></body></html>"
        else:
            ctype = "application/json"
            data = json.dumps({"error": {"message": said, "key": key}})
        body = data.encode()
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("x-echo-key", key)
        self.send_header("www-authenticate", f'Bearer error="invalid", key="{masked}"')
        if status == 429:
            self.send_header("retry-after", "0")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class Quiet(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False


@dataclass
class Servers:
    up: str
    down: str


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """The echoing server, and a loopback port nothing listens on."""
    server = Quiet(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    try:
        yield Servers(
            f"http://127.0.0.1:{server.server_address[1]}",
            f"http://127.0.0.1:{dead}",
        )
    finally:
        server.shutdown()
        server.server_close()


class Capture(logging.Handler):
    """Every record of every logger, formatted with its exception and stack."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.formatter = logging.Formatter(
            "%(name)s %(levelname)s %(message)s %(args)r"
        )

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.lines.append(repr(record.msg))


@pytest.fixture
def logs() -> Iterator[Capture]:
    """DEBUG logging of every logger, captured."""
    root = logging.getLogger()
    handler = Capture()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    lowered: list[tuple[logging.Logger, int]] = []
    for name in list(logging.Logger.manager.loggerDict):
        log = logging.getLogger(name)
        if log.level > logging.DEBUG:
            lowered.append((log, log.level))
            log.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
        for log, level in lowered:
            log.setLevel(level)


def texts_of(exc: BaseException) -> list[str]:
    """Everything an exception shows: text, repr, args, traceback, chain."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out += [str(e), repr(e), repr(e.args), repr(vars(e))]
        todo += [e.__cause__, e.__context__]
    return out


def summarizer(kind: str, base: str, retries: int = 0) -> LLMSummarizer:
    cls = OpenAICompatibleSummarizer if kind == "openai" else AnthropicSummarizer
    url = f"{base}/v1" if kind == "openai" else base
    return cls(
        "m", base_url=url, api_key_env=ENV, timeout=0.25, retries=retries,
        backoff=0, cooldown=0,
    )  # fmt: skip


def attempt(s: LLMSummarizer, asynchronous: bool) -> SummarizerError:
    if asynchronous:
        with pytest.raises(SummarizerError) as info:
            asyncio.run(s.asummarize(CONV))
    else:
        with pytest.raises(SummarizerError) as info:
            s.summarize(CONV)
    return info.value


def assert_clean(key: str, shown: list[str]) -> None:
    every = pieces(key)
    short = {p for p in every if len(p) < 8}
    found: set[str] = set()
    for t in shown:
        found |= every & {t[i : i + 8] for i in range(len(t) - 7)}
        found |= {p for p in short if p in t}
    assert not found, f"pieces of the key shown: {sorted(found)[:5]}"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("shape", list(SHAPES))
class TestSecrets:
    def test_no_piece_of_the_key_anywhere(
        self,
        shape: str,
        kind: str,
        asynchronous: bool,
        servers: Servers,
        logs: Capture,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Every answer and outage: the key is in no error and no log line."""
        key = SHAPES[shape]
        monkeypatch.setenv(ENV, key)
        shown: list[str] = []
        for mode in MODES:
            Echo.mode, Echo.offset, Echo.seen = mode, None, []
            base = servers.down if mode == "down" else servers.up
            # Retried where a retry is made (429, 5xx), except the slow hang.
            s = summarizer(kind, base, retries=0 if mode == "hang" else 1)
            err = attempt(s, asynchronous)
            shown += [*texts_of(err), repr(s)]
            if shape in REFUSED:
                assert ENV in str(err)
                assert Echo.seen == []  # refused before any request
            elif mode != "down":
                assert Echo.seen
                assert set(Echo.seen) == {key.strip()}
                if mode in ("401", "403"):
                    assert "[API key]" in str(err)
        shown += logs.lines
        assert any("httpcore" in line for line in logs.lines) or shape in REFUSED
        assert_clean(key, shown)


def offsets(key: str) -> list[int]:
    """Every offset where the key crosses the cut of what errors show, and more."""
    cut = DETAIL_CHARS
    near = range(max(0, cut - len(key) - 2), min(len(FILLER), cut + 2) + 1)
    return sorted({*near, *range(0, len(FILLER) + 1, 23)})


@pytest.mark.parametrize("shape", ["trailing newline", "quotes and backslash"])
@pytest.mark.parametrize("mode", ["401", "502-html"])
def test_echoed_at_every_offset(
    shape: str,
    mode: str,
    servers: Servers,
    logs: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The key at each offset around the cut of a body: no prefix survives."""
    key = SHAPES[shape]
    monkeypatch.setenv(ENV, key)
    s = summarizer("openai", servers.up)
    shown: list[str] = []
    Echo.mode = mode
    try:
        for k, offset in enumerate(offsets(key.strip())):
            Echo.offset = offset
            shown += texts_of(attempt(s, asynchronous=k % 4 == 0))
    finally:
        Echo.offset = None
    assert_clean(key, shown + logs.lines)


def test_long_key_at_every_offset(
    servers: Servers, logs: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key longer than what errors show, at offsets around the cut."""
    key = SHAPES["very long"]
    monkeypatch.setenv(ENV, key)
    s = summarizer("anthropic", servers.up)
    shown: list[str] = []
    Echo.mode = "500"
    try:
        for offset in range(0, len(FILLER) + 1, 29):
            Echo.offset = offset
            shown += texts_of(attempt(s, asynchronous=False))
    finally:
        Echo.offset = None
    assert_clean(key, shown + logs.lines)


@pytest.mark.parametrize("shape", [s for s in SHAPES if s not in REFUSED])
def test_shown_at_every_offset(shape: str) -> None:
    """What the server said, scrubbed then cut, for the key at every offset."""
    key = SHAPES[shape].strip()
    body = FILLER * 2
    shown = [
        _secret.shown(body[:k] + key + body[k:], [key], DETAIL_CHARS)
        for k in range(len(body) + 1)
    ]
    assert_clean(key, shown)
    assert all(len(t) <= DETAIL_CHARS for t in shown)
