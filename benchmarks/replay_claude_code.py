"""The real Claude Code sessions, replayed through a ContextManager.

Usage::

    python benchmarks/replay_claude_code.py [--window N]

Each main session of ``claude_code_sessions/`` is pushed into a
``ContextManager`` message by message, with ``prepare`` before each
assistant message (the request that produced it). The window is 200,000
tokens (the sessions compacted at 142K to 170K tokens, Claude Code's
behaviour on that window) unless ``--window`` says otherwise; counts are the
calibrated Claude approximation. Per session it prints:

- requests prepared, and our compactions against Claude Code's own (the
  ``compact_boundary`` records of the session);
- tokens sent over all requests, against sending the whole history each
  turn (what a loop without compaction sends, over the window or not);
- prefix-stable tokens: the leading tokens of each request identical to the
  request before, which a provider's prompt cache serves;
- the highest usage of the window, and the time the replay took.

Every request is checked: it fits the window and passes ``problems``.
"""

from __future__ import annotations

import sys
import time

from _data import data_dir

from contextwindow import ContextManager, TokenCounter, problems, read_transcripts


def main() -> None:
    window = 200_000
    if "--window" in sys.argv:
        window = int(sys.argv[sys.argv.index("--window") + 1])
    root = data_dir() / "claude_code_sessions"
    print(f"window {window:,} tokens; compaction at 90 %, down to 60 %\n")
    head = (
        f"{'session':<10}{'msgs':>6}{'requests':>9}{'ours':>6}{'CC':>4}"
        f"{'sent':>13}{'whole history':>15}{'saved':>7}"
        f"{'prefix-stable':>15}{'share':>7}{'peak':>7}{'time':>7}"
    )
    print(head)
    totals = [0, 0, 0]
    for path in sorted(root.glob("*.jsonl")):
        (t,) = read_transcripts(path)
        m = ContextManager(t.model, token_limit=window)
        naive = TokenCounter(m.tokenizer, m.provider)  # the whole history, each turn
        requests = compactions = sent = whole = prefix = 0
        peak = 0.0
        start = time.perf_counter()
        for msg in t.messages:
            if msg.role == "assistant":
                whole += naive.messages(list(m.history))
                p = m.prepare()
                assert p.tokens <= p.budget
                assert not problems(p.conversation, m.provider)
                requests += 1
                compactions += sum(
                    1 for c in p.compactions if c.applied and c.trigger != "repair"
                )
                sent += p.tokens
                prefix += p.prefix_tokens
                peak = max(peak, p.usage)
            m.push(msg)
        took = time.perf_counter() - start
        assert m.history == t.messages
        theirs = len(t.meta.get("compactions", ()))
        print(
            f"{path.stem[:8]:<10}{len(t.messages):>6}{requests:>9}{compactions:>6}"
            f"{theirs:>4}{sent:>13,}{whole:>15,}{1 - sent / whole:>7.0%}"
            f"{prefix:>15,}{prefix / sent:>7.0%}{peak:>6.0f}%{took:>6.2f}s"
        )
        totals[0] += sent
        totals[1] += whole
        totals[2] += prefix
    sent, whole, prefix = totals
    print(
        f"\nall sessions: sent {sent:,} tokens against {whole:,} for the whole "
        f"history each turn ({1 - sent / whole:.0%} fewer); {prefix / sent:.0%} of "
        f"what was sent repeated the request before byte for byte"
    )


if __name__ == "__main__":
    main()
