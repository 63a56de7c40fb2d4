"""How far the approximate Claude count is from the API's, before and after calibration.

Usage::

    python benchmarks/calibration.py   # data: $CONTEXTWINDOW_DATA or ../shared/data

Every assistant message of the Claude Code sessions carries the API's real
``usage``: the prompt of that call was ``input_tokens +
cache_read_input_tokens + cache_creation_input_tokens``. The transcript holds
everything in that prompt but Claude Code's system prompt and tool schemas,
which are the same in every call of a session. So each call is measured
against the first call of its segment (a segment ends at a compaction
boundary or a model switch): the API's growth ``R_k - R_0`` against our
count's growth ``C_k - C_0``, where ``C`` is ``count_messages`` of the
messages before the call with the model's approximate tokenizer (o200k x
1.17) and Anthropic framing. Thinking parts are not counted: the API drops
earlier turns' thinking from the prompt.

A ``Calibration`` (the library's, as a manager's ``observe_usage`` feeds
it) observes the first 1, 5 or 20 calls of a session ("after n"), or every
call before the one measured (what an adapter does); the error of a call is
``|ratio * counted - reported| / reported``. Every row is measured on the
same calls: those after the 20th of their session, so the rows differ by
the calibration alone.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import claude_files, data_dir

from contextwindow import Calibration, Message, Thinking, read_transcripts
from contextwindow.models import get_tokenizer
from contextwindow.tokens import TokenCounter, reported_input_tokens

MODEL = "claude-sonnet-4-5"
SEEN = (1, 5, 20)
MIN_GROWTH = 200
"""Calls whose prompt grew by less than this since their segment began are
left out: the error of a tiny difference says nothing of the tokenizer."""


@dataclass
class Point:
    counted: int
    reported: int


def _without_thinking(m: Message) -> Message:
    if not any(isinstance(p, Thinking) for p in m.parts):
        return m
    kept = tuple(p for p in m.parts if not isinstance(p, Thinking))
    return replace(m, parts=kept)


def session_points(path: Path, counter: TokenCounter) -> list[Point]:
    """The (counted growth, reported growth) of each call of one session."""
    points: list[Point] = []
    for transcript in read_transcripts(path, format="claude_code"):
        msgs = [_without_thinking(m) for m in transcript.messages]
        boundaries = {
            int(c["index"]) for c in transcript.meta.get("compactions", ()) or ()
        }
        running = counter.running([m for m in msgs if m.parts])
        prefix: list[int] = []
        i = 0
        for m in msgs:
            prefix.append(running[i])
            if m.parts:
                i += 1
        base: tuple[int, int, str] | None = None
        for k, m in enumerate(msgs):
            if k in boundaries:
                base = None
            usage = m.meta.get("usage")
            if m.role != "assistant" or usage is None:
                continue
            model = str(transcript.model or "")  # one model per file here
            reported = reported_input_tokens(usage)
            if base is None or base[2] != model:
                base = (prefix[k], reported, model)
                continue
            counted, grown = prefix[k] - base[0], reported - base[1]
            if grown >= MIN_GROWTH and counted > 0:
                points.append(Point(counted, grown))
    return points


def errors(sessions: list[list[Point]], seen: int | None) -> list[float]:
    """Errors on the calls after the 20th of each session.

    ``seen``: ``None``, uncalibrated; ``0``, a default ``Calibration`` fed
    every call before the one measured (as an adapter feeds it); ``n``, one
    fed the session's first ``n`` calls, then left as it is.
    """
    out: list[float] = []
    for points in sessions:
        cal = Calibration()
        for k, p in enumerate(points):
            if k >= max(SEEN):
                ratio = 1.0 if seen is None else cal.ratio
                out.append(abs(ratio * p.counted - p.reported) / p.reported)
            if seen == 0 or (seen is not None and k < seen):
                cal.observe(p.counted, p.reported)
    return out


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    counter = TokenCounter(get_tokenizer(MODEL), "anthropic")
    sessions = [session_points(p, counter) for p in claude_files(data_dir())]
    sessions = [s for s in sessions if len(s) > max(SEEN)]
    calls = sum(len(s) - max(SEEN) for s in sessions)
    print(
        f"{len(sessions)} sessions with more than {max(SEEN)} measured calls; "
        f"{calls} calls measured\n"
    )
    print("| calibration | median error | p90 error |")
    print("|---|---|---|")
    for seen in (None, *SEEN, 0):
        errs = errors(sessions, seen)
        label = {None: "none (o200k x 1.17)", 0: "fed every call before (default)"}.get(
            seen, f"after {seen} calls"
        )
        print(
            f"| {label} | {100 * statistics.median(errs):.1f} % "
            f"| {100 * p90(errs):.1f} % |"
        )


if __name__ == "__main__":
    main()
