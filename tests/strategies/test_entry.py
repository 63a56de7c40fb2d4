"""Every built-in strategy checks its arguments at entry (``strategy_input``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.errors import ArgumentTypeError, InvalidMessageError
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    CollapseRuns,
    CompactLossless,
    Deduplicate,
    DropOldest,
    MaxMessages,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Strategy,
    Summarize,
    TruncateToolInputs,
    TruncateToolResults,
    parse_strategy,
    pinned_flags,
)
from contextwindow.strategies.base import checked_history, strategy_input
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter

BUILT_IN: list[Callable[[], Strategy]] = [
    lambda: SlidingWindow(2),
    DropOldest,
    lambda: MaxMessages(3),
    TruncateToolResults,
    ClearToolResults,
    Deduplicate,
    CompactLossless,
    StaleReads,
    TruncateToolInputs,
    Summarize,
    SelectRelevant,
    lambda: Pipeline(DropOldest()),
    lambda: CollapseRuns(DropOldest()),
    lambda: parse_strategy("default"),
]


def conv() -> list[Message]:
    call = ToolCall("c1", "read", '{"path": "a.py"}')
    return [
        Message.system("Be brief."),
        Message.user("fix a.py " + "word " * 60),
        Message.assistant(tool_calls=[call]),
        Message.tool("c1", "x = 1\n" * 80),
        Message.assistant("done " * 40),
        Message.user("and now?"),
    ]


def budget(limit: int = 80) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer()))


@pytest.mark.parametrize("make", BUILT_IN)
class TestEveryStrategy:
    @pytest.mark.parametrize("bad", [1000, None, "80", TokenCounter(FakeTokenizer())])
    def test_budget_is_a_budget(self, make: Callable[[], Strategy], bad: Any) -> None:
        """A budget that is not one is named, not "'int' object has no attribute"."""
        with pytest.raises(ArgumentTypeError, match=r"^budget: expected a Budget"):
            make()(conv(), bad)

    def test_a_generator_is_read(self, make: Callable[[], Strategy]) -> None:
        """A generator fits as the list it yields (it had no len())."""
        listed = make()(conv(), budget())
        generated = make()(iter(conv()), budget())  # type: ignore[arg-type]  # a generator, taken at run time
        assert generated.messages == listed.messages
        assert generated.report.tokens_after == listed.report.tokens_after

    @pytest.mark.parametrize("bad", [5, "hi", {"role": "user", "content": "hi"}, None])
    def test_items_are_messages(self, make: Callable[[], Strategy], bad: Any) -> None:
        """A non-Message is named by its index, not an AttributeError ('pinned')."""
        messages: list[Any] = conv()
        messages.insert(2, bad)
        with pytest.raises(InvalidMessageError, match=r"^messages\[2\]: expected a M"):
            make()(messages, budget())

    @pytest.mark.parametrize("bad", ["abc", 5, None])
    def test_messages_are_iterable(
        self, make: Callable[[], Strategy], bad: Any
    ) -> None:
        """A str or a number is no conversation."""
        with pytest.raises(ArgumentTypeError, match=r"^messages: expected an iterable"):
            make()(bad, budget())


class TestPipelineChecksWhatIsNew:
    def test_a_grown_conversation_is_checked_from_where_it_grew(self) -> None:
        """A re-fit checks the appended items: a bad one is named at its index."""
        counter = TokenCounter(FakeTokenizer())
        messages: list[Any] = conv()
        fit(messages, limit=80, tokenizer=counter, strategy=DropOldest())
        pipe = Pipeline(DropOldest())
        b = Budget(80, counter)
        pipe(messages, b)
        messages += [Message.assistant("ok"), 7]
        with pytest.raises(InvalidMessageError, match=r"^messages\[7\]: expected a M"):
            pipe(messages, b)

    def test_stage_input_is_taken_as_it_is(self) -> None:
        """What a pipeline gives its stages (a known-valid tuple) is not copied."""
        b = budget(1000)
        out = Pipeline(DropOldest())(conv(), b).messages
        assert type(out) is tuple
        assert strategy_input(out, b) is out


class TestHelpers:
    @pytest.mark.parametrize("bad", [None, 5, b"KEEP", [b"KEEP"], ("KEEP", 5)])
    def test_pinned_flags_markers(self, bad: Any) -> None:
        """Markers are a str or str items; anything else is named."""
        with pytest.raises(ArgumentTypeError, match=r"^protected"):
            pinned_flags(conv(), bad)

    def test_pinned_flags_summaries_is_a_bool(self) -> None:
        """``summaries="no"`` is refused, not taken as True."""
        with pytest.raises(ArgumentTypeError, match=r"^summaries: expected True"):
            pinned_flags(conv(), (), summaries="no")  # type: ignore[arg-type]  # the wrong type on purpose
        assert pinned_flags(conv(), "fix a.py") == pinned_flags(conv(), ["fix a.py"])

    @pytest.mark.parametrize("bad", [None, 5, [], b"drop-oldest"])
    def test_parse_strategy_takes_a_str(self, bad: Any) -> None:
        """A spec that is no str is named, not a TypeError from the parser."""
        with pytest.raises(ArgumentTypeError, match=r"^spec: expected a strategy spec"):
            parse_strategy(bad)

    @pytest.mark.parametrize("bad", ["no", "false", 0, None])
    def test_deduplicate_near_is_a_bool(self, bad: Any) -> None:
        """``near="false"`` acted as True."""
        with pytest.raises(ArgumentTypeError, match=r"^near: expected True"):
            Deduplicate(near=bad)

    @pytest.mark.parametrize("bad", ["12", b"x", bytearray(b"x"), 5, {"a": 1}])
    def test_budget_history_is_a_sequence_of_messages(self, bad: Any) -> None:
        """A str or bytes is no history (each character was taken for a message)."""
        with pytest.raises(ArgumentTypeError, match=r"^history: expected a sequence"):
            Budget(10, TokenCounter(FakeTokenizer()), history=bad)

    def test_budget_history_items_are_checked_where_read(self) -> None:
        """Items that are no messages are named when a stage reads the history."""
        history: list[Any] = [Message.user("a"), 2]
        b = Budget(10, TokenCounter(FakeTokenizer()), history=history)
        with pytest.raises(InvalidMessageError, match=r"^history\[1\]: expected a M"):
            checked_history(b)
        assert checked_history(budget()) is None
