"""Acceptance: ``Summarize`` on real agent traces, and on real compaction points.

Every τ-bench trajectory (``openai``) and every Claude Code session file
(``anthropic``) is fitted with ``Pipeline(Summarize(), DropOldest())`` (what
``--strategy summarize`` runs) to a half, a quarter and a tenth of its tokens,
exact o200k counts: each output is valid, fits (or ``BudgetError`` exactly when
the pinned content alone is over), keeps the pinned messages and whole
exchanges, and each summary points back to unpinned originals and holds the
facts its ``meta`` lists. At the 5 real compaction points of the main
sessions, our summary at the size of Claude's keeps more of the facts the work
went on to reference (``benchmarks/retention.py`` prints the table).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Provider, units
from contextwindow.strategies import Summarize
from contextwindow.summarizers import is_summary, recall, summary_facts, summary_sources
from contextwindow.tokens import BPETokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.transcripts import read_transcripts
from contextwindow.validity import CONTINUED_ID, ensure_valid, problems

FRACTIONS = (0.5, 0.25, 0.1)


@pytest.fixture(scope="module")
def o200k() -> BPETokenizer:
    return BPETokenizer("o200k_base")


def traces(shared_data: Path) -> list[tuple[str, tuple[Message, ...], Provider]]:
    out: list[tuple[str, tuple[Message, ...], Provider]] = []
    for t in read_transcripts(shared_data / "tau-bench_gpt-4o-airline.json"):
        out.append((t.title, t.messages, "openai"))
    for path in sorted((shared_data / "claude_code_sessions").rglob("*.jsonl")):
        (t,) = read_transcripts(path)
        out.append((path.name, t.messages, "anthropic"))
    return out


def floor(valid: Sequence[Message], counter: TokenCounter) -> int:
    """Tokens of the system messages, pinned ones and the last, whole units."""
    last = len(valid) - 1
    flags = [
        m.id != CONTINUED_ID and (m.role == "system" or m.pinned or i == last)
        for i, m in enumerate(valid)
    ]
    kept = [
        m
        for u in units(valid)
        if any(flags[u.start : u.stop])
        for m in valid[u.start : u.stop]
    ]
    provider = counter.provider
    return counter.messages(list(ensure_valid(kept, provider).messages))


class TestRealTraces:
    def test_every_trace_at_a_half_a_quarter_and_a_tenth(
        self, shared_data: Path, o200k: BPETokenizer
    ) -> None:
        """Valid, fitting, pinned kept, whole exchanges, summaries that point back."""
        made: dict[str, int] = {"openai": 0, "anthropic": 0}
        for title, messages, provider in traces(shared_data):
            counter = TokenCounter(o200k, provider)
            valid = ensure_valid(messages, provider).messages
            total = counter.messages(list(messages))
            need = floor(valid, counter)
            for fraction in FRACTIONS:
                limit = int(total * fraction)
                where = f"{title} at {fraction:.0%}"
                try:
                    fitted = fit(
                        messages, limit=limit, strategy=Summarize(), tokenizer=counter
                    )
                except BudgetError:
                    assert need > limit, where
                    continue
                out = fitted.messages
                assert problems(out, provider) == (), where
                assert fitted.report.tokens_after <= limit, where
                by_id = {m.id: m for m in out}
                assert by_id.get(valid[-1].id) == valid[-1], where
                assert all(by_id.get(m.id) == m for m in valid if m.role == "system"), (
                    where
                )
                for s in (m for m in out if is_summary(m)):
                    made[provider] += 1
                    originals = recall(messages, summary_sources(s))
                    assert len(originals) == len(summary_sources(s)), where
                    assert not {m.id for m in originals} & set(by_id), where
                    assert not summary_facts(s).missing_from(s.text), where
                    kinds = {ch.kind for ch in fitted.report.changes}
                    assert "summarized" in kinds, where
        # τ-bench's system prompt takes much of a tight budget: where a summary
        # would not fit beside it, none is made and DropOldest does the job.
        assert made["openai"] > 100, made
        assert made["anthropic"] > 20, made


class TestRealCompactions:
    def test_ours_keeps_more_referenced_facts_than_claude_at_no_more_tokens(
        self, shared_data: Path
    ) -> None:
        """The retention benchmark's claim, checked at every compaction point."""
        path = Path(__file__).resolve().parents[2] / "benchmarks" / "retention.py"
        spec = importlib.util.spec_from_file_location("retention", path)
        assert spec is not None
        assert spec.loader is not None
        sys.path.insert(0, str(path.parent))  # it imports _data from beside it
        try:
            bench = importlib.util.module_from_spec(spec)
            sys.modules["retention"] = bench  # its dataclasses look themselves up
            spec.loader.exec_module(bench)
            tok = BPETokenizer("o200k_base")
            root = shared_data / "claude_code_sessions"
            points = [
                p
                for f in sorted(root.glob("*.jsonl"))
                for p in bench.measure(f, tok, 0)
            ]
        finally:
            sys.path.remove(str(path.parent))
            sys.modules.pop("retention", None)
        assert len(points) == 5
        ours = claude = 0
        for p in points:
            assert p.tokens["ours"] <= p.tokens["claude"], p.session
            ours += sum(p.kept["ours"].values())
            claude += sum(p.kept["claude"].values())
        assert ours > 2 * claude, (ours, claude)


@pytest.mark.parametrize("limit", [17_500, 20_000])
def test_a_summary_a_little_over_is_tried_again_not_made_of_everything(
    shared_data: Path, limit: int
) -> None:
    """A just-enough summary a few tokens over does not make the fit summarise it all.

    On this session, fitted for OpenAI, the summary of just enough units came
    out 77 tokens over (its re-attached facts), and the only other attempt
    replaced every unit: 1,303 tokens sent of 20,000. One more attempt, with
    the units that free twice the overshoot, fits with most of the budget used.
    """
    path = (
        shared_data
        / "claude_code_sessions"
        / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    )
    t = read_transcripts(path)[0]
    fitted = fit(
        t.messages,
        model=t.model,
        limit=limit,
        reserve=0,
        provider="openai",
        tools=t.tools,
    )
    assert fitted.report.fits
    assert fitted.report.tokens_after > 0.8 * limit
    kinds = [c.kind for c in fitted.report.changes]
    assert kinds.count("summarized") == 1
    assert not problems(fitted.messages, "openai")
