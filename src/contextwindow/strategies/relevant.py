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
The scorer's caches make a second call after one new message score
the new unit's text from scratch and look the others up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextwindow._args import check_callable, check_int, shown
from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message, Unit
from contextwindow.relevance.base import Scorer, document
from contextwindow.relevance.bm25 import BM25Scorer
from contextwindow.strategies.base import Budget, Fitted, finish, pinned_units
from contextwindow.strategies.drop import keep_units
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
            not callable.

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
        if candidates:
            score = self._scores(messages, us, counted, budget.query)
            candidates.sort(key=lambda k: (-score.get(k, 0.0), -k))
            for k in candidates:
                if used + cost[k] <= budget.limit:
                    keep[k] = True
                    used += cost[k]
                    chosen.append(k)
        while True:
            fitted = keep_units("SelectRelevant", messages, us, keep, cost, budget)
            if fitted.report.fits or not chosen:
                return fitted
            # A repair (Anthropic's first user turn) cost tokens: the least
            # relevant unit chosen goes too.
            keep[chosen.pop()] = False

    def _scores(
        self,
        messages: Sequence[Message],
        us: Sequence[Unit],
        counted: Sequence[int],
        query: str | None,
    ) -> dict[int, float]:
        """Each non-system unit's score against the query, by unit index."""
        ranked = list(counted)
        if query is None:
            query = messages[-1].text
            # The final message asks: its own unit is the query, not a document.
            if ranked and ranked[-1] == len(us) - 1:
                ranked.pop()
        texts = [document(messages[us[k].start : us[k].stop]) for k in ranked]
        scores: object = self.scorer(texts, query)
        who = shown(self.scorer)
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
        return dict(zip(ranked, values, strict=True))
