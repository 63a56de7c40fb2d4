"""``Pipeline``: strategies in order, stopping once the budget is met.

Contract: a pipeline is itself a strategy. Its output is valid for the
budget's provider even when no stage runs (a fitting input is only repaired),
its report joins its stages' reports, and each change's index points into the
pipeline's own input. A stage is any callable, so each stage's output is
checked (``verify``): repaired when invalid, its tokens recounted, its report
made to add up; a user's stage also gets back what every strategy keeps (the
system, pinned and protected messages, the final one, the input's order) and
a change for each message it touched unreported. Whether the budget is met is
decided on the recount.
A stage whose summarizer fails (``SummarizerError``: an LLM endpoint
down, slow or refusing) changes nothing: the pipeline goes on with the
next stage, and the report's ``warnings`` say which stage was skipped and
why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from contextwindow._args import as_strategy, check_messages
from contextwindow._memo import Memo
from contextwindow._prefix import identical_prefix
from contextwindow.errors import ContextWindowError, SummarizerError
from contextwindow.messages import COMPARED, Message, ToolSpec
from contextwindow.strategies.base import (
    Budget,
    Fitted,
    Strategy,
    aligned,
    check_budget,
    finish,
    known_valid,
    note_shared,
    relocate,
    shared_length,
    stage_name,
    unit_start,
    verify,
)

__all__ = ["Pipeline", "input_snapshot"]


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
        check_budget(budget)
        if not isinstance(messages, list | tuple):  # a generator: read once
            messages = check_messages(messages)
        last, k = _last_input(messages, budget)
        # Its leading ``k`` messages are the very objects of the last input,
        # found to be messages then: only the new ones are looked at (none
        # in a conversation a stage returned, as a nested pipeline gets).
        # ``__class__``, not ``type()``: pyright would narrow ``messages`` to a
        # tuple of unknown items.
        if not (messages.__class__ is tuple and known_valid(budget, messages)):
            check_messages(messages, start=k)
        # What the last input shares with this one was found valid there: only
        # the rest is checked (from the start of the unit holding its last
        # shared message), and counted.
        start = unit_start(messages, k - 1) if k else 0
        counted = _grown_total(last, messages, k, budget)
        # One tuple of the input: a valid one is the first stage's input as
        # it is, counted and remembered without another copy.
        entry = messages if messages.__class__ is tuple else tuple(messages)
        fitted = finish(
            "Pipeline", entry, entry, (), budget, start=start, counted=counted
        )
        _note_input(messages, fitted, budget, last, k)
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
                later
                if in_place
                else relocate(later, messages, current, memo=budget.memo)
            )
            in_place = in_place and aligned(budget, step.messages, current)
            current = step.messages
        return Fitted(current, report)


_INPUT_KEY = ("contextwindow.pipeline", "input")
"""The memo entry holding the last input (a ``_LastInput``)."""


@dataclass(frozen=True, slots=True)
class _LastInput:
    """The last input a pipeline was given with a counter, and what it found."""

    messages: Sequence[Message]
    """A snapshot of it (its checked output, when that is the same messages)."""
    checked: tuple[Message, ...]
    """Its valid form (the first stage's input)."""
    clean: bool
    """Whether it was valid as it came (then ``checked`` holds its objects)."""
    tools: tuple[ToolSpec, ...]
    """The tools its tokens were counted with."""
    tokens: int
    """Its request tokens."""


def _last_input(
    messages: Sequence[Message], budget: Budget
) -> tuple[_LastInput | None, int]:
    """The last input, and how much of it ``messages`` holds.

    The count is of leading messages that are the very objects of the last
    input (a conversation grown by an append holds them all), and is 0 when
    the last input was not valid as it came (only a valid one vouches for its
    prefix). Looked at once, at C speed, or taken from what ``fit`` recorded.
    """
    last = budget.memo.get(_INPUT_KEY)
    if not isinstance(last, _LastInput) or not last.clean:
        return None, 0
    k = shared_length(budget, messages, last.messages)
    if k is None:
        k = identical_prefix(last.messages, messages, COMPARED)
    return last, k


def _grown_total(
    last: _LastInput | None, messages: Sequence[Message], k: int, budget: Budget
) -> int | None:
    """The request tokens of ``messages`` when it extends the last input.

    Its tokens and the new messages' (the tools being the same, and no
    system message among the new ones when there are tools: the first one
    changes how OpenAI counts them); ``None`` otherwise (then they are
    counted).
    """
    if last is None or k != len(last.messages) or last.tools != budget.tools:
        return None
    tail = messages[k:]
    if budget.tools and any(m.role == "system" for m in tail):
        return None
    return last.tokens + sum(map(budget.counter.message, tail))


def _note_input(
    messages: Sequence[Message],
    fitted: Fitted,
    budget: Budget,
    last: _LastInput | None,
    k: int,
) -> None:
    """Keep this input, and tell the stages how much of it the last one holds.

    Each stage then finds that its input (the checked output) shares that
    much with the one it saw last, without looking again.
    """
    checked = fitted.messages
    clean = not fitted.report.changes
    # Both valid as they came: each checked output holds its input's objects.
    if last is not None and k and clean:
        note_shared(budget, checked, last.checked, k)
    if clean:
        kept: Sequence[Message] = checked  # the same objects: no copy
    else:
        kept = messages if isinstance(messages, tuple) else list(messages)
    budget.memo.put(
        _INPUT_KEY,
        _LastInput(kept, checked, clean, budget.tools, fitted.report.tokens_before),
    )


def input_snapshot(memo: Memo) -> Sequence[Message] | None:
    """The last input a pipeline was given with the counter holding ``memo``.

    A snapshot (the caller's list may change later): all ``Message``
    objects, found valid as they came. ``None`` if there is none.
    """
    last = memo.get(_INPUT_KEY)
    if isinstance(last, _LastInput) and last.clean:
        return last.messages
    return None
