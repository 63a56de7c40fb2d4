from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings

from contextwindow.messages import Message, Thinking, ToolCall, ToolResult, units
from contextwindow.testing import (
    FakeTokenizer,
    conversations,
    messages_strategy,
    parts_strategy,
)
from contextwindow.tokens.base import Tokenizer

# These check the generators themselves, not a library invariant: a few hundred
# examples show their shape; the invariants' own tests draw 1,000 under CI.
GENERATOR_CHECK = settings(max_examples=300)


class TestFakeTokenizer:
    def test_counts_words(self) -> None:
        """It counts whitespace-separated words; empty text is 0."""
        tok = FakeTokenizer()
        assert [tok.count(t) for t in ["", "one", " two  words\n", "a\tb\nc"]] == [
            0,
            1,
            2,
            3,
        ]

    def test_records_calls(self) -> None:
        """Every counted text is recorded in order, and reset clears them."""
        tok = FakeTokenizer()
        tok.count("a")
        tok.count("b c")
        assert tok.calls == ["a", "b c"]
        tok.reset()
        assert tok.calls == []

    def test_is_a_tokenizer(self) -> None:
        """It satisfies the Tokenizer protocol, with a configurable name and exact."""
        tok = FakeTokenizer("words", exact=False)
        assert isinstance(tok, Tokenizer)
        assert (tok.name, tok.exact) == ("words", False)
        assert "words" in repr(tok)


class TestConversations:
    @GENERATOR_CHECK
    @given(conversations())
    def test_structure_is_valid(self, conv: list[Message]) -> None:
        """Every unit is complete; system only first; user opens; ids replay."""
        assert all(u.complete for u in units(conv))
        assert all(m.role != "system" for m in conv[1:])
        rest = conv[1:] if conv and conv[0].role == "system" else conv
        assert not rest or rest[0].role == "user"
        assert [m.id for m in conv] == [f"m{i}" for i in range(len(conv))]
        for prev, cur in itertools.pairwise(rest):
            assert not (prev.role == cur.role == "user")

    @GENERATOR_CHECK
    @given(conversations(min_turns=2, max_turns=3, system=True))
    def test_turn_bounds(self, conv: list[Message]) -> None:
        """min_turns, max_turns and system=True are honoured."""
        assert conv[0].role == "system"
        assert 2 <= sum(m.role == "user" for m in conv) <= 3

    @GENERATOR_CHECK
    @given(conversations(tools=False, system=False))
    def test_without_tools(self, conv: list[Message]) -> None:
        """tools=False generates no tool calls or tool messages."""
        assert all(m.role in ("user", "assistant") for m in conv)
        assert not any(m.tool_calls for m in conv)

    @GENERATOR_CHECK
    @given(conversations())
    def test_thinking_comes_first(self, conv: list[Message]) -> None:
        """Thinking parts only open assistant messages."""
        for m in conv:
            kinds = [isinstance(p, Thinking) for p in m.parts]
            if any(kinds):
                assert m.role == "assistant"
                assert kinds[0]

    def test_covers_the_hard_cases(self) -> None:
        """Across many examples: reused ids, batched results, CJK, images, pins."""
        seen: Counter[str] = Counter()

        @settings(max_examples=200)
        @given(conversations())
        def look(conv: list[Message]) -> None:
            ids = [c.id for m in conv for c in m.tool_calls]
            seen["reused ids"] += len(ids) != len(set(ids))
            seen["parallel"] += any(len(m.tool_calls) > 1 for m in conv)
            seen["batched"] += any(len(m.tool_results) > 1 for m in conv)
            seen["cjk"] += any("東京" in m.text or "北京" in m.text for m in conv)
            seen["images"] += any(p.kind == "image" for m in conv for p in m.parts)
            seen["empty"] += any(not m.text for m in conv if m.role == "user")
            seen["pinned"] += any(m.pinned for m in conv)
            seen["agents"] += any(m.agent for m in conv)
            seen["thinking"] += any(
                isinstance(p, Thinking) for m in conv for p in m.parts
            )
            seen["errors"] += any(r.is_error for m in conv for r in m.tool_results)

        look()
        for case in (
            "reused ids",
            "parallel",
            "batched",
            "cjk",
            "images",
            "empty",
            "pinned",
            "agents",
            "thinking",
            "errors",
        ):
            assert seen[case] > 0, case


class TestMessagesStrategy:
    @GENERATOR_CHECK
    @given(messages_strategy())
    def test_builds_messages(self, m: Message) -> None:
        """It generates Message values with tuple parts."""
        assert isinstance(m, Message)
        assert isinstance(m.parts, tuple)

    @GENERATOR_CHECK
    @given(parts_strategy())
    def test_parts_are_valid(self, p: object) -> None:
        """Tool calls carry JSON arguments; tool results hold text or parts."""
        if isinstance(p, ToolCall):
            assert isinstance(p.input, dict)
        if isinstance(p, ToolResult) and not isinstance(p.content, str):
            assert all(q.kind in ("text", "image") for q in p.content)
