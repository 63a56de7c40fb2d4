"""Tokens the tool-result strategies save on real agent traces, applied fully.

Usage::

    python benchmarks/tool_result_savings.py

Inputs: the 200 tau-bench trajectories (OpenAI framing) and every Claude Code
session of the shared data, subagent and compaction runs included (Anthropic
framing); tokens are exact o200k. Claude Code sessions that break an Anthropic
rule as recorded are repaired first (``ensure_valid``), so that the figures
hold savings only, no repairs.

Each strategy runs at its defaults, called directly with ``Budget(0,
counter)``: a budget of 0 is never met, so the tool-result strategies apply
everywhere they may (all but the ``keep_recent`` most recent results, and never
a pinned message, the final one included). Rows:

- ``Deduplicate()``: earlier copies of identical outputs become a note;
- ``TruncateToolResults()``: results over 500 tokens keep head and tail;
- ``ClearToolResults()``: results become a placeholder;
- all three in ``fit``'s default order, as one ``Pipeline``.

For each: tokens of every request before and after (summed over the
conversations), saved, saved as a share of the tokens before, and the changes
reported (one per tool message changed, per stage). The header gives each
dataset's share of tokens in tool messages (their text and framing), the most
these strategies can act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from _data import claude_files, data_dir

from contextwindow.messages import Message, Provider
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    Deduplicate,
    Pipeline,
    Strategy,
    TruncateToolResults,
)
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts
from contextwindow.validity import ensure_valid

STRATEGIES: tuple[tuple[str, Strategy], ...] = (
    ("Deduplicate()", Deduplicate()),
    ("TruncateToolResults()", TruncateToolResults()),
    ("ClearToolResults()", ClearToolResults()),
    (
        "all three, in fit's order",
        Pipeline(Deduplicate(), TruncateToolResults(), ClearToolResults()),
    ),
)


@dataclass(frozen=True)
class Dataset:
    name: str
    provider: Provider
    conversations: tuple[tuple[Message, ...], ...]


def datasets() -> list[Dataset]:
    data = data_dir()
    tau = read_transcripts(data / "tau-bench_gpt-4o-airline.json")
    claude = [
        ensure_valid(t.messages, "anthropic").messages
        for path in claude_files(data)
        for t in read_transcripts(path)
    ]
    return [
        Dataset("tau-bench", "openai", tuple(t.messages for t in tau)),
        Dataset("Claude Code", "anthropic", tuple(claude)),
    ]


def measure(ds: Dataset, strategy: Strategy, counter: TokenCounter) -> list[int]:
    """Tokens before, tokens after, changes reported; summed."""
    before = after = changed = 0
    budget = Budget(0, counter)
    for conv in ds.conversations:
        fitted = strategy(conv, budget)
        kinds = {c.kind for c in fitted.report.changes}
        assert "repaired" not in kinds, f"{ds.name}: a strategy repaired its input"
        before += fitted.report.tokens_before
        after += fitted.report.tokens_after
        changed += len(fitted.report.changes)
    return [before, after, changed]


def main() -> None:
    tok = BPETokenizer("o200k_base")
    print("tokens saved by each strategy at its defaults, applied fully")
    print("(Budget(0, counter)); exact o200k tokenizer")
    for ds in datasets():
        counter = TokenCounter(tok, ds.provider)
        total = sum(counter.messages(conv) for conv in ds.conversations)
        tool = sum(
            counter.message(m)
            for conv in ds.conversations
            for m in conv
            if m.role == "tool"
        )
        results = sum(len(m.tool_results) for conv in ds.conversations for m in conv)
        print(
            f"\n{ds.name}: {len(ds.conversations)} conversations, {total:,} tokens "
            f"({ds.provider} framing); {results:,} tool results holding "
            f"{tool:,} tokens ({tool / total:.0%})"
        )
        print(
            f"  {'strategy':<27}{'before':>11}{'after':>11}{'saved':>11}"
            f"{'saved %':>9}{'changes':>9}"
        )
        for name, strategy in STRATEGIES:
            before, after, changed = measure(ds, strategy, counter)
            saved = before - after
            print(
                f"  {name:<27}{before:>11,}{after:>11,}{saved:>11,}"
                f"{saved / before:>9.1%}{changed:>9,}"
            )


if __name__ == "__main__":
    main()
