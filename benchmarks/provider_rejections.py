"""How often a trimmed conversation is one a provider would reject.

Usage::

    python benchmarks/provider_rejections.py [tau-bench | "Claude Code"]

Inputs: the 200 tau-bench trajectories (OpenAI rules) and every Claude Code
session of the shared data, subagent and compaction runs included (OpenAI and
Anthropic rules). A few Claude Code sessions break an Anthropic rule as
recorded (whitespace-only text blocks before thinking), so each is first
repaired with ``ensure_valid(conv, "anthropic")``: every input is valid, and
whatever a method breaks, it broke.

Each conversation is cut to 50 %, 25 % and 10 % of its own tokens (exact o200k,
the dataset's provider framing), by:

- LangChain ``trim_messages(strategy="last")``, on the conversation converted
  with ``to_openai`` then ``convert_to_messages``, counting with the OpenAI
  cookbook's framing over the same tokenizer, in two configurations: *plain*
  (``include_system=True``) and *docs*, the one LangChain's documentation
  recommends (also ``start_on="human", end_on=("human", "tool")``). Its output
  comes back through ``convert_to_openai_messages`` then ``from_openai``;
- LangChain ``trim_messages`` at its defaults (``strategy="last"``, no
  system kept, no ``start_on``), and the LangChain adapter's drop-in
  ``contextwindow.integrations.langchain.trim_messages`` called the same way
  with the same counter;
- ours: ``fit(..., strategy=DropOldest())`` and ``fit`` with its default
  strategy. A ``BudgetError`` is not an output; those are counted apart.

An output is rejected when ``contextwindow.validity.problems`` finds anything
for the provider (orphan tool results, unanswered tool calls, and for
Anthropic its own rules), or, for Anthropic, when nothing but the system
prompt is left (the Messages API needs at least one message). The table gives
rejected / outputs per method and budget; then, per method, the outputs left
with nothing but the system prompt (the whole conversation lost) and the
outputs over the budget by the method's own count (``trim_messages`` keeps the
system prompt even when it alone exceeds ``max_tokens``); the ``BudgetError``
count (ours: the system prompt and the final message alone exceed the budget);
and the first problem of the rejected ``trim_messages`` outputs, by reason,
with one example each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from _data import claude_files, data_dir
from fit_speed import cookbook_counter, to_langchain
from langchain_core.messages import BaseMessage, convert_to_openai_messages
from langchain_core.messages.utils import trim_messages

from contextwindow import fit
from contextwindow.errors import BudgetError
from contextwindow.formats import from_openai
from contextwindow.messages import Message, Provider
from contextwindow.strategies import DropOldest
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts
from contextwindow.validity import ensure_valid, problems

SHARES = (0.50, 0.25, 0.10)
METHODS = (
    "trim_messages plain",
    "trim_messages docs",
    "trim_messages defaults",
    "drop-in trim_messages",
    "fit DropOldest",
    "fit default",
)
Conversation = tuple[Message, ...]
Method = Callable[
    [Conversation, Sequence[BaseMessage], int, TokenCounter], tuple[Conversation, int]
]
"""Returns the output and its tokens, by the method's own counter."""


@dataclass
class Cell:
    """Outcomes of one method at one budget on one dataset."""

    outputs: int = 0
    rejected: int = 0
    budget_errors: int = 0
    system_only: int = 0
    over_budget: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    example: dict[str, str] = field(default_factory=dict)


@dataclass
class Dataset:
    name: str
    provider: Provider
    rules: tuple[Provider, ...]
    conversations: list[Conversation]
    labels: list[str]
    repaired: int = 0


def datasets() -> list[Dataset]:
    data = data_dir()
    tau = read_transcripts(data / "tau-bench_gpt-4o-airline.json")
    claude = Dataset("Claude Code", "anthropic", ("openai", "anthropic"), [], [])
    for path in claude_files(data):
        for t in read_transcripts(path):
            valid = ensure_valid(t.messages, "anthropic")
            claude.conversations.append(valid.messages)
            claude.labels.append(path.name)
            claude.repaired += bool(valid.problems)
    return [
        Dataset(
            "tau-bench",
            "openai",
            ("openai",),
            [t.messages for t in tau],
            [f"trajectory {k}" for k in range(len(tau))],
        ),
        claude,
    ]


def trimmer(docs: bool) -> Method:
    lc_count = cookbook_counter(BPETokenizer("o200k_base"))

    def run(
        conv: Conversation, lc: Sequence[BaseMessage], limit: int, _: TokenCounter
    ) -> tuple[Conversation, int]:
        out = trim_messages(
            lc,
            strategy="last",
            max_tokens=limit,
            token_counter=lc_count,
            include_system=True,
            start_on="human" if docs else None,
            end_on=("human", "tool") if docs else None,
        )
        return tuple(from_openai(convert_to_openai_messages(out))), lc_count(out)

    return run


def langchain_defaults() -> Method:
    """LangChain's ``trim_messages`` with nothing but its required arguments."""
    lc_count = cookbook_counter(BPETokenizer("o200k_base"))

    def run(
        conv: Conversation, lc: Sequence[BaseMessage], limit: int, _: TokenCounter
    ) -> tuple[Conversation, int]:
        out = trim_messages(lc, max_tokens=limit, token_counter=lc_count)
        return tuple(from_openai(convert_to_openai_messages(out))), lc_count(out)

    return run


def drop_in() -> Method:
    """The adapter's ``trim_messages``, called as LangChain's is, same counter."""
    from contextwindow.integrations.langchain import trim_messages as ours_trim

    lc_count = cookbook_counter(BPETokenizer("o200k_base"))

    def run(
        conv: Conversation, lc: Sequence[BaseMessage], limit: int, _: TokenCounter
    ) -> tuple[Conversation, int]:
        out = ours_trim(lc, max_tokens=limit, token_counter=lc_count)
        return tuple(from_openai(convert_to_openai_messages(out))), lc_count(out)

    return run


def ours(default: bool) -> Method:
    def run(
        conv: Conversation,
        lc: Sequence[BaseMessage],
        limit: int,
        counter: TokenCounter,
    ) -> tuple[Conversation, int]:
        strategy = None if default else DropOldest()
        fitted = fit(conv, limit=limit, strategy=strategy, tokenizer=counter)
        return fitted.messages, counter.messages(fitted.messages)

    return run


def rejection(out: Conversation, rules: tuple[Provider, ...]) -> str | None:
    """The first reason a provider would reject ``out``, or ``None``."""
    for provider in rules:
        found = problems(out, provider)
        if found:
            return f"{provider}: {found[0].reason}"
        if all(m.role == "system" for m in out) and (
            provider == "anthropic" or not out
        ):
            return f"{provider}: no message left (besides the system prompt)"
    return None


def measure(ds: Dataset) -> dict[tuple[str, float], Cell]:
    methods = dict(
        zip(
            METHODS,
            (
                trimmer(False),
                trimmer(True),
                langchain_defaults(),
                drop_in(),
                ours(False),
                ours(True),
            ),
            strict=True,
        )
    )
    tok = BPETokenizer("o200k_base")
    cells = {(m, s): Cell() for m in METHODS for s in SHARES}
    for k, conv in enumerate(ds.conversations):
        lc = to_langchain(conv)
        counter = TokenCounter(tok, ds.provider)
        total = counter.messages(conv)
        for share in SHARES:
            limit = int(total * share)
            for name, method in methods.items():
                cell = cells[name, share]
                try:
                    out, tokens = method(conv, lc, limit, counter)
                except BudgetError:
                    cell.budget_errors += 1
                    continue
                cell.outputs += 1
                cell.system_only += all(m.role == "system" for m in out)
                cell.over_budget += tokens > limit
                reason = rejection(out, ds.rules)
                if reason is not None:
                    cell.rejected += 1
                    cell.reasons[reason] += 1
                    cell.example.setdefault(reason, ds.labels[k])
    return cells


def row(cells: dict[tuple[str, float], Cell], name: str, what: str) -> str:
    out = ""
    for share in SHARES:
        c = cells[name, share]
        text = (
            f"{c.rejected}/{c.outputs}"
            if what == "rejected"
            else f"{c.system_only} / {c.over_budget}"
        )
        out += f"{text:>14}"
    return out


def report(ds: Dataset, cells: dict[tuple[str, float], Cell]) -> None:
    rules = " and ".join(ds.rules)
    print(f"\n{ds.name}: {len(ds.conversations)} conversations, {rules} rules")
    if ds.repaired:
        print(f"  ({ds.repaired} repaired first with ensure_valid(conv, 'anthropic'))")
    head = "".join(f"{f'{s:.0%} budget':>14}" for s in SHARES)
    print(f"  rejected / outputs{'':<6}{head}")
    for name in METHODS:
        print(f"  {name:<24}{row(cells, name, 'rejected')}")
    print(f"  only system left / over{head}")
    for name in METHODS:
        print(f"  {name:<24}{row(cells, name, 'empty')}")
    print("  BudgetError (not outputs)")
    for name in METHODS:
        counts = "".join(f"{cells[name, s].budget_errors:>14}" for s in SHARES)
        print(f"  {name:<24}{counts}")
    for name in METHODS[:3]:
        reasons: Counter[str] = Counter()
        where: dict[str, str] = {}
        for s in SHARES:
            cell = cells[name, s]
            reasons.update(cell.reasons)
            for reason, at in cell.example.items():
                where.setdefault(reason, f"{at}, {s:.0%} budget")
        for reason, n in reasons.most_common():
            print(f"  {name}: {n} x '{reason}' (e.g. {where[reason]})")


def main() -> None:
    import sys

    only = sys.argv[1] if len(sys.argv) > 1 else None  # e.g. tau-bench
    print("rejected outputs / outputs, by method and budget (share of each")
    print("conversation's own tokens); exact o200k tokenizer")
    for ds in datasets():
        if only is None or ds.name == only:
            report(ds, measure(ds))


if __name__ == "__main__":
    main()
