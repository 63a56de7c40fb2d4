from __future__ import annotations

from collections.abc import Sequence

import pytest

from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.messages import Message, Provider, ToolCall
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    DropOldest,
    Fitted,
    Pipeline,
    Report,
    SlidingWindow,
    TruncateToolResults,
    finish,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter
from contextwindow.validity import CONTINUED, CONTINUED_ID


def budget(limit: int, provider: Provider = "openai") -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), provider))


def turns(n: int) -> list[Message]:
    """``n`` user turns of 12 words each (16 tokens each, openai)."""
    return [Message.user(f"turn {i} " + "word " * 10) for i in range(n)]


class Recorder:
    """A stage that drops nothing and remembers what it was given."""

    def __init__(self) -> None:
        self.seen: list[tuple[Message, ...]] = []

    def __call__(self, messages: Sequence[Message], b: Budget, /) -> Fitted:
        self.seen.append(tuple(messages))
        return finish("Recorder", messages, messages, [], b)


class TestPipeline:
    def test_needs_a_stage(self) -> None:
        """A pipeline without stages is an error."""
        with pytest.raises(ContextWindowError, match="at least one stage"):
            Pipeline()

    def test_stage_must_be_callable(self) -> None:
        """A stage that is not callable is named by its position."""
        with pytest.raises(
            ContextWindowError, match=r"^stages\[1\]: expected a Strategy.* got 42"
        ):
            Pipeline(DropOldest(), 42)  # type: ignore[arg-type]  # the point of the test

    def test_value_semantics(self) -> None:
        """Pipelines with equal stages are equal, hash alike and read well."""
        a = Pipeline(SlidingWindow(4), DropOldest())
        assert a == Pipeline(SlidingWindow(4), DropOldest())
        assert a != Pipeline(SlidingWindow(5), DropOldest())
        assert a != (SlidingWindow(4), DropOldest())
        assert hash(a) == hash(Pipeline(SlidingWindow(4), DropOldest()))
        assert a != Pipeline(SlidingWindow(4), DropOldest(keep_first=0))
        assert repr(a) == (
            "Pipeline(SlidingWindow(keep_last=4), DropOldest(keep_first=1))"
        )
        assert a.stages == (SlidingWindow(4), DropOldest())

    def test_stops_once_it_fits(self) -> None:
        """A stage that makes the conversation fit is the last to run."""
        later = Recorder()
        conv = turns(6)
        fitted = Pipeline(SlidingWindow(4), later)(conv, budget(70))
        assert later.seen == []
        assert fitted.report.stages == ("SlidingWindow",)
        assert len(fitted.messages) == 4

    def test_runs_on_while_it_does_not_fit(self) -> None:
        """Each stage gets the previous stage's output."""
        first = Recorder()
        conv = turns(6)
        fitted = Pipeline(SlidingWindow(4), first, DropOldest())(conv, budget(40))
        assert first.seen == [tuple(conv[2:])]
        assert fitted.report.stages == ("SlidingWindow", "Recorder", "DropOldest")
        assert len(fitted.messages) == 2

    def test_fitting_input_runs_nothing(self) -> None:
        """A conversation that fits comes back as it is, no stage run."""
        stage = Recorder()
        conv = turns(3)
        fitted = Pipeline(stage)(conv, budget(1000))
        assert stage.seen == []
        assert all(a is b for a, b in zip(fitted.messages, conv, strict=True))
        r = fitted.report
        assert (r.changes, r.stages, r.tokens_before, r.tokens_after) == (
            (),
            (),
            51,
            51,
        )

    def test_fitting_input_is_validated(self) -> None:
        """A fitting but invalid input is repaired, under ``ensure_valid``."""
        conv = [Message.user("hi"), Message.tool("zz", "stale"), Message.user("?")]
        fitted = Pipeline(Recorder())(conv, budget(1000))
        assert list(fitted.messages) == [conv[0], conv[2]]
        r = fitted.report
        assert r.stages == ()
        assert [(c.kind, c.stage, c.index) for c in r.changes] == [
            ("repaired", "ensure_valid", 1)
        ]

    def test_reports_joined(self) -> None:
        """The report spans the pipeline: first tokens, last tokens, all changes."""
        conv = turns(6)
        b = budget(40)
        fitted = Pipeline(SlidingWindow(4), DropOldest())(conv, b)
        r = fitted.report
        assert r.tokens_before == b.count(conv) == 99
        assert r.tokens_after == b.count(fitted.messages) == 35
        # The window drops turns 0-1; DropOldest keeps its first unit (turn 2).
        assert [(c.stage, c.kind, c.units, c.saved) for c in r.changes] == [
            ("SlidingWindow", "dropped", 2, 32),
            ("DropOldest", "dropped", 2, 32),
        ]
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_indices_point_into_the_input(self) -> None:
        """Later stages' changes are indexed into the pipeline's own input."""
        conv = turns(6)
        fitted = Pipeline(SlidingWindow(4), DropOldest())(conv, budget(40))
        changes = fitted.report.changes
        assert [(c.index, c.units) for c in changes] == [(0, 2), (3, 2)]
        for c in changes:
            assert tuple(m.id for m in conv[c.index : c.index + len(c.ids)]) == c.ids

    def test_placeholder_indexed_into_the_input(self) -> None:
        """A placeholder a later stage needed is indexed where it went."""
        conv = [
            Message.user("zero"),
            Message.user("one two three four five six"),
            Message.assistant("a"),
            Message.user("b"),
        ]
        pipe = Pipeline(SlidingWindow(3), DropOldest(keep_first=0))
        fitted = pipe(conv, budget(12, "anthropic"))
        assert [m.text for m in fitted.messages] == [CONTINUED, "a", "b"]
        changes = fitted.report.changes
        assert [(c.stage, c.index, c.ids[0]) for c in changes] == [
            ("SlidingWindow", 0, conv[0].id),
            ("DropOldest", 1, conv[1].id),
            ("ensure_valid", 2, CONTINUED_ID),
        ]

    def test_plain_function_stage(self) -> None:
        """A function is a stage; a report without stages is named after it."""

        def keep_last(messages: Sequence[Message], b: Budget, /) -> Fitted:
            out = tuple(messages[-1:])
            return Fitted(out, Report(b.count(messages), b.count(out), b.limit))

        conv = turns(3)
        fitted = Pipeline(keep_last)(conv, budget(20))
        assert list(fitted.messages) == conv[-1:]
        assert fitted.report.stages == ("keep_last",)
        # It reported no change: what it dropped is accounted for it.
        [change] = fitted.report.changes
        assert (change.kind, change.stage, change.ids) == (
            "dropped",
            "keep_last",
            tuple(m.id for m in conv[:-1]),
        )
        report = fitted.report
        assert report.tokens_before - change.saved == report.tokens_after

    def test_nested_pipeline(self) -> None:
        """A pipeline is a stage like any other."""
        conv = [
            Message.user("go"),
            Message.assistant(tool_calls=[ToolCall("c1", "read")]),
            Message.tool("c1", "w " * 100),
            *turns(2),
        ]
        inner = Pipeline(TruncateToolResults(0, 4))
        fitted = Pipeline(inner, DropOldest())(conv, budget(40))
        assert fitted.report.stages == ("TruncateToolResults", "DropOldest")
        assert all(conv[c.index].id == c.ids[0] for c in fitted.report.changes)
        assert fitted.report.fits

    def test_rewrites_pin_nothing(self) -> None:
        """A rewritten result never becomes pinned for the stages after."""
        conv = [
            Message.user("go"),
            Message.assistant(tool_calls=[ToolCall("c1", "read")]),
            Message.tool("c1", "w " * 100),
            Message.user("final"),
        ]
        b = Budget(10, TokenCounter(FakeTokenizer()), protected=("tokens",))
        fitted = Pipeline(ClearToolResults(0), DropOldest())(conv, b)
        assert [m.text for m in fitted.messages] == ["final"]

    def test_budget_error_propagates(self) -> None:
        """A stage's ``BudgetError`` reaches the caller."""
        conv = [Message.system("w " * 50), *turns(2)]
        with pytest.raises(BudgetError):
            Pipeline(SlidingWindow(1), DropOldest())(conv, budget(20))


class TestSummarizerFailure:
    def test_a_failing_summary_skips_its_stage(self) -> None:
        """SummarizerError: the stage changes nothing, the next one runs, it is said."""
        from contextwindow.errors import SummarizerError
        from contextwindow.strategies import Summarize

        class Down:
            def summarize(self, messages: object, **kw: object) -> str:
                raise SummarizerError("POST http://llm.test/v1: ConnectError")

        conv = turns(10)
        fitted = Pipeline(Summarize(Down(), keep_recent=2), DropOldest())(
            conv, budget(100)
        )
        report = fitted.report
        assert report.fits
        assert report.stages == ("Summarize", "DropOldest")
        assert report.warnings == (
            "Summarize skipped: POST http://llm.test/v1: ConnectError",
        )
        assert {c.kind for c in report.changes} == {"dropped"}
        assert report.to_dict()["warnings"] == list(report.warnings)
