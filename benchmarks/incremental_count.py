"""Recounting a long conversation after one new message costs one message.

Usage::

    python benchmarks/incremental_count.py

Builds a 10,000-message conversation from the tau-bench trajectories (one
system prompt, then every trajectory's user, assistant, tool-call and tool
messages, concatenated; a second pass with re-labelled ids and texts fills it
up so no message repeats an earlier one by accident). For each tokenizer it
times ``TokenCounter.messages`` from scratch (a fresh counter), then appends
one message and recounts with the warm counter. Acceptance: the recount takes
at most 1 % of the scratch count. Also shown: a warm recount of the whole list
through the per-message cache alone (``message()`` summed), the path a caller
takes when it does not keep the list.

Peers, same conversation, same run. First the careful user: a running total
kept beside the list, the new message counted with the OpenAI cookbook's
``num_tokens_from_messages`` formula (tiktoken o200k, exact) and added. Then
the naive one: recount everything with ``num_tokens_from_messages`` or with
LangChain's ``count_tokens_approximately`` (chars/4, needs ``langchain-core``;
skipped with a note when it is not installed). Reported as each one's time
over our recount after one append (above 1: ours is faster). Beside the
careful peer, ours kept the same way: a ``ContextManager`` holding the
conversation, one ``push`` and its ``token_estimate()``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from _data import best_of, data_dir

from contextwindow.formats import to_openai
from contextwindow.manager import ContextManager
from contextwindow.messages import Message, ToolCall
from contextwindow.tokens import BPETokenizer, HeuristicTokenizer, TokenCounter
from contextwindow.tokens.base import Tokenizer

SIZE = 10_000


def convert(msg: dict[str, Any], tag: str) -> Message:
    """One tau-bench (OpenAI chat) message as a Message; ``tag`` marks the pass."""
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
    if role == "system":
        return Message.system(text)
    return Message.user(text)


def conversation() -> list[Message]:
    trajectories = json.loads(
        (data_dir() / "tau-bench_gpt-4o-airline.json").read_text()
    )
    out = [convert(trajectories[0]["traj"][0], "")]
    rounds = 0
    while len(out) < SIZE:
        tag = f"[{rounds}] " if rounds else ""
        for traj in trajectories:
            out.extend(convert(m, tag) for m in traj["traj"] if m["role"] != "system")
        rounds += 1
    return out[:SIZE]


def once(tokenizer: Tokenizer, conv: list[Message]) -> tuple[float, float, float, bool]:
    """Scratch count, recount after one append, cache-only recount; and a check."""
    history = list(conv)
    counter = TokenCounter(tokenizer)
    t0 = time.perf_counter()
    before = counter.messages(history)
    t1 = time.perf_counter()
    history.append(Message.user("One more thing: can I add a checked bag to it?"))
    t2 = time.perf_counter()
    after = counter.messages(history)
    t3 = time.perf_counter()
    summed = sum(counter.message(m) for m in history)
    t4 = time.perf_counter()
    expected = TokenCounter(tokenizer).messages(history)
    ok = after == expected == summed + 3 and after > before
    return t1 - t0, t3 - t2, t4 - t3, ok


def run(tokenizer: Tokenizer, conv: list[Message]) -> tuple[float, float, float, bool]:
    """Best of 3 for each time; ok only if every run counted right."""
    runs = [once(tokenizer, conv) for _ in range(3)]
    scratch, recount, lookup = (min(r[i] for r in runs) for i in range(3))
    return scratch, recount, lookup, all(r[3] for r in runs)


def cookbook_count(messages: list[dict[str, Any]], encoding: Any) -> int:
    """The OpenAI cookbook's num_tokens_from_messages, extended to tool calls."""
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            if key == "tool_calls":
                for call in value:
                    fn = call["function"]
                    total += 3 + len(encoding.encode(fn["name"]))
                    total += len(encoding.encode(fn["arguments"]))
            elif isinstance(value, str):
                total += len(encoding.encode(value))
                if key == "name":
                    total += 1
    return total


def peers(conv: list[Message], ours: float) -> None:
    """Time what a user would otherwise run after each new message."""
    wire = to_openai(conv)
    wire.append({"role": "user", "content": "One more thing: a checked bag?"})
    encoding = BPETokenizer("o200k_base").encoding
    total = cookbook_count(wire[:-1], encoding)

    def running_total() -> int:
        """The careful peer: the new message counted, added to the kept total."""
        return total + cookbook_count(wire[-1:], encoding) - 3

    assert running_total() == cookbook_count(wire, encoding)
    careful = best_of(running_total)
    manager = ContextManager(token_limit=10**9, reserve=0, tokenizer="o200k_base")
    manager.push_many(conv)
    manager.token_estimate()
    fresh = iter(Message.user(f"One more thing, take {i}: a bag?") for i in range(9))
    kept = best_of(lambda: (manager.push(next(fresh)), manager.token_estimate()))
    print("\ncareful peer: a running total, the new message counted and added")
    print(
        f"  {'cookbook formula, one message':<38}{careful * 1e3:>10.3f} ms"
        f"  {careful / ours:>8.2f}x our recount"
    )
    print(
        f"  {'ours the same way: manager push':<38}{kept * 1e3:>10.3f} ms"
        f"  {careful / kept:>8.2f}x the careful peer's time"
    )
    print("naive peers: recount everything after one append")
    rows = [
        ("cookbook num_tokens_from_messages", lambda: cookbook_count(wire, encoding))
    ]
    try:
        from langchain_core.messages import convert_to_messages
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        print("  langchain-core not installed: pip install 'contextwindow[bench]'")
    else:
        lc = convert_to_messages(wire)
        rows.append(
            (
                "langchain count_tokens_approximately",
                lambda: count_tokens_approximately(lc),
            )
        )
    for name, fn in rows:
        t = best_of(fn)
        print(f"  {name:<38}{t * 1e3:>10.1f} ms  {t / ours:>8.0f}x our recount")


def main() -> None:
    conv = conversation()
    chars = sum(len(m.text) + sum(len(c.arguments) for c in m.tool_calls) for m in conv)
    print(f"conversation: {len(conv):,} messages, {chars:,} chars of content")
    print("times are best of 3; recount = after appending one message\n")
    header = ("tokenizer", "scratch s", "recount ms", "ratio", "cache-only ms", "ok")
    print(
        f"{header[0]:<12}{header[1]:>10}{header[2]:>12}{header[3]:>9}"
        f"{header[4]:>15}{header[5]:>5}"
    )
    exact_recount = 0.0
    for tok in (BPETokenizer("o200k_base"), HeuristicTokenizer()):
        scratch, recount, lookup, ok = run(tok, conv)
        exact_recount = exact_recount or recount
        print(
            f"{tok.name:<12}{scratch:>10.3f}{recount * 1e3:>12.3f}"
            f"{recount / scratch:>9.3%}{lookup * 1e3:>15.2f}{'yes' if ok else 'NO':>5}"
        )
    peers(conv, exact_recount)


if __name__ == "__main__":
    main()
