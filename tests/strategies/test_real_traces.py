"""Acceptance: real agent traces fitted to a half, a quarter and a tenth of themselves.

Every τ-bench trajectory (OpenAI chat, ``openai``) and every Claude Code
session file (main sessions, subagents and compaction runs, ``anthropic``) goes
through ``fit`` with each strategy, counted with exact ``o200k_base`` BPE (one
counter per transcript, reused across strategies and budgets, so each message
is counted once). Each output must be valid for its provider and fit; a
``BudgetError`` is allowed exactly when the transcript's pinned content (system
messages, pinned ones and the final message, with their whole units, made
valid) exceeds the budget, which is computed here without the strategies.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError
from contextwindow.formats import from_provider, to_provider
from contextwindow.handles import ORIGIN_KEY, content_handle, handle_of, originals
from contextwindow.messages import Message, Provider, ToolSpec, units
from contextwindow.recalling import MAX_RECALL_TOKENS, context_recall, render
from contextwindow.strategies import (
    ClearToolResults,
    CompactLossless,
    Deduplicate,
    DropOldest,
    Fitted,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Strategy,
    TruncateToolResults,
)
from contextwindow.summarizers import (
    is_summary,
    recall,
    summary_handle,
    summary_sources,
)
from contextwindow.tokens import BPETokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.transcripts import read_transcripts
from contextwindow.validity import CONTINUED_ID, ensure_valid, problems
from contextwindow.wire import MessageDict, to_dicts

FRACTIONS = (0.5, 0.25, 0.1)
"""Budgets, as shares of each transcript's own tokens."""

STRATEGIES: dict[str, Strategy | None] = {
    "default": None,
    "DropOldest": DropOldest(),
    "SlidingWindow": SlidingWindow(3),
    "TruncateToolResults": TruncateToolResults(keep_recent=1, max_tokens=5),
    "ClearToolResults": ClearToolResults(keep_recent=1),
    "Deduplicate": Deduplicate(),
    "CompactLossless": CompactLossless(),
    "StaleReads": StaleReads(),
    "Pipeline": Pipeline(
        Deduplicate(),
        TruncateToolResults(keep_recent=1, max_tokens=5),
        ClearToolResults(keep_recent=1),
        DropOldest(),
    ),
    "Pipeline-window": Pipeline(SlidingWindow(3), DropOldest()),
    "SelectRelevant": SelectRelevant(keep_recent=3),
    "Pipeline-relevant": Pipeline(
        Deduplicate(),
        TruncateToolResults(keep_recent=1, max_tokens=5),
        SelectRelevant(),
    ),
}
"""``None`` is ``fit``'s default strategy."""


@dataclass(frozen=True)
class Trace:
    """One transcript, with what any fit of it must keep."""

    title: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    counter: TokenCounter
    """Counts for the transcript's provider; shared by every fit of it."""
    total: int
    """Tokens of the whole request."""
    valid: tuple[Message, ...]
    """``ensure_valid(messages)``."""

    @functools.cached_property
    def handles(self) -> dict[str, Message]:
        """Each message as given by its handle (``contextwindow.handles``).

        What a handle recalls is the history's message, as it came: a message
        a repair changed (a blank text block dropped) names its original.
        """
        return {content_handle(m): m for m in reversed(self.messages)}

    pinned: tuple[Message, ...]
    """Messages of ``valid`` that must come back unchanged."""
    floor: int
    """Tokens of the pinned content alone, with its units, made valid."""
    main: bool
    """A Claude Code main session (not a subagent or compaction run)."""
    wire: list[MessageDict]
    """The messages in the wire form, before any fit."""

    @property
    def provider(self) -> Provider:
        """The provider it is fitted for."""
        return self.counter.provider


def trace(
    title: str,
    messages: tuple[Message, ...],
    tools: tuple[ToolSpec, ...],
    counter: TokenCounter,
    *,
    main: bool = False,
) -> Trace:
    """Prepare a transcript: its total, its valid form and its pinned floor."""
    provider = counter.provider
    valid = ensure_valid(messages, provider).messages
    last = len(valid) - 1
    flags = [
        m.id != CONTINUED_ID and (m.role == "system" or m.pinned or i == last)
        for i, m in enumerate(valid)
    ]
    kept: list[Message] = []
    for u in units(valid):
        if any(flags[u.start : u.stop]):
            # Nothing in a pinned unit could shrink: it is pinned throughout.
            assert all(
                flags[i] or valid[i].role != "tool" for i in range(u.start, u.stop)
            ), f"{title}: a pinned unit holds a tool result a strategy may shrink"
            kept.extend(valid[u.start : u.stop])
    floor = counter.messages(list(ensure_valid(kept, provider).messages), tools=tools)
    return Trace(
        title,
        messages,
        tools,
        counter,
        counter.messages(list(messages), tools=tools),
        valid,
        tuple(m for m, f in zip(valid, flags, strict=True) if f),
        floor,
        main,
        to_dicts(messages),
    )


@pytest.fixture(scope="module")
def o200k() -> BPETokenizer:
    """One exact tokenizer for every transcript."""
    return BPETokenizer("o200k_base")


@pytest.fixture(scope="module")
def tau_bench(shared_data: Path, o200k: BPETokenizer) -> list[Trace]:
    """The 200 τ-bench trajectories, for ``openai``."""
    found = read_transcripts(shared_data / "tau-bench_gpt-4o-airline.json")
    assert len(found) == 200
    return [
        trace(t.title, t.messages, t.tools, TokenCounter(o200k, "openai"))
        for t in found
    ]


@pytest.fixture(scope="module")
def claude_code(shared_data: Path, o200k: BPETokenizer) -> list[Trace]:
    """The 16 Claude Code session files (5 main sessions), for ``anthropic``."""
    root = shared_data / "claude_code_sessions"
    files = sorted(root.rglob("*.jsonl"))
    assert len(files) == 16
    out = []
    for path in files:
        (t,) = read_transcripts(path)
        counter = TokenCounter(o200k, "anthropic")
        main = path.parent == root
        out.append(trace(path.name, t.messages, t.tools, counter, main=main))
    assert sum(t.main for t in out) == 5
    return out


@dataclass(frozen=True)
class Outcome:
    """One fit: the trace, the limit, and whether it raised ``BudgetError``."""

    trace: Trace
    fraction: float
    limit: int
    error: BudgetError | None


def fit_all(traces: Sequence[Trace], name: str) -> list[Outcome]:
    """Fit every trace to each fraction with strategy ``name``, checking each fit."""
    outcomes = []
    for t in traces:
        for fraction in FRACTIONS:
            limit = int(t.total * fraction)
            result = fit_once(t, limit, STRATEGIES[name])
            where = f"{name} on {t.title} at {fraction:.0%} ({limit:,} tokens)"
            try:
                if isinstance(result, BudgetError):
                    check_error(t, limit, result)
                else:
                    check(t, result, limit)
            except AssertionError as exc:
                raise AssertionError(where) from exc
            error = result if isinstance(result, BudgetError) else None
            outcomes.append(Outcome(t, fraction, limit, error))
        assert t.wire == to_dicts(t.messages), f"{name} mutated {t.title}"
    return outcomes


def fit_once(t: Trace, limit: int, strategy: Strategy | None) -> Fitted | BudgetError:
    """``fit`` the trace to ``limit``, or the ``BudgetError`` it raised."""
    try:
        return fit(
            t.messages,
            limit=limit,
            strategy=strategy,
            tokenizer=t.counter,
            tools=t.tools,
        )
    except BudgetError as exc:
        return exc


def check_error(t: Trace, limit: int, error: BudgetError) -> None:
    """The error names the pinned content, which alone needs ``t.floor`` tokens."""
    assert error.pinned, "BudgetError names nothing"
    assert error.budget == limit < error.required
    assert error.required == t.floor, str(error)


def check(t: Trace, fitted: Fitted, limit: int) -> None:
    """Valid, fits, keeps the pinned messages and whole exchanges; full report."""
    out, report = fitted.messages, fitted.report
    assert problems(out, t.provider) == ()
    assert report.tokens_before == t.total
    assert report.tokens_after == t.counter.messages(list(out), tools=t.tools)
    assert report.tokens_after <= limit
    # What goes out in the provider's shape, read back, counts the same.
    sent = from_provider(to_provider(out, t.provider), t.provider)
    assert t.counter.messages(sent, tools=t.tools) == report.tokens_after
    saved = sum(c.saved for c in report.changes)
    assert report.tokens_before - saved == report.tokens_after
    assert report.changes, "the whole transcript cannot fit"
    named = {i for c in report.changes for i in c.ids}
    out_ids = {m.id for m in out}
    missing = [m.id for m in t.messages if m.id not in out_ids]
    assert set(missing) <= named, "a message left without a change naming it"
    by_id = {m.id: m for m in out}
    for m in t.pinned:
        assert by_id.get(m.id) == m, f"pinned {m.id} removed or changed"
    valid_ids = [m.id for m in t.valid if m.id != CONTINUED_ID]
    # A summary (the default pipeline's) stands where its first source was.
    order = [m.id for m in out if m.id != CONTINUED_ID and not is_summary(m)]
    it = iter(valid_ids)
    assert all(i in it for i in order), "order changed"
    it = iter(order)
    assert all(m.id in it for m in t.pinned if m.id != CONTINUED_ID), "pinned order"
    exchanges = {
        t.valid[u.start].id: [m.id for m in t.valid[u.start : u.stop]]
        for u in units(t.valid)
        if u.kind == "tool_exchange"
    }
    for u in units(out):
        if u.kind == "tool_exchange":
            got = [m.id for m in out[u.start : u.stop]]
            assert exchanges.get(got[0]) == got, f"exchange {got[0]} split"
    check_handles(t, fitted)


def check_handles(t: Trace, fitted: Fitted) -> None:
    """Every cut names a handle that recalls exactly its original, as given."""
    own = {m.id: m for m in t.messages}
    by_handle = t.handles
    collapsed = {
        c.ids[0]: c.ids for c in fitted.report.changes if c.kind == "collapsed"
    }
    for m in fitted.messages:
        was = own.get(m.id)
        if was is None or ORIGIN_KEY not in m.meta:
            continue
        h = handle_of(m)
        if m.id in collapsed:
            assert originals(t.messages, h) == [own[i] for i in collapsed[m.id]], h
        else:
            assert by_handle.get(h) == was, ("handle does not recall", m.id, h)
    for s in (m for m in fitted.messages if is_summary(m)):
        # Its header's handle brings back every message it stands for.
        sources = summary_sources(s)
        replaced = recall(t.messages, sources)
        assert [m.id for m in replaced] == list(sources), "a source is not recalled"
        handle = summary_handle(s)
        assert handle is not None
        got = context_recall(
            t.messages, handle, view=fitted.messages, max_tokens=MAX_RECALL_TOKENS
        )
        assert got is not None
        assert got.startswith(render(replaced)[:200])


def errors_expected(outcomes: Sequence[Outcome]) -> list[bool]:
    """Whether each fit must raise: its pinned content alone exceeds the limit."""
    return [o.trace.floor > o.limit for o in outcomes]


@pytest.mark.parametrize("name", STRATEGIES)
class TestRealTraces:
    def test_tau_bench(self, name: str, tau_bench: list[Trace]) -> None:
        """Each run fits validly; BudgetError exactly when pinned content overflows."""
        outcomes = fit_all(tau_bench, name)
        raised = [o.error is not None for o in outcomes]
        assert raised == errors_expected(outcomes)
        by = {
            f: [o.error is None for o in outcomes if o.fraction == f] for f in FRACTIONS
        }
        # The long airline policy (a system message) is over a tenth of every run.
        assert not any(by[0.1])
        assert sum(by[0.5]) > len(tau_bench) / 2, "most runs fit in half"
        assert 0 < sum(by[0.25]) < len(tau_bench)

    def test_claude_code(self, name: str, claude_code: list[Trace]) -> None:
        """Each file fits validly; BudgetError exactly when pinned content overflows."""
        outcomes = fit_all(claude_code, name)
        raised = [o.error is not None for o in outcomes]
        assert raised == errors_expected(outcomes)
        assert not any(o.error for o in outcomes if o.trace.main), (
            "main sessions end on a short turn: they fit at every budget"
        )
        assert 0 < sum(raised) < len(outcomes)
