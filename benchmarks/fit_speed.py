"""Re-fitting a 10,000-message conversation after each new turn, against a careful peer.

Usage::

    python benchmarks/fit_speed.py [--turns 20] [--share 0.25] [--profile] [--only NAME]
                                   [--tools]

``--profile`` profiles the default pipeline's re-fits (or, with ``--only``, those
of the one strategy it names). ``--tools`` gives every fit of ours the
eighteen tool schemas of ``_data.TOOLS`` (as dicts, 16,810 tokens) and a budget
larger by their tokens; the peer, which takes no tools, keeps the
conversation's budget.

Builds a 10,000-message conversation with tool calls from the tau-bench
trajectories: one system prompt, then every trajectory's user, assistant,
tool-call and tool messages, concatenated; a second pass with re-labelled texts
fills it up, so no message repeats an earlier one by accident. Every tool call
gets a fresh id (tau-bench re-uses ids). The budget is 25 % of its tokens
(``--share``: another share).

Both sides count with the same exact tokenizer, ``BPETokenizer("o200k_base")``,
and the same OpenAI framing (the OpenAI cookbook's: 3 per message, the role, 3
per tool call besides its name and arguments, 3 for the reply).

An agent loop's turns: each turn appends what tau-bench agents append, taken
from the trajectories in order and re-labelled (so no count is cached): a tool
exchange (an assistant tool call and its result), an assistant reply, or a
user turn. The conversation then is fitted again:

- ours: ``fit(conv, limit=..., strategy=S, tokenizer=counter)`` with the
  counter of the previous turn's fit (its memo holds what each strategy
  decided), for ``DropOldest``, the default pipeline (``strategy=None``),
  ``SelectRelevant`` (BM25) and ``Summarize`` (extractive);
- peer, as a careful user runs it: LangChain ``trim_messages(strategy="last",
  include_system=True, start_on="human")`` on a LangChain message list that
  grows by the same messages, with a token counter memoised per message (the
  cookbook's framing over the same tokenizer, each message counted once);
- peer, naive: the same with the counter recounting every message.

``--only NAME`` runs the rows whose name starts with ``NAME`` alone with the
peer (``--only DropOldest``), so no other strategy's garbage is collected
during their fits. Every row is the median of ``--turns`` re-fits after one
appended tool exchange (and, beside it, over the mixed turns), ours and the
peers timed in the same turns, interleaved, so machine load hits both alike.
The cold fit (a fresh counter) is shown too, and the mean and the slowest
re-fit over every turn (where a strategy redoing work now and then shows).

Last, what a provider's prompt cache could serve: the share of each request's
tokens that are a prefix it has in common with the request before (the same
messages, compared by content, counted as the request counts them), the median
and the mean over every turn, ours and the peer's (the output of the memoised
``trim_messages``), outside the timed calls.
"""

from __future__ import annotations

import cProfile
import itertools
import json
import pstats
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from statistics import median
from typing import Any

from _data import TOOLS, best_of, data_dir
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
from contextwindow.strategies import DropOldest, SelectRelevant, Strategy, Summarize
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens.base import Tokenizer

SIZE = 10_000
SHARE = 0.25
PEER = "trim (memoised)"
ROLE = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
PACKAGE = "contextwindow/"
TOP = 13
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


def memoised_counter(tok: Tokenizer) -> Callable[[Sequence[BaseMessage]], int]:
    """The cookbook counter memoised per message: what a careful user passes.

    Keyed by the message object (LangChain messages are mutable, so by
    identity; the list keeps them alive).
    """
    one = cookbook_counter(tok)
    memo: dict[int, int] = {}
    reply = one([])

    def counter(messages: Sequence[BaseMessage]) -> int:
        total = reply
        get = memo.get
        for m in messages:
            n = get(id(m))
            if n is None:
                n = memo[id(m)] = one([m]) - reply
            total += n
        return total

    return counter


Turn = tuple[str, list[Message]]


def turns(conv: Sequence[Message]) -> Iterator[Turn]:
    """Realistic appends, in the trajectories' own order, re-labelled.

    Yields ``(kind, messages)``: ``tool`` (an assistant tool call and its
    result), ``assistant`` (a reply) or ``user``.
    """
    serial = itertools.count()
    for k in itertools.count():
        tag = f"<turn {k}> "
        i = 1
        while i < len(conv):
            m = conv[i]
            if m.tool_calls and i + 1 < len(conv) and conv[i + 1].role == "tool":
                n = next(serial)
                call = m.tool_calls[0]
                new_id = f"turn_{n}"
                yield (
                    "tool",
                    [
                        Message.assistant(
                            m.text and tag + m.text,
                            tool_calls=[ToolCall(new_id, call.name, call.arguments)],
                        ),
                        Message.tool(new_id, tag + conv[i + 1].text, name=call.name),
                    ],
                )
                i += 2
                while i < len(conv) and conv[i].role == "tool":
                    i += 1
                continue
            if m.role in ("user", "assistant") and m.text and not m.tool_calls:
                make = Message.user if m.role == "user" else Message.assistant
                yield (m.role, [make(tag + m.text)])
            i += 1


def main() -> None:
    n_turns = (
        int(sys.argv[sys.argv.index("--turns") + 1]) if "--turns" in sys.argv else 20
    )
    tok = BPETokenizer("o200k_base")
    conv = conversation()
    total = TokenCounter(tok).messages(conv)
    share = (
        float(sys.argv[sys.argv.index("--share") + 1])
        if "--share" in sys.argv
        else SHARE
    )
    limit = int(total * share)
    # --tools: every fit of ours is given the tool schemas, as dicts (as an
    # agent holds them), and a budget larger by their tokens; the peer, which
    # takes no tools, keeps the conversation's budget.
    tools = TOOLS if "--tools" in sys.argv else []
    peer_limit = limit
    if tools:
        limit += TokenCounter(tok).tools(tools)
    calls = sum(len(m.tool_calls) for m in conv)
    print(
        f"conversation: {len(conv):,} messages, {calls:,} tool calls, "
        f"{total:,} tokens (o200k, OpenAI framing)"
    )
    print(f"budget: {peer_limit:,} tokens ({share:.0%}); median of {n_turns} turns")
    if tools:
        print(
            f"with {len(TOOLS)} tools ({limit - peer_limit:,} tokens) given to every "
            f"fit of ours, its budget larger by as much"
        )
    print()

    lc = to_langchain(conv)
    naive = cookbook_counter(tok)
    careful = memoised_counter(tok)

    def trim(msgs: list[BaseMessage], counter: Callable[..., int]) -> list[BaseMessage]:
        return trim_messages(
            msgs,
            strategy="last",
            max_tokens=peer_limit,
            token_counter=counter,
            include_system=True,
            start_on="human",
        )

    strategies: dict[str, Strategy | None] = {
        "DropOldest": DropOldest(),
        "default pipeline": None,
        "SelectRelevant (BM25)": SelectRelevant(),
        "Summarize (extractive)": Summarize(),
    }
    if "--only" in sys.argv:
        # One strategy's row alone (with the peer): no other strategy's
        # garbage is collected during its fits.
        only = sys.argv[sys.argv.index("--only") + 1]
        strategies = {k: v for k, v in strategies.items() if k.startswith(only)}
    grown = {name: list(conv) for name in strategies}
    counters = {name: TokenCounter(tok) for name in strategies}
    cold: dict[str, float] = {}
    sent: dict[str, Sequence[Any]] = {}  # each one's last request
    for name, strategy in strategies.items():
        t0 = time.perf_counter()
        sent[name] = fit(
            conv, limit=limit, strategy=strategy, tokenizer=counters[name], tools=tools
        ).messages
        cold[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # Counts every message once: the careful peer's cold fit.
    sent[PEER] = trim(lc, careful)
    peer_cold = time.perf_counter() - t0
    cached: dict[str, list[float]] = {name: [] for name in sent}
    naive_cold = best_of(lambda: trim(lc, naive), 1)

    times: dict[str, dict[str, list[float]]] = {
        name: {"tool": [], "all": []} for name in (*strategies, PEER, "trim (naive)")
    }
    cpu: dict[str, dict[str, list[float]]] = {
        name: {"tool": [], "all": []} for name in (*strategies, PEER)
    }
    source = turns(conv)
    done_tool = 0
    k = 0
    while done_tool < n_turns:
        kind, new = next(source)
        lc.extend(convert_to_messages(to_openai(new)))
        for name, strategy in strategies.items():
            grown[name].extend(new)
            t0, c0 = time.perf_counter(), time.process_time()
            out = fit(
                grown[name],
                limit=limit,
                strategy=strategy,
                tokenizer=counters[name],
                tools=tools,
            ).messages
            _record(times[name], kind, time.perf_counter() - t0)
            _record(cpu[name], kind, time.process_time() - c0)
            run = counters[name].running(out)
            cached[name].append(run[common(sent[name], out)] / run[-1])
            sent[name] = out
        t0, c0 = time.perf_counter(), time.process_time()
        trimmed = trim(lc, careful)
        _record(times[PEER], kind, time.perf_counter() - t0)
        _record(cpu[PEER], kind, time.process_time() - c0)
        same = common(sent[PEER], trimmed)
        cached[PEER].append(careful(trimmed[:same]) / careful(trimmed))
        sent[PEER] = trimmed
        if k % 8 == 0 or (kind == "tool" and done_tool % 8 == 0):
            t0 = time.perf_counter()
            trim(lc, naive)  # about a second: every 8th turn
            _record(times["trim (naive)"], kind, time.perf_counter() - t0)
        done_tool += kind == "tool"
        k += 1

    peer = median(times[PEER]["tool"])
    peer_all = median(times[PEER]["all"])
    naive_tool = median(times["trim (naive)"]["tool"])
    print(
        f"re-fit after one appended tool exchange (median of {n_turns}; "
        f"all {k} turns in brackets), ratio = peer / ours:"
    )
    print(
        f"{'':<26}{'ours ms':>14}{'memoised peer':>16}{'ratio':>8}"
        f"{'naive peer':>13}{'ratio':>8}{'cold ms':>10}"
    )
    for name in strategies:
        t, t_all = median(times[name]["tool"]), median(times[name]["all"])
        print(
            f"{name:<26}{t * 1e3:>7.2f} ({t_all * 1e3:>5.2f})"
            f"{peer * 1e3:>9.2f} ({peer_all * 1e3:>5.2f})"
            f"{peer / t:>7.1f}x{naive_tool * 1e3:>12.0f}{naive_tool / t:>7.0f}x"
            f"{cold[name] * 1e3:>10.0f}"
        )
    print(
        f"\nevery one of the {k} turns: mean and slowest re-fit (a strategy that "
        "redoes work now and then, a summary made again, shows here):"
    )
    print(f"{'':<26}{'mean ms':>10}{'slowest ms':>12}")
    for name in (*strategies, PEER):
        every = times[name]["all"]
        print(
            f"{name:<26}{sum(every) / len(every) * 1e3:>10.2f}{max(every) * 1e3:>12.1f}"
        )
    peer_cpu = median(cpu[PEER]["tool"])
    print(
        "\nthe same in CPU time of this process (time.process_time), which the "
        "machine's load does not inflate:"
    )
    print(f"{'':<26}{'ours ms':>10}{'memoised peer':>16}{'ratio':>8}")
    for name in strategies:
        t = median(cpu[name]["tool"])
        print(f"{name:<26}{t * 1e3:>10.2f}{peer_cpu * 1e3:>16.2f}{peer_cpu / t:>7.1f}x")
    print(
        f"peer cold fit: memoised {peer_cold * 1e3:.0f} ms (counts every message "
        f"once), naive {naive_cold * 1e3:.0f} ms"
    )
    goal = all(
        median(times[name]["tool"]) < 0.002 and peer / median(times[name]["tool"]) >= 5
        for name in strategies
    )
    print(
        "goal (each under 2 ms and >= 5x the memoised peer): "
        + ("met" if goal else "NOT met")
    )
    print(
        f"\nwhat a prompt cache could serve: the share of each request's tokens "
        f"that repeat the request before, over all {k} turns:"
    )
    print(f"{'':<26}{'median':>10}{'mean':>8}{'lowest':>8}")
    for name, shares in cached.items():
        print(
            f"{name:<26}{median(shares):>10.1%}{sum(shares) / len(shares):>8.1%}"
            f"{min(shares):>8.1%}"
        )
    if "--profile" in sys.argv:
        # The default pipeline's re-fit, or the one strategy --only names.
        default = "default pipeline"
        name = default if default in strategies else next(iter(strategies))
        print(f"\nprofiled: {name}")
        profile(
            lambda: _turn(
                grown[name], source, counters[name], limit, strategies[name], tools
            )
        )


def common(before: Sequence[Any], after: Sequence[Any]) -> int:
    """How many leading messages two requests have in common (by content)."""
    n = min(len(before), len(after))
    k = 0
    while k < n and (before[k] is after[k] or before[k] == after[k]):
        k += 1
    return k


def _record(row: dict[str, list[float]], kind: str, seconds: float) -> None:
    row["all"].append(seconds)
    if kind == "tool":
        row["tool"].append(seconds)


def _turn(
    conv: list[Message],
    source: Iterator[Turn],
    counter: TokenCounter,
    limit: int,
    strategy: Strategy | None,
    tools: list[dict[str, Any]],
) -> None:
    conv.extend(next(source)[1])
    fit(conv, limit=limit, strategy=strategy, tokenizer=counter, tools=tools)


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
