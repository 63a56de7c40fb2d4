"""Strategies that drop whole units: ``DropOldest``, ``SlidingWindow``, ``MaxMessages``.

Contract: all three keep every pinned unit and the order of what they keep;
none ever splits a tool exchange. ``DropOldest`` is the one strategy that always
meets the budget when it can, and raises ``BudgetError`` naming the pinned
content when it cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from contextwindow._args import check_int
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Unit, unit_at
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    RunTally,
    checked_history,
    describe,
    describe_run,
    final_indices,
    finish,
    known_valid,
    opens_well,
    pinned_flags,
    pinned_one,
    pinned_units,
    shares,
    step_end,
    step_size,
    strategy_input,
)
from contextwindow.summarizers.record import is_summary
from contextwindow.validity import CONTINUED_ID, thinking_turn

__all__ = [
    "DropOldest",
    "MaxMessages",
    "Runs",
    "SlidingWindow",
    "dropped_runs",
    "keep_units",
]

MAX_PINNED_SHOWN = 5
"""Pinned units a ``BudgetError`` lists by name (the largest first)."""


@dataclass(frozen=True, slots=True)
class DropOldest:
    """Drop the oldest unpinned units until the conversation fits the budget.

    Once it fits, the units that start in the same step of the budget as the
    last one needed go too (``step_end``): the cut stays where it was while
    the conversation grows by less than a step, so the request starts the
    same from one turn to the next (a provider's prompt cache keeps serving
    it) and a re-fit costs what was appended.
    The first ``keep_first`` units after the system prompt are kept whenever
    dropping newer units alone can meet the budget: in an agent loop the first
    user turn is usually the task. When they must go as well, the drop is plain
    oldest first, which keeps the most recent units. A run of consecutive
    dropped units is one change in the report. A summary
    (``summarizers.is_summary``) is kept like pinned content, and goes only
    when nothing else but the first units can meet the budget (rather than
    drop the task, or raise): it stands for messages the full history holds.

    Args:
        keep_first: Leading non-system units dropped only as a last resort.

    Raises:
        BudgetError: Pinned content alone exceeds the budget; the error lists
            it, largest first.
        ContextWindowError: ``keep_first`` below 0.

    Example:
        >>> from contextwindow import Message, TokenCounter
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.system("be brief"), Message.user("fix the build"),
        ...         Message.assistant("one two three"), Message.user("four five"),
        ...         Message.assistant("six seven"), Message.user("and now?")]
        >>> fitted = DropOldest()(conv, Budget(32, TokenCounter(FakeTokenizer())))
        >>> [m.text for m in fitted.messages]
        ['be brief', 'fix the build', 'six seven', 'and now?']
        >>> [(c.kind, c.index, c.units, c.saved, c.what) for c in fitted.report.changes]
        [('dropped', 2, 2, 13, '2 units: 2 messages')]
    """

    keep_first: int = 1
    """Leading non-system units dropped only as a last resort (the task)."""

    def __post_init__(self) -> None:
        check_int(self.keep_first, "keep_first", low=0)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop units, oldest first, until the budget is met."""
        messages = strategy_input(messages, budget)
        key = (self, "DropOldest", budget.settings)
        state = budget.memo.get(key)
        if isinstance(state, _DropState):
            resumed = _resume(state, messages, budget)
            if resumed is not None:
                fitted, new_state = resumed
                budget.memo.put(key, new_state)
                return fitted
        us, pinned = pinned_units(messages, budget.protected, budget.provider)
        run = budget.counter.running(messages)
        cost = [run[u.stop] - run[u.start] for u in us]
        total = budget.count(messages)
        # The task: the first units after the system prompt, not counting a
        # placeholder turn a repair put first.
        lead = [
            k
            for k, u in enumerate(us)
            if u.kind != "system" and messages[u.start].id != CONTINUED_ID
        ][: self.keep_first]
        later = [k for k in range(len(us)) if not pinned[k] and k not in lead]
        spared = [k for k in lead if not pinned[k]]
        # First try to keep the lead; when it must go too, plain oldest-first
        # keeps more of the recent units than dropping everything else first.
        found = self._drop(messages, us, later, cost, total, budget)
        if found is not None:
            fitted, keep, grid = found
            budget.memo.put(
                key, _DropState.of(messages, us, keep, cost, lead, fitted, grid, budget)
            )
            return fitted
        budget.memo.pop(key)
        # A summary is kept as pinned, but it stands for messages the full
        # history still holds: rather than drop the task or fail, it goes
        # too, oldest first; the task goes last.
        summaries = _summaries(messages, us, pinned, budget)
        for extra in (summaries, spared):
            if not extra:
                continue
            later = sorted(later + extra)
            found = self._drop(messages, us, later, cost, total, budget)
            if found is not None:
                return found[0]
        if summaries:
            pinned = [p and k not in summaries for k, p in enumerate(pinned)]
        everything = [
            m
            for u, p in zip(us, pinned, strict=True)
            if p
            for m in messages[u.start : u.stop]
        ]
        last = finish("DropOldest", messages, everything, (), budget)
        raise _budget_error(messages, us, pinned, cost, budget, last)

    @staticmethod
    def _drop(
        messages: Sequence[Message],
        us: Sequence[Unit],
        order: Sequence[int],
        cost: Sequence[int],
        total: int,
        budget: Budget,
    ) -> tuple[Fitted, list[bool], int] | None:
        """Drop units in ``order`` until the budget is met; ``None`` if it is not.

        Then the units that start before the end of the step the last one
        needed starts in; also returns that end (0: nothing was needed).
        """
        keep = [True] * len(us)
        starts = budget.counter.running(messages)
        grid = pos = 0
        while True:
            while total > budget.limit and pos < len(order):
                k = order[pos]
                keep[k] = False
                total -= cost[k]
                pos += 1
                grid = step_end(starts[us[k].start], budget)
            while pos < len(order) and starts[us[order[pos]].start] < grid:
                keep[order[pos]] = False
                total -= cost[order[pos]]
                pos += 1
            fitted = keep_units("DropOldest", messages, us, keep, cost, budget)
            if fitted.report.fits:
                return fitted, keep, grid
            if pos == len(order):
                return None
            # A repair (Anthropic's first user turn) cost tokens: drop one more.
            k = order[pos]
            keep[k] = False
            total -= cost[k]
            pos += 1
            grid = step_end(starts[us[k].start], budget)


@dataclass(slots=True)
class _DropState:
    """What ``DropOldest`` decided for the conversation it last fitted.

    Units are dropped oldest first, on to the end of a step of the budget,
    so the decision is a cut: every unpinned unit up to ``last`` went (the
    lead aside), those that start before ``grid``; ``head`` holds what
    stayed before the cut, everything after it stayed. A conversation that
    shares the messages up to the cut keeps it while the units that start
    before the step before ``grid`` are not enough and all of them are
    (``short`` and ``dropped``); when more must go, the cut moves on.
    Kept only for a clean decision (the first order, no repair).
    """

    messages: Sequence[Message]
    """The input (the same objects: the drops are checked by identity)."""
    last: int
    """Index of the last unit dropped."""
    stop: int
    """Index of the first message after it."""
    head: tuple[Message, ...]
    """The messages kept before ``stop``."""
    dropped: int
    """Tokens dropped in all."""
    short: int
    """Tokens of the units dropped that start before the step before ``grid``."""
    grid: int
    """Where the step the last unit needed started in ends."""
    lead: int
    """Index of the last lead unit (-1: none)."""
    changes: tuple[Change, ...]
    """The report's changes, the last one the run ending at ``last``."""
    tally: RunTally
    """What the last run holds, to extend its description."""
    run: tuple[Unit, ...]
    """The last run's units, to move the cut back when fewer drops do."""
    placed: tuple[int, ...]
    """The messages before ``stop`` pinned for their place (``final_indices``:
    a thinking turn), which the cut kept: another set means another cut."""

    @staticmethod
    def of(
        messages: Sequence[Message],
        us: Sequence[Unit],
        keep: Sequence[bool],
        cost: Sequence[int],
        lead: Sequence[int],
        fitted: Fitted,
        grid: int,
        budget: Budget,
    ) -> _DropState | None:
        changes = fitted.report.changes
        gone = [k for k, kept in enumerate(keep) if not kept]
        if not gone or any(c.kind != "dropped" for c in changes):
            return None  # nothing dropped, or a repair: no cut to move on from
        last = gone[-1]
        first = last
        while first > 0 and not keep[first - 1]:
            first -= 1
        tally = RunTally()
        tally.extend(messages, us[first : last + 1])
        head = tuple(
            m
            for k in range(last)
            if keep[k]
            for m in messages[us[k].start : us[k].stop]
        )
        starts = budget.counter.running(messages)
        before = grid - step_size(budget)
        return _DropState(
            messages if isinstance(messages, tuple) else list(messages),
            last,
            us[last].stop,
            head,
            sum(cost[k] for k in gone),
            sum(cost[k] for k in gone if starts[us[k].start] < before),
            grid,
            max(lead, default=-1),
            changes,
            tally,
            tuple(us[first : last + 1]),
            _placed(messages, us[last].stop, budget),
        )


def _resume(
    state: _DropState, messages: Sequence[Message], budget: Budget
) -> tuple[Fitted, _DropState] | None:
    """The fit of ``messages`` from the cut ``state`` holds.

    ``None`` when it may differ from fitting them from scratch (then that is
    done).
    """
    stop = state.stop
    # The dropped units and the unit boundary after them, as they were.
    if (
        state.lead >= state.last
        or len(messages) <= stop
        or not shares(budget, messages, state.messages, stop + 1)
    ):
        return None
    total = budget.count(messages)
    finals = final_indices(messages, budget.provider)
    if _placed(messages, stop, budget, finals) != state.placed:
        return None  # a pin before the cut came or went (a thinking turn)
    if total - state.short <= budget.limit:
        return _undrop(state, messages, budget, total)  # fewer drops do
    starts = budget.counter.running(messages)
    markers = budget.protected
    at = stop  # where the next unit starts
    left = total - state.dropped
    head = list(state.head)
    changes = list(state.changes)
    tally: RunTally | None = state.tally.copy()
    run = list(state.run)
    run_start = changes[-1].index
    run_ids: tuple[str, ...] = changes[-1].ids
    run_cost = changes[-1].tokens_before
    changes.pop()
    last, dropped, grid = state.last, state.dropped, state.grid
    k, new_stop, kept = state.last + 1, stop, len(head)
    walked: list[tuple[int, int]] = []  # each unit dropped now: start, all dropped
    while left > budget.limit or (at < len(messages) and starts[at] < grid):
        if at == len(messages):
            return None  # not enough to drop: the full path says what is pinned
        u = unit_at(messages, at)
        at = u.stop
        span = messages[u.start : u.stop]
        c = starts[u.stop] - starts[u.start]
        if any(pinned_one(m, markers) for m in span) or any(
            u.start <= i < u.stop for i in finals
        ):
            head.extend(span)
            if tally is not None:
                changes.append(_run_change(run_start, run_ids, run_cost, tally))
                tally = None
        else:
            if tally is None:
                tally, run_start, run_ids, run_cost = RunTally(), u.start, (), 0
                run = []
            tally.add(messages, u)
            run.append(u)
            run_ids += tuple(m.id for m in span)
            run_cost += c
            if left > budget.limit:  # needed: the cut's step moves with it
                grid = step_end(starts[u.start], budget)
            left -= c
            last, dropped, new_stop, kept = k, dropped + c, u.stop, len(head)
            walked.append((starts[u.start], dropped))
        k += 1
    if tally is None:  # pinned units after the last drop: they follow the cut
        return None
    del head[kept:]
    changes.append(_run_change(run_start, run_ids, run_cost, tally))
    out = [*head, *messages[new_stop:]]
    # Whole units of a valid input: only the first-turn rule can break.
    if not known_valid(budget, messages) or not opens_well(out, budget.provider):
        return None
    fitted = finish(
        "DropOldest", messages, out, changes, budget, counted=total, kept=True
    )
    if fitted.report.changes != tuple(changes) or not fitted.report.fits:
        return None
    before = grid - step_size(budget)
    short = state.short if grid == state.grid else state.dropped
    for begin, so_far in walked:
        if begin < before:
            short = so_far
    new_state = _DropState(
        messages if isinstance(messages, tuple) else list(messages),
        last,
        new_stop,
        tuple(head),
        dropped,
        short,
        grid,
        state.lead,
        tuple(changes),
        tally,
        tuple(run),
        _placed(messages, new_stop, budget, finals),
    )
    return fitted, new_state


def _undrop(
    state: _DropState, messages: Sequence[Message], budget: Budget, total: int
) -> tuple[Fitted, _DropState] | None:
    """The fit of ``messages`` with the cut ``state`` holds moved back.

    What came before it shrank (a result cut since), so fewer drops do: the
    last unit needed now is found in the last run, from its end, and the
    run's units that start before the end of its step stay dropped, as
    dropping from scratch decides. ``None`` when that unit lies before the
    run, or the step before it reaches before the run over drops it cannot
    tell (then the fit is done from scratch).
    """
    starts = budget.counter.running(messages)
    run = state.run
    costs = [starts[u.stop] - starts[u.start] for u in run]
    # The drops before the run (its units are consecutive).
    before_run = state.dropped - (starts[run[-1].stop] - starts[run[0].start])
    # The fewest leading units of the run whose drop still makes it fit.
    n, dropped = len(run), state.dropped
    while n and total - (dropped - costs[n - 1]) <= budget.limit:
        n -= 1
        dropped -= costs[n]
    if n == 0:
        return None  # the run's first unit need not go either
    grid = step_end(starts[run[n - 1].start], budget)
    while n < len(run) and starts[run[n].start] < grid:
        dropped += costs[n]
        n += 1
    before = grid - step_size(budget)
    if before < starts[run[0].start] and before_run:
        return None  # what the drops before the run hold is not known here
    kept_run = run[:n]
    short = before_run + sum(
        c for u, c in zip(kept_run, costs[:n], strict=True) if starts[u.start] < before
    )
    stop = kept_run[-1].stop
    last_change = state.changes[-1]
    start = last_change.index
    tally = RunTally()
    tally.extend(messages, kept_run)
    ids = last_change.ids[: stop - start]
    run_cost = last_change.tokens_before - (state.dropped - dropped)
    changes = (*state.changes[:-1], _run_change(start, ids, run_cost, tally))
    out = [*state.head, *messages[stop:]]
    if not known_valid(budget, messages) or not opens_well(out, budget.provider):
        return None
    fitted = finish(
        "DropOldest", messages, out, changes, budget, counted=total, kept=True
    )
    if fitted.report.changes != changes or not fitted.report.fits:
        return None
    new_state = _DropState(
        messages if isinstance(messages, tuple) else list(messages),
        state.last - (len(run) - n),
        stop,
        state.head,
        dropped,
        short,
        grid,
        state.lead,
        changes,
        tally,
        kept_run,
        state.placed,  # the run's units went: none of them is pinned
    )
    return fitted, new_state


def _run_change(start: int, ids: tuple[str, ...], cost: int, tally: RunTally) -> Change:
    return Change(
        "dropped", "DropOldest", ids, start, cost, 0, tally.text(), tally.units
    )


def keep_units(
    stage: str,
    messages: Sequence[Message],
    us: Sequence[Unit],
    keep: Sequence[bool],
    cost: Sequence[int],
    budget: Budget,
    runs: Runs | None = None,
) -> Fitted:
    """The units flagged in ``keep``, finished: one change per run dropped.

    ``runs``: see ``dropped_runs``.
    """
    out = [m for k, u in enumerate(us) if keep[k] for m in messages[u.start : u.stop]]
    changes = dropped_runs(stage, messages, us, keep, cost, runs)
    return finish(stage, messages, out, changes, budget, kept=True)


@dataclass(slots=True)
class Runs:
    """The changes of the runs ``dropped_runs`` reported, to reuse them.

    ``made`` is filled by the call, by ``(first unit, unit after the run)``;
    a run found in ``known`` that ends at or before ``valid`` (the units
    before it are the same messages, grouped the same way, as when it was
    made) is taken from there instead of being described again.
    """

    known: dict[tuple[int, int], Change]
    valid: int
    made: dict[tuple[int, int], Change]


def dropped_runs(
    stage: str,
    messages: Sequence[Message],
    us: Sequence[Unit],
    keep: Sequence[bool],
    cost: Sequence[int],
    runs: Runs | None = None,
) -> list[Change]:
    """One ``dropped`` change per run of consecutive units not kept.

    With ``runs``, the changes made are recorded there, and those it knows
    are reused (see ``Runs``).
    """
    changes: list[Change] = []
    # The runs found at C speed: each starts at a unit not kept (a 0 byte)
    # and ends at the next one kept.
    flags = bytes(map(bool, keep))
    n = len(us)
    k = flags.find(0)
    while 0 <= k < n:
        j = flags.find(1, k, n)
        if j < 0:
            j = n
        if runs is not None:
            known = runs.known.get((k, j)) if j <= runs.valid else None
            if known is not None:
                changes.append(known)
                runs.made[k, j] = known
                k = flags.find(0, j)
                continue
        run = us[k:j]
        changes.append(
            Change(
                "dropped",
                stage,
                tuple(map(_ID, messages[run[0].start : run[-1].stop])),
                run[0].start,
                sum(cost[k:j]),
                0,
                describe_run(messages, run),
                len(run),
            )
        )
        if runs is not None:
            runs.made[k, j] = changes[-1]
        k = flags.find(0, j)
    return changes


_ID = attrgetter("id")


def _placed(
    messages: Sequence[Message],
    stop: int,
    budget: Budget,
    finals: tuple[int, ...] | None = None,
) -> tuple[int, ...]:
    """The messages before ``stop`` pinned for their place, in order."""
    if finals is None:
        finals = final_indices(messages, budget.provider)
    return tuple(sorted(i for i in finals if i < stop))


def _summaries(
    messages: Sequence[Message],
    us: Sequence[Unit],
    pinned: Sequence[bool],
    budget: Budget,
) -> list[int]:
    """The units pinned only for being a summary (not the final message).

    A protected marker its text happens to hold does not pin it: it holds
    no message that held one (those are never summarised).
    """
    # A summary standing as a thinking loop's task may go too: a repair then
    # puts its placeholder turn first, and the loop still opens the same way.
    finals = set(final_indices(messages, budget.provider)) - set(
        thinking_turn(messages, budget.provider)[:-1]
    )
    return [
        k
        for k, u in enumerate(us)
        if pinned[k]
        and u.kind == "message"
        and u.start not in finals
        and is_summary(messages[u.start])
        and not pinned_one(messages[u.start], (), summaries=False)
    ]


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
    turn = thinking_turn(messages, budget.provider)  # pinned with the final one
    last = len(messages) - 1
    where = _places(messages, checked_history(budget))
    rows: list[tuple[int, str]] = []
    for k, u in enumerate(us):
        if not pinned[k]:
            continue
        why = sorted(
            {
                _why(messages[i], i in finals, i in turn and i != last)
                for i in range(u.start, u.stop)
                if flags[i]
            }
        )
        at = where.get(messages[u.start].id, u.start)
        rows.append(
            (
                cost[k],
                f"{describe(messages, u)} #{at} ({', '.join(why)}): {cost[k]:,} tokens",
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


def _places(
    messages: Sequence[Message], history: Sequence[Message] | None
) -> dict[str, int]:
    """Where each message of ``history`` stands in it, by id (empty: none given).

    A stage of a pipeline sees what the stages before it made (runs
    collapsed, units summarised); a message it names is named at its place
    in what the caller gave (a message keeps its id through a rewrite), the
    last with that id, and at its place here when the history has no such id.
    """
    if history is None or history is messages:
        return {}
    return {m.id: i for i, m in enumerate(history)}


def _why(m: Message, final: bool, turn: bool) -> str:
    if m.role == "system":
        return "system"
    if m.pinned:
        return "pinned"
    if is_summary(m):
        return "summary"
    if turn:
        # Anthropic wants the loop to open with its thinking block, as it came.
        return "thinking turn" if m.role == "assistant" else "thinking turn's task"
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
        check_int(self.keep_last, "keep_last", low=0)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop every unit before the window, except pinned ones."""
        messages = strategy_input(messages, budget)
        us, pinned = pinned_units(messages, budget.protected, budget.provider)
        counted = [k for k, u in enumerate(us) if u.kind != "system"]
        window = set(counted[max(0, len(counted) - self.keep_last) :])
        keep = [pinned[k] or k in window for k in range(len(us))]
        return _keep_flagged("SlidingWindow", messages, us, keep, budget)


@dataclass(frozen=True, slots=True)
class MaxMessages:
    """Keep at most ``limit`` messages besides system messages; drop the oldest units.

    A cap by count, not by tokens: the last line of defence of a manager's
    ``max_messages``, and what ``prune_old_messages`` keeps. Units go whole,
    oldest first; pinned ones stay, so when they alone exceed the cap the
    output holds them and nothing else.

    Args:
        limit: Most non-system messages kept.

    Raises:
        ContextWindowError: ``limit`` below 0.

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.system("s"), Message.user("go"),
        ...         Message.assistant(tool_calls=[ToolCall("1", "ls")]),
        ...         Message.tool("1", "a.txt"), Message.assistant("done")]
        >>> budget = Budget(1000, TokenCounter(FakeTokenizer()))
        >>> [m.role for m in MaxMessages(3)(conv, budget).messages]
        ['system', 'assistant', 'tool', 'assistant']
        >>> [m.role for m in MaxMessages(2)(conv, budget).messages]  # no split
        ['system', 'assistant']
    """

    limit: int = 200
    """Most non-system messages kept."""

    def __post_init__(self) -> None:
        check_int(self.limit, "limit", low=0)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop the oldest unpinned units until the count is met."""
        messages = strategy_input(messages, budget)
        us, pinned = pinned_units(messages, budget.protected, budget.provider)
        keep = [True] * len(us)
        excess = sum(1 for m in messages if m.role != "system") - self.limit
        for k, u in enumerate(us):
            if excess <= 0:
                break
            if not pinned[k]:
                keep[k] = False
                excess -= u.stop - u.start
        return _keep_flagged("MaxMessages", messages, us, keep, budget)


def _keep_flagged(
    stage: str,
    messages: Sequence[Message],
    us: Sequence[Unit],
    keep: Sequence[bool],
    budget: Budget,
) -> Fitted:
    """``keep_units``, with what each dropped unit cost counted here."""
    counter = budget.counter
    cost = [
        0 if keep[k] else sum(counter.message(m) for m in messages[u.start : u.stop])
        for k, u in enumerate(us)
    ]
    return keep_units(stage, messages, us, keep, cost, budget)
