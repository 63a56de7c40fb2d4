"""Strategies that drop whole units: ``DropOldest`` and ``SlidingWindow``.

Contract: both keep every pinned unit and the order of what they keep; neither
ever splits a tool exchange. ``DropOldest`` is the one strategy that always
meets the budget when it can, and raises ``BudgetError`` naming the pinned
content when it cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.messages import Message, Unit
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    describe,
    final_indices,
    finish,
    pinned_flags,
    pinned_units,
)

__all__ = ["DropOldest", "SlidingWindow"]

MAX_PINNED_SHOWN = 5
"""Pinned units a ``BudgetError`` lists by name (the largest first)."""


@dataclass(frozen=True, slots=True)
class DropOldest:
    """Drop the oldest unpinned units until the conversation fits the budget.

    Raises:
        BudgetError: Pinned content alone exceeds the budget; the error lists
            it, largest first.

    Example:
        >>> from contextwindow import Message, TokenCounter
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.system("be brief"), Message.user("one two three"),
        ...         Message.assistant("four five six"), Message.user("and now?")]
        >>> fitted = DropOldest()(conv, Budget(25, TokenCounter(FakeTokenizer())))
        >>> [m.text for m in fitted.messages]
        ['be brief', 'four five six', 'and now?']
        >>> [(c.kind, c.index, c.saved) for c in fitted.report.changes]
        [('dropped', 1, 7)]
    """

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop units, oldest first, until the budget is met."""
        us, pinned = pinned_units(messages, budget.protected, budget.provider)
        counter = budget.counter
        cost = [sum(counter.message(m) for m in messages[u.start : u.stop]) for u in us]
        total = budget.count(messages)
        keep = [True] * len(us)
        order = [k for k in range(len(us)) if not pinned[k]]
        pos = 0
        while True:
            while total > budget.limit and pos < len(order):
                keep[order[pos]] = False
                total -= cost[order[pos]]
                pos += 1
            out = [
                m
                for k, u in enumerate(us)
                if keep[k]
                for m in messages[u.start : u.stop]
            ]
            changes = [
                Change(
                    "dropped",
                    "DropOldest",
                    _ids(messages, u),
                    u.start,
                    cost[k],
                    0,
                    describe(messages, u),
                )
                for k, u in enumerate(us)
                if not keep[k]
            ]
            fitted = finish("DropOldest", messages, out, changes, budget)
            if fitted.report.fits:
                return fitted
            if pos == len(order):
                raise _budget_error(messages, us, pinned, cost, budget, fitted)
            # A repair (Anthropic's first user turn) cost tokens: drop one more.
            keep[order[pos]] = False
            total -= cost[order[pos]]
            pos += 1


def _ids(messages: Sequence[Message], u: Unit) -> tuple[str, ...]:
    return tuple(m.id for m in messages[u.start : u.stop])


def _budget_error(
    messages: Sequence[Message],
    us: Sequence[Unit],
    pinned: Sequence[bool],
    cost: Sequence[int],
    budget: Budget,
    fitted: Fitted,
) -> BudgetError:
    flags = pinned_flags(messages, budget.protected, budget.provider)
    finals = final_indices(messages, budget.provider)
    rows: list[tuple[int, str]] = []
    for k, u in enumerate(us):
        if not pinned[k]:
            continue
        why = sorted(
            {_why(messages[i], i in finals) for i in range(u.start, u.stop) if flags[i]}
        )
        rows.append(
            (
                cost[k],
                f"{describe(messages, u)} #{u.start} ({', '.join(why)}): "
                f"{cost[k]:,} tokens",
            )
        )
    # What no message accounts for: reply priming, tool schemas.
    overhead = fitted.report.tokens_after - sum(
        budget.counter.message(m) for m in fitted.messages
    )
    if overhead > 0:
        rows.append(
            (
                overhead,
                f"request overhead (reply priming, tool schemas): {overhead:,} tokens",
            )
        )
    rows.sort(key=lambda r: -r[0])
    shown = [text for _, text in rows[:MAX_PINNED_SHOWN]]
    if len(rows) > MAX_PINNED_SHOWN:
        shown.append(f"and {len(rows) - MAX_PINNED_SHOWN} more")
    return BudgetError(budget.limit, fitted.report.tokens_after, tuple(shown))


def _why(m: Message, final: bool) -> str:
    if m.role == "system":
        return "system"
    if m.pinned:
        return "pinned"
    if final:
        return "final message"
    return "protected marker"


@dataclass(frozen=True, slots=True)
class SlidingWindow:
    """Keep the last ``keep_last`` units (and every pinned one); drop the rest.

    Args:
        keep_last: Units kept, counted from the end; system units are pinned
            and not counted.

    Raises:
        ContextWindowError: ``keep_last`` below 0.

    Example:
        >>> from contextwindow import Message, TokenCounter
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.user(f"turn {i}") for i in range(5)]
        >>> fitted = SlidingWindow(2)(conv, Budget(1000, TokenCounter(FakeTokenizer())))
        >>> [m.text for m in fitted.messages]
        ['turn 3', 'turn 4']
    """

    keep_last: int = 20
    """Units kept, counted from the end (system units not counted)."""

    def __post_init__(self) -> None:
        if self.keep_last < 0:
            raise ContextWindowError(f"keep_last must be >= 0, got {self.keep_last}")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop every unit before the window, except pinned ones."""
        us, pinned = pinned_units(messages, budget.protected, budget.provider)
        counted = [k for k, u in enumerate(us) if u.kind != "system"]
        window = set(counted[max(0, len(counted) - self.keep_last) :])
        counter = budget.counter
        out: list[Message] = []
        changes: list[Change] = []
        for k, u in enumerate(us):
            part = messages[u.start : u.stop]
            if pinned[k] or k in window:
                out.extend(part)
            else:
                cost = sum(counter.message(m) for m in part)
                changes.append(
                    Change(
                        "dropped",
                        "SlidingWindow",
                        _ids(messages, u),
                        u.start,
                        cost,
                        0,
                        describe(messages, u),
                    )
                )
        return finish("SlidingWindow", messages, out, changes, budget)
