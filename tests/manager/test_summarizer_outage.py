"""A summarizer outage degrades a compaction; it never fails the turn.

The summarizer is the real ``OpenAICompatibleSummarizer`` over loopback:
against a port nothing listens on, and against a server that answers 503
and counts the requests it was sent.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest
from tests.loopback import serving

from contextwindow import AsyncContextManager, Message
from contextwindow.manager import Event
from contextwindow.strategies import DropOldest, Pipeline, Summarize
from contextwindow.summarizers import OpenAICompatibleSummarizer
from contextwindow.testing import FakeTokenizer

from ._support import manager, words


class Down(BaseHTTPRequestHandler):
    """Answers every POST with 503, counting them."""

    hits: ClassVar[int] = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).hits += 1
        body = b'{"error": {"message": "overloaded"}}'
        self.send_response(503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def overloaded() -> Iterator[str]:
    """A loopback server answering 503 to everything; its base URL."""
    Down.hits = 0
    with serving(Down) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def unreachable() -> str:
    """A loopback base URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def llm(base_url: str, **kw: Any) -> OpenAICompatibleSummarizer:
    kw.setdefault("retries", 0)
    kw.setdefault("timeout", 2.0)
    return OpenAICompatibleSummarizer("m", base_url=base_url, api_key_env=None, **kw)


def conversation(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += [
            Message.user(words(40, f"u{i}-")),
            Message.assistant(words(40, f"a{i}-")),
        ]
    return out


class TestOutage:
    def test_prepare_goes_on_without_the_summary(self, unreachable: str) -> None:
        """Endpoint down: later stages meet the budget; event and report say so."""
        m = manager(1000, strategy=Pipeline(Summarize(llm(unreachable)), DropOldest()))
        events: list[Event] = []
        m.subscribe(events.append)
        m.push_many(conversation(15))  # 1,200 tokens in a 1,000-token window
        request = m.prepare()
        assert request.tokens <= request.budget
        assert request.report is not None
        (warning,) = request.report.warnings
        assert warning.startswith("Summarize skipped: POST http://127.0.0.1:")
        assert "ConnectError" in warning
        assert request.report.totals()["dropped"][0] >= 1
        assert [
            e.data["warning"] for e in events if e.kind == "compaction_warning"
        ] == [warning]
        assert len(m.history) == 30

    def test_a_summarize_strategy_alone(self, unreachable: str) -> None:
        """Summarize as the whole strategy: fit's own fallback meets the budget."""
        m = manager(1000, strategy=Summarize(llm(unreachable)))
        m.push_many(conversation(15))
        request = m.prepare()
        assert request.tokens <= request.budget
        assert request.report is not None
        assert len(request.report.warnings) == 1

    def test_async(self, unreachable: str) -> None:
        """The async manager degrades the same way."""
        strategy = Pipeline(Summarize(llm(unreachable)), DropOldest())

        async def run() -> Any:
            m = AsyncContextManager(
                token_limit=1000, tokenizer=FakeTokenizer(), strategy=strategy
            )
            await m.push_many(conversation(15))
            return await m.prepare()

        request = asyncio.run(run())
        assert request.tokens <= request.budget
        assert request.report.warnings[0].startswith("Summarize skipped")

    def test_the_next_compaction_tries_again_after_a_wait(
        self, overloaded: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Within the cooldown no request is sent; after it, the summarizer is tried."""
        now = [1000.0]
        monkeypatch.setattr(time, "monotonic", lambda: now[0])
        summarizer = llm(overloaded, cooldown=60)
        m = manager(1000, strategy=Pipeline(Summarize(summarizer), DropOldest()))
        m.push_many(conversation(15))
        m.prepare()
        assert Down.hits == 1
        m.push_many(conversation(8))  # over again: a new compaction
        second = m.prepare()
        assert Down.hits == 1  # in the cooldown: not sent
        assert second.report is not None
        assert "not tried" in second.report.warnings[0]
        assert second.tokens <= second.budget
        now[0] += 61
        m.push_many(conversation(8))
        third = m.prepare()
        assert Down.hits == 2  # tried again
        assert third.report is not None
        assert "HTTP 503" in third.report.warnings[0]
