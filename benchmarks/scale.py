"""Cost per message of counting, ``inspect`` and ``fit``, from 10^3 to 10^6 messages.

Usage::

    python benchmarks/scale.py [--sizes 1000,10000,100000,1000000]
                               [--tokenizer heuristic|o200k] [--repeat 1]

Builds conversations of each size from the tau-bench trajectories (one system
prompt, then every trajectory's messages; each later pass re-labels ids and
texts, so no message repeats an earlier one and every count is a cache miss,
as in a long agent run). For each size, with a fresh ``TokenCounter`` each
time: counting (``TokenCounter.messages``), ``inspect_messages``, and ``fit``
to a quarter of the tokens with ``DropOldest`` and with the default
pipeline. Prints microseconds per message, and the ratio of each size's cost
per message to that at 10,000 messages. Acceptance: at 10^6 messages each is
within 2x of its cost at 10^4.

Why it can fail: a bounded cache evicting with ``del d[next(iter(d))]`` walks
the dead slots its earlier deletions left at the front of the dict, so each
eviction costs more the longer it runs (past 100,000 entries, the default
cache size, every new message evicts one). ``contextwindow._lru.LRU`` evicts
in constant time.

The peer is the same code at 10^4 messages, in the same run: a ratio, since
the machine may be loaded. Each task at each size is timed between two runs
of that task at 10^4 messages, and compared with the better of the two. Best
of ``--repeat`` runs each.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from _data import data_dir

from contextwindow import fit, inspect_messages
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import DropOldest
from contextwindow.tokens import BPETokenizer, HeuristicTokenizer, TokenCounter
from contextwindow.tokens.base import Tokenizer

PEER = 10_000


def convert(msg: dict[str, Any], tag: str) -> Message:
    """One tau-bench (OpenAI chat) message; ``tag`` makes texts and ids unique."""
    role = msg["role"]
    text = f"{tag}{msg['content']}" if msg.get("content") else ""
    if role == "tool":
        return Message.tool(f"{tag}{msg['tool_call_id']}", text, name=msg.get("name"))
    if role == "assistant":
        calls = [
            ToolCall(
                f"{tag}{c['id']}", c["function"]["name"], c["function"]["arguments"]
            )
            for c in msg.get("tool_calls") or ()
        ]
        return Message.assistant(text, tool_calls=calls)
    return Message.user(text)


def conversation(size: int) -> list[Message]:
    """``size`` messages, no two alike."""
    trajectories = json.loads(
        (data_dir() / "tau-bench_gpt-4o-airline.json").read_text()
    )
    out = [Message.system(trajectories[0]["traj"][0]["content"])]
    rounds = 0
    while len(out) < size:
        tag = f"[{rounds}] "
        for traj in trajectories:
            out.extend(convert(m, tag) for m in traj["traj"] if m["role"] != "system")
            if len(out) >= size:
                break
        rounds += 1
    conv = out[:size]
    while conv[-1].role != "user" or conv[-2].tool_calls:  # end on a whole turn
        conv.pop()
    return conv


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def tasks(tok: Tokenizer, conv: list[Message]) -> dict[str, Callable[[], object]]:
    """The tasks timed on ``conv``, each with a fresh counter."""
    quarter = TokenCounter(tok).messages(conv) // 4
    return {
        "count": lambda: TokenCounter(tok).messages(conv),
        "inspect": lambda: inspect_messages(conv, tokenizer=tok),
        "fit DropOldest": lambda: fit(
            conv, limit=quarter, strategy=DropOldest(), tokenizer=TokenCounter(tok)
        ),
        "fit default": lambda: fit(conv, limit=quarter, tokenizer=TokenCounter(tok)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument(
        "--tokenizer", choices=("heuristic", "o200k"), default="heuristic"
    )
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")} - {PEER})
    tok: Tokenizer = (
        HeuristicTokenizer()
        if args.tokenizer == "heuristic"
        else BPETokenizer("o200k_base")
    )
    peer_conv = conversation(PEER)
    peer = tasks(tok, peer_conv)
    names = list(peer)
    # Each task at each size runs between two runs of the same task at the
    # peer size: on a loaded machine the load drifts, and the ratio compares
    # like with like. The better of the two peer runs is the reference.
    rows: list[tuple[int, dict[str, float], dict[str, float]]] = []
    for size in sizes:
        conv = conversation(size)
        mine = tasks(tok, conv)
        cost: dict[str, float] = {}
        ref: dict[str, float] = {}
        for name in names:
            before = timed(peer[name], args.repeat)
            took = timed(mine[name], args.repeat)
            after = timed(peer[name], args.repeat)
            cost[name] = took / len(conv) * 1e6
            ref[name] = min(before, after) / len(peer_conv) * 1e6
            print(
                f"{len(conv):>9,} messages, {name}: {took:.2f} s "
                f"(peer {before:.2f} s / {after:.2f} s)",
                flush=True,
            )
        rows.append((len(conv), cost, ref))
        del conv, mine
    print(
        f"\nmicroseconds per message ({args.tokenizer}); in brackets, the ratio to "
        f"{PEER:,} messages timed just before and after"
    )
    print(f"{'messages':>10} " + " ".join(f"{t:>22}" for t in names))
    worst = 0.0
    for n, cost, ref in rows:
        cells = []
        for t in names:
            ratio = cost[t] / ref[t]
            if n > PEER:
                worst = max(worst, ratio)
            cells.append(f"{cost[t]:>12.1f} ({ratio:4.2f}x)")
        print(f"{n:>10,} " + " ".join(f"{c:>22}" for c in cells))
    if any(n > PEER for n, _, _ in rows):
        verdict = "ok" if worst <= 2 else "FAILED"
        print(
            f"\nworst ratio above {PEER:,} messages: {worst:.2f}x "
            f"(goal <= 2x): {verdict}"
        )


if __name__ == "__main__":
    main()
