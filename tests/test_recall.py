from __future__ import annotations

import json
from pathlib import Path

from contextwindow import ContextManager, Message, ToolCall, fit
from contextwindow.handles import find_handles
from contextwindow.recalling import (
    RECALL_TOOL,
    answer_recall,
    context_recall,
    recall_tool,
)
from contextwindow.strategies import ClearToolResults, DropOldest, Pipeline
from contextwindow.testing import FakeTokenizer

FILE = "\n".join(f"def handler_{i}(): return {1000 + i}" for i in range(200))


def session(n: int = 6) -> list[Message]:
    conv = [Message.system("You are a coding agent.")]
    for i in range(n):
        args = json.dumps({"file_path": f"src/mod{i}.py"})
        conv += [
            Message.user(f"look at mod{i}"),
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
            Message.tool(f"c{i}", FILE.replace("handler", f"m{i}")),
            Message.assistant(f"mod{i} read"),
        ]
    return conv


def recall_call(handle: str, **extra: object) -> ToolCall:
    return ToolCall("r1", RECALL_TOOL, json.dumps({"handle": handle, **extra}))


class TestRecallThroughFit:
    def test_every_marker_recalls_its_original(self) -> None:
        """A fitted conversation's markers name handles that bring back originals."""
        conv = session()
        fitted = fit(conv, limit=3000, tokenizer=FakeTokenizer())
        handles = [h for m in fitted.messages for h in find_handles(m.text)]
        assert handles, "the fit cut something"
        originals = {m.text for m in conv if m.role == "tool"}
        for h in handles:
            got = answer_recall(conv, recall_call(h, max_tokens=32000))
            assert not got.tool_results[0].is_error
            assert got.text in originals or got.text.startswith("assistant: ")

    def test_cap_and_errors(self) -> None:
        """Over the cap, head and tail come back; bad calls are error results."""
        conv = session(2)
        strategy = Pipeline(ClearToolResults(keep_recent=0, max_share=1), DropOldest())
        fitted = fit(conv, limit=1000, tokenizer=FakeTokenizer(), strategy=strategy)
        (h, *_) = [h for m in fitted.messages for h in find_handles(m.text)]
        capped = context_recall(conv, h, max_tokens=50, tokenizer=FakeTokenizer())
        assert capped is not None
        assert "tokens (" in capped
        assert "cut" in capped
        assert answer_recall(conv, recall_call("0000000000")).tool_results[0].is_error
        bad = ToolCall("r2", RECALL_TOOL, '{"max_tokens": 3}')
        assert "needs a 'handle'" in answer_recall(conv, bad).text

    def test_schemas(self) -> None:
        """One tool, in each provider's shape."""
        assert recall_tool("openai")["function"]["parameters"]["required"] == ["handle"]
        assert recall_tool("anthropic")["input_schema"]["properties"]["handle"]
        assert recall_tool("responses")["parameters"]["type"] == "object"


class TestRecallThroughTheManager:
    def test_answered_from_the_history_after_a_restart(self, tmp_path: Path) -> None:
        """A manager with a store answers a marker's handle, after a restart too."""
        url = f"sqlite:///{tmp_path / 'c.db'}#run"
        m = ContextManager(
            token_limit=5000, tokenizer=FakeTokenizer(), store=url, offer_recall=True
        )
        plain = ContextManager(token_limit=5000, tokenizer=FakeTokenizer())
        assert m.token_estimate() > plain.token_estimate()  # the tool's schema counts
        assert m.recall_schema["function"]["name"] == RECALL_TOOL
        conv = session(10)
        m.push_many(conv)
        p = m.prepare()
        handles = [h for msg in p.conversation for h in find_handles(msg.text)]
        assert handles
        again = ContextManager(
            token_limit=5000, tokenizer=FakeTokenizer(), store=url, offer_recall=True
        )
        tools = [msg.text for msg in conv if msg.role == "tool"]
        for handle in handles:
            call = recall_call(handle, max_tokens=32000)
            answer = again.answer_recall(call)
            assert not answer.tool_results[0].is_error
            # The restarted manager answers from the stored history what the
            # history in memory answers: a result, or a collapsed run of them.
            assert (
                answer.text == answer_recall(conv, call, tokenizer=FakeTokenizer()).text
            )
            assert any(text in answer.text for text in tools)
