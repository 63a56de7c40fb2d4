"""The threshold handlers and their context: one test per figure and tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contextwindow import (
    ArgumentError,
    ClearToolResults,
    ContextManager,
    Event,
    InvalidMessageError,
    Message,
    SlidingWindow,
    ThresholdContext,
    ToolCall,
    problems,
)
from contextwindow.summarizers import ExtractiveSummarizer, is_summary
from contextwindow.testing import FakeTokenizer, agent_session

from ._support import words


def loaded(limit: int = 1000, **kw: Any) -> ContextManager:
    """A manager at 70 % of its window: system, task, 8 tool exchanges, a question."""
    m = ContextManager(
        token_limit=limit, tokenizer=FakeTokenizer(), strategy=None, **kw
    )
    m.push(Message.system("You are a coding agent."))
    m.push(Message.user("Fix the bug."))
    for i in range(8):
        m.push_many(
            [
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                Message.tool(f"c{i}", words(70, f"r{i}_")),
            ]
        )
    m.push(Message.user("Where is it?"))
    return m


def in_handler(
    m: ContextManager, action: Callable[[ThresholdContext], Any]
) -> list[Any]:
    """Run ``action`` in the 60 % handler during one prepare; return its results."""
    out: list[Any] = []

    @m.on_threshold(60)
    def handler(ctx: ThresholdContext) -> None:
        out.append(action(ctx))

    m.prepare()
    return out


class TestFigures:
    def test_usage_percentage(self) -> None:
        m = loaded()
        (got,) = in_handler(m, lambda ctx: ctx.usage_percentage)
        assert got == pytest.approx(100 * m.token_estimate() / 1000)
        assert 60 <= got < 80

    def test_tokens_used(self) -> None:
        m = loaded()
        assert in_handler(m, lambda ctx: ctx.tokens_used) == [m.token_estimate()]

    def test_tokens_remaining(self) -> None:
        m = loaded()
        assert in_handler(m, lambda ctx: ctx.tokens_remaining) == [
            1000 - m.token_estimate()
        ]

    def test_context_limit(self) -> None:
        assert in_handler(loaded(), lambda ctx: ctx.context_limit) == [1000]

    def test_threshold(self) -> None:
        assert in_handler(loaded(), lambda ctx: ctx.threshold) == [60]

    def test_agent_name(self) -> None:
        m = loaded(agent_name="coder")
        assert in_handler(m, lambda ctx: ctx.agent_name) == ["coder"]

    def test_messages_is_a_copy_of_the_view(self) -> None:
        m = loaded()

        def edit(ctx: ThresholdContext) -> list[Message]:
            msgs = ctx.messages
            msgs.clear()  # a copy: the view is untouched
            return ctx.messages

        (got,) = in_handler(m, edit)
        assert got == list(m.messages)
        assert len(got) == 19

    def test_message_count(self) -> None:
        assert in_handler(loaded(), lambda ctx: ctx.message_count) == [19]

    def test_figures_are_live_after_a_tool(self) -> None:
        def shrink(ctx: ThresholdContext) -> tuple[int, int]:
            before = ctx.tokens_used
            ctx.compress_tool_results(keep_recent=0, truncate_to=5)
            return before, ctx.tokens_used

        ((before, after),) = in_handler(loaded(), shrink)
        assert after < before

    def test_repr(self) -> None:
        (text,) = in_handler(loaded(), repr)
        assert text.startswith("ThresholdContext(threshold=60, usage=")


class TestTools:
    def test_replace_messages(self) -> None:
        m = loaded()
        history = m.history

        def keep_ends(ctx: ThresholdContext) -> None:
            msgs = ctx.messages
            ctx.replace_messages([msgs[0], msgs[1], msgs[-1]])

        in_handler(m, keep_ends)
        assert [x.text for x in m.messages] == [
            "You are a coding agent.",
            "Fix the bug.",
            "Where is it?",
        ]
        assert m.history == history

    def test_replace_messages_is_reported_by_id_and_repaired(self) -> None:
        m = loaded()
        reports: list[Any] = []

        @m.on_threshold(60)
        def handler(ctx: ThresholdContext) -> None:
            msgs = ctx.messages
            # drops every assistant call: the results become orphans
            ctx.replace_messages(
                [x for x in msgs if x.role != "assistant"] + [Message.user("extra")]
            )

        p = m.prepare()
        reports.append(p.report)
        assert problems(p.conversation, "openai") == ()
        kinds = {c.kind for c in p.report.changes} if p.report else set()
        assert {"dropped", "added", "repaired"} <= kinds
        assert p.report is not None
        assert p.report.tokens_before - p.report.saved == p.report.tokens_after

    def test_replace_messages_rejects_non_messages(self) -> None:
        m = loaded()
        with pytest.raises(InvalidMessageError, match=r"messages\[0\]"):
            in_handler(m, lambda ctx: ctx.replace_messages(["x"]))  # type: ignore[list-item]

    def test_transform_messages(self) -> None:
        m = loaded()

        def no_tools(ctx: ThresholdContext) -> None:
            ctx.transform_messages(
                lambda msgs: [x for x in msgs if not x.tool_calls and x.role != "tool"]
            )

        in_handler(m, no_tools)
        assert [x.role for x in m.messages] == ["system", "user", "user"]
        assert len(m.history) == 19

    def test_transform_messages_refuses_a_non_callable(self) -> None:
        """transform_messages(5) names ``transform``, and leaves the view alone."""
        m = loaded()
        before = m.messages
        with pytest.raises(ArgumentError, match=r"^transform: "):
            in_handler(m, lambda ctx: ctx.transform_messages(5))  # type: ignore[arg-type]  # on purpose
        assert m.messages == before

    def test_compress_tool_results(self) -> None:
        m = loaded()
        (n,) = in_handler(
            m, lambda ctx: ctx.compress_tool_results(keep_recent=2, truncate_to=10)
        )
        assert n == 6
        results = [x for x in m.messages if x.role == "tool"]
        assert all("cut" in x.text for x in results[:6])
        assert all("cut" not in x.text for x in results[6:])
        assert len(m.history[3].text.split()) == 70  # the history keeps them whole

    def test_prune_old_messages(self) -> None:
        m = loaded()
        (n,) = in_handler(m, lambda ctx: ctx.prune_old_messages(keep_recent=5))
        kept = [x for x in m.messages if x.role != "system"]
        assert (n, len(kept)) == (13, 5)
        assert m.messages[0].role == "system"
        assert problems(m.messages, "openai") == ()

    def test_prune_old_messages_never_splits_an_exchange(self) -> None:
        m = loaded()
        in_handler(m, lambda ctx: ctx.prune_old_messages(keep_recent=2))
        assert [x.role for x in m.messages] == ["system", "user"]

    def test_summarize_old_exchanges(self) -> None:
        pytest.importorskip("contextwindow.strategies.summarize")
        m = loaded()
        (n,) = in_handler(m, lambda ctx: ctx.summarize_old_exchanges(older_than=3))
        assert n >= 10
        assert len(m.messages) < 19
        assert len(m.history) == 19

    @pytest.mark.parametrize("given", [False, True])
    def test_the_default_summary_reads_what_clearing_cut(self, given: bool) -> None:
        """After an earlier compaction cleared results, the default summarizer
        names what they held; one the user gave reads the view (an LLM would
        be sent every original whole)."""
        summarizer = ExtractiveSummarizer() if given else None
        m = ContextManager(
            token_limit=100,
            tokenizer=FakeTokenizer(),
            strategy=None,
            summarizer=summarizer,
        )
        m.push(Message.user("Fix the bug."))
        for i in range(8):
            out = words(200, f"log{i}_") + f"\nKeyError: 'field_{i}'"
            call = Message.assistant(tool_calls=[ToolCall(f"c{i}", "pytest")])
            m.push_many([call, Message.tool(f"c{i}", out, is_error=True)])
        m.push(Message.user("Where is it?"))
        assert m.force_compress_with(ClearToolResults(keep_recent=0), target=0).applied
        assert "KeyError" not in " ".join(x.text for x in m.messages)
        in_handler(m, lambda ctx: ctx.summarize_old_exchanges(older_than=1))
        (summary,) = [x for x in m.messages if is_summary(x)]
        assert ("KeyError: 'field_" in summary.text) is not given

    def test_log_action(self) -> None:
        m = loaded(agent_name="coder")
        seen: list[Event] = []
        m.subscribe(seen.append)
        in_handler(m, lambda ctx: ctx.log_action("pruned", removed=3))
        (action,) = [e for e in seen if e.kind == "action"]
        assert action.agent == "coder"
        assert action.data["action"] == "pruned"
        assert action.data["removed"] == 3
        assert action.data["threshold"] == 60
        assert 60 <= action.data["usage_percentage"] < 80

    def test_mark_compression_applied(self) -> None:
        m = loaded()
        m.set_strategy(lambda msgs, b, /: pytest.fail("compaction must be skipped"))

        def mark(ctx: ThresholdContext) -> tuple[bool, bool]:
            before = ctx.compression_applied
            ctx.mark_compression_applied()
            return before, ctx.compression_applied

        m.push(Message.assistant(words(200)))  # 91 %: past the compact-at watermark
        assert in_handler(m, mark) == [(False, True)]

    def test_compression_applied_is_set_by_the_tools(self) -> None:
        def after_tool(ctx: ThresholdContext) -> bool:
            ctx.compress_tool_results(keep_recent=1, truncate_to=5)
            return ctx.compression_applied

        assert in_handler(loaded(), after_tool) == [True]

    def test_compression_applied_resets_each_prepare(self) -> None:
        m = loaded()
        seen: list[bool] = []

        @m.on_threshold(60)
        def first(ctx: ThresholdContext) -> None:
            seen.append(ctx.compression_applied)
            ctx.mark_compression_applied()

        m.prepare()
        m.set_messages(m.messages)  # re-arms the thresholds
        m.prepare()
        assert seen == [False, False]


class TestToolArguments:
    @pytest.mark.parametrize(
        ("call", "argument"),
        [
            (lambda ctx: ctx.summarize_old_exchanges(older_than="3"), "older_than"),
            (lambda ctx: ctx.summarize_old_exchanges(older_than=-1), "older_than"),
            (lambda ctx: ctx.prune_old_messages(keep_recent="3"), "keep_recent"),
            (lambda ctx: ctx.compress_tool_results(keep_recent=-1), "keep_recent"),
            (lambda ctx: ctx.compress_tool_results(truncate_to="3"), "truncate_to"),
            (lambda ctx: ctx.compress_tool_results(truncate_to=0), "truncate_to"),
        ],
        ids=[
            "older_than-str",
            "older_than-negative",
            "prune-keep_recent-str",
            "compress-keep_recent-negative",
            "truncate_to-str",
            "truncate_to-zero",
        ],
    )
    def test_a_bad_argument_is_named_as_the_handler_passed_it(
        self, call: Callable[[ThresholdContext], Any], argument: str
    ) -> None:
        """The error names the tool's own argument, not the strategy's field."""
        m = loaded()
        with pytest.raises(ArgumentError, match=rf"^{argument}: expected an int"):
            in_handler(m, call)
        assert len(m.messages) == len(m.history)  # nothing was changed


class TestFiring:
    def test_fires_once_per_crossing_in_increasing_order(self) -> None:
        m = ContextManager(token_limit=100, tokenizer=FakeTokenizer(), strategy=None)
        fired: list[float] = []
        for t in (90, 60, 80):
            m.on_threshold(t)(lambda ctx: fired.append(ctx.threshold))
        m.push(Message.user(words(80)))  # 84 %
        assert m.prepare().thresholds == (60, 80)
        assert m.prepare().thresholds == ()
        assert fired == [60, 80]

    def test_rearmed_when_usage_falls_below(self) -> None:
        m = ContextManager(token_limit=100, tokenizer=FakeTokenizer(), strategy=None)
        fired: list[float] = []
        m.on_threshold(50)(lambda ctx: fired.append(ctx.threshold))
        m.push_many([Message.user(words(60)), Message.user("q")])
        m.prepare()
        m.force_compress_with(lambda msgs, b, /: _only_last(msgs, b))
        m.prepare()  # now below 50 %: re-armed
        m.push(Message.user(words(60)))
        m.prepare()
        assert fired == [50, 50]

    def test_handlers_run_before_automatic_compaction(self) -> None:
        m = ContextManager(token_limit=100, tokenizer=FakeTokenizer())
        order: list[str] = []
        m.subscribe(lambda e: order.append(e.kind))
        m.on_threshold(90)(lambda ctx: order.append("handler"))
        m.push_many([Message.user(words(60)), Message.assistant(words(40))])
        m.prepare()
        assert order.index("handler") < order.index("compaction")

    def test_a_handler_that_shrinks_the_view_spares_higher_thresholds(self) -> None:
        m = ContextManager(token_limit=100, tokenizer=FakeTokenizer(), strategy=None)
        fired: list[float] = []

        @m.on_threshold(60)
        def shrink(ctx: ThresholdContext) -> None:
            fired.append(ctx.threshold)
            ctx.replace_messages(ctx.messages[-1:])

        m.on_threshold(80)(lambda ctx: fired.append(ctx.threshold))
        m.push_many([Message.user(words(50)), Message.user("q")])
        m.push(Message.assistant(words(40)))
        assert m.prepare().thresholds == (60,)
        assert fired == [60]

    def test_several_handlers_per_threshold_in_registration_order(self) -> None:
        m = loaded()
        order: list[str] = []
        m.on_threshold(60)(lambda ctx: order.append("a"))
        m.on_threshold(60)(lambda ctx: order.append("b"))
        m.prepare()
        assert order == ["a", "b"]

    def test_handler_must_be_callable(self) -> None:
        with pytest.raises(Exception, match="callable"):
            loaded().on_threshold(60)("nope")  # type: ignore[type-var]


def _only_last(msgs: Any, budget: Any) -> Any:
    from contextwindow.strategies import finish

    return finish("only_last", msgs, list(msgs)[-1:], (), budget)


def test_call_handler_says_when_the_handler_did_not_run() -> None:
    from contextwindow.testing import call_handler

    assert call_handler(lambda ctx: ctx.threshold, threshold=60) == 60
    with pytest.raises(AssertionError, match="did not run"):
        call_handler(lambda ctx: ctx.threshold, threshold=95)


def test_summaries_count_against_the_turns_cap() -> None:
    from contextwindow.manager import CompactionPolicy

    m = ContextManager(
        token_limit=1000,
        tokenizer=FakeTokenizer(),
        strategy=None,
        policy=CompactionPolicy(max_per_turn=1),
    )
    m.push_many(agent_session())
    got: list[int] = []

    @m.on_threshold(60)
    def twice(ctx: ThresholdContext) -> None:
        got.append(ctx.summarize_old_exchanges(6))
        got.append(ctx.summarize_old_exchanges(2))  # over the cap: refused

    p = m.prepare()
    assert got[0] > 0
    assert got[1] == 0
    (refused,) = [c for c in p.compactions if not c.applied]
    assert "1 compactions this turn already" in refused.reason
    m.push(Message.user("next turn"))
    m.set_strategy(SlidingWindow(100))  # (nothing to compact; the turn is new)
    assert m._turn_compactions == 0
