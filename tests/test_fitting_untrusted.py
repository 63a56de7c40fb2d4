"""``fit`` and ``Pipeline`` check what a strategy returns, never trust it.

A strategy is any callable: one that breaks a tool pair, says it fits when it
does not, reports changes that do not add up or returns the wrong type still
gives a valid output within the budget, a report that adds up, or a clear
error naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from contextwindow import (
    ContextManager,
    ContextWindowError,
    Message,
    TokenCounter,
    ToolCall,
    fit,
)
from contextwindow.strategies import (
    Budget,
    DropOldest,
    Fitted,
    Pipeline,
    Report,
    SlidingWindow,
    TruncateToolResults,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.validity import problems

LIMIT = 300


def agent_conv(n: int = 8, size: int = 90) -> list[Message]:
    conv = [Message.system("be brief"), Message.user("task")]
    for i in range(n):
        conv += [
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
            Message.tool(f"c{i}", " ".join(f"d{i}_{k}" for k in range(size))),
        ]
    conv.append(Message.user("go on"))
    return conv


def counter() -> TokenCounter:
    return TokenCounter(FakeTokenizer())


def liar(messages: Sequence[Message], budget: Budget, /) -> Fitted:
    """Changes nothing and says it fits in 10 tokens."""
    return Fitted(tuple(messages), Report(budget.count(messages), 10, budget.limit))


def pair_breaker(messages: Sequence[Message], budget: Budget, /) -> Fitted:
    """Keeps the system prompt, the last tool result without its call, the end."""
    out = (messages[0], messages[-2], messages[-1])
    return Fitted(out, Report(budget.count(messages), budget.count(out), budget.limit))


def over_budget(messages: Sequence[Message], budget: Budget, /) -> Fitted:
    """Drops one message (a result, so its call is left unanswered), reports none."""
    out = tuple(messages[:3]) + tuple(messages[4:])
    return Fitted(out, Report(budget.count(messages), budget.limit, budget.limit))


def adds_up(report: Report) -> bool:
    return report.tokens_before - sum(c.saved for c in report.changes) == (
        report.tokens_after
    )


class TestUntrustedStrategies:
    @pytest.mark.parametrize("strategy", [liar, pair_breaker, over_budget])
    def test_output_is_valid_within_budget_and_recounted(self, strategy: Any) -> None:
        """Whatever the strategy did or said: valid, within the limit, recounted."""
        c = counter()
        conv = agent_conv()
        fitted = fit(conv, limit=LIMIT, strategy=strategy, tokenizer=c)
        out = list(fitted.messages)
        assert problems(out, "openai") == ()
        assert c.messages(out) <= LIMIT
        assert fitted.report.tokens_after == c.messages(out)
        assert fitted.report.tokens_before == c.messages(conv)
        assert fitted.report.fits
        assert adds_up(fitted.report)
        assert out[0].role == "system"
        assert out[-1].text == "go on"

    def test_a_liar_gets_dropoldest_after_it(self) -> None:
        """A stage that says it fits when it does not: DropOldest still finishes."""
        fitted = fit(agent_conv(), limit=LIMIT, strategy=liar, tokenizer=counter())
        assert fitted.report.stages == ("liar", "DropOldest")

    def test_a_broken_pair_is_repaired_and_reported(self) -> None:
        """The orphan result a stage left is dropped, as a ``repaired`` change."""
        conv = agent_conv()
        fitted = fit(conv, limit=LIMIT, strategy=pair_breaker, tokenizer=counter())
        repaired = [c for c in fitted.report.changes if c.kind == "repaired"]
        assert [c.ids for c in repaired] == [(conv[-2].id,)]
        assert repaired[0].index == len(conv) - 2  # an index into fit's input

    def test_unreported_drops_are_accounted(self) -> None:
        """A stage that dropped messages and reported none gets a change for them."""
        conv = agent_conv()
        fitted = fit(conv, limit=LIMIT, strategy=pair_breaker, tokenizer=counter())
        [unreported] = [c for c in fitted.report.changes if c.stage == "pair_breaker"]
        assert unreported.kind == "dropped"
        assert set(unreported.ids) == {m.id for m in conv[1:-2]}
        assert unreported.index == 1

    def test_a_lying_stage_inside_a_pipeline(self) -> None:
        """Pipeline decides on the recount: the stage after a liar still runs."""
        b = Budget(LIMIT, counter())
        fitted = Pipeline(liar, DropOldest())(agent_conv(), b)
        assert fitted.report.stages == ("liar", "DropOldest")
        assert b.count(fitted.messages) <= LIMIT
        assert adds_up(fitted.report)

    def test_builtin_output_passes_unchanged(self) -> None:
        """A built-in strategy's output is checked and returned as it is."""
        from contextwindow.strategies.base import verify  # new here: main lacks it

        b = Budget(LIMIT, counter())
        conv = agent_conv()
        for strategy in (DropOldest(), SlidingWindow(2), TruncateToolResults()):
            out = strategy(conv, b)
            assert verify(strategy, conv, out, b) is out

    def test_a_stage_called_again_is_checked_again(self) -> None:
        """What a stage reported last time is not checked twice, but a new bad
        change is caught, and one gone from the report is added up again."""
        from contextwindow.strategies.base import Change, verify

        b = Budget(LIMIT, counter())
        conv = agent_conv()
        stage = TruncateToolResults(keep_recent=0, max_tokens=10)
        first = stage(conv, b)
        changes = first.report.changes
        assert len(changes) > 2
        assert verify(stage, conv, first, b) is first

        def reported(*found: object) -> Fitted:
            return Fitted(first.messages, replace(first.report, changes=found))  # type: ignore[arg-type]  # a strategy may return anything

        with pytest.raises(ContextWindowError, match=r"changes\[3\] of type str"):
            verify(stage, conv, reported(*changes[:3], "oops"), b)
        # The last change unreported: its tokens are accounted for again.
        step = verify(stage, conv, reported(*changes[:-1]), b)
        [extra] = step.report.changes[len(changes) - 1 :]
        assert isinstance(extra, Change)
        assert extra.stage == "TruncateToolResults"
        assert extra.saved == changes[-1].saved
        assert adds_up(step.report)


class TestWrongTypes:
    @pytest.mark.parametrize(
        ("returned", "match"),
        [
            (lambda m: list(m), r"strategy 'bad' returned list, not a Fitted"),
            (lambda m: None, r"strategy 'bad' returned NoneType, not a Fitted"),
            (
                lambda m: Fitted(m, None),  # type: ignore[arg-type]  # on purpose
                r"strategy 'bad' returned a Fitted whose report is NoneType",
            ),
            (
                lambda m: Fitted((*m[:2], {"role": "user"}), Report(0, 0, 0)),  # type: ignore[arg-type]  # on purpose
                r"strategy 'bad' returned messages\[2\] of type dict, not a Message",
            ),
            (
                lambda m: Fitted(m, Report(0, 0, 0, ("dropped",))),  # type: ignore[arg-type]  # on purpose
                r"strategy 'bad' returned report.changes\[0\] of type str",
            ),
            (
                lambda m: Fitted(3, Report(0, 0, 0)),  # type: ignore[arg-type]  # on purpose
                r"strategy 'bad' returned messages of type int",
            ),
        ],
    )
    def test_a_clear_error_names_the_strategy(self, returned: Any, match: str) -> None:
        """A strategy returning the wrong type is a ContextWindowError naming it."""

        def bad(messages: Sequence[Message], budget: Budget, /) -> Any:
            return returned(tuple(messages))

        with pytest.raises(ContextWindowError, match=match):
            fit(agent_conv(), limit=LIMIT, strategy=bad, tokenizer=counter())

    def test_list_messages_are_accepted(self) -> None:
        """A Fitted holding a list of messages is fine: it becomes a tuple."""

        def as_list(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            out = list(DropOldest()(messages, budget).messages)
            return Fitted(out, Report(0, 0, budget.limit))  # type: ignore[arg-type]  # on purpose

        fitted = fit(agent_conv(), limit=LIMIT, strategy=as_list, tokenizer=counter())
        assert isinstance(fitted.messages, tuple)
        assert adds_up(fitted.report)


class TestManagerWithUntrustedStrategies:
    @pytest.mark.parametrize("strategy", [liar, pair_breaker, over_budget])
    def test_prepare_is_valid_and_fits(self, strategy: Any) -> None:
        """The manager's compaction goes through the same checks."""
        m = ContextManager(
            token_limit=LIMIT, tokenizer=FakeTokenizer(), strategy=strategy
        )
        for msg in agent_conv():
            m.push(msg)
            if msg.role != "assistant":
                p = m.prepare()
                assert problems(p.conversation, "openai") == ()
                assert p.tokens <= LIMIT

    def test_force_compress_with_the_wrong_type(self) -> None:
        """force_compress_with a strategy returning a list: an error naming it."""
        m = ContextManager(token_limit=LIMIT, tokenizer=FakeTokenizer())
        m.push_many(agent_conv(2, 5))
        before = m.messages

        def bad(messages: Sequence[Message], budget: Budget, /) -> Any:
            return list(messages)

        with pytest.raises(ContextWindowError, match="strategy 'bad' returned list"):
            m.force_compress_with(bad)
        assert m.messages == before

    def test_force_compress_with_a_pair_breaker(self) -> None:
        """A forced compaction by a pair breaker installs a repaired view."""
        m = ContextManager(token_limit=10_000, tokenizer=FakeTokenizer())
        m.push_many(agent_conv(4, 5))
        done = m.force_compress_with(pair_breaker)
        assert done.applied
        assert problems(m.messages, "openai") == ()
        assert adds_up(done.report)
