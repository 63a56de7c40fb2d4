"""Facts kept across the real compactions of the Claude Code sessions.

Usage::

    python benchmarks/retention.py [--show N]

Each of the 5 main Claude Code sessions of the shared data compacted once
(4 automatic compactions at about 167K tokens, 1 manual at 142K). At each
compaction point the session splits into *before* (every message up to the
``compact_boundary``), Claude's own summary (the user record that follows it)
and *after* (every message after that summary).

Reference facts are defined here, by this script's own patterns, not by the
library's extractor:

- file paths: a token with a folder and a file extension (``lib/a/b.ex``,
  ``/home/USER/x/mix.exs``), written relative to the session's working
  folder (``cwd`` of its records), so the summary's relative ``lib/a/b.ex``
  and a tool's absolute path are the same fact;
- commands: every simple command of every ``Bash`` call (split at ``&&``,
  ``;``, ``||``, without ``cd``/``echo``, whitespace collapsed);
- numbers: a number with a unit (``43 tests``, ``0 failures``, ``1.7s``,
  ``50%``, ``12 files``).

- identifiers: a name in backticks (``close_review_session``, ``Repo.all``,
  ``:render_mode``).

A fact is *referenced* when it appears before the compaction (anywhere in
the text, tool calls and tool results) and again after it: the work went on
needing it. Two countings of "again after it" (``--count``, both by
default): *all*, anywhere after (tool results and user text included: much of
it the environment supplied again, such as test timings or a directory
listing); and *agent*, only what the agent itself wrote after (its text,
thinking and tool-call arguments): what it needed from memory. For each
reference fact and each method, *kept* means the method's text holds it. The
methods:

- (a) Claude's compaction summary, as recorded;
- (b) ours: ``Summarize(ExtractiveSummarizer(o200k), keep_recent=0,
  max_tokens=T)`` over the messages before, ``T`` being the size of Claude's
  summary, so ours takes no more tokens (its fact record included);
- (c) drop-oldest: ``DropOldest(keep_first=0)`` with the same budget ``T``,
  i.e. the most recent messages before the compaction that fit.

Tokens are exact o200k counts of the text each method leaves (a proxy:
Claude's tokenizer is not public). The goal: (b) keeps more referenced facts
than (a) at no more tokens.

Caveat, in Claude's favour: after a compaction the model sees Claude's
summary, not ours, so the facts it goes on to use are partly those Claude's
summary chose to keep; they are also partly those the recent work needed,
which is what drop-oldest keeps.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from _data import data_dir

from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Text, Thinking, ToolCall, ToolResult
from contextwindow.strategies import Budget, DropOldest, Summarize
from contextwindow.summarizers import ExtractiveSummarizer, is_summary
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts

_PATH = re.compile(
    r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w@.+-]+/)+[\w@+-][\w@.+-]*\.[A-Za-z]{1,6}\b"
)
_NUMBER = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?\s?(?:%|ms\b|s\b|seconds?\b|minutes?\b|[KMG]B\b|tokens?\b|"
    r"lines?\b|files?\b|tests?\b|failures?\b|errors?\b|warnings?\b|doctests?\b)"
)
_IDENT = re.compile(r"`(:?[A-Za-z_][\w.:!?/]*(?:\(\))?)`")
_SKIP = ("cd", "echo", "export", "sleep", "true", "set", "source")
KINDS = ("path", "command", "number", "identifier")


def text_of(m: Message) -> str:
    """Everything a reader of the message sees: text, call arguments, results."""
    out: list[str] = []
    for p in m.parts:
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, ToolCall):
            out.append(p.arguments)
            command = p.input.get("command") if isinstance(p.input, dict) else None
            if isinstance(command, str):
                out.append(command)  # unescaped, as a summary would quote it
        elif isinstance(p, ToolResult):
            out.append(p.text)
    return "\n".join(out)


def agent_text(m: Message) -> str:
    """What the agent itself wrote: its text, thinking and tool-call arguments."""
    if m.role != "assistant":
        return ""
    out: list[str] = []
    for p in m.parts:
        if isinstance(p, (Text, Thinking)):
            out.append(p.text)
        elif isinstance(p, ToolCall):
            out.append(p.arguments)
            command = p.input.get("command") if isinstance(p.input, dict) else None
            if isinstance(command, str):
                out.append(command)
    return "\n".join(out)


def commands(messages: Iterable[Message]) -> set[str]:
    found: set[str] = set()
    for m in messages:
        for call in m.tool_calls:
            if call.name != "Bash" or not isinstance(call.input, dict):
                continue
            line = str(call.input.get("command", "")).split("<<", 1)[0]
            for seg in re.split(r"&&|\|\||;|\n", line):
                seg = " ".join(seg.split())
                if seg and seg.split()[0] not in _SKIP and len(seg) <= 200:
                    found.add(seg)
    return found


def facts(text: str, cwd: str, cmds: set[str]) -> dict[str, set[str]]:
    """The reference facts in ``text``: paths relative to ``cwd``, commands, numbers."""
    paths = set()
    for p in _PATH.findall(text):
        paths.add(p[len(cwd) :] if p.startswith(cwd) else p)
    return {
        "path": paths,
        "command": {c for c in cmds if c in text},
        "number": {" ".join(n.split()) for n in _NUMBER.findall(text)},
        "identifier": {i for i in _IDENT.findall(text) if len(i) >= 3},
    }


def held(fact: str, text: str) -> bool:
    return fact in text


@dataclass
class Point:
    session: str
    before_tokens: int
    reference: dict[str, set[str]]
    tokens: dict[str, int]
    kept: dict[str, dict[str, int]]


def cwd_of(path: Path) -> str:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            cwd = json.loads(line).get("cwd")
            if isinstance(cwd, str):
                return cwd.rstrip("/") + "/"
    return ""


def measure(
    path: Path, tok: BPETokenizer, show: int, count: str = "all"
) -> list[Point]:
    (t,) = read_transcripts(path)
    cwd = cwd_of(path)
    counter = TokenCounter(tok, "anthropic")
    points = []
    comps = t.meta["compactions"]
    for k, c in enumerate(comps):
        at = c["index"]
        end = comps[k + 1]["index"] if k + 1 < len(comps) else len(t.messages)
        before = list(t.messages[:at])
        claude = t.messages[at].text
        after = t.messages[at + 1 : end]
        text_before = "\n".join(map(text_of, before))
        read = agent_text if count == "agent" else text_of
        text_after = "\n".join(map(read, after))
        cmds = commands(before)
        pre = facts(text_before, cwd, cmds)
        post = facts(text_after, cwd, cmds | commands(after))
        reference = {k: pre[k] & post[k] for k in KINDS}
        budget_tokens = tok.count(claude)
        ours = ours_text(before, budget_tokens, tok, counter)
        drop = drop_text(before, budget_tokens, counter)
        texts = {"claude": claude, "ours": ours, "drop-oldest": drop}
        tokens = {name: tok.count(x) for name, x in texts.items()}
        kept = {
            name: {kind: sum(held(f, x) for f in reference[kind]) for kind in KINDS}
            for name, x in texts.items()
        }
        points.append(
            Point(path.stem[:8], counter.messages(before), reference, tokens, kept)
        )
        if show:
            print(f"--- {path.stem[:8]}: our summary, first {show} characters ---")
            print(ours[:show])
    return points


def ours_text(
    before: Sequence[Message], limit: int, tok: BPETokenizer, counter: TokenCounter
) -> str:
    """Our summary of ``before`` in at most ``limit`` tokens (o200k)."""
    strategy = Summarize(ExtractiveSummarizer(tok), keep_recent=0, max_tokens=limit)
    # A final turn stands for what comes after (the final message is pinned).
    conv = [*before, Message.user("Continue.")]
    fitted = strategy(conv, Budget(0, counter))
    (summary,) = [m for m in fitted.messages if is_summary(m)]
    return summary.text


def drop_text(before: Sequence[Message], limit: int, counter: TokenCounter) -> str:
    """The most recent messages before the compaction that fit ``limit`` tokens."""
    try:
        fitted = DropOldest(keep_first=0)(before, Budget(limit, counter))
    except BudgetError:
        return ""
    return "\n".join(map(text_of, fitted.messages))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--show", type=int, default=0, help="print our summaries")
    parser.add_argument(
        "--count",
        choices=("all", "agent", "both"),
        default="both",
        help="needed facts: anywhere after the compaction, or what the agent wrote",
    )
    args = parser.parse_args()
    for count in ("all", "agent") if args.count == "both" else (args.count,):
        print(f"\nneeded facts: {COUNTS[count]}\n")
        table(count, args.show)


COUNTS = {
    "all": "those before the compaction found anywhere after it (results too)",
    "agent": "those before the compaction the agent itself wrote after it "
    "(its text, thinking and tool-call arguments)",
}


def table(count: str, show: int) -> None:
    data = data_dir()
    tok = BPETokenizer("o200k_base")
    root = data / "claude_code_sessions"
    points = [
        p for f in sorted(root.glob("*.jsonl")) for p in measure(f, tok, show, count)
    ]
    names = ("claude", "ours", "drop-oldest")
    head = (
        "| session | tokens before | referenced facts (paths/commands/numbers/ids) "
        "| (a) Claude: tokens, kept | (b) ours: tokens, kept "
        "| (c) drop-oldest: tokens, kept |"
    )
    print(head)
    print("|" + "---|" * 6)
    total_ref = 0
    total_kept = dict.fromkeys(names, 0)
    total_tokens = dict.fromkeys(names, 0)
    for p in points:
        ref = sum(len(p.reference[k]) for k in KINDS)
        total_ref += ref
        cells = []
        for name in names:
            kept = sum(p.kept[name].values())
            total_kept[name] += kept
            total_tokens[name] += p.tokens[name]
            by_kind = "/".join(str(p.kept[name][k]) for k in KINDS)
            cells.append(f"{p.tokens[name]:,}, {kept} ({kept / ref:.0%}; {by_kind})")
        parts = "/".join(str(len(p.reference[k])) for k in KINDS)
        print(
            f"| {p.session} | {p.before_tokens:,} | {ref} ({parts}) | "
            + " | ".join(cells)
            + " |"
        )
    cells = [
        f"{total_tokens[n]:,}, {total_kept[n]} ({total_kept[n] / total_ref:.0%})"
        for n in names
    ]
    print(f"| all | | {total_ref} | " + " | ".join(cells) + " |")
    for k in KINDS:
        ref_k = sum(len(p.reference[k]) for p in points)
        shares = ", ".join(
            f"{n} {sum(p.kept[n][k] for p in points) / ref_k:.0%}"
            if ref_k
            else f"{n} -"
            for n in names
        )
        print(f"  {k}: {ref_k} needed; kept: {shares}")


if __name__ == "__main__":
    main()
