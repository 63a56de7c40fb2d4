"""Peak memory of fitting and of a manager, against the conversation's own size.

Usage::

    python benchmarks/memory.py [--sizes 10000,100000]

For each size, the tau-bench conversation ``fit_speed.py`` builds (one system
prompt, every trajectory, texts re-labelled on each pass, tool-call ids
fresh), budget 25 % of its tokens, exact counts (o200k_base). Measured with
``tracemalloc``, each in the same process, the conversation already built:

- the conversation's own size: what building its messages allocated;
- ``fit`` with ``DropOldest`` and with the default pipeline, a fresh
  counter: the peak above what was allocated before the call, and what stays
  allocated after it (the counter's caches and memo, and the output);
- the re-fit after one appended tool exchange, with that counter;
- a ``ContextManager`` (window: the same budget): ``push_many`` of the whole
  conversation, then ``prepare``; the model table it looks ``gpt-4o`` up
  in, read once per process whatever the conversation, is read before and
  shown apart;
- the peer: LangChain's ``trim_messages(strategy="last")`` with the counter
  memoised per message, on the conversation converted to LangChain messages
  (the conversion's own size shown apart).

Ratios are against the conversation's own size.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

from fit_speed import conversation, memoised_counter, to_langchain, turns
from langchain_core.messages import trim_messages

from contextwindow import ContextManager, fit
from contextwindow.models import get_model
from contextwindow.strategies import DropOldest
from contextwindow.tokens import BPETokenizer, TokenCounter

SHARE = 0.25
MIB = 1024 * 1024


def measure(fn: Callable[[], Any]) -> tuple[int, int, Any]:
    """Peak bytes above the start while ``fn`` runs, bytes still held after
    (what its result and caches keep), and its result."""
    gc.collect()
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    result = fn()
    end, peak = tracemalloc.get_traced_memory()
    return peak - start, end - start, result


def one_size(size: int, tok: BPETokenizer) -> None:
    """Print the table for a conversation of ``size`` messages."""
    _, own, conv = measure(lambda: conversation(size))
    total = TokenCounter(tok).messages(conv)
    limit = int(total * SHARE)
    print(
        f"{len(conv):,} messages, {total:,} tokens; the conversation itself: "
        f"{own / MIB:.1f} MiB"
    )
    print(f"  {'':<44}{'peak MiB':>9}{'x conv':>8}{'held MiB':>10}")

    def row(name: str, peak: int, held: int) -> None:
        print(f"  {name:<44}{peak / MIB:>9.1f}{peak / own:>7.2f}x{held / MIB:>10.1f}")

    for name, strategy in (
        ("DropOldest", DropOldest()),
        ("default pipeline", None),
    ):
        counter = TokenCounter(tok)
        peak, held, _ = measure(
            lambda strategy=strategy, counter=counter: fit(
                conv, limit=limit, strategy=strategy, tokenizer=counter
            )
        )
        row(f"fit, {name} (fresh counter)", peak, held)
        step = next(t for t in turns(conv) if t[0] == "tool")[1]
        grown = [*conv, *step]
        peak, held, _ = measure(
            lambda strategy=strategy, counter=counter, grown=grown: fit(
                grown, limit=limit, strategy=strategy, tokenizer=counter
            )
        )
        row("  re-fit after one tool exchange", peak, held)
        del counter, grown

    def manage() -> ContextManager:
        m = ContextManager("gpt-4o", token_limit=limit)
        m.push_many(conv)
        m.prepare()
        return m

    peak, held, manager = measure(manage)
    row("ContextManager: push_many, prepare", peak, held)
    del manager

    _, lc_size, lc = measure(lambda: to_langchain(conv))
    careful = memoised_counter(tok)
    peak, held, _ = measure(
        lambda: trim_messages(
            lc,
            strategy="last",
            max_tokens=limit,
            token_counter=careful,
            include_system=True,
            start_on="human",
        )
    )
    row("trim_messages, memoised counter", peak, held)
    print(f"  (the LangChain copy of the conversation: {lc_size / MIB:.1f} MiB)\n")


def main() -> None:
    sizes = [10_000, 100_000]
    if "--sizes" in sys.argv:
        sizes = [int(x) for x in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
    tok = BPETokenizer("o200k_base")
    tok.count("warm up")  # the encoding's tables are loaded before tracing
    # So are LangChain's lazily imported parts, on a small conversation.
    trim_messages(
        to_langchain(conversation(20)),
        strategy="last",
        max_tokens=100,
        token_counter=memoised_counter(tok),
        include_system=True,
        start_on="human",
    )
    # The model table a manager looks its model up in is read once per
    # process, whatever the conversation: measured apart, before the rest.
    tracemalloc.start()
    _, table, _ = measure(lambda: get_model("gpt-4o"))
    print(f"the model table, read once per process: {table / MIB:.1f} MiB\n")
    for size in sizes:
        one_size(size, tok)
    tracemalloc.stop()


if __name__ == "__main__":
    main()
