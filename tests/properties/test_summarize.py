"""Properties of ``Summarize``: every invariant of DESIGN.md, and its own.

The cases are ``test_fitting``'s (a random budget, tokenizer, markers, tools
and reserve per conversation of the pool), for each provider; ``Summarize``
runs with the offline ``ExtractiveSummarizer``, drawn ``keep_recent`` and
``max_tokens``, both through ``fit`` (where ``DropOldest`` finishes) and
called directly. The shared invariants are ``test_fitting``'s checks where
they apply unchanged (pinned messages kept, exchanges whole, provider rules);
order and the report are checked here, since a summary is a message the input
did not hold. Then what only ``Summarize`` promises: the summary replaces
unpinned units outside the recent ones, holds the facts its ``meta`` lists,
is materially smaller than what it replaced, points back to it; and rolling
an already-summarised conversation forward keeps the old summary's facts.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from contextwindow.messages import Message, Provider, units
from contextwindow.strategies import Budget, Fitted, Summarize
from contextwindow.summarizers import (
    is_summary,
    recall,
    summary_facts,
    summary_sources,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import CONTINUED_ID, ensure_valid
from contextwindow.wire import to_dicts

from .test_fitting import (
    PROVIDERS,
    Case,
    How,
    Run,
    check_pinned,
    check_provider,
    check_units,
    each,
    is_subsequence,
    make_case,
    make_counters,
    pinned_oracle,
    run_with,
)


def draw_strategy(index: int) -> Summarize:
    """The strategy for one case: a drawn window and summary size."""
    rng = random.Random(f"summarize-{index}")
    return Summarize(
        keep_recent=rng.choice((0, 1, 2, 4)), max_tokens=rng.choice((40, 2000))
    )


def execute(case: Case, how: How) -> Run:
    """Run ``Summarize`` on one case, through ``fit`` or directly."""
    return run_with(case, how, "Summarize", draw_strategy(case.index))


@dataclass(frozen=True)
class Batch:
    how: How
    provider: Provider
    runs: list[Run]


@pytest.fixture(scope="module")
def cases(convs: list[list[Message]]) -> dict[Provider, list[Case]]:
    out: dict[Provider, list[Case]] = {}
    for provider in PROVIDERS:
        counters = make_counters(provider)
        out[provider] = [make_case(k, c, counters) for k, c in enumerate(convs)]
    return out


@pytest.fixture(
    scope="module",
    params=[(how, p) for how in ("fit", "direct") for p in PROVIDERS],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def batch(request: pytest.FixtureRequest, cases: dict[Provider, list[Case]]) -> Batch:
    how, provider = request.param
    mine = cases[provider]
    for case in mine:
        tok = case.budget.counter.tokenizer
        if isinstance(tok, FakeTokenizer):
            tok.reset()  # it records every text; keep memory flat
    return Batch(how, provider, [execute(case, how) for case in mine])


def summaries(fitted: Fitted) -> list[Message]:
    return [m for m in fitted.messages if is_summary(m)]


def seen(run: Run) -> Sequence[Message]:
    """What ``Summarize`` worked on: the repaired input through ``fit``, else
    the input as it is."""
    return run.case.valid if run.how == "fit" else run.case.conv


# -- the checks ------------------------------------------------------------------


def check_fits(run: Run) -> None:
    """Through ``fit``: fits, or BudgetError exactly when pinned content overflows."""
    c = run.case
    limit = c.budget.limit
    if run.error is not None:
        assert run.how == "fit", "Summarize alone never raises BudgetError"
        assert c.floor > limit, ("BudgetError, but the pinned content fits", c.floor)
        assert run.error.pinned, "BudgetError names nothing"
        return
    assert run.fitted is not None
    out, report = run.fitted.messages, run.fitted.report
    assert report.tokens_after == c.budget.count(out)
    if run.how == "fit":
        assert report.tokens_after <= limit, (report.tokens_after, limit)
        if c.budget.count(c.valid) <= limit:
            assert out == c.valid, "a fitting conversation comes back only repaired"


def check_order(run: Run) -> None:
    """Kept messages keep their order; the summary sits where the first message it
    replaced was (the placeholder turn a repair put first, perhaps)."""
    if run.fitted is None:
        return
    out = run.fitted.messages
    valid = [m.id for m in seen(run)]
    kept = [m.id for m in out if m.id != CONTINUED_ID and not is_summary(m)]
    assert len(set(kept)) == len(kept), "a message appears twice"
    assert is_subsequence(kept, valid), (kept, valid)
    where = {i: k for k, i in enumerate(valid)}
    firsts = {
        ch.ids[-1]: ch.ids[0]
        for ch in run.fitted.report.changes
        if ch.kind == "summarized"
    }
    for at, s in enumerate(out):
        if not is_summary(s) or s.id not in firsts:
            continue
        first = where[firsts[s.id]]
        before = [where[m.id] for m in out[:at] if m.id in where]
        after = [where[m.id] for m in out[at + 1 :] if m.id in where]
        shown = ([m.id for m in out], summary_sources(s), valid)
        assert all(k < first for k in before), ("moved after the summary", shown)
        assert all(k > first for k in after), ("moved before the summary", shown)


def check_report(run: Run) -> None:
    """The totals add up; every removed, changed or added message is named."""
    if run.fitted is None:
        return
    c = run.case
    out, report = run.fitted.messages, run.fitted.report
    counter = c.budget.counter
    assert report.tokens_before == c.budget.count(c.conv)
    assert report.tokens_before - sum(ch.saved for ch in report.changes) == (
        report.tokens_after
    )
    raw = {m.id: m for m in c.conv}
    by_id = {m.id: m for m in out}
    named: dict[str, set[str]] = {}
    for ch in report.changes:
        named.setdefault(ch.kind, set()).update(ch.ids)
        if ch.kind != "summarized":
            continue
        *gone, made = ch.ids
        summary = by_id[made]
        assert is_summary(summary), ch
        assert not any(i in by_id for i in gone), "summarized but still present"
        if gone[0] in raw:
            assert c.conv[ch.index].id == gone[0], ("index", ch)
        by_seen = {m.id: m for m in seen(run)}
        replaced = [by_seen[i] for i in gone]
        assert ch.tokens_before == sum(counter.message(m) for m in replaced)
        assert ch.tokens_after == counter.message(summary)
        assert ch.saved > 0
    for m in c.conv:
        if m.id not in by_id:
            assert m.id in named.get("dropped", set()) | named.get(
                "repaired", set()
            ) | (named.get("summarized", set())), (
                f"{m.id} left without a change naming it"
            )
    for m in out:
        if m.id not in raw:
            assert m.id in named.get("repaired", set()) | named.get("summarized", set())
        elif m != raw[m.id]:
            assert m.id in named.get("repaired", set()), f"{m.id} changed"


def check_summary(run: Run) -> None:
    """A summary replaces unpinned, older units, holds its facts, and is smaller."""
    if run.fitted is None:
        return
    c = run.case
    strategy = run.strategy
    assert isinstance(strategy, Summarize)
    valid = list(seen(run))
    flags = pinned_oracle(valid, c.protected)
    pinned_ids = {m.id for m, f in zip(valid, flags, strict=True) if f}
    counted = [u for u in units(valid) if u.kind != "system"]
    k = strategy.keep_recent
    recent = {
        m.id for u in (counted[-k:] if k else []) for m in valid[u.start : u.stop]
    }
    for s in summaries(run.fitted):
        sources = summary_sources(s)
        assert s.role == "user"
        assert s.text.startswith("[Summary of ")
        assert not set(sources) & pinned_ids, "a pinned message was summarised"
        assert not set(sources) & recent, "a recent unit was summarised"
        originals = recall(valid, sources)
        assert [m.id for m in originals] == list(sources), "sources point back"
        # Whole units only: no exchange is split between summary and view.
        out_ids = {m.id for m in run.fitted.messages}
        for u in units(valid):
            inside = [m.id in set(sources) for m in valid[u.start : u.stop]]
            assert all(inside) or not any(inside), "a unit was split"
            assert not (any(inside) and valid[u.start].id in out_ids)
        held = summary_facts(s)
        assert not held.missing_from(s.text), "meta lists a fact the text lacks"
        change = next(ch for ch in run.fitted.report.changes if ch.ids[-1] == s.id)
        assert change.tokens_after <= strategy.max_share * change.tokens_before


INVARIANTS = {
    "fits the budget, or BudgetError only when pinned content overflows": check_fits,
    "pinned messages are kept unchanged and in order": check_pinned,
    "tool exchanges are kept or summarised whole": check_units,
    "order is kept; the summary sits where its first source was": check_order,
    "the output is valid for the provider": check_provider,
    "the report accounts for every change": check_report,
    "summaries replace old unpinned units, hold their facts, and are smaller": (
        check_summary
    ),
}
"""Each invariant, by what it says (the test ids)."""


class TestSummarize:
    @pytest.mark.parametrize("check", INVARIANTS.values(), ids=INVARIANTS.keys())
    def test_invariant(self, batch: Batch, check: Callable[[Run], None]) -> None:
        """The invariant holds on every run of the batch (see ``INVARIANTS``)."""
        each(batch.runs, check)

    def test_input_is_never_mutated(self, batch: Batch) -> None:
        """Every conversation, in the wire form, is as it was before any run."""
        for run in batch.runs:
            assert to_dicts(run.case.conv) == run.case.wire, run.describe()

    def test_summaries_are_made(self, batch: Batch) -> None:
        """Enough runs summarise for the invariants to mean something."""
        made = sum(
            1
            for r in batch.runs
            if r.fitted
            and any(ch.kind == "summarized" for ch in r.fitted.report.changes)
        )
        assert made > len(batch.runs) // 10, f"only {made} summaries made"


class TestRollForward:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_a_summarised_conversation_keeps_the_old_facts(
        self, provider: Provider, some_convs: list[list[Message]]
    ) -> None:
        """Summarise the first half, append the rest, summarise again: nothing of
        the first summary's facts or sources is lost."""
        counter = TokenCounter(FakeTokenizer(), provider)
        rolled = 0
        for k, conv in enumerate(some_convs):
            valid = list(ensure_valid(conv, provider).messages)
            cuts = [u.stop for u in units(valid)][:-1]
            if not cuts:
                continue
            cut = cuts[len(cuts) // 2]
            first = Summarize(keep_recent=0)(valid[:cut], Budget(0, counter))
            olds = summaries(first)
            if not olds:
                continue
            (old,) = olds
            conv2 = [*first.messages, *valid[cut:]]
            again = Summarize(keep_recent=1)(conv2, Budget(0, counter))
            news = summaries(again)
            assert len(news) == 1, f"conversation {k}: one summary, rolled forward"
            new = news[0]
            assert set(summary_sources(old)) <= set(summary_sources(new)), k
            if new.id != old.id:
                rolled += 1
                assert summary_facts(old).keys() <= summary_facts(new).keys(), k
                assert not summary_facts(old).missing_from(new.text), k
            # Once more with nothing new to fold: nothing changes.
            third = Summarize(keep_recent=1)(list(again.messages), Budget(0, counter))
            assert [m.id for m in third.messages] == [m.id for m in again.messages]
        assert rolled > len(some_convs) // 20, f"only {rolled} summaries rolled"
