"""How do Claude's token counts relate to o200k? Measured on real Claude Code usage.

Usage::

    python scripts/calibrate_claude.py   # data: $CONTEXTWINDOW_DATA or ../shared/data

Claude has no public tokenizer, but every assistant record of the Claude Code
sessions carries the API's real ``usage``. The prompt size of one API call is
``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
Between two consecutive calls the prompt grows by exactly what was added: the
first call's output (text, tool_use) and the user records that follow it (tool
results, user text), plus framing and anything Claude Code injects without
writing it to the transcript. The system prompt and tool schemas are in both
calls and cancel out. So for each pair of consecutive calls we compare the real
delta with the o200k count of the added content.

Records are grouped into API calls by ``message.id`` (Claude Code writes one
record per content block). Pairs are skipped when a compaction boundary or a
model switch lies between them, and when the first call holds thinking (whether
thinking stays in the prompt, and how the visible summary relates to the billed
text, is not knowable from the transcript).

Reported: the median ratio by interval size (small intervals are dominated by
the fixed per-turn overhead), and a robust line ``delta = slope * o200k +
overhead`` (Theil-Sen: the median of pairwise slopes), overall and per model.
Not wired into the library; a number for the report.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations, pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _data import claude_files, compact_json, data_dir

from contextwindow.tokens import BPETokenizer

BUCKETS = [(0, 100), (100, 300), (300, 1000), (1000, 3000), (3000, 10**9)]


@dataclass
class Call:
    model: str
    prompt: int
    blocks: list[dict[str, Any]]
    added: list[str]  # texts of the user records that follow this call
    after_boundary: bool


@dataclass
class Interval:
    model: str
    delta: int
    o200k: int


def block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return str(block.get("name", "")) + compact_json(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(
            str(c.get("text", "")) for c in content or () if c.get("type") == "text"
        )
    return ""


def prompt_size(usage: dict[str, Any]) -> int:
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def calls_of(path: Path) -> list[Call]:
    calls: list[Call] = []
    ids: list[str] = []
    boundary = False
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            kind = record.get("type")
            if kind == "system" and record.get("subtype") == "compact_boundary":
                boundary = True
            elif kind == "assistant":
                msg = record["message"]
                if not ids or ids[-1] != msg["id"]:
                    usage = msg.get("usage") or {}
                    calls.append(
                        Call(
                            msg.get("model", "?"), prompt_size(usage), [], [], boundary
                        )
                    )
                    ids.append(msg["id"])
                    boundary = False
                calls[-1].blocks.extend(msg.get("content") or ())
            elif kind == "user" and calls:
                content = record["message"].get("content")
                if isinstance(content, str):
                    calls[-1].added.append(content)
                else:
                    calls[-1].added.extend(block_text(b) for b in content or ())
    return calls


def intervals(tok: BPETokenizer) -> list[Interval]:
    out: list[Interval] = []
    for path in claude_files(data_dir()):
        calls = calls_of(path)
        for a, b in pairwise(calls):
            if b.after_boundary or a.model != b.model:
                continue
            if any(blk.get("type") == "thinking" for blk in a.blocks):
                continue
            texts = [block_text(blk) for blk in a.blocks] + a.added
            added = sum(tok.count(t) for t in texts if t)
            if added > 0:
                out.append(Interval(a.model, b.prompt - a.prompt, added))
    return out


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return q[0], statistics.median(values), q[2]


def theil_sen(points: list[Interval]) -> tuple[float, float]:
    slopes = [
        (p.delta - q.delta) / (p.o200k - q.o200k)
        for p, q in combinations(points, 2)
        if abs(p.o200k - q.o200k) >= 50
    ]
    slope = statistics.median(slopes)
    return slope, statistics.median(p.delta - slope * p.o200k for p in points)


def main() -> None:
    rows = intervals(BPETokenizer("o200k_base"))
    print(f"{len(rows)} consecutive-call intervals (no thinking, no compaction)\n")
    print("real prompt delta / o200k count of the added content:")
    print(f"{'o200k added':<14}{'n':>5}{'p25':>8}{'median':>8}{'p75':>8}")
    for lo, hi in BUCKETS:
        ratios = [r.delta / r.o200k for r in rows if lo <= r.o200k < hi]
        if ratios:
            p25, med, p75 = quartiles(ratios)
            label = f"{lo}-{hi}" if hi < 10**9 else f">={lo}"
            print(f"{label:<14}{len(ratios):>5}{p25:>8.3f}{med:>8.3f}{p75:>8.3f}")

    by_model: dict[str, list[Interval]] = defaultdict(list)
    for r in rows:
        by_model[r.model].append(r)
    print(f"\n{'model':<30}{'n':>5}{'slope':>8}{'overhead':>10}{'big-median':>12}")
    for model, points in [("all", rows), *sorted(by_model.items())]:
        if len(points) < 5:
            continue
        slope, overhead = theil_sen(points)
        big = [p.delta / p.o200k for p in points if p.o200k >= 1000]
        big_med = f"{statistics.median(big):.3f}" if big else "-"
        print(f"{model:<30}{len(points):>5}{slope:>8.3f}{overhead:>10.0f}{big_med:>12}")
    print(
        "\nslope: Claude tokens per o200k token of added content; overhead: fixed "
        "tokens per call\n(framing plus what Claude Code injects unrecorded); "
        "big-median: median ratio\nover intervals adding >= 1000 o200k tokens."
    )


if __name__ == "__main__":
    main()
