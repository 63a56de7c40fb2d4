"""End to end: ``OpenAICompatibleSummarizer`` against a real llama.cpp server.

The server (``conftest.llama_server``) runs SmolLM2-135M-Instruct: so small a
model writes poor summaries, which is the point here. What is tested is the
real HTTP path (bearer key, request and answer shapes), the errors and
timeouts a user meets, the async client, and that the facts a real model
drops are measured and re-attached.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.llama import LlamaServer, free_port

from contextwindow import Message, ToolCall, fit
from contextwindow.errors import SummarizerError
from contextwindow.strategies import Summarize
from contextwindow.summarizers import (
    FactCheck,
    OpenAICompatibleSummarizer,
    extract_facts,
    is_summary,
    summary_facts,
    summary_sources,
)
from contextwindow.tokens import HeuristicTokenizer, TokenCounter


def session() -> list[Message]:
    """A short agent session full of facts a summary must keep."""

    def bash(cid: str, cmd: str) -> Message:
        return Message.assistant(
            tool_calls=[ToolCall(cid, "Bash", json.dumps({"command": cmd}))]
        )

    return [
        Message.system("You are a coding agent."),
        Message.user(
            "The tests in tests/test_ratelimit.py fail. Fix gateway/ratelimit.py."
        ),
        bash("c1", "python -m pytest tests/test_ratelimit.py -q"),
        Message.tool(
            "c1",
            "FAILED tests/test_ratelimit.py::test_capacity\n"
            "3 failed, 1 passed in 0.04s",
        ),
        Message.assistant(
            "The bucket checks `tokens > n`; it should be `>=`. Fixing it."
        ),
        Message.assistant(
            tool_calls=[
                ToolCall(
                    "c2", "Edit", json.dumps({"file_path": "gateway/ratelimit.py"})
                )
            ]
        ),
        Message.tool("c2", "The file gateway/ratelimit.py has been updated."),
        bash("c3", "python -m pytest tests/test_ratelimit.py -q"),
        Message.tool("c3", "4 passed in 0.02s"),
        Message.assistant("All 4 tests pass; the regression came from commit 8f2c91d."),
        Message.user("Great. Now update CHANGELOG.md."),
    ]


def summarizer(server: LlamaServer, **kw: object) -> OpenAICompatibleSummarizer:
    settings: dict[str, object] = {"timeout": 120.0, "retries": 0}
    settings.update(kw)
    return OpenAICompatibleSummarizer(
        server.model,
        base_url=settings.pop("base_url", server.base_url),  # type: ignore[arg-type]  # from kw
        api_key_env=server.key_env,
        **settings,  # type: ignore[arg-type]  # the remaining settings
    )


class TestLlamaServer:
    def test_a_poor_summary_has_its_facts_reattached(
        self, llama_server: LlamaServer
    ) -> None:
        """The model answers, drops facts; they are measured and re-attached."""
        conv = session()[1:-1]
        check = summarizer(llama_server).check(conv, max_tokens=250)
        assert check.summary.strip(), "the model said nothing"
        assert check.text.startswith(check.summary.strip())
        assert check.facts == extract_facts(conv)
        assert check.dropped, "the 135M model kept every fact (unexpected)"
        assert check.kept_share < 1
        assert check.attached == check.dropped, "room enough for every fact"
        assert "Facts from the summarized messages:" in check.text
        assert not check.facts.missing_from(check.text), "a fact was lost"

    def test_the_strategy_end_to_end(self, llama_server: LlamaServer) -> None:
        """Summarize with the LLM summarizer: valid, fits, facts and sources kept."""
        conv = session()
        counter = TokenCounter(HeuristicTokenizer(), "anthropic")
        total = counter.messages(conv)
        strategy = Summarize(summarizer(llama_server), keep_recent=1, max_tokens=200)
        fitted = fit(conv, limit=total * 3 // 4, strategy=strategy, tokenizer=counter)
        assert fitted.report.fits
        assert fitted.report.stages[0] == "Summarize"
        (summary,) = [m for m in fitted.messages if is_summary(m)]
        assert fitted.messages[1] is summary
        sources = summary_sources(summary)
        assert sources == tuple(m.id for m in conv[1 : 1 + len(sources)])
        held = summary_facts(summary)
        assert held
        assert not held.missing_from(summary.text)
        # Room was short of the whole record: what stayed is what matters most.
        kept = held.keys()
        assert any(f.kind == "path" for f in held)
        assert kept <= extract_facts(conv[1:-1]).keys()

    def test_async(self, llama_server: LlamaServer) -> None:
        """asummarize and acheck work, two requests at once."""
        s = summarizer(llama_server)
        conv = session()[1:5]

        async def both() -> tuple[str, FactCheck]:
            return await asyncio.gather(
                s.asummarize(conv, max_tokens=40), s.acheck(conv[:2], max_tokens=40)
            )

        first, second = asyncio.run(both())
        assert first.strip()
        assert second.summary.strip()
        assert second.facts == extract_facts(conv[:2])

    def test_a_tiny_timeout(self, llama_server: LlamaServer) -> None:
        """No answer in time: SummarizerError after every attempt, no status."""
        s = summarizer(llama_server, timeout=0.001, retries=1, backoff=0.01)
        with pytest.raises(SummarizerError) as info:
            s.summarize(session()[1:3], max_tokens=40)
        err = info.value
        assert err.status is None
        assert err.endpoint == s.endpoint
        assert "no answer within 0.001 s" in str(err)
        assert "after 2 attempts" in str(err)

    def test_a_wrong_port(self, llama_server: LlamaServer) -> None:
        """Nothing listening: SummarizerError naming the endpoint."""
        base = f"http://127.0.0.1:{free_port()}/v1"
        s = summarizer(llama_server, base_url=base)
        with pytest.raises(SummarizerError, match=r"chat/completions: ConnectError"):
            s.summarize(session()[1:3])

    def test_a_wrong_path(self, llama_server: LlamaServer) -> None:
        """A 404 fails at once, naming the endpoint and the status."""
        s = summarizer(
            llama_server, base_url=llama_server.base_url + "/nope", retries=3
        )
        with pytest.raises(SummarizerError) as info:
            s.summarize(session()[1:3])
        assert info.value.status == 404
        assert "/v1/nope/chat/completions: HTTP 404" in str(info.value)
        assert "attempt" not in str(info.value), "a 404 is not retried"

    def test_a_wrong_key_is_never_shown(
        self, llama_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """401: the error says which variable to set, and holds no key."""
        monkeypatch.setenv(llama_server.key_env, "sk-wrong-key-123")
        s = summarizer(llama_server)
        with pytest.raises(SummarizerError) as info:
            s.summarize(session()[1:3])
        text = str(info.value)
        assert info.value.status == 401
        assert f"is {llama_server.key_env} set to a valid key?" in text
        assert "sk-wrong-key-123" not in text + repr(s) + repr(info.value)
