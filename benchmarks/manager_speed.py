"""An agent loop's cost per turn: ``push`` and ``prepare`` over a 5,000-message replay.

Usage::

    python benchmarks/manager_speed.py

The conversation is the 5,000-message tau-bench one ``fit_speed.py`` builds
(one system prompt, then every trajectory, tool-call ids made fresh). Each
message is pushed into a ``ContextManager("gpt-4o")`` and a request is
prepared after it, as an agent loop does each turn; counts are exact
(o200k_base) with OpenAI's framing. Two windows:

- one larger than the whole conversation, so the view grows to 5,000
  messages and nothing is compacted: the cost per turn must stay flat
  however long the history;
- gpt-4o's own 128,000 tokens, so the manager compacts from 90 % down to
  60 % now and then: the turns that compact are shown apart.

Every figure is the median, the mean and the 99th percentile per turn over
the whole replay (the mean and p99 include the garbage collector's pauses and
the compacting turns), then the same per block of 1,000 turns. Peers, timed in
the same run:

- a running total, what a careful loop without a manager keeps: each new
  message counted once (a ``TokenCounter`` per message, no cache) and added,
  and written in the provider's shape (``to_openai``) onto a kept wire list;
- LangChain's ``trim_messages(strategy="last")`` on a LangChain list growing
  by the same messages, with a token counter memoised per message (the
  cookbook's framing over the same tokenizer), the careful way;
- naive, as users often do: recount the whole history and write it out each
  turn (a fresh ``TokenCounter`` and ``to_openai``), and ``trim_messages``
  with a counter that recounts every message.

Running the naive peers on every turn would take many minutes (they cost up
to hundreds of milliseconds a turn at the end), so every peer runs on the same
turns, every ``EVERY``-th one; ours is timed on every turn and reported both
over all turns and over the peers' turns, and the ratios compare medians over
the same turns.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from statistics import mean, median
from typing import Any

from fit_speed import conversation, cookbook_counter, memoised_counter
from langchain_core.messages import convert_to_messages, trim_messages

from contextwindow import ContextManager
from contextwindow.formats import to_openai
from contextwindow.messages import Message
from contextwindow.tokens import BPETokenizer, TokenCounter

SIZE = 5_000
BLOCK = 1_000
"""Turns per row of the per-block table."""
EVERY = 10
"""The peers run on every tenth turn (the same turns for all of them)."""


def replay(conv: list[Message], window: int) -> tuple[list[float], list[int]]:
    """Seconds of push + prepare for each turn, and the turns that compacted."""
    m = ContextManager("gpt-4o", token_limit=window)
    times: list[float] = []
    compacted: list[int] = []
    for k, msg in enumerate(conv):
        t0 = time.perf_counter()
        m.push(msg)
        p = m.prepare()
        times.append(time.perf_counter() - t0)
        if any(c.applied and c.trigger != "repair" for c in p.compactions):
            compacted.append(k)
    return times, compacted


def p99(times: Sequence[float]) -> float:
    """The 99th percentile (nearest rank)."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def stats(times: Sequence[float]) -> str:
    """``median / mean / p99`` in microseconds."""
    cells = (median(times), mean(times), p99(times))
    return "".join(f"{t * 1e6:>10,.0f}" for t in cells)


def peers(conv: list[Message], window: int) -> dict[str, dict[int, float]]:
    """Seconds of each peer on every ``EVERY``-th turn, by turn (see the module)."""
    tok = BPETokenizer("o200k_base")
    out: dict[str, dict[int, float]] = {name: {} for name in PEERS}
    careful = memoised_counter(tok)
    naive = cookbook_counter(tok)
    wire: list[Any] = []
    lc: list[Any] = []
    total = 3

    def trim(counter: Any) -> None:
        trim_messages(
            lc,
            strategy="last",
            max_tokens=window,
            token_counter=counter,
            include_system=True,
            start_on="human",
        )

    for k, msg in enumerate(conv):
        t0 = time.perf_counter()
        total += TokenCounter(tok).message(msg)
        wire.extend(to_openai([msg]))
        t1 = time.perf_counter()
        lc.extend(convert_to_messages(to_openai([msg])))
        if k % EVERY:
            careful(lc[-1:])  # counted once, as the careful loop does each turn
            continue
        out[PEERS[0]][k] = t1 - t0
        t0 = time.perf_counter()
        trim(careful)
        out[PEERS[1]][k] = time.perf_counter() - t0
        history = conv[: k + 1]
        t0 = time.perf_counter()
        TokenCounter(tok).messages(history)
        to_openai(history)
        out[PEERS[2]][k] = time.perf_counter() - t0
        t0 = time.perf_counter()
        trim(naive)
        out[PEERS[3]][k] = time.perf_counter() - t0
    return out


PEERS = (
    "running total + to_openai",
    "trim_messages, memoised",
    "recount + to_openai",
    "trim_messages, naive",
)


def main() -> None:
    tok = BPETokenizer("o200k_base")
    conv = conversation(SIZE)
    total = TokenCounter(tok).messages(conv)
    print(f"replay: {len(conv):,} messages, {total:,} tokens (o200k, OpenAI framing)")
    print(
        f"per turn, microseconds; the peers on every {EVERY}th turn "
        f"({len(range(0, len(conv), EVERY))} turns), ours on every turn and on "
        "those; ratio = peer median / our median on the same turns\n"
    )
    for label, window in (
        (
            "(1) a window larger than the conversation: nothing compacted",
            total + 10_000,
        ),
        ("(2) gpt-4o's 128,000 tokens: compacts from 90 % to 60 %", 128_000),
    ):
        times, compacted = replay(conv, window)
        timed = peers(conv, window)
        sampled = sorted(timed[PEERS[0]])
        ours_s = [times[k] for k in sampled]
        print(label)
        print(
            f"  whole replay{'':<26}{'median':>10}{'mean':>10}{'p99':>10}{'ratio':>9}"
        )
        print(f"  {'ours, every turn':<36}{stats(times)}")
        print(f"  {'ours, the peers turns':<36}{stats(ours_s)}{1:>8.1f}x")
        for name in PEERS:
            peer = [timed[name][k] for k in sampled]
            print(f"  {name:<36}{stats(peer)}{median(peer) / median(ours_s):>8.1f}x")
        if compacted:
            print(
                f"  ({len(compacted)} compacting turns among ours; "
                f"{sum(k in timed[PEERS[0]] for k in compacted)} of them sampled)"
            )
        print(
            "\n  per block, median (mean); all but the first column on the peers' turns"
        )
        head = "".join(f" | {n}" for n in ("ours, every turn", "ours", *PEERS))
        print(f"  | turns{head} |")
        print("  " + "|---" * (3 + len(PEERS)) + "|")
        for start in range(0, len(conv), BLOCK):
            block = [k for k in sampled if start <= k < start + BLOCK]
            cells = [times[start : start + BLOCK], [times[k] for k in block]]
            cells += [[timed[n][k] for k in block] for n in PEERS]
            row = " | ".join(f"{_us(median(c))} ({_us(mean(c))})" for c in cells)
            print(f"  | {start + 1:,}-{min(start + BLOCK, len(conv)):,} | {row} |")
        print()


def _us(seconds: float) -> str:
    """Seconds in µs, ms or s, three significant figures."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


if __name__ == "__main__":
    main()
