"""Fitting a 10,000-message conversation, and re-fitting it after one new message.

Usage::

    python benchmarks/fit_speed.py [--profile]

Builds a 10,000-message conversation with tool calls from the tau-bench
trajectories: one system prompt, then every trajectory's user, assistant,
tool-call and tool messages, concatenated; a second pass with re-labelled texts
fills it up, so no message repeats an earlier one by accident. Every tool call
gets a fresh id (tau-bench re-uses ids). The budget is 25 % of its tokens.

Both sides count with the same exact tokenizer, ``BPETokenizer("o200k_base")``,
and the same OpenAI framing (the OpenAI cookbook's: 3 per message, the role, 3
per tool call besides its name and arguments, 3 for the reply):

- ours: ``fit(conv, limit=..., strategy=DropOldest(), tokenizer=counter)``;
- peer: LangChain ``trim_messages(strategy="last", include_system=True,
  start_on="human")`` with a token counter over the same tokenizer, on the same
  conversation converted with ``to_openai`` then ``convert_to_messages``.

(a) cold: ours with a fresh ``TokenCounter`` each run, against the peer.
(b) re-fit after one appended user message, as an agent loop does each turn:
    ours reusing the warm counter of the previous fit, on the previous input
    plus one new message, against the peer on the same appended input (it keeps
    no cache, so its cost is its cold cost). Goal: ours at least 50x faster.

Also shown: the default strategy (``strategy=None``), cold and warm, for
information. Times are best of 5. When the re-fit falls short of the goal (or
with ``--profile``), a cProfile breakdown shows where a warm re-fit spends its
time: our functions by cumulative share of ``fit``.
"""

from __future__ import annotations

import cProfile
import itertools
import json
import pstats
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from _data import best_of, data_dir
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolMessage,
    convert_to_messages,
    trim_messages,
)

from contextwindow import fit
from contextwindow.formats import to_openai
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import DropOldest
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens.base import Tokenizer

SIZE = 10_000
SHARE = 0.25
NEW = "One more thing: can I add a checked bag to it?"
ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
PACKAGE = "contextwindow/"
TOP = 13
REPEAT = 5
IMAGE_TOKENS = 765
"""What an image of unknown size costs at OpenAI's high detail (1024x1024)."""


def conversation(size: int = SIZE) -> list[Message]:
    """At most ``size`` tau-bench messages: one system prompt, then trajectories.

    It ends on a message that leaves no tool call unanswered.
    """
    trajectories = json.loads(
        (data_dir() / "tau-bench_gpt-4o-airline.json").read_text()
    )
    out = [Message.system(trajectories[0]["traj"][0]["content"])]
    serial = itertools.count()
    rounds = 0
    while len(out) <= size:
        tag = f"[{rounds}] " if rounds else ""
        for traj in trajectories:
            call_id = ""
            for m in traj["traj"]:
                role, text = m["role"], f"{tag}{m['content'] or ''}"
                if role == "user":
                    out.append(Message.user(text))
                elif role == "tool":
                    # Each call is answered by the very next tool message.
                    out.append(Message.tool(call_id, text, name=m.get("name")))
                elif role == "assistant":
                    calls = []
                    for c in m.get("tool_calls") or ():
                        call_id = f"call_{next(serial)}"
                        fn = c["function"]
                        calls.append(ToolCall(call_id, fn["name"], fn["arguments"]))
                    content = text if m["content"] else ""
                    out.append(Message.assistant(content, tool_calls=calls))
        rounds += 1
    end = size
    while out[end - 1].tool_calls:
        end -= 1
    return out[:end]


def cookbook_counter(tok: Tokenizer) -> Callable[[Sequence[BaseMessage]], int]:
    """A LangChain token counter: the OpenAI cookbook's framing over ``tok``."""
    count = tok.count

    def content_tokens(content: str | list[str | dict[str, Any]]) -> int:
        if isinstance(content, str):
            return count(content)
        n = 0
        for block in content:
            if isinstance(block, str):
                n += count(block)
            elif block.get("type") == "text":
                n += count(block.get("text", ""))
            elif block.get("type") in ("image_url", "image"):
                n += IMAGE_TOKENS
        return n

    def counter(messages: Sequence[BaseMessage]) -> int:
        total = 3  # the primed reply
        for m in messages:
            total += 3 + count(ROLE.get(m.type, m.type)) + content_tokens(m.content)
            if m.name and not isinstance(m, ToolMessage):
                total += 1 + count(m.name)
            if isinstance(m, AIMessage):
                for call in m.tool_calls:
                    args = json.dumps(call["args"], ensure_ascii=False)
                    total += 3 + count(call["name"]) + count(args)
        return total

    return counter


def to_langchain(conv: Sequence[Message]) -> list[BaseMessage]:
    """The conversation as LangChain messages, through the OpenAI wire shape."""
    return convert_to_messages(to_openai(conv))


def appended(conv: list[Message]) -> Iterator[list[Message]]:
    """``conv`` growing by one new user message per step, as in an agent loop:
    each step's input is the previous step's plus one message (a new one each
    time, so no count of it is cached)."""
    grown = list(conv)
    for k in itertools.count():
        grown = [*grown, Message.user(f"{NEW} ({k})")]
        yield grown


def main() -> None:
    tok = BPETokenizer("o200k_base")
    conv = conversation()
    total = TokenCounter(tok).messages(conv)
    limit = int(total * SHARE)
    calls = sum(len(m.tool_calls) for m in conv)
    print(
        f"conversation: {len(conv):,} messages, {calls:,} tool calls, "
        f"{total:,} tokens (o200k, OpenAI framing)"
    )
    print(f"budget: {limit:,} tokens ({SHARE:.0%}); times are best of {REPEAT}\n")

    lc = to_langchain(conv)
    lc_new = [*lc, *convert_to_messages([{"role": "user", "content": NEW}])]
    lc_count = cookbook_counter(tok)

    def trim(msgs: list[BaseMessage]) -> list[BaseMessage]:
        return trim_messages(
            msgs,
            strategy="last",
            max_tokens=limit,
            token_counter=lc_count,
            include_system=True,
            start_on="human",
        )

    def ours(
        msgs: list[Message], counter: TokenCounter, default: bool = False
    ) -> tuple[Message, ...]:
        strategy = None if default else DropOldest()
        return fit(msgs, limit=limit, strategy=strategy, tokenizer=counter).messages

    # Sizes of what each keeps, to show they do the same job.
    kept_ours = ours(conv, TokenCounter(tok))
    kept_lc = trim(lc)
    ours_tokens = TokenCounter(tok).messages(kept_ours)
    print(
        f"kept: ours {len(kept_ours):,} messages ({ours_tokens:,} tokens); "
        f"trim_messages {len(kept_lc):,} messages ({lc_count(kept_lc):,} tokens)\n"
    )

    cold = best_of(lambda: ours(conv, TokenCounter(tok)), REPEAT)
    cold_default = best_of(lambda: ours(conv, TokenCounter(tok), default=True), REPEAT)
    peer_cold = best_of(lambda: trim(lc), REPEAT)

    warm_counter = TokenCounter(tok)
    ours(conv, warm_counter)
    grown = appended(conv)
    warm = best_of(lambda: ours(next(grown), warm_counter), REPEAT)
    default_counter = TokenCounter(tok)
    ours(conv, default_counter, default=True)
    warm_default = best_of(
        lambda: ours(next(grown), default_counter, default=True), REPEAT
    )
    peer_warm = best_of(lambda: trim(lc_new), REPEAT)

    rows = [
        ("(a) cold fit, DropOldest", cold, peer_cold),
        ("(b) re-fit after 1 append, DropOldest", warm, peer_warm),
        ("    cold fit, default strategy", cold_default, peer_cold),
        ("    re-fit after 1 append, default", warm_default, peer_warm),
    ]
    print(f"{'':<40}{'ours ms':>10}{'trim_messages ms':>18}{'ratio':>9}")
    for name, t, peer in rows:
        print(f"{name:<40}{t * 1e3:>10.1f}{peer * 1e3:>18.1f}{peer / t:>8.1f}x")
    ratio = peer_warm / warm
    print(
        f"\nre-fit goal (>= 50x trim_messages): {'met' if ratio >= 50 else 'NOT met'}"
    )
    if ratio < 50 or "--profile" in sys.argv:
        profile(lambda: ours(next(grown), warm_counter))


def profile(fn: Callable[[], object], runs: int = 5) -> None:
    """Print where ``fn`` spends its time: our functions by cumulative time."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        fn()
    prof.disable()
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(prof).stats  # type: ignore[attr-defined]  # pstats keeps its table untyped
    ours = sorted(
        ((row[3], row[1], key) for key, row in stats.items() if PACKAGE in key[0]),
        reverse=True,
    )
    total = ours[0][0]  # fit() itself
    print(f"\nwhere a warm re-fit spends its time (cProfile, {runs} runs):")
    print(f"  {'function':<52}{'calls/run':>10}{'of fit()':>9}")
    for cum, calls, (path, line, name) in ours[1:TOP]:
        where = f"{path.split(PACKAGE, 1)[1]}:{line} {name}"
        print(f"  {where:<52}{calls // runs:>10,}{cum / total:>9.0%}")


if __name__ == "__main__":
    main()
