"""``SelectRelevant``: when units must go, keep the older ones the query needs.

Contract: like ``DropOldest`` it drops whole unpinned units, only when the
conversation does not fit, keeps the order of what it keeps, and reports one
change per run of dropped units. What it keeps besides the pinned units:
the last ``keep_recent`` units, newest first, as many as fit (a recent unit
goes only when it cannot fit beside the newer ones); then, with the room
left, older units by relevance to the query (``budget.query``, else the
final message's text), most relevant first, each one that still fits, ties
going to the newer unit, so units with nothing in common with the query come
newest first. When the pinned units alone exceed the budget the output does
not fit (``fit`` then finishes with ``DropOldest``, which says what is
pinned). The placeholder turn a repair put first (``CONTINUED``) is never
kept for itself: the repair puts it back when what follows still needs it.
Incremental: the units' documents are kept indexed in the budget's memo
(keyed by the scorer; ``BM25Scorer`` keeps its inverted index,
``BM25Index``, any other scorer the texts), so a call on the conversation
grown by a few messages indexes the new units only and re-scores from the
index: a query costs what its own terms occur in. What is kept never changes
the answer (``tests/properties/test_incremental.py``).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import repeat

from contextwindow._args import check_callable, check_int, shown
from contextwindow._prefix import identical_prefix
from contextwindow.errors import ContextWindowError
from contextwindow.messages import COMPARED, Message, Unit
from contextwindow.relevance.base import Scorer, document
from contextwindow.relevance.bm25 import BM25Index, BM25Scorer
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    finish,
    pinned_units,
    strategy_input,
)
from contextwindow.strategies.drop import Runs, keep_units
from contextwindow.validity import CONTINUED_ID

__all__ = ["SelectRelevant"]


@dataclass(frozen=True, slots=True)
class SelectRelevant:
    """Keep the recent units and the older ones most relevant to the query.

    Args:
        keep_recent: The last units kept whatever their relevance, as many
            as fit (system units are pinned and not counted; the final unit
            counts).
        scorer: Ranks the units' texts against the query
            (``contextwindow.relevance``): ``BM25Scorer()`` by default,
            offline; an ``EmbeddingScorer`` adds meaning.

    Raises:
        ContextWindowError: ``keep_recent`` below 0, or a scorer that is
            not callable; when called, a scorer that did not return one
            finite number per unit, in order (a dict or a ``str`` neither).

    Example:
        >>> from contextwindow import Message, TokenCounter
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> chat = ["My sister Ana lives in Porto.", "Lunch was great today.",
        ...         "The printer jammed again.", "I watched a film tonight.",
        ...         "Rain all week, sadly."]
        >>> conv = [Message.user(t) for t in chat] + [
        ...     Message.user("Which city does Ana live in?")]
        >>> budget = Budget(32, TokenCounter(FakeTokenizer()))
        >>> fitted = SelectRelevant(keep_recent=2)(conv, budget)
        >>> [m.text for m in fitted.messages]
        ['My sister Ana lives in Porto.', 'Rain all week, sadly.', 'Which city does Ana live in?']
        >>> [(c.kind, c.index, c.units) for c in fitted.report.changes]
        [('dropped', 1, 3)]
    """  # noqa: E501 -- doctest output lines cannot be wrapped

    keep_recent: int = 6
    """The last units kept whatever their relevance."""
    scorer: Scorer = field(default_factory=BM25Scorer)
    """Ranks the units' texts against the query."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_callable(self.scorer, "scorer", "a Scorer (documents, query) -> scores")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Drop the least relevant older units until the budget is met."""
        messages = strategy_input(messages, budget)
        total = budget.count(messages)
        if total <= budget.limit:
            unchanged = finish("SelectRelevant", messages, messages, (), budget)
            if unchanged.report.fits:  # else a repair of the input cost tokens
                return unchanged
        us, keep = pinned_units(messages, budget.protected, budget.provider)
        run = budget.counter.running(messages)
        cost = [run[u.stop] - run[u.start] for u in us]
        # The placeholder turn a repair put first is no content: it goes, and
        # comes back only if what follows it still needs it.
        counted = [
            k
            for k, u in enumerate(us)
            if u.kind != "system" and messages[u.start].id != CONTINUED_ID
        ]
        used = total - sum(c for c, kept in zip(cost, keep, strict=True) if not kept)
        for k in reversed(counted[max(0, len(counted) - self.keep_recent) :]):
            if keep[k]:
                continue
            if used + cost[k] > budget.limit:
                break  # the recent run stays contiguous; older ones compete below
            keep[k] = True
            used += cost[k]
        candidates = [k for k in counted if not keep[k]]
        chosen: list[int] = []
        state = self._state(messages, us, counted, budget)
        if candidates:
            score = self._scores(messages, us, counted, budget, state.index)
            # Most relevant first, ties to the newer unit: (score, k)
            # descending, as a stable sort of the newest first by score alone.
            found = map(score.get, candidates, repeat(0.0))
            keyed = dict(zip(candidates, found, strict=True))
            newest = candidates[::-1]  # the stable sort keeps ties in this order
            ranked = sorted(newest, key=keyed.__getitem__, reverse=True)
            limit = budget.limit
            for k in ranked:
                c = cost[k]
                if used + c <= limit:
                    keep[k] = True
                    used += c
                    chosen.append(k)
        runs = Runs(state.runs, state.valid, {})
        while True:
            fitted = keep_units(
                "SelectRelevant", messages, us, keep, cost, budget, runs
            )
            if fitted.report.fits or not chosen:
                state.runs = runs.made
                return fitted
            # A repair (Anthropic's first user turn) cost tokens: the least
            # relevant unit chosen goes too.
            keep[chosen.pop()] = False

    def _scores(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        counted: Sequence[int],
        budget: Budget,
        index: BM25Index | _Texts,
    ) -> dict[int, float]:
        """Each non-system unit's score against the query, by unit index."""
        n = len(counted)
        query = budget.query
        if query is None:
            query = messages[-1].text
            # The final message asks: its own unit is the query, not a document.
            if n and counted[-1] == len(us) - 1:
                n -= 1
        if isinstance(index, BM25Index):
            values = index.scores(query, n)
        else:
            values = self._checked(index.texts[:n], query)
        return dict(zip(counted[:n], values, strict=True))

    def _state(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        counted: Sequence[int],
        budget: Budget,
    ) -> _Indexed:
        """The documents of the ``counted`` units, indexed (see the module).

        What the memo holds for the conversation last seen is kept for the
        units both share (all but the last unit inside their common prefix,
        which new messages may extend), and only the rest is indexed.
        """
        key = ("contextwindow.select", self.scorer)
        state = budget.memo.get(key)
        index: BM25Index | _Texts
        j = whole = 0
        runs: dict[tuple[int, int], Change] = {}
        if isinstance(state, _Indexed):
            index = state.index
            shared = identical_prefix(state.messages, messages, COMPARED)
            # The old units that end in the shared prefix, but the last one.
            whole = max(bisect_left(state.stops, shared + 1) - 1, 0)
            j = bisect_left(state.counted, whole)
            if list(counted[:j]) != state.counted[:j]:
                j = whole = 0
            index.truncate(j)
            runs = state.runs
        elif isinstance(self.scorer, BM25Scorer):
            index = self.scorer.index()
        else:
            index = _Texts()
        for k in counted[j:]:
            index.append(document(messages[us[k].start : us[k].stop]))
        fresh = _Indexed(
            messages if isinstance(messages, tuple) else list(messages),
            [u.stop for u in us],
            list(counted),
            index,
            runs,
            whole,
        )
        budget.memo.put(key, fresh)
        return fresh

    def _checked(self, texts: Sequence[str], query: str) -> list[float]:
        """The scorer's scores of ``texts``, checked: one finite number each.

        Any ordered iterable of numbers is read (a list, a tuple, an array, a
        generator); a mapping, a set, a ``str`` or ``bytes`` is refused: read
        as one, a dict's keys (its unit indices) or a string's characters
        would pass for the scores, and the ranking be by position.
        """
        scores: object = self.scorer(texts, query)
        who = shown(self.scorer)
        if isinstance(scores, Mapping | AbstractSet | str | bytes | bytearray):
            raise ContextWindowError(
                f"the scorer {who} returned {shown(scores)}, not one number per "
                "unit (a sequence of numbers, in the order of the units)"
            )
        try:
            values = [float(s) for s in scores]  # type: ignore[attr-defined]  # checked here
        except (TypeError, ValueError):
            raise ContextWindowError(
                f"the scorer {who} returned {shown(scores)}, not one number per unit"
            ) from None
        if len(values) != len(texts) or not all(map(math.isfinite, values)):
            raise ContextWindowError(
                f"the scorer {who} returned {len(values)} scores for {len(texts)} "
                "units, or one that is not a finite number"
            )
        return values


class _Texts:
    """The documents of a scorer that keeps no index of its own: their texts."""

    __slots__ = ("texts",)

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __len__(self) -> int:
        return len(self.texts)

    def append(self, document: str) -> None:
        self.texts.append(document)

    def truncate(self, n: int) -> None:
        del self.texts[n:]


@dataclass(slots=True)
class _Indexed:
    """What ``SelectRelevant`` indexed for the conversation it last saw."""

    messages: Sequence[Message]
    """The conversation (references)."""
    stops: list[int]
    """Where each of its units ends."""
    counted: list[int]
    """The units indexed, in order (one document each)."""
    index: BM25Index | _Texts
    runs: dict[tuple[int, int], Change]
    """The dropped runs' changes of the last fit, by their units."""
    valid: int
    """Units of the conversation before that are the same messages as
    here, grouped the same way: its runs up to there can be reused."""
