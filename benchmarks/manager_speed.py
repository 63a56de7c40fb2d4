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

The peer is what a loop without a manager does each turn: count the whole
history again and write it in the provider's shape (a fresh ``TokenCounter``
and ``to_openai``), and LangChain's ``trim_messages(strategy="last")`` over
the same tokenizer and framing. Peers are timed at every 500th turn (best of
3); ours is the median (and the mean, which includes the garbage collector's
pauses) of the 500 turns before each point.
"""

from __future__ import annotations

import time
from statistics import mean, median

from _data import best_of
from fit_speed import conversation, cookbook_counter, to_langchain
from langchain_core.messages import trim_messages

from contextwindow import ContextManager
from contextwindow.formats import to_openai
from contextwindow.messages import Message
from contextwindow.tokens import BPETokenizer, TokenCounter

SIZE = 5_000
STEP = 500


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


def main() -> None:
    tok = BPETokenizer("o200k_base")
    conv = conversation(SIZE)
    total = TokenCounter(tok).messages(conv)
    print(f"replay: {len(conv):,} messages, {total:,} tokens (o200k, OpenAI framing)\n")

    big = total + 10_000
    times, _ = replay(conv, big)
    lc_count = cookbook_counter(tok)

    def recount(n: int) -> None:
        history = conv[:n]
        TokenCounter(tok).messages(history)
        to_openai(history)

    print(f"(1) window {big:,} tokens: nothing compacted, the view grows to the end")
    print(
        f"{'turns':>11}{'ours us (median, mean)':>24}{'recount ms':>12}{'ratio':>9}"
        f"{'trim_messages ms':>18}{'ratio':>9}"
    )
    ends = [*range(STEP, len(conv), STEP), len(conv)]
    for end in ends:
        block = times[end - STEP : end]
        ours = median(block)
        peer = best_of(lambda end=end: recount(end), 3)  # type: ignore[misc]  # binds the loop variable
        lc = to_langchain(conv[:end])

        def trim(lc=lc) -> None:  # type: ignore[no-untyped-def]  # binds the loop variable
            trim_messages(
                lc,
                strategy="last",
                max_tokens=big,
                token_counter=lc_count,
                include_system=True,
                start_on="human",
            )

        peer_lc = best_of(trim, 3)
        print(
            f"{end - STEP + 1:>5}-{end:<5}{ours * 1e6:>14.0f}{mean(block) * 1e6:>10.0f}"
            f"{peer * 1e3:>12.1f}{peer / ours:>8.0f}x"
            f"{peer_lc * 1e3:>18.1f}{peer_lc / ours:>8.0f}x"
        )
    first, last = median(times[:STEP]), median(times[-STEP:])
    print(
        f"median cost per turn, last 500 turns against the first 500: "
        f"{last / first:.2f}x, while the history grew {len(conv) // STEP}x "
        f"(the peers grow with it)\n"
    )

    window = 128_000
    times, compacted = replay(conv, window)
    spiked = set(compacted)
    plain = [t for k, t in enumerate(times) if k not in spiked]
    late = [t for k, t in enumerate(times) if k not in spiked and k >= len(conv) - STEP]
    print(f"(2) window {window:,} tokens (gpt-4o): compacts at 90 %, down to 60 %")
    print(
        f"  {len(compacted)} compactions in {len(conv):,} turns; other turns: "
        f"median {median(plain) * 1e6:.0f} us (last 500: {median(late) * 1e6:.0f} us), "
        f"mean {mean(plain) * 1e6:.0f} us; compacting turns: mean "
        f"{mean(times[k] for k in compacted) * 1e3:.1f} ms"
    )
    print(
        f"  all turns together: {sum(times):.2f} s, "
        f"{sum(times) / len(times) * 1e6:.0f} us per turn"
    )


if __name__ == "__main__":
    main()
