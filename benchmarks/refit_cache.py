"""What a prompt cache serves when a growing session is fitted again at each turn.

Usage::

    python benchmarks/refit_cache.py [--share 0.5] [--every 3] [--long 8077]

Every Claude Code session file of the shared data (16, Anthropic) grows from
half its messages to all of them, ``--every`` messages at a time (the agent's
turns: big tool results, often thousands of tokens each), and is fitted again
each time to the same budget, ``--share`` of the whole session's tokens (exact
o200k with Anthropic's framing, one ``TokenCounter`` per session, reused, as an
agent loop does):

- ours: ``fit`` with ``DropOldest`` and with the default pipeline;
- the peer, as a careful user runs it: LangChain ``trim_messages(strategy=
  "last", include_system=True, start_on="human")`` on the same messages as
  LangChain messages, its counter memoised per message (``fit_speed.py``'s).

Reported for each: the share of each request's tokens that repeat the request
before (the same leading messages, by content), which is what a provider's
prompt cache serves, as the mean and the median over all re-fits of all
sessions; how full the requests are (tokens over the budget; the lowest
and the median), since a cut that moves in steps may cut more than it must;
and what each re-fit takes (wall time of the call, median and mean over all
re-fits; the peer's includes its memoised counter, not the conversion of the
messages to LangChain's, done once outside the timed calls).
Re-fits whose session still fits the budget whole are counted too (everything
repeats); a session whose pinned content is over the budget is left out.
``fit_speed.py`` measures the same on a 10,000-message tau-bench conversation
whose turns are small.

``--long N``: instead, ``placeholder_share.py``'s long session (the session files
cycled into N messages, each a fresh id), its last 300 messages appended
``--every`` at a time and each time fitted into gpt-4o's window (128,000
tokens, OpenAI framing), as an agent loop on a long coding session does.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from statistics import mean, median
from typing import Any

from _data import claude_files, data_dir
from fit_speed import common, memoised_counter, to_langchain
from langchain_core.messages import BaseMessage, trim_messages
from placeholder_share import long_session

from contextwindow import fit, read_transcripts
from contextwindow.errors import BudgetError
from contextwindow.messages import Message
from contextwindow.strategies import DropOldest
from contextwindow.tokens import BPETokenizer, TokenCounter


def option(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
    share = option("--share", 0.5)
    every = int(option("--every", 3))
    tok = BPETokenizer("o200k_base")
    rows: dict[str, tuple[list[float], list[float], list[float]]] = {
        name: ([], [], [])
        for name in ("DropOldest", "default pipeline", "trim (memoised)")
    }
    if "--long" in sys.argv:
        long_run(int(option("--long", 8077)), every, tok, rows)
        return
    sessions = 0
    for path in claude_files(data_dir()):
        (t,) = read_transcripts(path)
        msgs = list(t.messages)
        whole = TokenCounter(tok, "anthropic").messages(msgs)
        limit = int(whole * share)
        try:
            got = {
                "DropOldest": replay(msgs, limit, every, tok, DropOldest()),
                "default pipeline": replay(msgs, limit, every, tok, None),
                "trim (memoised)": replay_peer(msgs, limit, every, tok),
            }
        except BudgetError:
            continue
        sessions += 1
        for name, (kept, full, took) in got.items():
            rows[name][0].extend(kept)
            rows[name][1].extend(full)
            rows[name][2].extend(took)
    print(
        f"{sessions} Claude Code sessions, each grown from half its messages by "
        f"{every} at a time and fitted to {share:.0%} of its tokens at each step"
    )
    report(rows)


def report(rows: dict[str, tuple[list[float], list[float], list[float]]]) -> None:
    """The table: what each re-fit repeats, how full it is, what it takes."""
    print(
        f"{'':<20}{'repeated: mean':>16}{'median':>8}{'full: lowest':>14}"
        f"{'median':>8}{'ms: median':>12}{'mean':>7}{'re-fits':>9}"
    )
    for name, (kept, full, took) in rows.items():
        print(
            f"{name:<20}{mean(kept):>16.1%}{median(kept):>8.1%}"
            f"{min(full):>14.2f}{median(full):>8.2f}"
            f"{median(took) * 1e3:>12.1f}{mean(took) * 1e3:>7.1f}{len(kept):>9,}"
        )


def long_run(
    n: int,
    every: int,
    tok: Any,
    rows: dict[str, tuple[list[float], list[float], list[float]]],
) -> None:
    """``--long``: the last 300 messages of a long session, fitted as they come."""
    msgs = long_session(n)
    start = len(msgs) - LONG_TAIL
    got = {
        "DropOldest": replay(msgs, WINDOW, every, tok, DropOldest(), start, "openai"),
        "default pipeline": replay(msgs, WINDOW, every, tok, None, start, "openai"),
        "trim (memoised)": replay_peer(msgs, WINDOW, every, tok, start),
    }
    for name, found in got.items():
        for row, values in zip(rows[name], found, strict=True):
            row.extend(values)
    print(
        f"a {len(msgs):,}-message session, its last {LONG_TAIL} messages appended "
        f"{every} at a time, each time fitted into {WINDOW:,} tokens (OpenAI framing)"
    )
    report(rows)


LONG_TAIL = 300
"""Messages ``--long`` appends, fitting after each step."""

WINDOW = 128_000
"""gpt-4o's window, which ``--long`` fits into."""


def replay(
    msgs: Sequence[Message],
    limit: int,
    every: int,
    tok: Any,
    strategy: Any,
    start: int | None = None,
    provider: Any = "anthropic",
) -> tuple[list[float], list[float], list[float]]:
    """Our fits of the growing session: what each repeats, how full it is, and
    what each re-fit took (seconds). ``start``: the first length fitted (half
    the session by default)."""
    counter = TokenCounter(tok, provider)
    kept: list[float] = []
    full: list[float] = []
    took: list[float] = []
    before: Sequence[Message] | None = None
    first = len(msgs) // 2 if start is None else start
    for n in range(first, len(msgs) + 1, every):
        given = msgs[:n]
        began = time.perf_counter()
        out = fit(given, limit=limit, strategy=strategy, tokenizer=counter).messages
        seconds = time.perf_counter() - began
        run = counter.running(out)
        if before is not None:
            kept.append(run[common(before, out)] / run[-1])
            took.append(seconds)
        full.append(counter.messages(out) / limit)
        before = out
    return kept, full, took


def replay_peer(
    msgs: Sequence[Message],
    limit: int,
    every: int,
    tok: Any,
    start: int | None = None,
) -> tuple[list[float], list[float], list[float]]:
    """The same with the memoised ``trim_messages``."""
    lc = to_langchain(msgs)
    counter: Callable[[Sequence[BaseMessage]], int] = memoised_counter(tok)
    kept: list[float] = []
    full: list[float] = []
    took: list[float] = []
    before: list[BaseMessage] | None = None
    first = len(msgs) // 2 if start is None else start
    for n in range(first, len(msgs) + 1, every):
        given = lc[: len(to_langchain(msgs[:n]))]
        began = time.perf_counter()
        out = trim_messages(
            given,
            strategy="last",
            max_tokens=limit,
            token_counter=counter,
            include_system=True,
            start_on="human",
        )
        seconds = time.perf_counter() - began
        if before is not None and out:
            kept.append(counter(out[: common(before, out)]) / counter(out))
            took.append(seconds)
        full.append(counter(out) / limit)
        before = out
    return kept, full, took


if __name__ == "__main__":
    main()
