from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from contextwindow.errors import ArgumentValueError, UnknownModelWarning
from contextwindow.inspection import (
    PREVIEW_CHARS,
    MessageSize,
    RoleStats,
    ToolStats,
    inspect_messages,
)
from contextwindow.messages import Message, ToolCall, ToolResult, ToolSpec
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter, count_messages
from contextwindow.tokens.counting import OPENAI_TOOLS_SYSTEM_DISCOUNT

# FakeTokenizer counts words; OpenAI framing is 3 per message plus the role's
# count, and 3 per tool call plus its name and arguments.
CONV = [
    Message.system("Be brief."),  # 3 + 1 + 2 = 6
    Message.user("Find flights and the time please"),  # 3 + 1 + 6 = 10
    Message.assistant(  # 4 + (3 + 1 + 4) + (3 + 1 + 1) = 17
        tool_calls=[
            ToolCall("c1", "search", '{"q": "x y z"}'),
            ToolCall("c2", "clock", "{}"),
        ]
    ),
    Message(  # one wire message per result: (3 + 1) * 2 + 8 + 1 = 17
        "tool",
        (
            ToolResult("c1", "one two three four five six seven eight"),
            ToolResult("c2", "noon", is_error=True),
        ),
    ),
    Message.assistant("Two flights at noon."),  # 3 + 1 + 4 = 8
]
TOTAL = 6 + 10 + 17 + 17 + 8 + 3  # + 3 reply priming
WEATHER: dict[str, Any] = {
    "name": "weather",
    "description": "Weather now",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


class TestInspectMessages:
    def test_totals_and_roles(self) -> None:
        """by_role counts messages and sums their tokens, in order of first use."""
        r = inspect_messages(CONV, model="gpt-4o", tokenizer=FakeTokenizer())
        assert r.tokens == TOTAL
        assert (r.messages, r.units, r.incomplete_units) == (5, 4, 0)
        assert r.by_role == (
            RoleStats("system", 1, 6),
            RoleStats("user", 1, 10),
            RoleStats("assistant", 2, 25),
            RoleStats("tool", 1, 17),
        )
        assert sum(s.tokens for s in r.by_role) == r.tokens - 3
        assert (r.tokenizer, r.exact, r.provider) == ("fake", True, "openai")
        assert (r.model, r.context_window) == ("gpt-4o", 128_000)

    def test_by_tool_splits_parallel_calls_and_results(self) -> None:
        """A message's tokens go to its calls (or results) by their size."""
        r = inspect_messages(CONV, tokenizer=FakeTokenizer())
        # Call message 17 split 5:2 -> 12 + 5; result message 17 split 8:1 -> 15 + 2.
        assert r.by_tool == (
            ToolStats("search", 1, 12, 15, 0),
            ToolStats("clock", 1, 5, 2, 1),
        )
        assert r.by_tool[0].tokens == 27
        assert sum(s.tokens for s in r.by_tool) == 17 + 17

    def test_by_tool_adds_up_repeated_calls(self) -> None:
        """Calls to one tool in several exchanges add up; larger tools come first."""
        conv = [
            Message.assistant(tool_calls=[ToolCall("a", "ls", "{}")]),
            Message.tool("a", "x"),
            Message.assistant(tool_calls=[ToolCall("a", "ls", "{}")]),
            Message.tool("a", "y", name="ls"),
            Message.assistant(tool_calls=[ToolCall("b", "cat", "{}")]),
            Message.tool("b", "word " * 20),  # 4 + 20, more than both ls exchanges
        ]
        r = inspect_messages(conv, tokenizer=FakeTokenizer())
        assert [(s.name, s.calls) for s in r.by_tool] == [("cat", 1), ("ls", 2)]
        ls = r.by_tool[1]
        assert (ls.call_tokens, ls.result_tokens) == (2 * 9, 2 * 5)

    def test_largest_ordering(self) -> None:
        """Largest first, ties by position; tool calls preview as name(arguments)."""
        r = inspect_messages(CONV, tokenizer=FakeTokenizer(), top=3)
        assert r.largest == (
            MessageSize(2, "assistant", 17, 'search({"q": "x y z"})'),
            MessageSize(3, "tool", 17, "one two three four five six seven eight noon"),
            MessageSize(1, "user", 10, "Find flights and the time please"),
        )
        assert inspect_messages(CONV, tokenizer=FakeTokenizer(), top=0).largest == ()
        with pytest.raises(ArgumentValueError, match=r"^top: expected an int >= 0"):
            inspect_messages(CONV, tokenizer=FakeTokenizer(), top=-1)

    def test_long_preview_is_cut(self) -> None:
        """A preview collapses whitespace and is cut to PREVIEW_CHARS, with "…"."""
        text = "word\n\n  " * 40
        r = inspect_messages([Message.user(text)], tokenizer=FakeTokenizer())
        preview = r.largest[0].preview
        assert len(preview) == PREVIEW_CHARS
        assert preview.endswith("…")
        assert preview.startswith("word word word")

    def test_orphan_result_is_incomplete(self) -> None:
        """An orphan result and an unanswered call each count as incomplete."""
        conv = [
            Message.tool("zz", "lost"),
            Message.user("hi"),
            Message.assistant(tool_calls=[ToolCall("c9", "f", "{}")]),
        ]
        r = inspect_messages(conv, tokenizer=FakeTokenizer())
        assert (r.units, r.incomplete_units) == (3, 2)
        assert [s.name for s in r.by_tool] == ["f"]
        assert r.by_tool[0].result_tokens == 0

    @pytest.mark.parametrize("tokenizer", [None, FakeTokenizer()])
    def test_total_is_count_messages_with_tools(self, tokenizer: Any) -> None:
        """With a system message and tools the total is count_messages' total."""
        tools = [ToolSpec("search", "Search flights.", {"type": "object"})]
        r = inspect_messages(CONV, model="gpt-4o", tokenizer=tokenizer, tools=tools)
        counted = count_messages(CONV, tokenizer or "gpt-4o", tools=tools)
        assert r.tokens == counted

    @pytest.mark.parametrize(
        ("body", "provider", "expected"),
        [
            (
                {
                    "model": "gpt-4o",
                    "messages": [
                        {"role": "system", "content": "You are terse."},
                        {"role": "user", "content": "Weather in Paris?"},
                    ],
                    "tools": [{"type": "function", "function": WEATHER}],
                },
                "openai",
                48,
            ),
            (
                {
                    "model": "claude-sonnet-4-5",
                    "system": "You are terse.",
                    "max_tokens": 100,
                    "messages": [{"role": "user", "content": "Weather in Paris?"}],
                    "tools": [
                        {
                            "name": WEATHER["name"],
                            "description": WEATHER["description"],
                            "input_schema": WEATHER["parameters"],
                        }
                    ],
                },
                "anthropic",
                413,
            ),
        ],
    )
    def test_a_bodys_tools_count(
        self, body: dict[str, Any], provider: Any, expected: int
    ) -> None:
        """A request body's own tools count when no tools are given."""
        model = body["model"]
        given = count_messages(body, model, provider=provider, tools=body["tools"])
        assert given == expected
        assert count_messages(body, model, provider=provider) == given
        r = inspect_messages(body, model=model, provider=provider)
        assert (r.tokens, r.tool_schema_tokens > 0) == (given, True)
        other = [ToolSpec("ls", "List files.", {"type": "object"})]
        r = inspect_messages(body, model=model, provider=provider, tools=other)
        assert r.tokens == count_messages(body, model, provider=provider, tools=other)
        assert r.tokens != given  # the tools given replace the body's

    def test_live_from_and_tools(self) -> None:
        """live_from puts the live tail's size in meta; tool schemas count in both."""
        tools = [ToolSpec("search", "Search flights.", {"type": "object"})]
        schema = TokenCounter(FakeTokenizer()).tools(tools)
        assert schema > 0
        given = {"compactions": 1}
        r = inspect_messages(
            CONV, tokenizer=FakeTokenizer(), tools=tools, meta=given, live_from=3
        )
        assert r.tool_schema_tokens == schema
        # With a system message, OpenAI's adjustment for tools counts too.
        assert r.tokens == count_messages(CONV, FakeTokenizer(), tools=tools)
        assert r.tokens == TOTAL + schema - OPENAI_TOOLS_SYSTEM_DISCOUNT
        assert r.meta == {
            "compactions": 1,
            "live_messages": 2,
            "live_tokens": 17 + 8 + 3 + schema,
        }
        assert given == {"compactions": 1}  # the caller's dict is not changed

    def test_provider_framing(self) -> None:
        """Anthropic framing counts no role and no reply priming."""
        conv = [Message.user("a b c")]
        assert inspect_messages(conv, tokenizer=FakeTokenizer()).tokens == 10
        r = inspect_messages(conv, tokenizer=FakeTokenizer(), provider="anthropic")
        assert (r.tokens, r.provider) == (6, "anthropic")

    def test_default_model_and_tokenizer(self) -> None:
        """Without a model or tokenizer, gpt-4o and its exact o200k_base apply."""
        r = inspect_messages([Message.user("Hello there!")])
        assert (r.model, r.tokenizer, r.exact, r.max_output_tokens) == (
            "gpt-4o",
            "o200k_base",
            True,
            16_384,
        )

    def test_to_dict(self) -> None:
        """to_dict is JSON-ready and adds usage, remaining and per-tool totals."""
        r = inspect_messages(CONV, model="gpt-4o", tokenizer=FakeTokenizer())
        d = json.loads(json.dumps(r.to_dict()))
        assert d["usage"] == round(TOTAL / 128_000, 6)
        assert d["remaining"] == 128_000 - TOTAL
        assert d["by_tool"][0] == {
            "name": "search",
            "calls": 1,
            "call_tokens": 12,
            "result_tokens": 15,
            "errors": 0,
            "tokens": 27,
        }
        assert d["by_role"][0] == {"role": "system", "messages": 1, "tokens": 6}

    def test_unknown_model_warns_once(self) -> None:
        """An unknown model warns once, by its name, and keeps that name."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = inspect_messages([Message.user("word " * 9000)], model="my-own-llm")
        assert [type(w.message) for w in caught] == [UnknownModelWarning]
        assert "my-own-llm" in str(caught[0].message)
        assert (r.model, r.context_window, r.exact) == ("my-own-llm", 8192, False)
        assert r.tokenizer == "o200k_base (approximate for my-own-llm)"
        assert r.remaining < 0
        assert r.usage > 1.0
        with pytest.warns(UnknownModelWarning, match="my-own-llm"):
            inspect_messages([], model="my-own-llm", tokenizer=FakeTokenizer())


class TestTokenizerOverrideLabel:
    """A tokenizer given for a model is exact only when it is the model's own."""

    @pytest.mark.parametrize(
        ("model", "encoding", "why"),
        [
            ("claude-sonnet-4-5", "o200k_base", "not claude-sonnet-4-5's tokenizer"),
            ("gemini-2.5-pro", "o200k_base", "not gemini-2.5-pro's tokenizer"),
            ("gpt-4", "o200k_base", "not gpt-4's tokenizer: cl100k_base"),
            ("gpt-4o", "cl100k_base", "not gpt-4o's tokenizer: o200k_base"),
        ],
    )
    def test_another_models_encoding_is_approximate(
        self, model: str, encoding: str, why: str
    ) -> None:
        """A tiktoken encoding that is not the model's is approximate, saying why;
        the counts are still the encoding's."""
        from contextwindow.tokens import BPETokenizer

        tok = BPETokenizer(encoding)
        r = inspect_messages([Message.user("Hello there!")], model=model, tokenizer=tok)
        assert r.exact is False
        assert r.tokenizer == f"{encoding} ({why})"
        assert r.tokens == count_messages([Message.user("Hello there!")], tok)

    @pytest.mark.parametrize(
        ("model", "encoding"), [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")]
    )
    def test_the_models_own_encoding_is_exact(self, model: str, encoding: str) -> None:
        """The model's own encoding, given, is exact and named as it is."""
        from contextwindow.tokens import BPETokenizer

        tok = BPETokenizer(encoding)
        r = inspect_messages([Message.user("Hi")], model=model, tokenizer=tok)
        assert (r.tokenizer, r.exact) == (encoding, True)

    def test_a_tokenizer_of_its_own_says_whether_it_is_exact(self) -> None:
        """A tokenizer that is no tiktoken encoding (a tokenizer.json, the user's
        own) is taken at its word: which model's it is cannot be told."""
        r = inspect_messages(
            [Message.user("Hi")], model="claude-sonnet-4-5", tokenizer=FakeTokenizer()
        )
        assert (r.tokenizer, r.exact) == ("fake", True)
        r = inspect_messages(
            [Message.user("Hi")],
            model="gpt-4o",
            tokenizer=FakeTokenizer(exact=False),
        )
        assert (r.tokenizer, r.exact) == ("fake", False)
