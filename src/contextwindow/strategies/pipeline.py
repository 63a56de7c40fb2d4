"""``Pipeline``: strategies in order, stopping once the budget is met.

Contract: a pipeline is itself a strategy. Its output is valid for the
budget's provider even when no stage runs (a fitting input is only repaired),
its report joins its stages' reports, and each change's index points into the
pipeline's own input. A stage is any callable, so each stage's output is
checked (``verify``): repaired when invalid, its tokens recounted, its report
made to add up; whether the budget is met is decided on the recount.
A stage whose summarizer fails (``SummarizerError``: an LLM endpoint
down, slow or refusing) changes nothing: the pipeline goes on with the
next stage, and the report's ``warnings`` say which stage was skipped and
why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from contextwindow._args import as_strategy
from contextwindow.errors import ContextWindowError, SummarizerError
from contextwindow.messages import Message
from contextwindow.strategies.base import (
    Budget,
    Fitted,
    Strategy,
    aligned,
    finish,
    note_shared,
    relocate,
    shares,
    stage_name,
    verify,
)

__all__ = ["Pipeline"]


class Pipeline:
    """Apply stages in order; stop as soon as the conversation fits.

    Args:
        *stages: Strategies, tried in order (at least one).

    Raises:
        ContextWindowError: No stage given.
        ArgumentError: A stage that is not a strategy nor a spec, named
            ``stages[k]``.

    Example:
        >>> from contextwindow import Message, TokenCounter
        >>> from contextwindow.strategies import Budget, DropOldest, SlidingWindow
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.user(f"turn {i} " + "word " * 10) for i in range(6)]
        >>> pipe = Pipeline(SlidingWindow(4), DropOldest())
        >>> fitted = pipe(conv, Budget(40, TokenCounter(FakeTokenizer())))
        >>> (len(fitted.messages), fitted.report.stages)
        (2, ('SlidingWindow', 'DropOldest'))
        >>> fitted = pipe(conv, Budget(70, TokenCounter(FakeTokenizer())))
        >>> (len(fitted.messages), fitted.report.stages)
        (4, ('SlidingWindow',))
    """

    __slots__ = ("stages",)

    stages: tuple[Strategy, ...]

    def __init__(self, *stages: Strategy) -> None:
        if not stages:
            raise ContextWindowError("a Pipeline needs at least one stage")
        self.stages = tuple(
            as_strategy(stage, f"stages[{k}]") for k, stage in enumerate(stages)
        )

    def __repr__(self) -> str:
        return f"Pipeline({', '.join(map(repr, self.stages))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and self.stages == other.stages

    def __hash__(self) -> int:
        return hash(self.stages)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Run stages until the budget is met (none if it already is)."""
        fitted = finish("Pipeline", messages, messages, (), budget)
        _note_input(messages, fitted.messages, budget)
        report = replace(fitted.report, stages=())
        current = fitted.messages
        # While every stage moved nothing (each rewrote contents in place),
        # the changes' indices already point into the input.
        in_place = not report.changes
        for stage in self.stages:
            if report.fits:
                break
            try:
                given = stage(current, budget)
            except SummarizerError as exc:
                name = stage_name(stage)
                report = replace(
                    report,
                    stages=(*report.stages, name),
                    warnings=(*report.warnings, f"{name} skipped: {exc}"),
                )
                continue
            # Any callable is a stage: its output is checked and recounted,
            # so the next decision (stop, or run the next stage) is sound.
            step = verify(stage, current, given, budget, counted=report.tokens_after)
            later = step.report
            report = report.then(
                later if in_place else relocate(later, messages, current)
            )
            in_place = in_place and aligned(budget, step.messages, current)
            current = step.messages
        return Fitted(current, report)


_INPUT_KEY = ("contextwindow.pipeline", "input")


def _note_input(
    messages: Sequence[Message], checked: tuple[Message, ...], budget: Budget
) -> None:
    """Tell the stages how much of this input is the last input's objects.

    The input is looked at once here (a conversation grown by an append
    holds the same objects first); each stage then finds that its input
    shares that much with the one it saw last, without looking again.
    """
    last = budget.memo.get(_INPUT_KEY)
    if isinstance(last, tuple) and len(last) == 2:  # pyright: ignore[reportUnknownArgumentType]  # only this module puts it
        old, old_checked = last  # pyright: ignore[reportUnknownVariableType]  # as above
        k = min(len(old), len(messages))  # pyright: ignore[reportUnknownArgumentType]  # as above
        if k and shares(budget, messages, old, k):  # pyright: ignore[reportUnknownArgumentType]  # as above
            note_shared(budget, checked, old_checked, k)  # pyright: ignore[reportUnknownArgumentType]  # as above
    kept = messages if isinstance(messages, tuple) else list(messages)
    budget.memo.put(_INPUT_KEY, (kept, checked))
