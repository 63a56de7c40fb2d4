"""Calibration: the provider's reported input tokens against our count."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow import (
    ArgumentError,
    ArgumentValueError,
    AsyncContextManager,
    Calibration,
    ContextManager,
    ContextWindowError,
    Event,
    Message,
    reported_input_tokens,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import ApproximateTokenizer

counts = st.integers(min_value=1, max_value=2_000_000)
ratios = st.floats(min_value=0.3, max_value=3.0)


class TestReportedInputTokens:
    def test_every_provider_shape(self) -> None:
        """Each provider's and framework's field is read, cache tokens once."""
        assert reported_input_tokens(7) == 7
        assert reported_input_tokens({"prompt_tokens": 11, "total_tokens": 50}) == 11
        anthropic = {
            "input_tokens": 5,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 20,
            "output_tokens": 9,
        }
        assert reported_input_tokens(anthropic) == 125
        assert reported_input_tokens({"prompt_token_count": 31}) == 31
        assert reported_input_tokens({"promptTokenCount": 32}) == 32
        # LangChain's usage_metadata: the cache details are inside, and included
        lc = {"input_tokens": 40, "input_token_details": {"cache_read": 30}}
        assert reported_input_tokens(lc) == 40
        # objects, and responses carrying their usage
        assert reported_input_tokens(SimpleNamespace(input_tokens=12)) == 12
        response = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=13))
        assert reported_input_tokens(response) == 13
        assert reported_input_tokens({"usage_metadata": {"input_tokens": 14}}) == 14

    def test_not_a_usage_report(self) -> None:
        """Anything holding no input count is refused, naming the argument."""
        for bad in ("12", None, {"output_tokens": 3}, True, [1]):
            with pytest.raises(ArgumentError, match="usage"):
                reported_input_tokens(bad)


class TestNegativeUsage:
    @pytest.mark.parametrize(
        ("usage", "where"),
        [
            (-1, "usage"),
            ({"prompt_tokens": -5}, "usage.prompt_tokens"),
            (
                {"input_tokens": 5, "cache_read_input_tokens": -9},
                "usage.cache_read_input_tokens",
            ),
            ({"usage": {"input_tokens": -2}}, "usage.usage.input_tokens"),
        ],
    )
    def test_refused_naming_the_field(self, usage: object, where: str) -> None:
        """A negative count is a bug upstream: refused, not read as 0."""
        with pytest.raises(ArgumentValueError, match=rf"^{where}: expected a token"):
            reported_input_tokens(usage)

    def test_observe_refuses_it(self) -> None:
        """An observation of a negative usage is an error, as a negative count is."""
        cal = Calibration()
        with pytest.raises(ArgumentValueError, match=r"^usage"):
            cal.observe(100, -1)
        assert cal.observed == 0


class TestCalibration:
    def test_starts_at_the_prior(self) -> None:
        """No observation: the count is used as it is (or as the prior says)."""
        assert Calibration().ratio == 1.0
        assert Calibration(prior=1.5).limit(300) == 200

    def test_median_of_the_window(self) -> None:
        """The ratio is the median of the last ``window`` observations."""
        cal = Calibration(window=3)
        for reported in (1100, 1200, 3000, 1300):
            cal.observe(1000, reported)
        assert cal.ratios == (1.2, 3.0, 1.3)
        assert cal.ratio == 1.3
        assert cal.observed == 3

    def test_empty_observations_are_ignored(self) -> None:
        """A count or report of zero teaches nothing."""
        cal = Calibration()
        cal.observe(0, 100)
        cal.observe(100, {"input_tokens": 0})
        assert cal.observed == 0
        cal.reset()
        assert cal.ratio == 1.0

    def test_bad_arguments(self) -> None:
        """Bad configuration fails at construction, bad counts at the call."""
        with pytest.raises(ArgumentError, match="window"):
            Calibration(window=0)
        with pytest.raises(ArgumentError, match="prior"):
            Calibration(prior=0)
        with pytest.raises(ArgumentError, match="counted"):
            Calibration().observe(-1, 10)
        with pytest.raises(ArgumentError, match="budget"):
            Calibration().limit(1.5)  # type: ignore[arg-type]  # the wrong type on purpose

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(counts, ratios), min_size=1, max_size=30), counts)
    def test_limit_fits_its_budget(
        self, seen: list[tuple[int, float]], budget: int
    ) -> None:
        """What ``limit`` allows, ``estimate`` bills within the budget."""
        cal = Calibration()
        for counted, r in seen:
            cal.observe(counted, round(counted * r))
        allowed = cal.limit(budget)
        assert cal.estimate(allowed) <= budget
        assert cal.limit(budget + 1) >= allowed

    @settings(max_examples=100, deadline=None)
    @given(counts, ratios)
    def test_learns_a_constant_ratio_in_one_call(self, counted: int, r: float) -> None:
        """A provider that bills ``r`` times our count is learned exactly."""
        reported = max(1, round(counted * r))
        cal = Calibration()
        cal.observe(counted, reported)
        assert cal.ratio == reported / counted

    def test_implausible_report_is_ignored(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A report far from the count (a session's total) is logged and left out."""
        cal = Calibration()
        cal.observe(1000, 1200)
        for reported in (10**6, 4001, 249):
            caplog.clear()
            with caplog.at_level("WARNING", logger="contextwindow.calibration"):
                assert cal.observe(1000, reported) == 1.2
            assert "usage ignored" in caplog.text
        kept = cal.ratios
        assert kept == (1.2,)
        # The band's bounds are plausible: a quarter and four times.
        cal.observe(1000, 4000)
        cal.observe(1000, 250)
        assert cal.ratios == (1.2, 4.0, 0.25)

    def test_implausible_report_keeps_the_manager_working(self) -> None:
        """One cumulative usage passed by mistake does not make every prepare fail."""
        m = claude_manager()
        m.push(Message.user("start " + "word " * 200))
        sent = m.prepare()
        m.observe_usage(10**6)
        assert m.calibration.ratio == 1.0
        assert m.prepare().tokens == sent.tokens

    def test_observe_many_takes_pairs(self) -> None:
        """Anything but an iterable of pairs is named; nothing is recorded then."""
        cal = Calibration()
        for bad in (5, None, "12", [(100, 110), 7], [(100,)]):
            with pytest.raises(ArgumentError, match=r"^pairs"):
                cal.observe_many(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        assert cal.observed == 0
        assert cal.observe_many(iter([(100, 110), (100, 130)])) == pytest.approx(1.2)

    def test_window_is_bounded(self) -> None:
        """A window too large for a deque is an ArgumentError, not an OverflowError."""
        with pytest.raises(ArgumentError, match=r"^window"):
            Calibration(window=10**30)

    def test_shared_across_threads(self) -> None:
        """Observations from several threads are all kept."""
        cal = Calibration(window=1000)

        def feed() -> None:
            for _ in range(100):
                cal.observe(100, 120)

        threads = [threading.Thread(target=feed) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert cal.observed == 400
        assert cal.ratio == pytest.approx(1.2)


def claude_manager(**kw: object) -> ContextManager:
    tok = ApproximateTokenizer(FakeTokenizer(), "claude")
    return ContextManager(tokenizer=tok, token_limit=1000, provider="anthropic", **kw)  # type: ignore[arg-type]  # keywords typed by the test


class TestManager:
    def test_next_request_fits_the_billed_window(self) -> None:
        """After a usage report, a request billed at the learned ratio fits."""
        m = claude_manager()
        m.push(Message.user("start"))
        for i in range(60):
            m.push(Message.assistant(f"reply {i} " + "word " * 20))
            m.push(Message.user(f"question {i} " + "word " * 20))
            sent = m.prepare()
            billed = round(sent.tokens * 1.3)  # the provider counts 30 % more
            assert i == 0 or billed <= 1000
            m.observe_usage({"input_tokens": billed})
        assert m.calibration.ratio == pytest.approx(1.3, rel=0.01)
        assert m.prepare().budget == m.calibration.limit(1000)
        assert len(m.history) == 121

    def test_exact_tokenizer_budget_unchanged(self) -> None:
        """An exact tokenizer's counts are not scaled; the report is still kept."""
        m = ContextManager(tokenizer=FakeTokenizer(), token_limit=1000)
        m.push(Message.user("hello there"))
        sent = m.prepare()
        m.observe_usage(sent.tokens * 2)
        assert m.calibration.ratio == 2.0
        assert m.prepare().budget == 1000

    def test_shared_calibration(self) -> None:
        """Two managers of one model learn into one calibration."""
        cal = Calibration()
        a, b = claude_manager(calibration=cal), claude_manager(calibration=cal)
        a.push(Message.user("one two three"))
        a.observe_usage(SimpleNamespace(input_tokens=a.prepare().tokens * 2))
        assert b.calibration is cal
        b.push(Message.user("x"))
        assert b.prepare().budget == 500

    def test_counted_given_or_prepared(self) -> None:
        """Without a prepared request, ``counted`` must be given."""
        m = claude_manager()
        with pytest.raises(ContextWindowError, match="counted"):
            m.observe_usage(100)
        assert m.observe_usage(150, counted=100) == 1.5
        with pytest.raises(ArgumentError, match="calibration"):
            claude_manager(calibration=1.2)

    def test_event(self) -> None:
        """Each observation is an event subscribers see."""
        m = claude_manager()
        seen: list[Event] = []
        m.subscribe(seen.append)
        m.observe_usage(120, counted=100)
        assert [(e.kind, e.data["ratio"]) for e in seen] == [("usage_observed", 1.2)]

    def test_async_manager(self) -> None:
        """The async manager observes the same way (no wait, so no await)."""

        async def main() -> int:
            tok = ApproximateTokenizer(FakeTokenizer(), "claude")
            m = AsyncContextManager(tokenizer=tok, token_limit=1000, reserve=0)
            await m.push(Message.user("one two three"))
            sent = await m.prepare()
            m.observe_usage({"prompt_tokens": sent.tokens * 4})
            return (await m.prepare()).budget

        assert asyncio.run(main()) == 250
