"""The state and the rules shared by ``ContextManager`` and ``AsyncContextManager``.

Contract:

- The history is the log of every message pushed, in order. Only
  ``set_messages`` and ``clear``, called by name, replace it; ``update_system``
  replaces the system prompt in place. Nothing else touches it.
- The view is what is sent. Pushes append to both; compactions, threshold
  handlers, repairs and the ``max_messages`` cap change the view only. Once
  compacted, the view grows by appends again, so a request shares its prefix
  with the one before until the next compaction.
- ``prepare`` repairs what no provider accepts, fires the handlers of each
  threshold that usage has crossed upward (in increasing order; once, until
  usage falls below it again), compacts when the policy or the window asks,
  applies the cap, checks and repairs the view again (whatever changed it
  meanwhile: a handler's push, messages landing while a strategy ran), and
  returns the request: it always passes ``problems`` for the provider.
- A trailing tool exchange still awaiting results keeps its calls in the view
  for them, whatever a strategy's repair removed; the request leaves the
  unanswered calls out.
- A request never exceeds the window less the reserve: ``BudgetError`` says
  what could not be removed.
- Work that may wait (a handler, a strategy calling an LLM) is yielded as a
  step, so the sync and async classes share every rule and differ only in
  how they run a step.
- Preparing after appends costs the appended messages: counts, checks and the
  provider's shape of the earlier ones are reused.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any

from contextwindow._args import as_strategy, check_int, check_str
from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.fitting import fit
from contextwindow.manager._state import State
from contextwindow.manager._types import Compaction, Prepared, Trigger
from contextwindow.messages import Message, units
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    Report,
    Strategy,
    finish,
    first_system,
    stage_name,
    verify,
)
from contextwindow.strategies.drop import DropOldest, MaxMessages, SlidingWindow
from contextwindow.strategies.summarize import Summarize
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import neutral_ensure_valid, neutral_problems

__all__ = ["Call", "Core", "Run", "Step"]

MAX_ROUNDS = 3
"""Compactions one ``prepare`` runs at most when messages keep landing while
its strategy runs (the last one runs where none can land)."""


@dataclass(slots=True)
class Call:
    """A step: call ``fn(arg)`` (a handler; it may return an awaitable)."""

    fn: Callable[[Any], Any]
    arg: Any


@dataclass(slots=True)
class Run:
    """A step: call ``fn()`` (a compaction; it may block on a summarizer)."""

    fn: Callable[[], Any]


Step = Call | Run

_PREPARING: ContextVar[frozenset[object]] = ContextVar(
    "contextwindow_preparing", default=frozenset()
)
"""The marks of the ``prepare`` calls under way in this context: a sync
manager's thread, or an async manager's task and the tasks it started (they
copy the context), so a handler's own calls are told from other callers'."""

REENTERED = (
    "prepare was called from inside this manager's prepare (a threshold "
    "handler or an event subscriber), where it would run the handlers again; "
    "change the view with the handler's ctx (compress_tool_results, "
    "prune_old_messages, summarize_old_exchanges, replace_messages) or "
    "force_compress: the prepare under way sends the result"
)
"""Why ``prepare`` refuses to run inside itself."""


class Core(State):
    """A manager's rules: compaction, repairs and the steps of ``prepare``."""

    _under_way: list[Compaction] | None = None
    """What the ``prepare`` under way has done so far: a ``force_compress``
    called from one of its handlers is reported there."""

    # -- re-entry from handlers ------------------------------------------------------

    def _inside(self) -> bool:
        """Whether this call comes from inside this manager's ``prepare``.

        True in a threshold handler or an event subscriber that ``prepare``
        runs (and in tasks they start), which already hold the lock.
        """
        mark = self._mark
        return mark is not None and mark in _PREPARING.get()

    @contextmanager
    def _preparing(self) -> Generator[None, None, None]:
        """Mark ``prepare`` as under way here (the lock held); refuse one inside it."""
        if self._inside():
            raise ContextWindowError(REENTERED)
        mark = object()
        token = _PREPARING.set(_PREPARING.get() | {mark})
        self._mark = mark
        try:
            yield
        finally:
            self._mark = None
            self._under_way = None
            self._usable = None
            _PREPARING.reset(token)

    # -- changing the view -----------------------------------------------------------

    def _install(
        self,
        fitted: Fitted,
        trigger: Trigger,
        reason: str,
        given: Sequence[Message] | None = None,
    ) -> Compaction:
        """Make ``fitted`` the view and describe the change.

        ``given`` is the view the strategy was given: messages pushed while
        it ran (an async manager's) are kept after its output, a message
        that grew meanwhile (a Responses item joined it) is kept as it grew,
        and a tool exchange that was awaiting results keeps its calls.
        """
        old, new = self._view, list(fitted.messages)
        if given is not None:
            if _changed(old, given):
                return self._stale(trigger, reason)
            base = len(given)
            _restore_pending(new, old, given)
            if len(old) > base:
                new.extend(old[base:])
        k = _common_prefix(old, new)
        report = fitted.report
        # Stored first: a failed write leaves the view as it was.
        self._save_view({"trigger": trigger, "reason": reason, **report.to_dict()}, new)
        self._set_view(new)
        prefix = self._running[k]
        self._emit(
            "compaction",
            trigger=trigger,
            tokens_before=report.tokens_before,
            tokens_after=report.tokens_after,
            changes=len(report.changes),
            prefix_tokens=prefix,
            reason=reason,
        )
        return Compaction(trigger, True, report, prefix, reason)

    def _apply(
        self, strategy: Strategy, limit: int, trigger: Trigger, reason: str
    ) -> Compaction:
        """Run ``strategy`` on the view under ``limit`` and keep what it made."""
        view = list(self._view)
        budget = self._budget(limit)
        fitted = verify(strategy, view, strategy(view, budget), budget)
        return self._keep(fitted, trigger, reason, view)

    def _keep(
        self, fitted: Fitted, trigger: Trigger, reason: str, given: Sequence[Message]
    ) -> Compaction:
        """Install a strategy's output (``given``: its input) if it changed anything."""
        self._warn(fitted.report, trigger)
        out = list(fitted.messages)
        view = self._view
        if _changed(view, given):
            return self._stale(trigger, reason)
        _restore_pending(out, view, given)
        if len(out) == len(given) and all(
            a is b for a, b in zip(out, view, strict=False)
        ):
            return Compaction(trigger, False, fitted.report, 0, f"{reason}: no change")
        return self._install(fitted, trigger, reason, given)

    def _replace(self, messages: Iterable[Message], reason: str) -> Compaction:
        """Make ``messages`` the view (a handler's own edit), accounted by id."""
        new = self._checked(messages, "messages")
        budget = self._budget(self._window)
        changes = _diff(self._view, new, self._counter)
        _frame_first_system(changes, self._view, new, budget)
        fitted = finish("replace_messages", self._view, new, changes, budget)
        return self._install(fitted, "handler", reason)

    def _fit_view(
        self,
        view: list[Message],
        target: int,
        hard: int,
        trigger: Trigger,
        query: str | None,
    ) -> Fitted | None:
        """Fit ``view`` to ``target``, or ``None`` when pinned content forbids it.

        When the request must shrink (``limit``) and pinned content alone
        exceeds ``target``, it is fitted to ``hard`` instead. Pure: it may
        run on another thread.
        """
        strategy = self._strategy
        assert strategy is not None  # _plan raises when none is set and one is needed

        def run(limit: int) -> Fitted:
            return fit(
                view,
                limit=limit,
                strategy=strategy,
                tokenizer=self._counter,
                tools=self._tools,
                protected=tuple(self._markers),
                query=query,
            )

        try:
            return run(target)
        except BudgetError:
            if target >= hard:
                raise
            if trigger != "limit":
                return None
            return run(hard)  # pinned content fits the window, not the target

    def _settle(
        self,
        trigger: Trigger,
        fitted: Fitted | None,
        tokens: int,
        target: int,
        reason: str,
        given: Sequence[Message],
    ) -> Compaction:
        """Keep an automatic compaction's output, or refuse it and say why."""
        if fitted is not None:
            self._warn(fitted.report, trigger)
        if fitted is None:
            return self._refuse(
                trigger,
                Report(tokens, tokens, target),
                tokens,
                f"{reason}; pinned content alone exceeds {target:,} tokens",
            )
        saved = fitted.report.saved
        least = self._min_saving()
        if trigger != "limit" and saved < least:
            return self._refuse(
                trigger,
                fitted.report,
                tokens,
                f"{reason}; it would save {saved:,} tokens, less than the minimum "
                f"of {least:,}: the view is kept",
            )
        self._refused_at = None
        return self._install(fitted, trigger, reason, given)

    def _stale(self, trigger: Trigger, reason: str) -> Compaction:
        """A strategy's output not kept: the view it was made from is gone.

        A call run beside it (an async handler's, or a task's it awaits)
        replaced or cut the view meanwhile; the output would undo that.
        """
        tokens = self._count()
        why = f"{reason}: the view changed while the strategy ran; it is kept"
        self._emit("compaction_refused", trigger=trigger, tokens=tokens, reason=why)
        return Compaction(trigger, False, Report(tokens, tokens, self._window), 0, why)

    def _warn(self, report: Report, trigger: Trigger) -> None:
        """A warning event for each thing the strategy could not do.

        A stage whose summarizer failed is skipped and the turn goes on
        (``Pipeline``); the next compaction calls it again, once its
        summarizer's cooldown allows.
        """
        for warning in report.warnings:
            self._emit(
                "compaction_warning", logging.WARNING, trigger=trigger, warning=warning
            )

    def _refuse(
        self, trigger: Trigger, report: Report, tokens: int, reason: str
    ) -> Compaction:
        self._refused_at = tokens
        self._emit("compaction_refused", trigger=trigger, tokens=tokens, reason=reason)
        return Compaction(trigger, False, report, 0, reason)

    def _min_saving(self) -> int:
        return math.ceil(self._policy.min_saving * self._window / 100)

    def _plan(self, tokens: int, hard: int) -> tuple[Trigger, int, str] | None:
        """Whether to compact on its own now: the trigger, the target and why."""
        policy = self._policy
        target = min(hard, int(policy.to * hard / 100))
        if tokens > hard:
            if self._strategy is None:
                raise BudgetError(
                    hard,
                    tokens,
                    ("no strategy is set, so nothing is removed (set_strategy)",),
                )
            return "limit", target, f"{tokens:,} tokens exceed the budget of {hard:,}"
        usage = self._percent(tokens)
        if (
            self._strategy is None
            or self._applied
            or usage < policy.at
            or self._turn_compactions >= policy.max_per_turn
        ):
            return None
        grown = self._refused_at is None or (
            tokens >= self._refused_at + self._min_saving()
        )
        if not grown:
            return None  # refused at about this size: wait until it has grown
        return "watermark", target, f"usage {usage:.1f}% >= {policy.at:g}%"

    def _repair(self) -> Compaction | None:
        """Fix in the view what no provider accepts, except a call awaiting results.

        Whatever changed the view (a handler's push or edit, messages pushed
        while a strategy ran, a restored history), every problem is found
        from where the view is known valid, and repaired in the view
        (reported) but a trailing tool exchange still awaiting its results,
        which the request leaves out (the view is then known valid up to
        that exchange).
        """
        view = self._view
        if not view:
            return None
        start = min(self._valid_upto, len(view))
        found = neutral_problems(view, self._provider, start=start)
        if not found:
            return None  # _finish moves where the view is known valid
        last = units(view[start:])[-1]
        settled = start + last.start  # a unit starts there
        pending = last.kind == "tool_exchange" and bool(last.unanswered)
        cut = settled if pending else len(view)
        if all(p.index >= cut for p in found):
            self._valid_upto = settled
            return None  # nothing, or only the pending call: left out alone
        head = view[:cut]
        budget = self._budget(self._window)
        fixed = finish("ensure_valid", head, head, (), budget, start=start)
        new = [*fixed.messages, *view[cut:]]
        report = Report(
            budget.count(view),
            budget.count(new),
            budget.limit,
            fixed.report.changes,
            ("ensure_valid",),
        )
        reason = "messages no provider accepts were removed from the view"
        done = self._install(Fitted(tuple(new), report), "repair", reason)
        if pending:  # known valid up to the exchange awaiting results
            self._valid_upto = len(fixed.messages)
        return done

    # -- the steps of prepare and force_compress -------------------------------------

    def _prepare_steps(
        self, query: str | None, reserve: int | None
    ) -> Generator[Step, Any, Prepared]:
        check_str(query, "query", none=True)  # at entry, whether or not it is used
        hard = self._hard_limit(reserve)
        self._catch_up()
        self._usable = hard  # this call's budget; ``budget`` reads the manager's
        self._applied = False
        done: list[Compaction] = []
        self._under_way = done
        fired: list[float] = []
        repaired = self._repair()
        if repaired is not None:
            done.append(repaired)
        checked = self._edits
        had_turn = not _no_turn(self._view)
        tokens = self._count()
        for t in sorted(self._handlers):
            if self._percent(tokens) < t:
                break
            if t in self._fired:
                continue
            fired.append(t)
            self._emit(
                "threshold",
                threshold=t,
                usage=round(self._percent(tokens), 2),
                tokens=tokens,
                context_limit=self._window,
            )
            # A handler counts as run once it has returned: one that raises
            # (its error ends prepare, the generator is not resumed) runs
            # again on the next prepare, and those before it do not. Where
            # the crossing is stays here, as the handlers that returned: a
            # handler restoring or clearing the conversation, or adding or
            # removing a handler, cannot restart it.
            returned = list(self._ran.get(t, ()))
            while (handler := _next_handler(self._handlers[t], returned)) is not None:
                yield Call(handler, self._context(t, done))
                returned.append(handler)
                self._ran[t] = list(returned)
            self._ran.pop(t, None)
            self._fired.add(t)
            tokens = self._count()
        if fired and had_turn and _no_turn(self._view):
            # The handlers left nothing to send of a view that had a turn
            # (replace_messages([])): providers reject such a request. A view
            # with none to begin with (a new or cleared manager) is sent empty.
            raise ContextWindowError(_nothing_to_send(fired))
        plan = self._plan(tokens, hard)
        rounds = 0
        while plan is not None:
            trigger, target, reason = plan
            view = list(self._view)
            work = partial(self._fit_view, view, target, hard, trigger, query)
            rounds += 1
            before = len(self._view)
            # Messages pushed while a strategy runs on a thread (an async
            # manager's) go after its output and may not fit: fit again; the
            # last round runs here, where nothing can land meanwhile.
            fitted = (yield Run(work)) if rounds < MAX_ROUNDS else work()
            landed = len(self._view) > before
            self._turn_compactions += 1  # counted once it ran: a failure is not
            done.append(self._settle(trigger, fitted, tokens, target, reason, view))
            tokens = self._count()
            if tokens <= hard:
                break  # it fits, with what landed meanwhile
            if not landed:
                # The strategy's output fit without the exchange awaiting
                # results, which the view keeps for them and got back (a
                # strategy that dropped the final unit): dropping the oldest
                # units keeps it.
                why = f"{reason}; the exchange awaiting results did not fit"
                done.append(self._apply(DropOldest(), hard, trigger, why))
                tokens = self._count()
                break
            plan = self._plan(tokens, hard)
        if self._max_messages is not None and self._nonsystem > self._max_messages:
            cap = MaxMessages(self._max_messages)
            why = f"more than {self._max_messages} messages"
            done.append(self._apply(cap, hard, "max_messages", why))
        return self._finish(done, fired, hard, checked)

    def _force_steps(
        self, strategy: Strategy | str, target: int | None
    ) -> Generator[Step, Any, Compaction]:
        strategy = as_strategy(strategy)
        if target is None:
            hard = self._hard_limit(None)
            limit = min(hard, int(self._policy.to * hard / 100))
        else:
            limit = check_int(target, "target", low=0)
        reason = f"forced ({stage_name(strategy)}, target {limit:,} tokens)"
        self._catch_up()
        view = list(self._view)
        budget = self._budget(limit)
        fitted = yield Run(partial(_checked_run, strategy, view, budget))
        done = self._keep(fitted, "forced", reason, view)
        under_way = self._under_way
        if under_way is not None and self._inside():
            # Forced by a handler: the prepare under way reports it, and
            # does not compact again on its own (as a ctx tool's compaction).
            under_way.append(done)
            self._applied = self._applied or done.applied
        return done

    def _summarize_strategy(self, keep_recent: int) -> Strategy:
        """The ``Summarize`` strategy over the manager's summarizer.

        The default one, offline, reads the originals of what earlier
        compactions cut (the history holds them); one the user gave (an LLM,
        whose input each original would take whole) reads the view.
        """
        return Summarize(
            self._summarizer,
            keep_recent=keep_recent,
            read_originals=self._summarizer is None,
        )

    def _forced_strategy(self, fallback_window: int) -> Strategy:
        # Checked whether or not a strategy is set: a bad argument is the
        # caller's, whatever the manager's configuration.
        check_int(fallback_window, "fallback_window", low=0)
        if self._strategy is not None:
            return self._strategy
        return SlidingWindow(fallback_window)

    def _context(self, threshold: float, done: list[Compaction]) -> Any:
        """The handler context: each class makes its own kind."""
        raise NotImplementedError

    def _finish(
        self, done: list[Compaction], fired: list[float], hard: int, checked: int
    ) -> Prepared:
        # The view may have changed in any way since the first repair (a
        # handler pushed a stray result, messages landed while a strategy
        # ran): check it again, whatever happened, and repair the view.
        if self._edits != checked:
            repaired = self._repair()
            if repaired is not None:
                done.append(repaired)
        view = self._view
        start = min(self._valid_upto, len(view))
        valid = neutral_ensure_valid(view, self._provider, start=start)
        sent = valid.messages
        kept = len(view)  # leading messages sent as they are in the view
        if valid.problems:  # only a call awaiting results: left out of this request
            budget = self._budget(hard)
            left_out = finish(
                "ensure_valid",
                view,
                view,
                (),
                budget,
                start=start,
                counted=self._count(),
            )
            sent = left_out.messages
            kept = valid.problems[0].index
            tokens = left_out.report.tokens_after
            why = "the last tool call has no result yet: left out of this request"
            done.append(Compaction("repair", False, left_out.report, 0, why))
        else:
            tokens = self._count()
        if view:
            self._valid_upto = start + units(view[start:])[-1].start
        if tokens > hard:
            raise BudgetError(hard, tokens, ("the view after every compaction",))
        self._rearm(tokens)
        # Stored before this request counts as the last one sent: when the
        # store fails, the next request is compared with the one before.
        self._save_state()
        shared = self._shared(sent, kept)
        prefix = self._running[min(shared, kept)] + sum(
            self._counter.message(m) for m in sent[kept:shared]
        )
        self._stable = kept
        self._last_sent = sent
        self._last_tokens = tokens
        messages, system = self._writer.write(sent, shared=shared)
        joined: Report | None = None
        for c in done:
            if c.applied or c.trigger == "repair":
                joined = c.report if joined is None else joined.then(c.report)
        return Prepared(
            messages,
            system,
            self._provider,
            sent,
            tokens,
            self._window,
            hard,
            joined,
            tuple(done),
            prefix,
            tuple(fired),
            self._shape,
        )

    def _shared(self, sent: tuple[Message, ...], kept: int) -> int:
        """Leading messages of ``sent`` identical to the last request's."""
        prev = self._last_sent
        if self._stable is None:  # the view changed: compare everything
            return _common_prefix(prev, sent)
        # Appends only since: the last request's unchanged part is still
        # there; what follows it is compared (a short tail).
        return _common_prefix(prev, sent, start=min(self._stable, kept, len(prev)))


def _no_turn(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` hold nothing but system messages."""
    return all(m.role == "system" for m in messages)


def _nothing_to_send(fired: Sequence[float]) -> str:
    """Why ``prepare`` refuses a view its handlers left with no turn."""
    at = ", ".join(f"{t:g}%" for t in fired)
    return (
        "prepare: the request would hold no message but the system prompt: "
        f"the threshold handlers at {at} left none in the view; providers "
        "reject such a request. A handler keeps the final message "
        "(replace_messages); push a message, or restore the conversation with "
        "set_messages (the history holds it)"
    )


def _changed(view: Sequence[Message], given: Sequence[Message]) -> bool:
    """Whether ``view`` is no longer ``given`` grown by appends.

    ``given`` is what a strategy was given. Pushes append to the view, and
    the last message may grow in place (a Responses item joined it, keeping
    its id); anything else replaced the view.
    """
    base = len(given)
    if len(view) < base:
        return True
    if base and view[base - 1].id != given[-1].id:
        return True
    return any(view[i] is not given[i] for i in range(base - 1))


def _restore_pending(
    out: list[Message], view: Sequence[Message], given: Sequence[Message]
) -> None:
    """Give back, at the end of ``out``, what the strategy could not know of.

    ``given`` is what a strategy was given, ``out`` what it made, and
    ``view[:len(given)]`` what the view holds there now. When the given
    view's last message grew while the strategy ran (a Responses item
    joined it), the grown message takes its place at the end. When the
    given view ended in a tool exchange awaiting results, the strategy kept
    it (the final unit is pinned) less its unanswered calls, which its
    repair removed (with the message, when it held nothing else). The view
    keeps them for the results to come (the request leaves them out), so
    the exchange as it was goes back at the end.
    """
    base = len(given)
    if base and view[base - 1] is not given[-1]:
        grown = view[base - 1]
        out[:] = [m for m in out if m.id != grown.id]
        out.append(grown)
    i = base - 1
    while i >= 0 and view[i].role == "tool":
        i -= 1
    if i < 0 or not view[i].tool_calls or not units(view[i:base])[0].unanswered:
        return
    pending = view[i:base]
    ids = {m.id for m in pending}
    out[:] = [m for m in out if m.id not in ids]
    out.extend(pending)


def _next_handler(
    handlers: Sequence[Callable[[Any], Any]], returned: Sequence[Callable[[Any], Any]]
) -> Callable[[Any], Any] | None:
    """The first of ``handlers`` that has not returned yet in this crossing.

    A handler registered twice runs twice: each one that returned covers one.
    """
    left = list(returned)
    for handler in handlers:
        k = next((i for i, h in enumerate(left) if h is handler), None)
        if k is None:
            return handler
        del left[k]
    return None


def _checked_run(strategy: Strategy, view: list[Message], budget: Budget) -> Fitted:
    """Run ``strategy`` (on any thread) and check what it returned."""
    return verify(strategy, view, strategy(view, budget), budget)


def _common_prefix(
    a: Sequence[Message], b: Sequence[Message], *, start: int = 0
) -> int:
    """How many leading messages ``a`` and ``b`` share, meta included.

    ``a[:start]`` and ``b[:start]`` are known to be the same: the comparison
    starts there.
    """
    k = start
    n = min(len(a), len(b))
    while k < n:
        x, y = a[k], b[k]
        if not (x is y or (x == y and x.meta == y.meta)):
            break
        k += 1
    return k


def _diff(
    before: Sequence[Message], after: Sequence[Message], counter: TokenCounter
) -> list[Change]:
    """Changes that turn ``before`` into ``after``, each message accounted once.

    Each message of ``after`` stands for one message of ``before`` with its
    id, or for none (``_matched``): one that stands for none is ``added``,
    be it new or a second copy of a message given twice. A message of
    ``before`` that none stands for is ``dropped``; one whose stand-in
    differs from it is ``rewritten``, and so is one moved out of the order
    of the others (``what`` says ``moved``; the fewest are named: those
    outside a longest run kept in order). So the report adds up: its tokens
    before less what the changes save are its tokens after, and a move that
    saves nothing is still named.
    """
    slot = _matched(before, after)
    moved = _moved(slot)
    stage = "replace_messages"
    taken = {i for i in slot if i >= 0}
    changes = [
        Change("dropped", stage, (m.id,), i, counter.message(m), 0, f"{m.role} message")
        for i, m in enumerate(before)
        if i not in taken
    ]
    # An added message goes before the next one kept in order (its index).
    nexts = [len(before)] * len(after)
    following = len(before)
    for k in range(len(after) - 1, -1, -1):
        nexts[k] = following
        if slot[k] >= 0 and k not in moved:
            following = slot[k]
    known = {m.id for m in before}
    for k, m in enumerate(after):
        i = slot[k]
        if i < 0:
            what = f"{m.role} message"
            if m.id in known:
                what += ", a copy (its id is given more than once)"
            n = counter.message(m)
            changes.append(Change("added", stage, (m.id,), nexts[k], 0, n, what))
            continue
        was = before[i]
        if k in moved or not _same(was, m):
            what = f"{m.role} message" + (", moved" if k in moved else "")
            changes.append(
                Change(
                    "rewritten",
                    stage,
                    (m.id,),
                    i,
                    counter.message(was),
                    counter.message(m),
                    what,
                )
            )
    return changes


def _frame_first_system(
    changes: list[Change],
    before: Sequence[Message],
    after: Sequence[Message],
    budget: Budget,
) -> None:
    """Give the change to the first system message what the tools' framing moved.

    With tools, OpenAI's count reads the first system message (the tools
    join that turn): when another message is first, or none, the request
    changes by a few tokens more than the messages' own, and the report
    would not add up. Those tokens go to the change that names the new
    first system message, else the old one (one always does: it was
    dropped, rewritten, moved or added), so that it saves them.
    """
    if not budget.tools:
        return
    was, now = first_system(before), first_system(after)
    if was is now:
        return
    counter = budget.counter
    gap = budget.count(before) - counter.messages(before)
    gap -= budget.count(after) - counter.messages(after)
    if not gap:
        return
    for m in (now, was):
        k = next((k for k, c in enumerate(changes) if m and m.id in c.ids), -1)
        if k >= 0:
            c = changes[k]
            # Taken off one side as far as it goes (a drop keeps 0 after, an
            # addition 0 before), the rest put on the other.
            if gap > 0:
                cut = min(gap, c.tokens_after)
                before_n, after_n = c.tokens_before + gap - cut, c.tokens_after - cut
            else:
                cut = min(-gap, c.tokens_before)
                before_n, after_n = c.tokens_before - cut, c.tokens_after - gap - cut
            what = f"{c.what} (and the tools' framing of the first system message)"
            changes[k] = Change(
                c.kind, c.stage, c.ids, c.index, before_n, after_n, what, c.units
            )
            return


def _same(a: Message, b: Message) -> bool:
    """Whether ``b`` is ``a`` unchanged: the same object, or equal, meta included."""
    return a is b or (a == b and a.meta == b.meta)


def _matched(before: Sequence[Message], after: Sequence[Message]) -> list[int]:
    """For each message of ``after``, the index in ``before`` it stands for (-1: none).

    Matched by id, each message of ``before`` at most once: an unchanged one
    first (so that a copy given twice, or a rewritten copy put beside it,
    is the one that stands for nothing), then, in order, what is left.
    """
    free: dict[str, list[int]] = {}
    for i, m in enumerate(before):
        free.setdefault(m.id, []).append(i)
    slot = [-1] * len(after)
    rest: list[int] = []
    for k, m in enumerate(after):
        left = free.get(m.id)
        if not left:
            continue
        j = next((j for j, i in enumerate(left) if _same(before[i], m)), -1)
        if j < 0:
            rest.append(k)
        else:
            slot[k] = left.pop(j)
    for k in rest:
        left = free[after[k].id]
        if left:
            slot[k] = left.pop(0)
    return slot


def _moved(slot: Sequence[int]) -> set[int]:
    """Positions ``k`` whose ``slot[k]`` is out of the order of the others.

    ``slot`` holds distinct indices, or -1 (no place, never moved). The
    fewest are named: all but a longest increasing run (patience sorting,
    ``O(n log n)``); none when the order is kept, the common case.
    """
    placed = [k for k, i in enumerate(slot) if i >= 0]
    if all(slot[a] < slot[b] for a, b in pairwise(placed)):
        return set()
    tails: list[int] = []  # tails[n]: least last value of a run of n + 1
    ends: list[int] = []  # the position in ``placed`` where that run ends
    back = [-1] * len(placed)  # the run's previous position, for each
    for p, k in enumerate(placed):
        n = bisect_left(tails, slot[k])
        back[p] = ends[n - 1] if n else -1
        if n == len(tails):
            tails.append(slot[k])
            ends.append(p)
        else:
            tails[n] = slot[k]
            ends[n] = p
    kept: set[int] = set()
    p = ends[-1]
    while p >= 0:
        kept.add(placed[p])
        p = back[p]
    return {k for k in placed if k not in kept}
