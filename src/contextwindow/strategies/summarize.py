"""``Summarize``: replace the oldest units with one summary message.

Contract:

- Only while the conversation does not fit: the oldest unpinned units outside
  the last ``keep_recent`` are replaced, oldest first, just enough to meet the
  budget (a budget of 0 replaces every one of them), by one summary message
  (``contextwindow.summarizers.record``): a ``user`` message placed where the
  first of them was, which every provider accepts there. For Anthropic, the
  units of a tool loop that opened with thinking and still runs
  (``validity.thinking_turn``) count as recent: a user message inside it
  would end the loop, and the next would open without thinking.
- Incremental: a summary message already in the conversation (outside the
  last ``keep_recent`` units) is rolled forward: its text is the
  summarizer's ``previous``, its facts carry over (all of them, up to
  ``CARRIED_SHARE`` of ``max_tokens``), its sources join the new summary's,
  and the new summary takes its place. Nothing pinned is ever
  summarised; every other strategy treats the summary as pinned.
- The cut moves in steps: after just enough units, the units that fall in
  the same step of ``CUT_STEP`` of the budget (``step_end``, counting what
  is replaced from the oldest) are replaced too, so the cut is a function of the
  conversation that stays where it was while it grows by less than a step.
- Incremental: the summary made for a cut is kept in the budget's memo
  (keyed by the strategy and the budget's settings) with the very messages
  it replaced; a call whose cut replaces the same messages reuses it instead
  of calling the summarizer again (a summarizer gives the same summary for
  the same input; an LLM one that would not is held to its first). With it
  the memo keeps what was read of each unit but the last (tokens, pins,
  which are candidates, their running total) and the output up to the cut,
  so a call on the conversation grown by a few messages reads those
  messages, finds the cut by bisection, and, when the cut stays, builds
  its output from that head and the new tail: it costs what was appended.
  One entry per strategy and budget, the size of the conversation's unit
  list. What is kept never changes the answer
  (``tests/properties/test_incremental.py``).
- Facts: the record of what is replaced (``extract_facts``, no LLM) is
  checked against the summary, and what the summary dropped is re-attached
  (``check_facts``); the summary's ``meta`` keeps the facts it holds and the
  ids of every message it replaces and their handles by content, for
  ``recall`` (``summary_originals``: the same messages converted again
  from provider dicts have new ids), and its header shows a handle of
  them by content (``summary_handle``), for ``context_recall``. Facts the
  record has no room for are counted in the header (``(+97 facts not
  listed)``: the handle reads them back) and in the report's change, as
  are the paths, URLs and identifiers the summarizer's text names that
  nothing it read holds (``facts.invented``: reported, not refused).
- Originals: with ``read_originals``, what earlier stages rewrote is read
  as it was (``handles.originals_of`` over ``Budget.history``: a cleared
  result's original, the messages a run's line stands for), so the summary
  and its fact record name what the results said, not what their
  placeholders kept of it.
- Size: a quarter of what is replaced, within ``max_tokens``
  (``_target``); when every candidate is replaced and the rest of the
  conversation fits, at most ``ROOM_MARGIN`` of the room the rest leaves (a
  larger summary would leave it over, and be dropped with all it names).
- Refusal, so that compaction cannot loop: no change is made (the report
  holds no ``summarized`` change) when the summary says nothing (neither the
  summarizer nor the fact record gave any text), when it is not materially
  smaller than what it replaces (more than ``max_share`` of its tokens), or
  when it would turn a budget that dropping units could meet into one
  nothing can meet. A summary refused as too large (for what it replaces,
  or for the room beside what cannot be dropped) is named in the report's
  ``warnings`` when no summary was used: a later stage may then drop what
  it would have replaced, its facts with it.
  The summarizer is called at most three times per call: for just enough
  units; when that summary leaves the conversation over by less than a
  step (its re-attached facts made it larger than asked), for the units
  that free twice that, to the end of their step; when a summary is
  refused or still leaves it over, for all of them.
- The summarizer's ``SummarizerError`` propagates; the input is never
  mutated.

Example:
    >>> from contextwindow import Message, TokenCounter
    >>> from contextwindow.strategies import Budget
    >>> from contextwindow.testing import FakeTokenizer
    >>> topics = ["the login form", "password reset", "the session cookie",
    ...           "rate limiting", "audit logging", "the admin page"]
    >>> conv = [Message.system("You are a coding agent.")]
    >>> for i, topic in enumerate(topics):
    ...     conv += [Message.user(f"Step {i}: fix {topic} in src/mod{i}.py."),
    ...              Message.assistant(f"Fixed {topic}; {10 + i} tests passed.")]
    >>> budget = Budget(100, TokenCounter(FakeTokenizer()))
    >>> fitted = Summarize(keep_recent=2)(conv, budget)
    >>> [m.role for m in fitted.messages]
    ['system', 'user', 'user', 'assistant']
    >>> summary = fitted.messages[1]
    >>> print(summary.text)  # doctest: +ELLIPSIS
    [Summary of 10 earlier messages; recall ...]
    assistant: Fixed the login form; 10 tests passed.
    user: Step 1: fix password reset in src/mod1.py.
    <BLANKLINE>
    Facts from the summarized messages:
    - files: src/mod0.py, src/mod2.py, src/mod3.py, src/mod4.py
    - numbers: 11 tests; 12 tests; 13 tests; 14 tests
    >>> [(c.kind, c.index, c.units, c.saved) for c in fitted.report.changes]
    [('summarized', 1, 10, 61)]
    >>> from contextwindow.summarizers import recall, summary_sources
    >>> recall(conv, summary_sources(summary)) == conv[1:11]
    True
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from typing import NamedTuple

from contextwindow._args import (
    check_bool,
    check_int,
    check_number,
    check_summarizer,
)
from contextwindow._prefix import identical_prefix, same_objects
from contextwindow.handles import handle_of, originals_of, span_handle
from contextwindow.messages import COMPARED, Message, ToolCall, Unit, units
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    describe_run,
    final_indices,
    finish,
    pinned_one,
    pinned_units,
    shares,
    step_end,
    step_size,
    strategy_input,
)
from contextwindow.summarizers.base import Summarizer, summary_text
from contextwindow.summarizers.extractive import ExtractiveSummarizer
from contextwindow.summarizers.facts import (
    FACTS_HEADER,
    Facts,
    check_facts,
    extract_facts,
    invented,
)
from contextwindow.summarizers.record import (
    is_summary,
    summary_body,
    summary_facts,
    summary_handles,
    summary_message,
    summary_sources,
    unlisted_words,
)
from contextwindow.validity import CONTINUED_ID, thinking_turn

__all__ = ["Summarize"]

HEADER_TOKENS = 12
"""What a summary message costs besides its summary: framing and header."""

TARGET_SHARE = 0.25
"""The size a summary is asked for, as a share of the tokens it replaces."""

SMALL_SPAN = 200
"""A summary of a small span may take up to this many tokens (a quarter of a
few hundred tokens holds no fact record)."""

CARRIED_SHARE = 0.5
"""The share of ``max_tokens`` an earlier summary's facts may take in the
summary that rolls it forward: up to it, every one is kept; beyond it, the
oldest and least mentioned go first."""

ROOM_MARGIN = 0.9
"""A summary of every candidate is asked for at most this share of the room
the rest of the conversation leaves it (the summarizer may count with
another tokenizer)."""

INVENTED_SHOWN = 3
"""Names a change shows of those a summary's text holds and its messages do not."""

_DEFAULT = ExtractiveSummarizer()


class _Made(NamedTuple):
    """A summary made for a cut, with what it replaced (see the module)."""

    replaced: list[Message]
    """The messages it replaced, in order (the very objects)."""
    target: int
    """The size it was asked for."""
    summary: Message | None
    """The summary message (``None``: refused, not materially smaller)."""
    change: list[Change]
    """The report's change, once made (the same for the same messages)."""
    read: list[Message] | None = None
    """With ``read_originals``: what it read (the earlier summaries it rolled
    forward, then the originals of what it replaced): what it is made of."""
    refused: str = ""
    """Why the summary was refused as too large: a warning for the report."""
    noted: str = ""
    """What the report's change adds about it: facts its record does not
    list, names its text holds that what it replaced does not."""


@dataclass(frozen=True, slots=True)
class Summarize:
    """Replace the oldest units with one summary that keeps their facts.

    Args:
        summarizer: Writes the summaries (default: ``ExtractiveSummarizer()``,
            offline and deterministic).
        keep_recent: The most recent units never summarised (system units
            not counted).
        keep_first: The first units after the system prompt never
            summarised (the task, in an agent loop; ``DropOldest`` drops it
            only as a last resort).
        max_tokens: The most a summary may take (the summarizer's target).
        max_share: A summary taking more than this share of the tokens it
            replaces is refused (see the module's contract).
        read_originals: Summarise the originals of what earlier stages
            rewrote (found in ``Budget.history``: a result before it was
            cleared, the exchanges a run's line stands for), not their
            placeholders. For offline summarizers, whose cost is a scan of
            the text; an LLM summarizer would be sent every original whole.

    Raises:
        ContextWindowError: ``keep_recent`` or ``keep_first`` below 0,
            ``max_tokens`` below 1,
            ``max_share`` outside (0, 1], or a summarizer without
            ``summarize``.
    """

    summarizer: Summarizer | None = None
    """Writes the summaries (``None``: ``ExtractiveSummarizer()``)."""
    keep_recent: int = 4
    """The most recent units never summarised."""
    max_tokens: int = 2000
    """The most a summary may take."""
    max_share: float = 0.7
    """A summary larger than this share of what it replaces is refused."""
    keep_first: int = 0
    """The first units after the system prompt never summarised."""
    read_originals: bool = False
    """Summarise what earlier stages rewrote as it was (see Args)."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_int(self.keep_first, "keep_first", low=0)
        check_int(self.max_tokens, "max_tokens", low=1)
        check_number(self.max_share, "max_share", low=0, high=1, open_low=True)
        check_bool(self.read_originals, "read_originals")
        check_summarizer(self.summarizer)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Summarise the oldest units until the budget is met (see the module)."""
        messages = strategy_input(messages, budget)
        if budget.fits(messages):
            return finish("Summarize", messages, messages, (), budget)
        key = (self, "Summarize", budget.settings)
        found = budget.memo.get(key)
        state = found if isinstance(found, _State) else None
        us = units(messages)
        run = budget.counter.running(messages)
        base = _EMPTY if state is None else state.layout.upto(messages, us, budget)
        both = base.view(messages, us, run, budget)
        if both is None:  # a final message inside what was read before
            both = _EMPTY.view(messages, us, run, budget)
            assert both is not None  # nothing read before: nothing to fall inside
        view, layout = both
        counted = view.counted
        # The recent units start at ``r0``: every free unit before it goes.
        keep = self.keep_recent
        r0 = counted[max(0, len(counted) - keep)] if keep and counted else len(us)
        turn = thinking_turn(messages, budget.provider)
        if turn:
            # A summary (a user turn) inside a tool loop that opened with
            # thinking would end the loop there, and the next one would open
            # without thinking: the loop's units count as recent ones.
            r0 = min(r0, unit_index(us, turn[0]))
        olds = view.olds[: bisect_left(view.olds, r0)]
        c = bisect_left(view.cands, r0)
        lead = self._lead(messages, us, counted, view.cands, c)
        candidates = view.cands[lead:c]
        if not candidates:
            budget.memo.put(key, _State(layout, [], None))
            return finish("Summarize", messages, messages, (), budget)
        cost = view.cost
        # Just enough units to fit once the summary is in, then all of them.
        over = budget.count(messages) - budget.limit
        # What n candidates free with what is rolled forward: rolled +
        # prefix[n] (the running totals start at the first candidate, so
        # the spared lead's tokens are taken off ``rolled``, not off each).
        rolled = sum(cost[k] for k in olds) - view.prefix[lead]
        prefix = view.prefix[lead : c + 1]
        n = self._enough(prefix, over, rolled)
        # On to the end of the step the cut fell in (see the module).
        top = step_end(rolled + prefix[n], budget) - 1
        n = bisect_right(prefix, top - rolled, lo=n) - 1
        floor = budget.count(view.floor)
        if (
            state is not None
            and state.cut is not None
            and (base is state.layout or len(base.messages) >= state.cut.stop)
        ):
            # The last output, valid as built, is this one's up to the unit
            # that was last read (it may have grown since, or changed after
            # the last cut: what was read reaches past what it replaced).
            known = state.cut
            last = us[base.settled].start if base.settled < len(us) else 0
            start = len(known.head) + last - known.stop if state.clean else 0
            fitted = self._resume(
                known,
                max(start, 0),
                messages,
                olds,
                candidates,
                n,
                rolled + prefix[n],
                view,
                floor,
                run,
                budget,
            )
            if fitted is not None:
                clean = len(fitted.report.changes) == 1
                budget.memo.put(key, _State(layout, state.made, known, clean))
                return fitted
        kept = state.made if state is not None else []
        made: list[_Made] = []
        best: Fitted | None = None
        cut: _Cut | None = None
        tries = 0
        while True:
            last = n >= len(candidates)
            chosen = candidates if last else candidates[:n]
            before = rolled + prefix[len(chosen)]
            target = self._target(before)
            room = before - over - HEADER_TOKENS
            if last and room > 0:
                # Every candidate goes and the rest fits: the summary may
                # take only what the rest leaves (a larger one would be
                # dropped whole after).
                target = min(target, int(room * ROOM_MARGIN))
            fitted = self._attempt(
                messages, us, olds, chosen, budget, floor, kept, made, before, target
            )
            tries += 1
            if fitted is not None:
                best = fitted
                if fitted.report.fits:
                    if tries == 1 and not last:
                        cut = _Cut.of(messages, us, olds, chosen, before, made[-1])
                    break
            if last:
                break
            n = self._more(prefix, n, rolled, fitted, budget, tries)
        clean = cut is not None and best is not None and len(best.report.changes) == 1
        budget.memo.put(key, _State(layout, made, cut, clean))
        if best is not None:
            return best
        fitted = finish("Summarize", messages, messages, (), budget)
        why = [m.refused for m in made if m.refused]
        if not why:
            return fitted
        # Say why no summary was used, or its facts are lost without a word
        # when a later stage drops what it would have replaced.
        warned = (*fitted.report.warnings, why[-1])
        return replace(fitted, report=replace(fitted.report, warnings=warned))

    def _lead(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        counted: Sequence[int],
        cands: Sequence[int],
        c: int,
    ) -> int:
        """How many of ``cands[:c]`` are among the first ``keep_first`` units.

        The task stays; a placeholder turn a repair put first is not it.
        Being the oldest, those candidates come first.
        """
        if not self.keep_first:
            return 0
        first = [
            k
            for k in counted[: self.keep_first + 1]
            if messages[us[k].start].id != CONTINUED_ID
        ][: self.keep_first]
        if len(first) < self.keep_first:
            return c  # every unit is among the first
        return bisect_right(cands, first[-1], hi=c)

    def _resume(
        self,
        cut: _Cut,
        start: int,
        messages: Sequence[Message],
        olds: Sequence[int],
        candidates: Sequence[int],
        n: int,
        before: int,
        view: _Layout,
        floor: int,
        run: Sequence[int],
        budget: Budget,
    ) -> Fitted | None:
        """The first attempt's fit when it replaces what ``cut`` replaced.

        ``None`` when it may not (then the attempts run). The very messages
        replaced, so the same summary, the same output up to the cut, the
        same change; only the refusal and the fit are checked again, and
        the output's validity from ``start`` on (see ``finish``). A request's
        tokens add up by message, so the output's follow from the input's
        (``run``: its running totals) less the messages before the cut, plus
        the head: not counted again.
        """
        if (
            n >= len(candidates)
            or n != cut.n
            or candidates[n - 1] != cut.last
            or before != cut.before
            or list(olds) != cut.olds
        ):
            return None
        summary = cut.made.summary
        assert summary is not None  # a cut is kept only for a summary that fit
        at = bisect_left(view.floor_units, cut.first_unit)
        gone = set(olds)
        rolled = [
            m
            for m, k in zip(view.floor[at:], view.floor_units[at:], strict=True)
            if k in gone
        ]
        counter = budget.counter
        if not budget.tools or (at and view.floor[0].role == "system"):
            # A request's tokens add up by message (with tools, while its
            # first system message stands): the floor less the summaries
            # rolled in, and the summary.
            rest = sum(map(counter.message, rolled))
            after_floor = floor - rest + counter.message(summary)
        else:
            shown = [
                m
                for m, k in zip(view.floor[at:], view.floor_units[at:], strict=True)
                if k not in gone
            ]
            after_floor = budget.count([*view.floor[:at], summary, *shown])
        if floor <= budget.limit < after_floor:
            return None  # refused: the attempts say what happens instead
        out = [*cut.head, *messages[cut.stop :]]
        saved = run[cut.stop] - sum(map(counter.message, cut.head))
        fitted = finish(
            "Summarize",
            messages,
            out,
            cut.made.change,
            budget,
            start=start,
            counted=budget.count(messages),
            saved=saved,
        )
        return fitted if fitted.report.fits else None

    def _more(
        self,
        prefix: Sequence[int],
        n: int,
        rolled: int,
        fitted: Fitted | None,
        budget: Budget,
        tries: int,
    ) -> int:
        """How many candidates the next attempt replaces, after ``n`` did not fit.

        A summary a little over (its facts re-attached made it larger than
        asked) is tried once more with the units that free twice what it
        was over, on to the end of that step: not every unit for a few
        tokens. A refused summary, a second miss, or one over by more than
        a step: all of them.
        """
        every = len(prefix) - 1
        if fitted is None or tries > 1:
            return every
        short = fitted.report.tokens_after - budget.limit
        if short > step_size(budget):
            return every
        top = step_end(rolled + prefix[n] + 2 * short, budget) - 1
        return max(n + 1, bisect_right(prefix, top - rolled, lo=n) - 1)

    def _enough(self, prefix: Sequence[int], over: int, rolled: int) -> int:
        """The fewest candidates (at least one) whose summary saves ``over``.

        ``rolled + prefix[n]``: the tokens ``n`` candidates take with what
        is rolled forward; all of them when no number does. What a summary
        saves grows with what it replaces, so the answer is found by
        bisection.
        """

        def saves(f: int) -> bool:
            target = self._target(f)
            return target > 0 and f - target - HEADER_TOKENS >= over

        lo, hi = 1, len(prefix) - 1
        if not saves(rolled + prefix[hi]):
            return hi
        while lo < hi:
            mid = (lo + hi) // 2
            if saves(rolled + prefix[mid]):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _target(self, before: int) -> int:
        """The size to ask of a summary replacing ``before`` tokens.

        A quarter of them (``TARGET_SHARE``), but room for a useful summary
        of a small span (up to ``SMALL_SPAN`` tokens, or most of it), always
        under ``max_share`` with a margin (the summarizer may count with
        another tokenizer), and at most ``max_tokens``.
        """
        wanted = max(int(before * TARGET_SHARE), min(SMALL_SPAN, int(before * 0.6)))
        ceiling = int(before * self.max_share * 0.9)
        return min(self.max_tokens, wanted, ceiling) - HEADER_TOKENS

    def _attempt(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        olds: Sequence[int],
        chosen: Sequence[int],
        budget: Budget,
        floor: int,
        kept: Sequence[_Made],
        made: list[_Made],
        before: int,
        target: int,
    ) -> Fitted | None:
        """Summarise ``olds`` and ``chosen`` (``before`` tokens in all).

        ``target``: the size to ask of the summary. ``None`` when the summary
        is refused. A summary in ``kept`` made for the same messages at the
        same target is reused; the one used goes to ``made``.
        """
        replaced = sorted((*olds, *chosen))
        if target <= 0:
            return None
        gone_messages = [
            m for k in replaced for m in messages[us[k].start : us[k].stop]
        ]
        for old in kept:
            if (
                old.target == target
                and len(old.replaced) == len(gone_messages)
                and same_objects(
                    old.replaced, gone_messages, len(gone_messages), COMPARED
                )
            ):
                made.append(old)
                summary = old.summary
                break
        else:
            previous, evicted, original = self._reading(
                messages, us, olds, chosen, budget
            )
            read = [*previous, *evicted] if original else None
            reused = self._made_of(read, kept, target, before, budget)
            why = noted = ""
            if reused is not None:
                summary, noted = reused.summary, reused.noted
            else:
                summary, why, noted = self._summary(
                    previous, evicted, budget, before, target
                )
            made.append(_Made(gone_messages, target, summary, [], read, why, noted))
        if summary is None:
            return None  # not materially smaller: refused (no compaction loop)
        after = budget.counter.message(summary)
        first = us[replaced[0]].start
        gone = set(replaced)
        out: list[Message] = []
        for k, u in enumerate(us):
            if u.start == first:
                out.append(summary)
            if k not in gone:
                out.extend(messages[u.start : u.stop])
        if floor <= budget.limit < _floor(out, budget):
            # Dropping could have met the budget; with it, nothing can.
            made[-1] = made[-1]._replace(
                refused=f"Summarize: a summary of {len(gone_messages)} messages "
                f"was not used: at {after} tokens (asked for {target}) it does "
                f"not fit the limit of {budget.limit} beside what cannot be dropped"
            )
            return None
        known = made[-1].change
        if known and (known[0].index, known[0].units) == (first, len(replaced)):
            return finish("Summarize", messages, out, known, budget)
        run = [us[k] for k in replaced]
        change = Change(
            "summarized",
            "Summarize",
            (*(m.id for u in run for m in messages[u.start : u.stop]), summary.id),
            first,
            before,
            after,
            f"{describe_run(messages, run)} into one summary{made[-1].noted}",
            len(run),
        )
        known[:] = [change]
        return finish("Summarize", messages, out, known, budget)

    def _reading(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        olds: Sequence[int],
        chosen: Sequence[int],
        budget: Budget,
    ) -> tuple[list[Message], list[Message], bool]:
        """What a summary of ``olds`` and ``chosen`` reads.

        The earlier summaries it rolls forward, then what it replaces: the
        originals with ``read_originals`` and a history (then the third value
        is true: an earlier stage's rewrites there change nothing it reads),
        else the messages as they are.
        """
        previous = [messages[us[k].start] for k in olds]
        evicted = [m for k in chosen for m in messages[us[k].start : us[k].stop]]
        if not self.read_originals or budget.history is None:
            return previous, evicted, False
        return previous, originals_of(budget.history, evicted), True

    def _made_of(
        self,
        read: list[Message] | None,
        kept: Sequence[_Made],
        target: int,
        before: int,
        budget: Budget,
    ) -> _Made | None:
        """A summary made before from the same reading (``read``), at the same target.

        A summary with ``read_originals`` reads the originals of what it
        replaces, so an earlier stage rewriting a result in there (a
        duplicate's note pointing to a newer copy) changes nothing it is made
        of: it is the same summary, refused or not by the same rule on what
        it replaces now (``before`` tokens).
        """
        if read is None:
            return None
        for old in kept:
            if (
                old.read is not None
                and old.target == target
                and old.summary is not None
                and len(old.read) == len(read)
                and same_objects(old.read, read, len(read), COMPARED)
            ):
                if budget.counter.message(old.summary) > self.max_share * before:
                    return None  # refused now: made again, as a fresh fit does
                return old
        return None

    def _summary(
        self,
        previous: Sequence[Message],
        evicted: Sequence[Message],
        budget: Budget,
        before: int,
        target: int,
    ) -> tuple[Message | None, str, str]:
        """The summary of ``previous`` summaries and ``evicted`` messages.

        Of ``target`` tokens; what it replaces took ``before`` (``_reading``
        says what it reads). ``None`` when it is refused: empty, or not
        materially smaller (then with a warning saying so). Third, what the
        report's change says of it (``_Made.noted``).
        """
        tok = budget.counter.tokenizer
        every = Facts()
        sources: list[str] = []
        handles: list[str] = []
        for p in previous:
            every = every.merged(summary_facts(p))
            sources += summary_sources(p) or (p.id,)
            handles += summary_handles(p)
        # An earlier summary's facts are kept whole, up to half the summary.
        carried = every.limited(int(self.max_tokens * CARRIED_SHARE), tok)
        # Not the placeholder turn a repair put first: no history holds it.
        kept_out = [m for m in evicted if m.id != CONTINUED_ID]
        sources += [m.id for m in kept_out]
        # By content too: a history converted again from provider dicts
        # gives its messages new ids (``summary_originals``).
        handles += [handle_of(m) for m in kept_out]
        extracted = extract_facts(evicted)
        facts = carried.merged(extracted)
        every = every.merged(extracted)
        summarizer = self.summarizer or _DEFAULT
        previous_text = "\n\n".join(summary_body(p) for p in previous)
        text = summary_text(
            summarizer,
            summarizer.summarize(
                evicted, previous=previous_text or None, max_tokens=target
            ),
        )
        # Shown in its header for ``context_recall``: what it replaced, by
        # content (an earlier summary by its own text), so the same messages
        # in any shape give the same summary.
        handle = span_handle([*previous, *evicted])
        # What the summarizer left of the target: the facts it dropped go there.
        room = max(0, target - tok.count(text))
        body = check_facts(
            text, facts, max_tokens=room, tokenizer=tok, keep=carried
        ).text
        unlisted = len(every.missing_from(body))
        if unlisted:
            # Said in its header, beside the handle that reads them back. The
            # words take their room from the record, made again from
            # ``facts`` (which hold what a record of the summarizer's own
            # may list: ``check_facts``), within the target.
            at = text.find(FACTS_HEADER)
            prose = (text if at < 0 else text[:at]).rstrip()
            cost = tok.count(unlisted_words(unlisted))
            room = max(0, target - tok.count(prose) - cost)
            body = check_facts(
                prose, facts, max_tokens=room, tokenizer=tok, keep=carried
            ).text
            unlisted = len(every.missing_from(body))
        held = facts.missing_from(body).keys()
        kept = Facts(tuple(f for f in facts if (f.kind, f.text) not in held))
        if not body.strip():
            return None, "", ""  # says nothing: dropping says as much, for nothing
        summary = summary_message(
            body,
            list(dict.fromkeys(sources)),
            kept,
            handle=handle,
            handles=handles,
            unlisted=unlisted,
        )
        size = budget.counter.message(summary)
        if size > self.max_share * before:
            return (
                None,
                f"Summarize: a summary of {len(previous) + len(evicted)} messages "
                f"was not used: it took {size} tokens (asked for {target}) of "
                f"the {before} it would replace, over max_share={self.max_share:g}",
                "",
            )
        noted = f", {unlisted:,} facts not listed in it" if unlisted else ""
        # Names the summarizer's text holds that nothing it read does: said,
        # not refused (a model may rephrase; the record is checked apart).
        made_up = invented(text, "\n".join([previous_text, *map(_said, evicted)]))
        if made_up:
            names = ", ".join(f.text for f in made_up.items[:INVENTED_SHOWN])
            more = ", ..." if len(made_up) > INVENTED_SHOWN else ""
            noted += (
                f"; its text names {len(made_up):,} paths, URLs or identifiers "
                "not in what it replaced "
                f"({names}{more})"
            )
        return summary, "", noted


class _Cut(NamedTuple):
    """The first attempt of the last call, when it fit (see ``_resume``)."""

    n: int
    """Candidates replaced."""
    last: int
    """The last of them (a unit index)."""
    first_unit: int
    """The first unit replaced (an earlier summary, or the first candidate)."""
    olds: list[int]
    """The earlier summaries rolled forward (unit indices)."""
    before: int
    """Tokens of what was replaced."""
    stop: int
    """Index of the first message after the last unit replaced."""
    head: list[Message]
    """The output before ``stop``: the units kept there and the summary."""
    made: _Made
    """The summary, with its change."""

    @staticmethod
    def of(
        messages: Sequence[Message],
        us: Sequence[Unit],
        olds: Sequence[int],
        chosen: Sequence[int],
        before: int,
        made: _Made,
    ) -> _Cut:
        replaced = sorted((*olds, *chosen))
        gone = set(replaced)
        head: list[Message] = []
        for k in range(replaced[-1] + 1):
            u = us[k]
            if k == replaced[0]:
                assert made.summary is not None  # it fit
                head.append(made.summary)
            if k not in gone:
                head.extend(messages[u.start : u.stop])
        return _Cut(
            len(chosen),
            chosen[-1],
            replaced[0],
            list(olds),
            before,
            us[replaced[-1]].stop,
            head,
            made,
        )


@dataclass(slots=True)
class _Layout:
    """What ``Summarize`` reads from each unit of a conversation, in lists.

    For the whole conversation (``view``), or for every unit but its last
    (what is kept): those end before its last message, so a conversation
    that extends it (the very objects) has the same units there, with the
    same tokens and pins. A final message pins its unit only in a view.
    """

    messages: Sequence[Message]
    """The conversation (references)."""
    settled: int
    """Units read."""
    counted: array[int]
    """The units that are not system units."""
    olds: array[int]
    """Counted units pinned by nothing, each an earlier summary."""
    cands: array[int]
    """Counted units pinned by nothing, not summaries: the candidates."""
    prefix: array[int]
    """``prefix[i]``: the tokens of ``cands[:i]``."""
    cost: array[int]
    """Each unit's tokens."""
    floor: list[Message]
    """The messages of the pinned units, summaries pinned too (``_floor``)."""
    floor_units: array[int]
    """The unit of each message of ``floor``."""

    def extends(
        self, messages: Sequence[Message], us: Sequence[Unit], budget: Budget
    ) -> bool:
        """Whether ``messages`` holds the very messages read, and more or as many."""
        n = len(self.messages)
        return (
            len(messages) >= n
            and len(us) >= self.settled
            and shares(budget, messages, self.messages, n)
        )

    def upto(
        self, messages: Sequence[Message], us: Sequence[Unit], budget: Budget
    ) -> _Layout:
        """This layout but for the units from the first message ``messages`` changed.

        A unit stays when it and the message after it are the very objects
        read (that message decides where the unit ends). Earlier stages of a
        pipeline rewrite messages near the end of a grown conversation (a
        result leaving the recent ones is cleared), so most of what was read
        stays.
        """
        if self.extends(messages, us, budget):
            return self
        same = identical_prefix(self.messages, messages, COMPARED)
        k = min(self.settled, unit_index(us, same))  # units ending before it
        while k and us[k - 1].stop >= same:
            k -= 1
        if k == 0:
            return _EMPTY
        c = bisect_left(self.cands, k)
        f = bisect_left(self.floor_units, k)
        return _Layout(
            messages[: us[k].start] if k < len(us) else messages,
            k,
            self.counted[: bisect_left(self.counted, k)],
            self.olds[: bisect_left(self.olds, k)],
            self.cands[:c],
            self.prefix[: c + 1],
            self.cost[:k],
            self.floor[:f],
            self.floor_units[:f],
        )

    def view(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        run: Sequence[int],
        budget: Budget,
    ) -> tuple[_Layout, _Layout] | None:
        """The layout of all of ``messages``, and what to keep of it.

        Only the units from ``settled`` on are read. ``None`` when a final
        message falls in a unit read before.
        """
        start = us[self.settled].start if self.settled < len(us) else len(messages)
        finals = final_indices(messages, budget.provider)
        if min(finals, default=start) < start:
            return None
        markers = budget.protected
        read: list[tuple[int, int, bool, bool, bool, bool]] = []
        for k in range(self.settled, len(us)):
            u = us[k]
            if u.stop - u.start == 1:
                pin = pinned_one(messages[u.start], markers, summaries=False)
            else:
                span = messages[u.start : u.stop]
                pin = any(pinned_one(m, markers, summaries=False) for m in span)
            # A summary is a unit of its own (a user message): pinned for the
            # floor, as every other strategy keeps it.
            summary = _is_summary_unit(messages, u)
            read.append(
                (
                    k,
                    run[u.stop] - run[u.start],
                    u.kind != "system",
                    pin,
                    pin or summary,
                    summary,
                )
            )
        final_units = {unit_index(us, i, self.settled) for i in finals}
        whole = self._grown((), us, read, final_units, messages)
        kept = self._grown(messages, us, read[:-1], set(), messages)
        return whole, kept

    def _grown(
        self,
        seen: Sequence[Message],
        us: Sequence[Unit],
        read: Sequence[tuple[int, int, bool, bool, bool, bool]],
        final_units: set[int],
        messages: Sequence[Message],
    ) -> _Layout:
        """This layout and the units ``read``, the ``final_units`` pinned.

        ``seen``: the conversation it is kept for (``()``: not kept).
        """
        counted: list[int] = []
        olds: list[int] = []
        cands: list[int] = []
        cand_costs: list[int] = []
        floor: list[Message] = []
        floor_units: list[int] = []
        for k, c, is_counted, pin, floor_pin, summary in read:
            final = k in final_units
            if is_counted:
                counted.append(k)
                if not (pin or final):
                    if summary:
                        olds.append(k)
                    else:
                        cands.append(k)
                        cand_costs.append(c)
            if floor_pin or final:
                u = us[k]
                floor.extend(messages[u.start : u.stop])
                floor_units.extend([k] * (u.stop - u.start))
        running = accumulate(cand_costs, initial=self.prefix[-1])
        next(running)  # the total so far, which ``prefix`` holds already
        return _Layout(
            seen if isinstance(seen, tuple) else list(seen),
            read[-1][0] + 1 if read else self.settled,
            self.counted + _ints(counted),
            self.olds + _ints(olds),
            self.cands + _ints(cands),
            self.prefix + _ints(running),
            self.cost + _ints(r[1] for r in read),
            self.floor + floor,
            self.floor_units + _ints(floor_units),
        )


def _said(message: Message) -> str:
    """What a message said, its tool calls' names and arguments too."""
    calls = [
        f"{p.name} {p.arguments}" for p in message.parts if isinstance(p, ToolCall)
    ]
    return "\n".join([message.text, *calls]) if calls else message.text


def _ints(values: Iterable[int]) -> array[int]:
    """Machine integers: the memo keeps a layout's lists between calls."""
    return array("q", values)


_EMPTY = _Layout(
    (), 0, _ints(()), _ints(()), _ints(()), _ints((0,)), _ints(()), [], _ints(())
)


@dataclass(slots=True)
class _State:
    """What ``Summarize`` keeps in the memo (see the module)."""

    layout: _Layout
    """The conversation last fitted, read but for its last unit."""
    made: list[_Made]
    """The summaries made for its attempts."""
    cut: _Cut | None
    """Its first attempt, when that one fit."""
    clean: bool = False
    """The output of the last call was ``cut``'s, and valid as it was built
    (no repair): up to its last unit, the next output is known valid."""


def unit_index(us: Sequence[Unit], i: int, lo: int = 0) -> int:
    """The index of the unit holding message ``i``."""
    hi = len(us)
    while lo < hi:
        mid = (lo + hi) // 2
        if us[mid].stop <= i:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _is_summary_unit(messages: Sequence[Message], unit: Unit) -> bool:
    return unit.kind == "message" and is_summary(messages[unit.start])


def _floor(messages: Sequence[Message], budget: Budget) -> int:
    """Tokens of what no later stage can drop: the pinned units, summaries too."""
    us, pinned = pinned_units(messages, budget.protected, budget.provider)
    kept = [
        m
        for u, p in zip(us, pinned, strict=True)
        if p
        for m in messages[u.start : u.stop]
    ]
    return budget.count(kept)
