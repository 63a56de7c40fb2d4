"""How much of a request is placeholders and bare calls, on long sessions.

Usage::

    python benchmarks/placeholder_share.py

Run it with ``PYTHONPATH`` at another checkout's ``src`` to measure that one
(it uses the public API only), e.g. main's for the figures before a change.

Two long cases, built from the 16 Claude Code session files of the shared
data, taken in ``claude_files`` order (main sessions, then subagents) and
cycled, each message a fresh id, until there are enough messages:

- 8,077 messages fitted by ``fit``'s default pipeline into gpt-4o's window
  (128,000 tokens, OpenAI framing, exact o200k_base counts);
- a ``ContextManager("gpt-4o", token_limit=20_000)`` replay of 600 turns:
  every message pushed, a request prepared before each assistant message (a
  turn whose pending tool result alone is over the window is refused with
  ``BudgetError``, and counted).

The share is measured here, by this script's own rules: a *cut* exchange is
a tool exchange whose every result is a one-line placeholder
(``[tool result cleared...]``, ``[same output as...]``, ``[stale read
of...]``); its tokens (call and placeholders) and those of any line standing
for a collapsed run (``[N earlier tool calls, results cut: ...]``; the line
itself, not the agent's own text the run kept before it in that message)
are the placeholders and bare calls, over the request's tokens. A call message over
``BARE`` tokens (an edit, a file to write) carries content: it is counted
apart (``... with every call``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace

from _data import claude_files, data_dir

from contextwindow import ContextManager, Message, fit, read_transcripts, units
from contextwindow.errors import BudgetError
from contextwindow.tokens import BPETokenizer, TokenCounter

PLACEHOLDER = re.compile(
    r"^\[(?:tool result cleared|same output as|stale read of)[^\n]*\]$"
)
COLLAPSED = re.compile(r"\[\d+ earlier tool calls?, results cut[:;] ")
WINDOW = 20_000


def long_session(n: int) -> list[Message]:
    """The Claude Code files cycled into ``n`` messages, ids made fresh."""
    pool = [
        m
        for p in claude_files(data_dir())
        for t in read_transcripts(p)
        for m in t.messages
    ]
    out: list[Message] = []
    k = 0
    while len(out) < n:
        out.extend(replace(m, id=f"{k}-{m.id}") for m in pool[: n - len(out)])
        k += 1
    return out


BARE = 200
"""A call message of at most this many tokens is a bare call; a larger one
(an edit, a file to write) carries content of its own."""


def share(
    messages: Sequence[Message], counter: TokenCounter
) -> tuple[int, int, int, int]:
    """(placeholders and bare calls, the same with every call, placeholders,
    request tokens)."""
    total = counter.messages(list(messages))
    bare = cut = n = 0
    for u in units(messages):
        if u.kind == "tool_exchange":
            results = [
                r for m in messages[u.start + 1 : u.stop] for r in m.tool_results
            ]
            if results and all(PLACEHOLDER.match(r.text) for r in results):
                call = counter.message(messages[u.start])
                rest = sum(counter.message(m) for m in messages[u.start + 1 : u.stop])
                cut += call + rest
                bare += rest + (call if call <= BARE else 0)
                n += len(results)
        elif found := COLLAPSED.search(messages[u.start].text):
            # The line, not the agent's own text kept before it in the message.
            line = counter.text(messages[u.start].text[found.start() :])
            bare += line
            cut += line
            n += 1
    return bare, cut, n, total


def main() -> None:
    tok = BPETokenizer("o200k_base")
    conv = long_session(8077)
    counter = TokenCounter(tok, "openai")
    start = time.perf_counter()
    fitted = fit(conv, model="gpt-4o", tokenizer=counter)
    took = time.perf_counter() - start
    bare, cut, n, total = share(fitted.messages, counter)
    real = sum(
        1
        for m in fitted.messages
        for r in m.tool_results
        if not PLACEHOLDER.match(r.text)
    )
    print(f"8,077 messages into gpt-4o's window ({took:.1f}s)")
    print(f"  request          {total:,} tokens, {len(fitted.messages):,} messages")
    print(f"  placeholders     {n:,} (and {real:,} tool results left real)")
    print(f"  placeholders and bare calls  {bare:,} tokens = {bare / total:.1%}")
    print(f"  ... with every call          {cut:,} tokens = {cut / total:.1%}\n")

    m = ContextManager("gpt-4o", token_limit=WINDOW)
    mine = TokenCounter(m.tokenizer, m.provider)
    shares: list[float] = []
    last = (0, 0, 0, 0)
    turns = refused = 0
    for msg in long_session(4000):
        if msg.role == "assistant":
            turns += 1
            try:
                p = m.prepare()
            except BudgetError:  # one tool result alone over the window
                refused += 1
            else:
                last = share(p.conversation, mine)
                shares.append(last[0] / last[3] if last[3] else 0.0)
            if turns == 600:
                break
        m.push(msg)
    bare, cut, n, total = last
    print(f"600-turn manager replay, window {WINDOW:,} tokens ({refused} refused)")
    print(f"  last request     {total:,} tokens, {n:,} placeholders")
    print(f"  placeholders and bare calls  {bare:,} tokens = {bare / total:.1%}")
    print(f"  ... with every call          {cut:,} tokens = {cut / total:.1%}")
    print(
        f"  over the 600 requests: mean {sum(shares) / len(shares):.1%}, "
        f"highest {max(shares):.1%}"
    )


if __name__ == "__main__":
    main()
