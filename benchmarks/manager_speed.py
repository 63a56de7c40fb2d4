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
the compacting turns). Peers, timed in the same run on the same turns:

- a running total, what a careful loop without a manager keeps: each new
  message counted once (a ``TokenCounter`` per message, no cache) and added,
  and written in the provider's shape (``to_openai``) onto a kept wire list;
- LangChain's ``trim_messages(strategy="last")`` on a LangChain list growing
  by the same messages, with a token counter memoised per message (the
  cookbook's framing over the same tokenizer), the careful way;
- naive, as users often do: recount the whole history and write it out each
  turn (a fresh ``TokenCounter`` and ``to_openai``), and ``trim_messages``
  with a counter that recounts every message.

The careful peers run on every ``SAMPLE``-th turn (``trim_messages`` costs
milliseconds at the end of the replay), the naive ones on every
``NAIVE``-th; their statistics are over those turns.
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
STEP = 500
SAMPLE = 10
"""The careful peers run on every tenth turn."""
NAIVE = 100
"""The naive peers run on every hundredth turn."""


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


def stats(times: Sequence[float]) -> str:
    """``median / mean / p99`` in microseconds."""
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"{median(ordered) * 1e6:>8.0f}{mean(ordered) * 1e6:>8.0f}{p99 * 1e6:>9.0f}"


def peers(conv: list[Message], window: int) -> dict[str, list[float]]:
    """Seconds per sampled turn of each peer (see the module)."""
    tok = BPETokenizer("o200k_base")
    out: dict[str, list[float]] = {
        "running total": [],
        "trim_messages, memoised": [],
        "recount everything": [],
        "trim_messages, naive": [],
    }
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
        if k % SAMPLE == 0:
            out["running total"].append(t1 - t0)
            t0 = time.perf_counter()
            trim(careful)
            out["trim_messages, memoised"].append(time.perf_counter() - t0)
        else:
            careful(lc[-1:])  # counted once, as the careful loop does each turn
        if k % NAIVE == 0:
            history = conv[: k + 1]
            t0 = time.perf_counter()
            TokenCounter(tok).messages(history)
            to_openai(history)
            out["recount everything"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            trim(naive)
            out["trim_messages, naive"].append(time.perf_counter() - t0)
    return out


def main() -> None:
    tok = BPETokenizer("o200k_base")
    conv = conversation(SIZE)
    total = TokenCounter(tok).messages(conv)
    print(f"replay: {len(conv):,} messages, {total:,} tokens (o200k, OpenAI framing)")
    print("per turn, microseconds: median, mean, p99; ratio = peer / ours (medians)\n")
    for label, window in (
        (
            "(1) a window larger than the conversation: nothing compacted",
            total + 10_000,
        ),
        ("(2) gpt-4o's 128,000 tokens: compacts from 90 % to 60 %", 128_000),
    ):
        times, compacted = replay(conv, window)
        print(label)
        print(f"  {'':<28}{'median':>8}{'mean':>8}{'p99':>9}{'ratio':>9}")
        ours = median(times)
        print(f"  {'ours: push + prepare':<28}{stats(times)}")
        if compacted:
            print(f"    ({len(compacted)} compacting turns among them)")
        for name, peer in peers(conv, window).items():
            print(f"  {name:<28}{stats(peer)}{median(peer) / ours:>8.1f}x")
        first, last = median(times[:STEP]), median(times[-STEP:])
        print(
            f"  ours, median of the last {STEP} turns against the first {STEP}: "
            f"{last / first:.2f}x, while the history grew {len(conv) // STEP}x\n"
        )


if __name__ == "__main__":
    main()
