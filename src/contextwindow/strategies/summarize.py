"""``Summarize``: replace the oldest units with one summary message.

Contract:

- Only while the conversation does not fit: the oldest unpinned units outside
  the last ``keep_recent`` are replaced, oldest first, just enough to meet the
  budget (a budget of 0 replaces every one of them), by one summary message
  (``contextwindow.summarizers.record``): a ``user`` message placed where the
  first of them was, which every provider accepts there.
- Incremental: a summary message already in the conversation (outside the
  last ``keep_recent`` units) is rolled forward: its text is the
  summarizer's ``previous``, its facts carry over (all of them, up to
  ``CARRIED_SHARE`` of ``max_tokens``), its sources join the new summary's,
  and the new summary takes its place. Nothing pinned is ever
  summarised; every other strategy treats the summary as pinned.
- The cut moves in steps: after just enough units, the units that fall in
  the same step of ``CUT_STEP`` of the budget (counting what is replaced
  from the oldest) are replaced too, so the cut is a function of the
  conversation that stays where it was while it grows by less than a step.
- Incremental: the summary made for a cut is kept in the budget's memo
  (keyed by the strategy and the budget's settings) with the very messages
  it replaced; a call whose cut replaces the same messages reuses it instead
  of calling the summarizer again (a summarizer gives the same summary for
  the same input; an LLM one that would not is held to its first). What is
  kept never changes the answer (``tests/properties/test_incremental.py``).
- Facts: the record of what is replaced (``extract_facts``, no LLM) is
  checked against the summary, and what the summary dropped is re-attached
  (``check_facts``); the summary's ``meta`` keeps the facts it holds and the
  ids of every message it replaces, for ``recall``.
- Refusal, so that compaction cannot loop: no change is made (the report
  holds no ``summarized`` change) when the summary is not materially smaller
  than what it replaces (more than ``max_share`` of its tokens), or when it
  would turn a budget that dropping units could meet into one nothing can
  meet. The summarizer is called at most twice per call: for just enough
  units, then, when that summary is refused or leaves the conversation over
  budget, for all of them.
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
    >>> print(summary.text)
    [Summary of 10 earlier messages]
    assistant: Fixed the login form; 10 tests passed.
    user: Step 1: fix password reset in src/mod1.py.
    <BLANKLINE>
    Facts from the summarized messages:
    - files: src/mod0.py, src/mod2.py, src/mod3.py, src/mod4.py
    - numbers: 11 tests; 12 tests; 13 tests; 14 tests
    >>> [(c.kind, c.index, c.units, c.saved) for c in fitted.report.changes]
    [('summarized', 1, 10, 63)]
    >>> from contextwindow.summarizers import recall, summary_sources
    >>> recall(conv, summary_sources(summary)) == conv[1:11]
    True
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import NamedTuple

from contextwindow._args import check_int, check_number, shown
from contextwindow._prefix import same_objects
from contextwindow.errors import ArgumentTypeError
from contextwindow.messages import Message, Unit, units
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    describe_run,
    finish,
    pinned_flags,
    pinned_units,
)
from contextwindow.summarizers.base import Summarizer, summary_text
from contextwindow.summarizers.extractive import ExtractiveSummarizer
from contextwindow.summarizers.facts import Facts, check_facts, extract_facts
from contextwindow.summarizers.record import (
    is_summary,
    summary_body,
    summary_facts,
    summary_message,
    summary_sources,
)
from contextwindow.validity import CONTINUED_ID

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

CUT_STEP = 0.05
"""The cut moves in steps of this share of the budget (see the module)."""

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


@dataclass(frozen=True, slots=True)
class Summarize:
    """Replace the oldest units with one summary that keeps their facts.

    Args:
        summarizer: Writes the summaries (default: ``ExtractiveSummarizer()``,
            offline and deterministic).
        keep_recent: The most recent units never summarised (system units
            not counted).
        max_tokens: The most a summary may take (the summarizer's target).
        max_share: A summary taking more than this share of the tokens it
            replaces is refused (see the module's contract).

    Raises:
        ContextWindowError: ``keep_recent`` below 0, ``max_tokens`` below 1,
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

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_int(self.max_tokens, "max_tokens", low=1)
        check_number(self.max_share, "max_share", low=0, high=1, open_low=True)
        if self.summarizer is not None and not callable(
            getattr(self.summarizer, "summarize", None)
        ):
            raise ArgumentTypeError(
                "summarizer",
                shown(self.summarizer),
                "a Summarizer (with a summarize method)",
            )

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Summarise the oldest units until the budget is met (see the module)."""
        unchanged = finish("Summarize", messages, messages, (), budget)
        if budget.fits(messages):
            return unchanged
        us = units(messages)
        flags = pinned_flags(
            messages, budget.protected, budget.provider, summaries=False
        )
        pinned = [any(flags[u.start : u.stop]) for u in us]
        counted = [k for k, u in enumerate(us) if u.kind != "system"]
        recent = set(counted[max(0, len(counted) - self.keep_recent) :])
        free = [k for k in counted if not pinned[k] and k not in recent]
        olds = [k for k in free if _is_summary_unit(messages, us[k])]
        candidates = [k for k in free if k not in olds]
        if not candidates:
            return unchanged
        run = budget.counter.running(messages)
        cost = [run[u.stop] - run[u.start] for u in us]
        # Just enough units to fit once the summary is in, then all of them.
        over = budget.count(messages) - budget.limit
        rolled = sum(cost[k] for k in olds)
        # What n candidates free, with what is rolled forward.
        freed = list(accumulate((cost[k] for k in candidates), initial=rolled))
        n = self._enough(freed, over)
        # On to the end of the step the cut fell in (see the module).
        step = max(1, int(budget.limit * CUT_STEP))
        n = bisect_right(freed, (freed[n] // step + 1) * step - 1, lo=n) - 1
        attempts = [candidates[:n]] if n < len(candidates) else []
        attempts.append(candidates)
        floor = _floor(messages, budget)
        key = (self, "Summarize", budget.settings)
        found = budget.memo.get(key)
        kept: list[_Made] = found if isinstance(found, list) else []  # pyright: ignore[reportUnknownVariableType]  # only this method puts it
        made: list[_Made] = []
        best: Fitted | None = None
        for chosen in attempts:
            fitted = self._attempt(
                messages, us, olds, chosen, cost, budget, floor, kept, made
            )
            if fitted is not None:
                best = fitted
                if fitted.report.fits:
                    break
        budget.memo.put(key, made)
        return best or unchanged

    def _enough(self, freed: Sequence[int], over: int) -> int:
        """The fewest candidates (at least one) whose summary saves ``over``.

        ``freed[n]``: the tokens ``n`` candidates take; all of them when no
        number does. What a summary saves grows with what it replaces, so
        the answer is found by bisection.
        """

        def saves(f: int) -> bool:
            target = self._target(f)
            return target > 0 and f - target - HEADER_TOKENS >= over

        lo, hi = 1, len(freed) - 1
        if not saves(freed[hi]):
            return hi
        while lo < hi:
            mid = (lo + hi) // 2
            if saves(freed[mid]):
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
        cost: Sequence[int],
        budget: Budget,
        floor: int,
        kept: Sequence[_Made],
        made: list[_Made],
    ) -> Fitted | None:
        """Summarise ``olds`` and ``chosen``; ``None`` when the summary is refused.

        A summary in ``kept`` made for the same messages is reused; the one
        used goes to ``made``.
        """
        replaced = sorted((*olds, *chosen))
        before = sum(cost[k] for k in replaced)
        target = self._target(before)
        if target <= 0:
            return None
        gone_messages = [
            m for k in replaced for m in messages[us[k].start : us[k].stop]
        ]
        for old in kept:
            if (
                old.target == target
                and len(old.replaced) == len(gone_messages)
                and same_objects(old.replaced, gone_messages, len(gone_messages))
            ):
                made.append(old)
                summary = old.summary
                break
        else:
            summary = self._summary(messages, us, olds, chosen, budget, before)
            made.append(_Made(gone_messages, target, summary, []))
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
            return None  # dropping could have met the budget; with it, nothing can
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
            f"{describe_run(messages, run)} into one summary",
            len(run),
        )
        known[:] = [change]
        return finish("Summarize", messages, out, known, budget)

    def _summary(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        olds: Sequence[int],
        chosen: Sequence[int],
        budget: Budget,
        before: int,
    ) -> Message | None:
        """The summary of ``olds`` and ``chosen`` (``before`` tokens).

        ``None`` when it is refused: not materially smaller.
        """
        target = self._target(before)
        evicted = [m for k in chosen for m in messages[us[k].start : us[k].stop]]
        previous = [messages[us[k].start] for k in olds]
        tok = budget.counter.tokenizer
        carried = Facts()
        sources: list[str] = []
        for p in previous:
            carried = carried.merged(summary_facts(p))
            sources += summary_sources(p) or (p.id,)
        # An earlier summary's facts are kept whole, up to half the summary.
        carried = carried.limited(int(self.max_tokens * CARRIED_SHARE), tok)
        facts = carried.merged(extract_facts(evicted))
        # Not the placeholder turn a repair put first: no history holds it.
        sources += [m.id for m in evicted if m.id != CONTINUED_ID]
        summarizer = self.summarizer or _DEFAULT
        text = summary_text(
            summarizer,
            summarizer.summarize(
                evicted,
                previous="\n\n".join(summary_body(p) for p in previous) or None,
                max_tokens=target,
            ),
        )
        # What the summarizer left of the target: the facts it dropped go there.
        room = max(0, target - tok.count(text))
        body = check_facts(
            text, facts, max_tokens=room, tokenizer=tok, keep=carried
        ).text
        held = facts.missing_from(body).keys()
        kept = Facts(tuple(f for f in facts if (f.kind, f.text) not in held))
        summary = summary_message(body, list(dict.fromkeys(sources)), kept)
        if budget.counter.message(summary) > self.max_share * before:
            return None
        return summary


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
