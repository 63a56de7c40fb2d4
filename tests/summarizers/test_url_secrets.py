"""Credentials in ``base_url``, and a key given as ``api_key_env``, never shown.

``http://user:TOKEN@host/v1`` and ``...?api-key=TOKEN`` are secrets as the
key is: no piece of the token in the ``SummarizerError`` (text, repr,
``endpoint``, traceback, chain), the summarizer's ``repr``, any log record
at DEBUG (``httpx`` logs each request's URL at INFO), nor, through a
manager's pipeline, the report's warnings and the ``compaction_warning``
event. The userinfo goes out as the ``Basic`` header ``httpx`` made of it;
a query stays in the URL, after the endpoint's path.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging

import httpx
import pytest
from tests.secret_leaks import exception_text, leaked

from contextwindow import ContextManager, Message
from contextwindow.errors import ArgumentValueError, SummarizerError
from contextwindow.strategies import DropOldest, Pipeline, Summarize
from contextwindow.summarizers import AnthropicSummarizer, OpenAICompatibleSummarizer

TOKEN = "b3arerT0kenInUrl9876"
KEY = "sk-proj-AbCdEfGh1234567890XyZwVuTsRq"
MESSAGES = [
    Message.user("hello, please fix the bug in src/a.py"),
    Message.assistant("ok"),
]


class Echo:
    """A server that refuses every request, echoing its URL and credentials."""

    def __init__(self, status: int = 401) -> None:
        self.status = status
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        said = (
            f"bad credentials {request.headers.get('authorization')} at {request.url}"
        )
        return httpx.Response(
            self.status,
            json={"error": {"message": said + f" (token {TOKEN})"}},
            headers={"x-echo": request.headers.get("authorization", "")},
        )


BASES = {
    "userinfo": f"http://user:{TOKEN}@127.0.0.1:9/v1",
    "query": f"http://127.0.0.1:9/v1?api-key={TOKEN}",
}


@pytest.mark.parametrize("kind", BASES, ids=BASES.keys())
@pytest.mark.parametrize("cls", [OpenAICompatibleSummarizer, AnthropicSummarizer])
@pytest.mark.parametrize("status", [401, 500])
class TestBaseUrlCredentials:
    def test_no_piece_anywhere(
        self,
        kind: str,
        cls: type[OpenAICompatibleSummarizer],
        status: int,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Not in the error, its endpoint, the repr, nor any DEBUG record."""
        caplog.set_level(logging.DEBUG)
        # Another library (huggingface_hub) may have quietened httpx's logger.
        caplog.set_level(logging.DEBUG, logger="httpx")
        base = (
            BASES[kind]
            if cls is OpenAICompatibleSummarizer
            else BASES[kind].replace("/v1", "")
        )
        summ = cls(
            model="m",
            base_url=base,
            api_key_env=None,
            retries=0,
            cooldown=0,
            transport=httpx.MockTransport(Echo(status)),
        )
        with pytest.raises(SummarizerError) as info:
            summ.summarize(MESSAGES)
        err = info.value
        assert err.endpoint is not None
        assert not leaked([TOKEN], exception_text(err), err.endpoint, repr(summ))
        assert not leaked([TOKEN], caplog.text)
        assert any("HTTP Request: POST" in r.getMessage() for r in caplog.records)

    def test_async_too(
        self,
        kind: str,
        cls: type[OpenAICompatibleSummarizer],
        status: int,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """``asummarize`` likewise."""
        caplog.set_level(logging.DEBUG)
        # Another library (huggingface_hub) may have quietened httpx's logger.
        caplog.set_level(logging.DEBUG, logger="httpx")
        summ = cls(
            model="m",
            base_url=BASES[kind],
            api_key_env=None,
            retries=0,
            cooldown=0,
            transport=httpx.MockTransport(Echo(status)),
        )
        with pytest.raises(SummarizerError) as info:
            asyncio.run(summ.asummarize(MESSAGES))
        assert not leaked([TOKEN], exception_text(info.value), caplog.text)


class TestWhatIsSent:
    def test_userinfo_is_a_basic_header(self) -> None:
        """The URL sent has no userinfo; the header is what httpx made of it."""
        echo = Echo()
        summ = OpenAICompatibleSummarizer(
            model="m",
            base_url=f"http://us%40er:{TOKEN}@127.0.0.1:9/v1",
            retries=0,
            cooldown=0,
            transport=httpx.MockTransport(echo),
        )
        with pytest.raises(SummarizerError):
            summ.summarize(MESSAGES)
        (sent,) = echo.requests
        assert str(sent.url) == "http://127.0.0.1:9/v1/chat/completions"
        pair = base64.b64encode(f"us@er:{TOKEN}".encode()).decode()
        assert sent.headers["authorization"] == f"Basic {pair}"

    def test_query_after_the_path(self) -> None:
        """A query in base_url stays one, after /chat/completions."""
        echo = Echo()
        summ = OpenAICompatibleSummarizer(
            model="m",
            base_url=f"http://127.0.0.1:9/v1/?api-key={TOKEN}&api-version=2",
            retries=0,
            cooldown=0,
            transport=httpx.MockTransport(echo),
        )
        assert summ.endpoint == (
            f"http://127.0.0.1:9/v1/chat/completions?api-key={TOKEN}&api-version=2"
        )
        with pytest.raises(SummarizerError) as info:
            summ.summarize(MESSAGES)
        (sent,) = echo.requests
        assert sent.url.path == "/v1/chat/completions"
        assert sent.url.params["api-key"] == TOKEN
        assert info.value.endpoint == (
            "http://127.0.0.1:9/v1/chat/completions?api-key=***&api-version=2"
        )
        anthropic = AnthropicSummarizer(model="m", base_url="http://h:1?v=2")
        assert anthropic.endpoint == "http://h:1/v1/messages?v=2"


class TestRefusedAtOnce:
    @pytest.mark.parametrize(
        "base",
        [
            f"http://user:{TOKEN}@127.0.0.1:99999/v1",
            f"ftp://user:{TOKEN}@127.0.0.1/v1",
            f"http://user:{TOKEN}@127.0.0.1/v1 ",
            f"http://user:{TOKEN}@[::1/v1",
        ],
    )
    def test_bad_base_url(self, base: str) -> None:
        """A base_url no request can go to is refused, its token not shown."""
        with pytest.raises(ArgumentValueError, match=r"^base_url: ") as info:
            OpenAICompatibleSummarizer(model="m", base_url=base)
        assert not leaked([TOKEN], exception_text(info.value))

    @pytest.mark.parametrize("cls", [OpenAICompatibleSummarizer, AnthropicSummarizer])
    @pytest.mark.parametrize("env", [KEY, f"${KEY}", "MY KEY", "1KEY"])
    def test_key_given_as_its_variable(
        self, cls: type[OpenAICompatibleSummarizer], env: str
    ) -> None:
        """api_key_env takes a variable's name; anything else is not echoed."""
        with pytest.raises(
            ArgumentValueError, match=r"^api_key_env: expected the name"
        ) as info:
            cls(model="m", api_key_env=env)
        assert not leaked([env], exception_text(info.value))


class TestThroughAManager:
    def test_report_and_events(self, caplog: pytest.LogCaptureFixture) -> None:
        """The pipeline's warning and the compaction_warning event hold no token."""
        caplog.set_level(logging.DEBUG)
        # Another library (huggingface_hub) may have quietened httpx's logger.
        caplog.set_level(logging.DEBUG, logger="httpx")
        summ = OpenAICompatibleSummarizer(
            model="m",
            base_url=f"http://user:{TOKEN}@127.0.0.1:9/v1?key={TOKEN}x",
            api_key_env=None,
            retries=0,
            cooldown=0,
            transport=httpx.MockTransport(Echo(500)),
        )
        events: list[object] = []
        manager = ContextManager(
            "gpt-4o", token_limit=400, strategy=Pipeline(Summarize(summ), DropOldest())
        )
        manager.subscribe(events.append)
        for i in range(40):
            manager.push(Message.user(f"message {i} " + "words " * 20))
            manager.push(Message.assistant("ok " * 10))
        report = manager.prepare().report
        assert report is not None
        assert report.warnings
        shown = json.dumps([str(e) for e in events]) + repr(report)
        assert not leaked([TOKEN], shown, caplog.text, *report.warnings)
