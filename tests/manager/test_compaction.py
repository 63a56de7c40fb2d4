"""Automatic compaction: watermarks, minimum saving, the per-turn cap, prefixes."""

from __future__ import annotations

import itertools

import pytest

from contextwindow import (
    ClearToolResults,
    ContextWindowError,
    Message,
    Summarize,
    ToolCall,
    problems,
)
from contextwindow.manager import CompactionPolicy
from contextwindow.messages import Message as Msg
from contextwindow.strategies import Budget, Fitted, finish
from contextwindow.summarizers import NamesSummarizer, is_summary

from ._support import manager, words


class TestPolicy:
    @pytest.mark.parametrize(
        "kw",
        [
            {"at": 50, "to": 60},
            {"at": 101},
            {"to": 0},
            {"min_saving": -1},
            {"max_per_turn": -1},
        ],
    )
    def test_bad_policies(self, kw: dict[str, float]) -> None:
        with pytest.raises(ContextWindowError):
            CompactionPolicy(**kw)  # type: ignore[arg-type]


class TestWatermarks:
    def test_compacts_at_the_high_watermark_down_to_the_low_one(self) -> None:
        m = manager(limit=1000, policy=CompactionPolicy(at=90, to=50, min_saving=0))
        m.push(Message.user("task"))
        compacted_at: list[int] = []
        for i in range(60):
            m.push(Message.assistant(words(20, f"a{i}_")))
            m.push(Message.user(f"go on {i}"))
            before = m.token_estimate()
            p = m.prepare()
            if p.compactions:
                (c,) = p.compactions
                assert c.trigger == "watermark"
                assert c.applied
                assert before >= 900
                assert p.tokens <= 500
                compacted_at.append(i)
        assert len(compacted_at) >= 2
        # between compactions the view only grew: many turns of plain appends
        gaps = [b - a for a, b in itertools.pairwise(compacted_at)]
        assert min(gaps) >= 10

    def test_below_the_watermark_nothing_happens(self) -> None:
        m = manager(limit=1000)
        m.push(Message.user(words(850)))
        assert m.prepare().compactions == ()

    def test_over_the_window_compacts_whatever_the_policy(self) -> None:
        policy = CompactionPolicy(at=99, to=98, min_saving=50, max_per_turn=0)
        m = manager(limit=100, policy=policy)
        m.push_many(
            [Message.user(words(60)), Message.assistant(words(60)), Message.user("q")]
        )
        p = m.prepare()
        assert [c.trigger for c in p.compactions] == ["limit"]
        assert p.tokens <= 100

    def test_limit_target_falls_back_to_the_window_when_pinned_needs_it(self) -> None:
        m = manager(limit=100, policy=CompactionPolicy(at=90, to=20))
        m.push_many(
            [Message.system(words(50)), Message.user(words(60)), Message.user("q")]
        )
        p = m.prepare()
        assert p.compactions[0].applied
        assert 20 < p.tokens <= 100

    def test_watermark_refused_when_pinned_exceeds_the_target(self) -> None:
        m = manager(limit=100, policy=CompactionPolicy(at=60, to=20))
        m.push_many(
            [Message.system(words(50)), Message.user(words(20)), Message.user("q")]
        )
        p = m.prepare()
        (c,) = p.compactions
        assert not c.applied
        assert "pinned content alone" in c.reason
        assert p.report is None


class TestNoThrashing:
    def test_a_small_saving_is_refused_and_not_retried_until_grown(self) -> None:
        policy = CompactionPolicy(at=50, to=40, min_saving=20, max_per_turn=99)
        m = manager(limit=100, policy=policy)
        # 51 tokens, of which only the 14 of one user turn can go: too little.
        m.push_many(
            [Message.system(words(25)), Message.user(words(10)), Message.user("q")]
        )
        first = m.prepare()
        (c,) = first.compactions
        assert not c.applied
        assert "less than the minimum" in c.reason
        assert len(m.messages) == 3
        assert m.prepare().compactions == ()  # not tried again at the same size
        m.push_many([Message.assistant(words(25)), Message.user("again")])
        (c,) = m.prepare().compactions  # grown by the minimum: tried again
        assert c.applied
        assert c.saved >= 20

    def test_at_most_max_per_turn_compactions_between_user_messages(self) -> None:
        policy = CompactionPolicy(at=50, to=40, min_saving=0, max_per_turn=2)
        m = manager(limit=1000, policy=policy)
        m.push(Message.user("task"))
        watermark = limit = 0
        for i in range(20):  # one long turn: each message is a tenth of the window
            m.push(Message.assistant(words(100, f"a{i}_")))
            triggers = [c.trigger for c in m.prepare().compactions]
            watermark += triggers.count("watermark")
            limit += triggers.count("limit")
        assert watermark == 2
        assert limit >= 1  # over the window, the cap does not apply
        m.push(Message.user("a new turn"))
        assert 50 <= 100 * m.token_estimate() / 1000 <= 100
        assert [c.trigger for c in m.prepare().compactions] == ["watermark"]

    def test_handler_compression_skips_automatic_compaction(self) -> None:
        m = manager(limit=100, policy=CompactionPolicy(at=80, to=50, min_saving=0))

        @m.on_threshold(80)
        def handler(ctx: object) -> None:
            ctx.mark_compression_applied()  # type: ignore[attr-defined]

        m.push_many([Message.user(words(40)), Message.assistant(words(45))])
        assert [c.trigger for c in m.prepare().compactions] == []


class TestPrefix:
    def test_compaction_reports_the_prefix_it_kept(self) -> None:
        m = manager(
            limit=300, system=words(20, "sys"), policy=CompactionPolicy(min_saving=0)
        )
        m.push(Message.user("the task"))
        p = None
        for i in range(30):
            m.push_many(
                [
                    Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                    Message.tool(f"c{i}", words(15, f"r{i}_")),
                ]
            )
            p = m.prepare()
            if p.compactions:
                break
        assert p is not None
        assert p.compactions
        c = p.compactions[0]
        # DropOldest keeps the system prompt and the task: they stay first.
        assert c.prefix_tokens >= m._counter.messages(list(m.messages[:2])) - 3
        assert (
            p.prefix_tokens == c.prefix_tokens
            or p.prefix_tokens <= c.prefix_tokens + 50
        )
        m.push(Message.user("next"))
        after = m.prepare()
        assert after.prefix_tokens == p.tokens - 3

    def test_sum_of_cached_prefixes_on_a_long_loop(self) -> None:
        m = manager(limit=2000, system="s")
        m.push(Message.user("task"))
        sent = cached = 0
        for i in range(200):
            m.push_many(
                [
                    Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                    Message.tool(f"c{i}", words(30, f"r{i}_")),
                ]
            )
            p = m.prepare()
            assert p.tokens <= 2000
            assert problems(p.conversation, "openai") == ()
            sent += p.tokens
            cached += p.prefix_tokens
        assert cached / sent > 0.8


def test_strategy_output_is_checked_for_the_provider() -> None:
    def breaks_pairs(messages: object, budget: Budget, /) -> Fitted:
        msgs = list(messages)  # type: ignore[call-overload]
        kept = [m for m in msgs if m.role != "assistant"]  # orphans every result
        return Fitted(tuple(kept), finish("bad", msgs, msgs, (), budget).report)

    m = manager(limit=100, strategy=breaks_pairs)
    m.push(Msg.user("task"))
    for i in range(8):
        m.push_many(
            [
                Msg.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                Msg.tool(f"c{i}", words(10, f"r{i}_")),
            ]
        )
    p = m.prepare()
    assert p.tokens <= 100
    assert problems(p.conversation, "openai") == ()


def test_an_exchange_awaiting_results_that_the_strategy_dropped_still_fits() -> None:
    """A strategy that drops the final unit, an exchange whose other calls
    await results: the exchange is put back (every strategy keeps the final
    message and its exchange, ``verify``), and the request fits (it was a
    BudgetError), the put-back named in the compaction's warnings."""

    def drops_the_end(messages: object, budget: Budget, /) -> Fitted:
        msgs = list(messages)  # type: ignore[call-overload]
        kept = msgs[:2] + msgs[-3:-2]  # the task and one older turn
        return Fitted(tuple(kept), finish("bad", msgs, kept, (), budget).report)

    m = manager(limit=300, reserve=0, strategy=drops_the_end)
    m.push(Msg.user("task"))
    for i in range(6):
        m.push_many([Msg.assistant(words(30, f"a{i}_")), Msg.user(words(5, f"u{i}_"))])
    calls = [ToolCall("p1", "read"), ToolCall("p2", "grep")]
    m.push_many([Msg.assistant(tool_calls=calls), Msg.tool("p1", words(250, "r"))])
    p = m.prepare()
    assert p.tokens <= 300
    assert problems(p.conversation, "openai") == ()
    assert p.conversation[-1].role == "tool"  # the result that came is sent
    assert any("put back" in w for w in p.compactions[0].report.warnings)


def test_prepare_query_reaches_relevance_aware_strategies() -> None:
    from contextwindow import SelectRelevant

    def loaded(query: str | None) -> list[str]:
        m = manager(limit=120, strategy=SelectRelevant(keep_recent=1))
        topics = ["flights to Lisbon", "hotel near Rossio", "train to Porto"]
        for i, topic in enumerate(topics * 3):
            m.push(Message.user(f"note {i}: {topic} " + words(8, f"x{i}_")))
        m.push(Message.user("what next?"))
        return [x.text for x in m.prepare(query=query).conversation]

    kept = loaded("the train to Porto")
    assert any("train to Porto" in t for t in kept[:-1])
    assert not any("hotel near Rossio" in t for t in kept[:-1])
    assert loaded("the hotel near Rossio") != kept


def test_a_summary_reads_what_an_earlier_compaction_cleared() -> None:
    """The manager's history holds the originals: a later summary names what
    the placeholders of an earlier compaction no longer show."""
    m = manager(limit=100_000)
    m.push(Message.user("task"))
    for i in range(6):
        names = ", ".join(f"row_{i}_{k}" for k in range(40))
        call = ToolCall(f"c{i}", "query", "{}")
        m.push_many([Message.assistant(tool_calls=[call]), Msg.tool(f"c{i}", names)])
        m.push(Message.user(f"next {i}"))
    assert m.force_compress_with(ClearToolResults(keep_recent=0), target=0).applied
    shown = " ".join(x.text for x in m.messages)
    reads = Summarize(NamesSummarizer(), keep_recent=1, read_originals=True)
    assert m.force_compress_with(reads, target=0).applied
    (summary,) = [x for x in m.messages if is_summary(x)]
    assert "row_0_14," in summary.text
    assert "row_0_14," not in shown  # the placeholder named fewer
