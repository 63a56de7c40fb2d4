"""Rewriting tool results oldest first, again from where a conversation changed.

Contract:

- ``rewrite_results(messages, budget, stage, kind, policy, key)`` gives
  exactly what a full scan gives: each tool result outside pinned messages
  (and not already a marker), oldest first, is offered to the policy's
  rewrite while the conversation does not fit; a new text is taken when it
  saves tokens and brings in no protected marker; a rewritten message keeps
  its original's handle and sizes (``handles.with_origin``); each changed
  message is one change. Once the conversation fits, the scan goes on to
  the end of the step of the budget (``step_end``, ``REWRITE_STEP``) the
  message it fitted at starts in, then stops: what it rewrote stays put
  while the conversation grows by less than a step. A scan that starts
  within the budget rewrites nothing.
- Incremental: what the scan decided is kept in the budget's memo (under
  ``key`` and the budget's settings but its limit, ``Budget.rules``: one entry
  a stage, whatever limit it is asked for; ``key=None`` keeps nothing). When
  the next call's conversation starts with the same message objects, the
  decisions before the first place where one could differ are reused (the
  rewritten messages themselves, not rebuilt), and only the rest is scanned. A
  decision can differ from where the conversations differ, from where the last
  scan met the budget (a grown conversation may need more, and the step it
  ends in moves with it), from the final messages (pinned, then not), and from
  where the policy says its own rule moved (``Policy.resume``). A conversation
  that counts fewer tokens than the last one, or a larger limit, keeps the
  decisions after which it is still over budget (the scan could stop sooner
  otherwise), and a smaller limit resumes where the last scan stopped.
  Anything else (a repaired output) means a full scan, which sends again the
  very messages the last scan rewrote the same way, so the stages after it
  still resume. Single messages before that point are decided again alone,
  the decisions between them kept, where the policy names them
  (``Resumed.points``: a repeated output's earlier copies, whose note names
  the newest) and, for a policy whose decisions depend on each result alone
  (``local``), where an earlier stage rewrote a few messages in place
  (``IN_PLACE``); only while the conversation is still over budget where the
  scan resumes, else the scan starts at the first of them. The memo entry
  holds references, no copies of messages: the input, the output, the
  changes and one index per tool result.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, compress, count, islice
from typing import NamedTuple, Protocol, cast

from contextwindow._prefix import common_prefix
from contextwindow.formats.openai_responses import result_takes_text
from contextwindow.handles import handle_of, original_sizes, with_origin
from contextwindow.messages import Message, Part, ToolResult, same_units
from contextwindow.strategies.base import (
    REWRITE_STEP,
    Budget,
    Change,
    ChangeKind,
    Fitted,
    final_indices,
    finish,
    note_aligned,
    note_shared,
    pinned_one,
    shares,
    step_end,
    unit_start,
)
from contextwindow.strategies.collapse import is_marker
from contextwindow.tokens.counting import TokenCounter

__all__ = [
    "Always",
    "CallNames",
    "MessageRewrite",
    "Origin",
    "Policy",
    "Resumed",
    "Rewrite",
    "Scan",
    "call_name",
    "rewrite_results",
    "scan_messages",
]


class Origin(NamedTuple):
    """What a rewrite knows of a result's original (``contextwindow.handles``)."""

    handle: str
    """The handle of the original message."""
    tokens: int
    """Tokens the original result took (text and images)."""


Rewrite = Callable[[ToolResult, int, Origin], "str | None"]
"""Given a result, its position among all results and its original, new text
or ``None``."""


Scan = Callable[
    [
        Sequence[Message],
        Budget,
        str,
        ChangeKind,
        Rewrite,
        int,
        int,
        int,
        tuple[int, ...],
    ],
    tuple[list[Message], list[Change], list[int], int],
]
"""A scan: ``(messages, budget, stage, kind, rewrite, start, total, position,
finals) -> (output from start, changes, their running savings, stop)``, as
``_scan`` does for tool results; another stage that rewrites messages in
place, oldest first while over budget, gives its own."""


MessageRewrite = Callable[
    [int, Message],
    "tuple[Message, Callable[[], tuple[str, list[int]]]] | None",
]
"""Given a message's index and the message: its rewrite and what describes the
change once taken (the change's text, its results' original sizes), or
``None`` to leave it."""


def scan_messages(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    start: int,
    total: int,
    finals: tuple[int, ...],
    rewrite: MessageRewrite,
) -> tuple[list[Message], list[Change], list[int], int]:
    """A ``Scan``'s body for a stage that rewrites whole messages.

    From ``start``, oldest first, while the conversation does not fit: each
    message but the final and pinned ones is offered to ``rewrite``; its
    rewrite is taken when it saves tokens and brings in no protected marker
    (which would pin it for the stages after), keeping the original's handle
    and sizes (``handles.with_origin``); each taken rewrite is one change.
    Returns the output from ``start``, the changes, their running savings
    and where the budget was met.
    """
    counter = budget.counter
    markers = budget.protected
    out: list[Message] = []
    changes: list[Change] = []
    saved_run: list[int] = []
    saved_all = 0
    n = len(messages)
    stop = n
    reach = _Reach(messages, budget, total)
    for i in range(start, n):
        if total <= budget.limit:
            stop = min(stop, i)
            if reach.past(i):
                break
        m = messages[i]
        plan = None if i in finals or pinned_one(m, markers) else rewrite(i, m)
        if plan is None:
            out.append(m)
            continue
        new, describe = plan
        before, after = counter.message(m), counter.message(new)
        if after >= before or any(k in new.text and k not in m.text for k in markers):
            out.append(m)
            continue
        what, sizes = describe()
        total -= before - after
        out.append(with_origin(new, m, sizes))
        changes.append(Change(kind, stage, (m.id,), i, before, after, what))
        saved_all += before - after
        saved_run.append(saved_all)
    else:
        i = n
    out.extend(messages[i:])
    return out, changes, saved_run, stop


class _Reach:
    """Where a scan that met the budget stops: the end of that step.

    A scan rewrites from the oldest while over budget, then on to the end
    of the step of the budget (``step_end``, ``REWRITE_STEP``) the message
    it met the budget at starts in: the rewrites stay put while the
    conversation grows by less than a step, so a re-fit gives the same
    output up to the new messages. Positions are the messages' running
    token totals, counted only once a scan meets the budget.
    """

    __slots__ = ("_budget", "_end", "_messages", "_over", "_starts")

    def __init__(self, messages: Sequence[Message], budget: Budget, total: int) -> None:
        self._messages = messages
        self._budget = budget
        self._over = total > budget.limit
        self._starts: Sequence[int] = ()
        self._end = 0

    def past(self, i: int) -> bool:
        """Whether message ``i`` (the budget met before it) starts past the step.

        A scan that starts within the budget rewrites nothing (a resumed
        one starts over it, or with no decision kept: ``_resume``).
        """
        if not self._over:
            return True
        if not self._starts:
            self._starts = self._budget.counter.running(self._messages)
            self._end = step_end(self._starts[i], self._budget, REWRITE_STEP)
        return self._starts[i] >= self._end


class Resumed(NamedTuple):
    """What ``Policy.resume`` gives when some earlier decisions may differ too."""

    rewrite: Rewrite
    """The rewrite."""
    since: int
    """The first result position from which every decision may differ."""
    kept: object
    """What to keep."""
    points: Sequence[int]
    """Result positions before ``since`` whose decision alone may differ
    (their messages unchanged): each is decided again by itself, the
    decisions between them kept (a repeated output's earlier copies, whose
    note names the newest)."""


class Policy(Protocol):
    """Which results a stage rewrites, and how: for a fresh scan, and again.

    ``fresh`` gives the rewrite for a whole conversation; ``resume`` gives it
    for a conversation that shares a prefix with the one ``kept`` was made
    for, and the first result position whose decision may differ because of
    the policy's own rule (``results`` when none), or ``None`` when it cannot
    tell (a full scan follows). It may give a ``Resumed``, naming single
    earlier positions to decide again as well. A policy whose decision for a
    result depends on that result, its message and its position alone says
    so with a ``local = True`` attribute: then results an earlier stage
    rewrote in place (``IN_PLACE`` at most) are decided again alone, and the
    decisions between them stand. Another may have an ``in_place(kept,
    messages, results, shared, changed)`` method giving the ``Resumed`` for
    such a conversation (its points besides ``changed``), or ``None``.
    """

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        """The rewrite for ``messages`` (``results`` results), and what to keep."""
        ...

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | Resumed | None:
        """The rewrite, the first position it may decide otherwise, what to keep.

        ``shared``: the messages the two conversations share at the front;
        ``extends``: whether the old one is all of that prefix (an append).
        """
        ...


class Always:
    """A policy for a stage whose every decision depends on its message alone.

    Nothing moves but what the conversation, the budget and the final
    messages move; ``rewrite`` is what it gives the scan.
    """

    __slots__ = ("rewrite",)

    local = True
    """Each decision depends on its result alone (see ``Policy``)."""

    def __init__(self, rewrite: Rewrite) -> None:
        self.rewrite = rewrite

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        return self.rewrite, None

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | None:
        return self.rewrite, results, None


class _Once(Always):
    """A plain rewrite as a policy: every call scans from scratch."""

    __slots__ = ()

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | None:
        return None


@dataclass(slots=True)
class _Scanned:
    """What one scan decided (see the module's contract)."""

    messages: Sequence[Message]
    out: tuple[Message, ...]
    changes: tuple[Change, ...]
    indices: array[int]
    """Each change's index."""
    saved: array[int]
    """Tokens saved by the changes up to each one (running sum)."""
    stop: int
    """The first message whose results met the budget (inside it, or before
    it): from there on, a bigger conversation may rewrite more."""
    total: int
    finals: tuple[int, ...]
    where: array[int]
    """The message index of each result position (machine integers, as
    ``indices`` and ``saved``: a few bytes each, not an object)."""
    kept: object
    """The policy's own."""


def rewrite_results(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    policy: Policy | Rewrite,
    key: Hashable = None,
    scan: Scan | None = None,
) -> Fitted:
    """Apply the policy's rewrite to tool results (see the module's contract).

    Args:
        messages: The conversation.
        budget: The budget; its memo keeps what was decided.
        stage: The strategy's name, for the report.
        kind: The kind of each change.
        policy: Which results to rewrite, and how (a plain rewrite is a
            policy that always scans from scratch).
        key: The memo key (the strategy itself: its settings decide);
            ``None`` keeps nothing.
        scan: What one pass does (default: offer each tool result to the
            rewrite); it must keep every message where it was.
    """
    scan = _scan if scan is None else scan
    chosen: Policy
    if isinstance(policy, Always) or hasattr(policy, "resume"):
        chosen = cast("Policy", policy)
    else:
        chosen = _Once(policy)  # pyright: ignore[reportArgumentType]  # no resume: a Rewrite
        key = None
    memo_key = ("contextwindow.rewrite", key, budget.rules)
    state = budget.memo.get(memo_key) if key is not None else None
    fitted: Fitted | None = None
    last = state if isinstance(state, _Scanned) else None
    if last is not None:
        fitted, state = _resume(last, messages, budget, stage, kind, chosen, scan)
    if fitted is None:
        fitted, state = _full(messages, budget, stage, kind, chosen, scan, last)
    if key is not None:
        if state is None:
            budget.memo.pop(memo_key)
        else:
            budget.memo.put(memo_key, state)
    return fitted


def _result_places(messages: Sequence[Message], start: int, out: array[int]) -> None:
    for i in range(start, len(messages)):
        m = messages[i]
        if m.role == "tool":
            n = sum(1 for p in m.parts if isinstance(p, ToolResult))
            out.extend([i] * n)


def _full(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    policy: Policy,
    scan: Scan,
    last: _Scanned | None = None,
) -> tuple[Fitted, _Scanned | None]:
    where = array("q")
    _result_places(messages, 0, where)
    rewrite, kept = policy.fresh(messages, len(where))
    total = budget.count(messages)
    finals = final_indices(messages, budget.provider)
    out, changes, saved, stop = scan(
        messages, budget, stage, kind, rewrite, 0, total, 0, finals
    )
    if last is not None:
        _reuse(out, changes, messages, last)
    fitted = finish(
        stage, messages, out, changes, budget, counted=total, saved=sum(saved[-1:])
    )
    if len(fitted.report.changes) == len(changes):  # no repair moved a message
        _aligned(budget, fitted.messages, messages)
    indices = array("q", [c.index for c in changes])
    return fitted, _remember(
        messages, fitted, changes, indices, saved, stop, total, finals, where, kept
    )


def _aligned(
    budget: Budget, out: Sequence[Message], messages: Sequence[Message]
) -> None:
    """Record that ``out`` keeps ``messages``' places and units.

    A scan rewrites results (and arguments) in place: each message keeps its
    role and call ids, so the units are the input's too.
    """
    note_aligned(budget, out, messages)
    if type(out) is tuple:
        same_units(cast("tuple[Message, ...]", out), messages)


def _reuse(
    out: list[Message],
    changes: Sequence[Change],
    messages: Sequence[Message],
    last: _Scanned,
    since: int = 0,
) -> None:
    """Put back in ``out`` the last scan's rewrites that came out the same.

    A scan rewrites each message it passes anew: where the rewrite of the
    same original equals the one made before, that very object goes out
    again, so the stages after see the objects they saw and resume.
    ``since``: the last scan's rewrites before this message are not looked at.
    """
    first = bisect_left(last.indices, since)
    made = {
        id(last.messages[i]): (last.messages[i], last.out[i])
        for i in last.indices[first:]
    }
    for c in changes:
        i = c.index
        hit = made.get(id(messages[i]))
        if hit is not None and hit[0] is messages[i] and hit[1] == out[i]:
            out[i] = hit[1]


def _remember(
    messages: Sequence[Message],
    fitted: Fitted,
    changes: Sequence[Change],
    indices: array[int],
    saved: Sequence[int],
    stop: int,
    total: int,
    finals: tuple[int, ...],
    where: array[int],
    kept: object,
) -> _Scanned | None:
    if len(fitted.report.changes) != len(changes):
        return None  # a repair: the output is not the scan's alone
    return _Scanned(
        messages if isinstance(messages, tuple) else list(messages),
        fitted.messages,
        tuple(changes),
        indices,
        saved if isinstance(saved, array) else array("q", saved),
        stop,
        total,
        finals,
        where,
        kept,
    )


def _resume(
    state: _Scanned,
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    policy: Policy,
    scan: Scan,
) -> tuple[Fitted | None, _Scanned | None]:
    """The scan resumed where a decision may first differ; ``None`` for a full one."""
    old = state.messages
    shared = common_prefix(messages, old)
    if not shared:
        return None, None
    plan, shared, where, changed = _plan(state, messages, policy, shared)
    if plan is None:
        return None, None
    rewrite, since, kept = plan[0], plan[1], plan[2]
    points: set[int] = (
        {where[p] for p in plan.points} if isinstance(plan, Resumed) else set()
    )
    points.update(changed or ())
    start = min(shared, state.stop)
    if since < len(where):
        start = min(start, where[since])
    finals = final_indices(messages, budget.provider)
    # A message pinned then and not now (or the reverse): its pin is its
    # decision's only input that moved. Far back (a thinking loop's opener,
    # pinned while the loop runs), it is decided again alone, as a changed
    # one is; near (the last final message), the scan starts there.
    for f in (*state.finals, *finals):
        if (f in finals) != (f in state.finals):
            if start - f <= NEAR:
                start = min(start, f)
            else:
                points.add(f)
    start = min(start, len(messages))
    total = budget.count(messages)
    # Each decision before ``start`` was taken while over budget; it is
    # taken again when the conversation is still over once it is made. A
    # conversation that counts fewer tokens now (a later stage's input made
    # smaller further on), or a larger limit, keeps the decisions after
    # which it is still over, and the scan resumes at the first other one.
    j = bisect_left(state.indices, start)
    if j and total - state.saved[j - 1] <= budget.limit:
        j = bisect_left(state.saved, total - budget.limit)
        start = min(start, state.indices[j])
    if start < len(messages):  # to the start of the unit, where validity is checked
        start = unit_start(messages, start)
    how = (stage, kind, rewrite)
    head = _again(
        state, messages, budget, how, points, start, shared, total, finals, scan
    )
    if isinstance(head, int):  # the scan goes through the first of them
        start, head = head, None
    j = bisect_left(state.indices, start)
    before = state.saved[j - 1] if j else 0
    if head is not None:
        before = head.running[-1] if head.running else 0
    if not shares(budget, messages, old, min(start, *(changed or [start]))):
        return None, None
    position = bisect_left(where, start)
    tail, changes, saved, stop = scan(
        messages, budget, stage, kind, rewrite, start, total - before, position, finals
    )
    out = [*(state.out[:start] if head is None else head.out), *tail]
    # The tail's rewrites that equal the last ones: those very objects, so
    # that a later stage finds its input the same as before and resumes too.
    _reuse(out, changes, messages, state, start)
    all_changes = [*(state.changes[:j] if head is None else head.changes), *changes]
    fitted = finish(
        stage,
        messages,
        out,
        all_changes,
        budget,
        start=start,
        counted=total,
        saved=before + sum(saved[-1:]),
    )
    note_shared(
        budget, fitted.messages, state.out, start if head is None else head.same
    )
    if len(fitted.report.changes) == len(all_changes):  # no repair moved a message
        _aligned(budget, fitted.messages, messages)
    running = state.saved[:j] if head is None else head.running
    indices = state.indices[:j] if head is None else head.indices
    running.extend([before + s for s in saved])
    indices.extend([c.index for c in changes])
    return fitted, _remember(
        messages,
        fitted,
        all_changes,
        indices,
        running,
        stop,
        total,
        finals,
        where,
        kept,
    )


def _plan(
    state: _Scanned, messages: Sequence[Message], policy: Policy, shared: int
) -> tuple[
    tuple[Rewrite, int, object] | Resumed | None, int, array[int], list[int] | None
]:
    """The policy's plan, the messages shared, the result places, what changed in place.

    A few messages an earlier stage rewrote in place (``_in_place``): a
    ``local`` policy resumes as if the conversation were the last one grown,
    and one with an ``in_place`` method says what those changes move; else
    (or when it cannot tell) the policy resumes after the shared prefix.
    """
    old = state.messages
    local = getattr(policy, "local", False)
    hook = getattr(policy, "in_place", None)
    changed = _in_place(messages, old, shared) if local or hook else None
    if changed:
        where = _places(state, messages, len(old))
        if local:
            plan = policy.resume(state.kept, messages, len(where), len(old), True)
        else:
            assert hook is not None
            plan = hook(state.kept, messages, len(where), len(old), changed)
        if plan is not None:
            return plan, len(old), where, changed
    where = _places(state, messages, shared)
    plan = policy.resume(state.kept, messages, len(where), shared, shared == len(old))
    return plan, shared, where, None


def _places(state: _Scanned, messages: Sequence[Message], shared: int) -> array[int]:
    """Each result's message index: the last scan's in the first ``shared``."""
    where = state.where[: bisect_left(state.where, shared)]
    _result_places(messages, shared, where)
    return where


NEAR = 8
"""A message whose pin changed this few messages before where a scan resumes
moves the resume point there (scanning a few messages costs less than deciding
one again alone, which copies the output before it); one further back is
decided again alone."""

IN_PLACE = 64
"""Messages an earlier stage rewrote in place, at most, for a local policy's
scan to decide them again alone rather than resume at the first."""


def _in_place(
    messages: Sequence[Message], old: Sequence[Message], shared: int
) -> list[int] | None:
    """Where ``messages`` holds other objects than ``old`` (all of it, and more).

    Only tool messages answering the same calls and assistant messages
    making the same calls (an earlier stage's rewrites of results and of
    arguments), at most ``IN_PLACE`` of them: ``None`` otherwise. Past
    ``shared`` (by identity, at C speed); ``shares`` checks the rest.
    """
    n = len(old)
    if n > len(messages):
        return None
    flags = map(operator.is_, islice(messages, shared, n), islice(old, shared, n))
    changed = list(compress(count(shared), map(operator.not_, flags)))
    if len(changed) > IN_PLACE:
        return None
    for i in changed:
        a, b = messages[i], old[i]
        if a.role != b.role or len(a.parts) != len(b.parts):
            return None
        if a.role == "tool":
            same = [r.call_id for r in a.tool_results] == [
                r.call_id for r in b.tool_results
            ]
        else:
            same = a.role == "assistant" and [(c.id, c.name) for c in a.tool_calls] == [
                (c.id, c.name) for c in b.tool_calls
            ]
        if not same:
            return None
    return changed


class _Head(NamedTuple):
    """A scan's output before where it resumes, some of its messages decided again."""

    out: list[Message]
    changes: list[Change]
    running: array[int]
    """The changes' running savings."""
    indices: array[int]
    """The changes' indices."""
    same: int
    """How many leading messages are the last output's very objects."""


def _again(
    state: _Scanned,
    messages: Sequence[Message],
    budget: Budget,
    how: tuple[str, ChangeKind, Rewrite],
    points: set[int],
    start: int,
    shared: int,
    total: int,
    finals: tuple[int, ...],
    scan: Scan,
) -> _Head | int | None:
    """The messages at ``points`` before ``start`` decided again.

    Those of ``Resumed.points`` and those rewritten in place (``_in_place``).
    Where the last scan passed them over budget, each alone
    (``_decide_again``); else the start of the first one's unit, where the
    scan must start. ``None``: none is before ``start``.
    """
    redo = sorted(i for i in points if i < start)
    if not redo:
        return None
    if redo[-1] < min(shared, state.stop):
        head = _decide_again(
            state, messages, budget, (*how, scan), redo, start, total, finals
        )
        if head is not None:
            return head
    return unit_start(messages, redo[0])


def _decide_again(
    state: _Scanned,
    messages: Sequence[Message],
    budget: Budget,
    how: tuple[str, ChangeKind, Rewrite, Scan],
    redo: Sequence[int],
    start: int,
    total: int,
    finals: tuple[int, ...],
) -> _Head | None:
    """The last output and changes before ``start``, ``redo``'s messages scanned again.

    Each alone, as the scan would meet it: the conversation is still over
    budget there, since it still is at ``start`` with what the decisions
    before it save (checked: ``None`` when it is not, and the scan must go
    through). The messages are those the last scan met, or ones an earlier
    stage rewrote in place keeping their calls (``_in_place``), each valid
    where it stands: only contents differ from the last output, and no rule
    of validity moves. Returns the output up to ``start``, its changes and
    their running savings.
    """
    stage, kind, rewrite, scan = how
    out = list(state.out[:start])
    j = bisect_left(state.indices, start)
    old_changes = state.changes[:j]
    where = state.where
    made: dict[int, Change | None] = {}
    for i in redo:
        k = bisect_left(state.indices, i)
        # The whole conversation's tokens for what is left there: the scan
        # only asks whether it is over budget, which it is, through this
        # message, as long as it still is at ``start`` (checked below).
        args = (budget, stage, kind, rewrite, i, total, bisect_left(where, i), finals)
        if scan is _scan:
            got, found, _, _ = _scan(messages, *args, until=i + 1)
        else:  # a stage's own scan, given the messages up to this one
            got, found, _, _ = scan(messages[: i + 1], *args)
        was = state.out[i]
        # The same rewrite (id and all): the very object, for the stages after.
        new = _same_as(state.out, i, messages[i], got[0])
        out[i] = new
        old = old_changes[k] if k < j and state.indices[k] == i else None
        made[i] = found[0] if found else None
        if old is not None and found and new is was:
            made[i] = old
    changes = [c for c in old_changes if c.index not in made]
    changes.extend(c for c in made.values() if c is not None)
    changes.sort(key=operator.attrgetter("index"))
    running = array("q", accumulate(c.saved for c in changes))
    if running and total - running[-1] <= budget.limit:
        return None
    same = next((i for i in redo if out[i] is not state.out[i]), start)
    indices = array("q", [c.index for c in changes])
    return _Head(out, changes, running, indices, same)


def _scan(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    rewrite: Rewrite,
    start: int,
    total: int,
    position: int,
    finals: tuple[int, ...],
    until: int | None = None,
) -> tuple[list[Message], list[Change], list[int], int]:
    """Rewrite from ``start`` while over budget (up to ``until``: to the end).

    Returns the output from ``start`` on, the changes, their running savings
    (from 0), and where the budget was first met.
    """
    counter = budget.counter
    markers = budget.protected
    limit = budget.limit
    out: list[Message] = []
    changes: list[Change] = []
    saved_run: list[int] = []
    saved_all = 0
    n = len(messages) if until is None else until
    stop = rest = n  # where the budget was first met; what is left as it was
    alike = _alike(budget, stage)
    reach = _Reach(messages, budget, total)
    names = CallNames(messages)
    beyond = False  # the budget met, and this message in the step it was met in
    for i in range(start, n):
        if total <= limit:
            stop = min(stop, i)
            if reach.past(i):
                rest = i
                break
            beyond = True
        m = messages[i]
        if m.role != "tool":
            out.append(m)
            continue
        pinned = i in finals or pinned_one(m, markers)
        parts: list[Part] = []
        touched: list[str] = []
        sizes: list[int] | None = None
        first: list[int] = []
        handle = ""
        j = 0
        for part in m.parts:
            if isinstance(part, ToolResult):
                # Met inside this message: its later results stay, unless
                # the message starts inside the step it was met in.
                fits = total <= limit and not beyond
                if total <= limit:
                    stop = min(stop, i)
                name = None
                text = None
                # A result whose shape takes no text (a Responses
                # screenshot) cannot be written cut: it stays as it is.
                if not (
                    pinned or fits or is_marker(part) or not result_takes_text(m, part)
                ):
                    named = part
                    if part.name is None:
                        name = names(i, part.call_id)
                        if name is not None:  # for {name}
                            named = replace(part, name=name)
                    if sizes is None:
                        sizes = [_size(counter, r) for r in m.tool_results]
                        known = original_sizes(m)
                        first = (
                            list(known)
                            if known is not None and len(known) == len(sizes)
                            else sizes
                        )
                        handle = handle_of(m)
                    text = rewrite(named, position, Origin(handle, first[j]))
                j += 1
                position += 1
                # A marker in the new text would pin the message for later stages.
                if text is not None and not any(k in text for k in markers):
                    new = replace(part, content=text)  # its images go too
                    saved = counter.part(part) - counter.part(new)
                    if saved > 0:
                        total -= saved
                        parts.append(new)
                        touched.append(part.name or name or part.call_id)
                        continue
            parts.append(part)
        if not touched:
            out.append(m)
            continue
        assert sizes is not None  # a result was rewritten
        new_msg = _same_as(alike, i, m, with_origin(m.with_parts(parts), m, sizes))
        out.append(new_msg)
        change = Change(
            kind,
            stage,
            (m.id,),
            i,
            counter.message(m),
            counter.message(new_msg),
            f"tool result: {_names(touched)}",
        )
        changes.append(change)
        saved_all += change.saved
        saved_run.append(saved_all)
    out.extend(messages[rest:n])
    return out, changes, saved_run, stop


_ALIKE_KEY = "contextwindow.rewrite.alike"
"""The memo entry of a stage's output that scans with other budgets reuse."""


def share_rewrites(budget: Budget, stage: str, messages: Sequence[Message]) -> None:
    """Let ``stage``'s scans with other budgets take their rewrites from ``messages``.

    A stage that scans the same conversation with several budgets
    (``ClearToolResults``' refill, one per lane) rewrites many of the same
    results the same way: each scan then puts out that output's very
    objects where it rewrites a message as it did, not equal copies, so
    that the outputs compare by identity (at C speed) where they agree.
    """
    budget.memo.put(_ALIKE_KEY, (stage, messages))


def _same_as(
    alike: Sequence[Message], i: int, message: Message, new: Message
) -> Message:
    """``new`` (``message`` rewritten), or ``alike[i]`` when that is the same rewrite.

    The very object a scan of this stage with another budget made.
    """
    if i < len(alike):
        was = alike[i]
        if (
            was is not message
            and was.id == new.id
            and was == new
            and was.meta == new.meta
        ):
            return was
    return new


def _alike(budget: Budget, stage: str) -> Sequence[Message]:
    """The output ``share_rewrites`` offers ``stage`` (empty: none)."""
    found = budget.memo.get(_ALIKE_KEY)
    if isinstance(found, tuple) and found[0] == stage:
        return cast("Sequence[Message]", found[1])
    return ()


def _size(counter: TokenCounter, result: ToolResult) -> int:
    """Tokens of a result's content (all its parts), as placeholders state them."""
    return counter.part(result) - counter.part(ToolResult(result.call_id))


class CallNames:
    """``call_name`` for the results of one scan, in constant time each.

    The assistant message nearest before each result asked about is found
    walking on from the last one asked about (or back, once), and its calls
    are read into a table once: a message of thousands of parallel calls,
    each result looked up alone, cost the square of their number.
    """

    __slots__ = ("_asked", "_at", "_calls", "_messages")

    def __init__(self, messages: Sequence[Message]) -> None:
        self._messages = messages
        self._at = -1  # the nearest assistant message before ``_asked``
        self._asked = -1  # none yet
        self._calls: dict[str, str] | None = None

    def __call__(self, i: int, call_id: str) -> str | None:
        """``call_name(messages, i, call_id)``."""
        ms = self._messages
        at = self._at
        if 0 <= self._asked <= i:
            for j in range(self._asked, i):
                if ms[j].role == "assistant":
                    at = j
        else:
            at = next(
                (j for j in range(i - 1, -1, -1) if ms[j].role == "assistant"), -1
            )
        if at != self._at:
            self._at, self._calls = at, None
        self._asked = i
        if at < 0:
            return None
        if self._calls is None:
            # The last call with an id in a message wins, as in ``call_name``.
            self._calls = {c.id: c.name for c in ms[at].tool_calls}
        name = self._calls.get(call_id)
        return name if name is not None else call_name(ms, at, call_id)


def call_name(messages: Sequence[Message], i: int, call_id: str) -> str | None:
    """The tool name of the latest call with ``call_id`` before ``messages[i]``."""
    for j in range(i - 1, -1, -1):
        m = messages[j]
        if m.role == "assistant":
            name = None
            for c in m.tool_calls:
                if c.id == call_id:
                    name = c.name  # the last such call in the message wins
            if name is not None:
                return name
    return None


def _names(names: Sequence[str]) -> str:
    """``Read x8, Bash``: each name once, in order, with its count."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in counts.items())
