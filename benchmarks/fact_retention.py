"""Facts from tool results and arguments that survive fitting, against headroom-ai.

Usage::

    python benchmarks/fact_retention.py [--no-peer] [--only claude|tau]
        [--peer-python PATH]

Every Claude Code session file of the shared data (16: main sessions,
subagents, compaction runs; Anthropic) and every tau-bench run (200; OpenAI)
is fitted by ``fit``'s default pipeline to 50, 25 and 10 % of its own tokens
and to its model's window (claude-sonnet-4-5: 200,000; gpt-4o: 128,000),
and, in the same run, compressed by headroom-ai's ``compress()`` at its
defaults; then ours again at the size headroom's output took (per file), so
the two are compared at one size. Counts are exact o200k_base with the
provider's framing (``TokenCounter``).

Facts are defined here, by this script's own patterns, over the text of tool
results and tool-call arguments of the input (distinct per file):

- paths: a token with a folder and a file extension (``lib/a/b.ex``,
  ``/home/USER/x/mix.exs``);
- numbers: 3 or more digits (``8080``, ``2024``, ``166375``);
- values: those numbers but the ones found only as the line numbers of
  numbered output (Claude Code's ``Read``: ``   120→``; ``cat -n``), which
  are most of them: numbers that say something of their own (a port, a
  count, an id); kept as ``numbers`` are;
- commands: each simple command of a shell call (``Bash``, ``shell``; split at
  ``&&``, ``||``, ``;``, ``|``), whitespace collapsed, its first 60 characters;
- identifiers: ``snake_case`` with an underscore, ``CamelCase`` with two
  humps, and dotted names (``Repo.all``).

A fact survives when the output's text (every text, argument and result)
still holds it: the same patterns find it there (commands: as a substring).
Shares are over all files together (kept facts over facts); a file whose
pinned content alone exceeds a budget (``BudgetError``) is left out of that
row, and the row says how many were. ``ph`` is the placeholder share of the
outputs, by ``placeholder_share.py``'s rules (placeholders, bare calls and
collapsed-run lines over the tokens sent, all outputs of the row together),
``max`` the highest share of any one output, ``sum`` the share of summary
messages (the default pipeline's names summary, not counted as placeholders).
Headroom runs offline (``HEADROOM_OFFLINE=1``, ``HEADROOM_TELEMETRY=off``,
``LITELLM_LOCAL_MODEL_COST_MAP=True``, ``TIKTOKEN_CACHE_DIR`` at the BPE
files litellm ships, which bear tiktoken's cache names), in this process or,
with ``--peer-python PATH``, in another interpreter that has it (its own
venv; its time then includes starting it); without ``headroom-ai`` the
peer's rows are skipped, saying so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _data import claude_files, data_dir
from placeholder_share import share as placeholder_share

from contextwindow import fit, read_transcripts
from contextwindow.errors import BudgetError
from contextwindow.formats import from_provider, to_provider
from contextwindow.messages import (
    Message,
    Provider,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from contextwindow.summarizers import is_summary
from contextwindow.tokens import BPETokenizer, TokenCounter

PATH = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w@-][\w.@-]*\.[A-Za-z]\w{0,7}\b")
NUMBER = re.compile(r"(?<![\w.])\d{3,}(?![\w])")
IDENT = re.compile(
    r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"
    r"|\b[A-Z][A-Za-z0-9]*\.[a-z_][a-z0-9_]*\b"
)
LINE_NUMBER = re.compile(r"^[ \t]*\d+(?:→|\t)", re.MULTILINE)
SPLIT = re.compile(r"&&|\|\||;|\|")
SHELLS = frozenset(("Bash", "bash", "shell", "exec_command", "local_shell"))
KINDS = ("paths", "numbers", "values", "commands", "identifiers")
WINDOWS = {"anthropic": 200_000, "openai": 128_000}


@dataclass
class Trace:
    title: str
    provider: Provider
    messages: tuple[Message, ...]
    counter: TokenCounter
    tokens: int
    facts: dict[str, set[str]]


@dataclass
class Row:
    """Totals of one method over a corpus."""

    tokens_in: int = 0
    tokens_out: int = 0
    kept: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    errors: int = 0
    seconds: float = 0.0
    placeholders: int = 0
    """Tokens of placeholders and bare calls in the outputs
    (``placeholder_share.share``'s rules)."""
    worst: float = 0.0
    """The highest placeholder share of one output."""
    summaries: int = 0
    """Tokens of summary messages in the outputs (the default pipeline's
    names summary: not placeholders, shown apart)."""

    def add(self, t: Trace, out: Sequence[Message] | None) -> None:
        if out is None:  # pinned content alone is over the budget: not counted
            self.errors += 1
            return
        self.tokens_in += t.tokens
        for k in KINDS:
            self.total[k] += len(t.facts[k])
        sent = t.counter.messages(list(out))
        self.tokens_out += sent
        bare = placeholder_share(out, t.counter)[0]
        self.placeholders += bare
        self.worst = max(self.worst, bare / sent if sent else 0.0)
        self.summaries += sum(t.counter.message(m) for m in out if is_summary(m))
        found = output_facts(out, t.facts["commands"])
        for k in KINDS:
            self.kept[k] += len(t.facts[k] & found[k])


def source_texts(messages: Iterable[Message]) -> tuple[list[str], list[str]]:
    """Texts of tool results and arguments, and the shell commands called."""
    texts: list[str] = []
    cmds: list[str] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolResult):
                texts.append(p.text)
            elif isinstance(p, ToolCall):
                texts.append(p.arguments)
                if p.name in SHELLS:
                    cmds.extend(_commands(p))
    return texts, cmds


def _commands(call: ToolCall) -> list[str]:
    args: Any = call.input
    command = args.get("command") if isinstance(args, dict) else None
    if isinstance(command, list):
        command = " ".join(str(w) for w in command)
    if not isinstance(command, str):
        return []
    out = []
    for piece in SPLIT.split(command):
        cmd = " ".join(piece.split())[:60]
        if len(cmd) >= 4 and not cmd.startswith(("cd ", "echo ")):
            out.append(cmd)
    return out


def facts_of(messages: Sequence[Message]) -> dict[str, set[str]]:
    texts, cmds = source_texts(messages)
    joined = "\n".join(texts)
    numbers = set(NUMBER.findall(joined))
    return {
        "paths": set(PATH.findall(joined)),
        "numbers": numbers,
        "values": numbers & set(NUMBER.findall(LINE_NUMBER.sub("", joined))),
        "commands": set(cmds),
        "identifiers": set(IDENT.findall(joined)),
    }


def all_text(messages: Iterable[Message]) -> str:
    out: list[str] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, (Text, Thinking)):
                out.append(p.text)
            elif isinstance(p, ToolCall):
                out.append(f"{p.name} {p.arguments}")
                out.extend(_leaves(p.input))  # commands as written, unescaped
            elif isinstance(p, ToolResult):
                out.append(p.text)
    return "\n".join(out)


def _leaves(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)


def output_facts(out: Sequence[Message], commands: set[str]) -> dict[str, set[str]]:
    text = all_text(out)
    flat = " ".join(text.split())
    numbers = set(NUMBER.findall(text))
    return {
        "paths": set(PATH.findall(text)),
        "numbers": numbers,
        "values": numbers,
        "commands": {c for c in commands if c in flat},
        "identifiers": set(IDENT.findall(text)),
    }


def load(only: str | None) -> list[Trace]:
    data = data_dir()
    tok = BPETokenizer("o200k_base")
    traces: list[Trace] = []
    if only in (None, "claude"):
        for path in claude_files(data):
            (t,) = read_transcripts(path)
            traces.append(make(path.stem[:8], "anthropic", t.messages, tok))
    if only in (None, "tau"):
        for k, t in enumerate(read_transcripts(data / "tau-bench_gpt-4o-airline.json")):
            traces.append(make(f"tau-{k}", "openai", t.messages, tok))
    return traces


def make(title: str, provider: Provider, msgs: Sequence[Message], tok: Any) -> Trace:
    counter = TokenCounter(tok, provider)
    return Trace(
        title,
        provider,
        tuple(msgs),
        counter,
        counter.messages(list(msgs)),
        facts_of(msgs),
    )


def ours(t: Trace, limit: int) -> Sequence[Message] | None:
    try:
        return fit(t.messages, limit=limit, tokenizer=t.counter).messages
    except BudgetError:
        return None


_PEER = """
import json, os, sys
from pathlib import Path
os.environ.setdefault("HEADROOM_OFFLINE", "1")
os.environ.setdefault("HEADROOM_TELEMETRY", "off")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm
bpe = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers"
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bpe))
from headroom import compress
out = [compress(turns, model=model).messages for model, turns in json.load(sys.stdin)]
json.dump(out, sys.stdout)
"""


def headroom_in(python: str) -> Callable[[list[Trace]], list[Sequence[Message]]]:
    """headroom-ai's ``compress`` run by another interpreter (its own venv).

    headroom-ai moves shared packages when installed beside this project, so
    it may live in a virtual environment of its own; the turns go to it as
    JSON and come back the same way.
    """

    def run(traces: list[Trace]) -> list[Sequence[Message]]:
        jobs: list[tuple[str, Any]] = []
        systems: list[Any] = []
        for t in traces:
            wire = to_provider(list(t.messages), t.provider)
            if t.provider == "anthropic":  # (system, messages)
                systems.append(wire)
                jobs.append(("claude-sonnet-4-5-20250929", list(wire[1])))
            else:
                systems.append(None)
                jobs.append(("gpt-4o", wire))
        done = subprocess.run(
            [python, "-c", _PEER],
            input=json.dumps(jobs),
            capture_output=True,
            text=True,
            check=True,
        )
        outs: list[Sequence[Message]] = []
        for t, wire, turns in zip(
            traces, systems, json.loads(done.stdout), strict=True
        ):
            back: Any = type(wire)(wire[0], turns) if wire is not None else turns
            outs.append(from_provider(back, t.provider))
        return outs

    return run


def headroom() -> Callable[[Trace], Sequence[Message]] | None:
    """headroom-ai's ``compress`` at its defaults, offline (``None``: not installed)."""
    os.environ.setdefault("HEADROOM_OFFLINE", "1")
    os.environ.setdefault("HEADROOM_TELEMETRY", "off")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm  # the BPE files tiktoken wants ship in it

        bpe = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers"
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(bpe))
        from headroom import compress
    except ImportError:
        return None

    def run(t: Trace) -> Sequence[Message]:
        wire = to_provider(list(t.messages), t.provider)
        model = "claude-sonnet-4-5-20250929" if t.provider == "anthropic" else "gpt-4o"
        if t.provider == "anthropic":  # (system, messages)
            system, turns = wire
            out: Any = type(wire)(system, compress(turns, model=model).messages)
        else:
            out = compress(wire, model=model).messages
        return from_provider(out, t.provider)

    return run


def show(name: str, r: Row) -> None:
    shares = "".join(
        f"{r.kept[k] / r.total[k]:>12.1%}" if r.total[k] else f"{'-':>12}"
        for k in KINDS
    )
    out = f"{r.tokens_out:>12,}" if r.tokens_out else f"{'-':>12}"
    ratio = r.tokens_out / r.tokens_in if r.tokens_in else 0
    err = f"  ({r.errors} BudgetError)" if r.errors else ""
    held = r.placeholders / r.tokens_out if r.tokens_out else 0
    summed = r.summaries / r.tokens_out if r.tokens_out else 0
    print(
        f"{name:<28}{r.tokens_in:>12,}{out}{ratio:>7.0%}{shares}"
        f"{held:>7.1%}{r.worst:>6.0%}{summed:>6.1%}{r.seconds:>8.1f}s{err}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--only", choices=("claude", "tau"))
    ap.add_argument(
        "--peer-python",
        help="a Python with headroom-ai installed (its own venv), run as a subprocess",
    )
    args = ap.parse_args()
    traces = load(args.only)
    batch = (
        None if args.no_peer or not args.peer_python else headroom_in(args.peer_python)
    )
    one = None if args.no_peer or batch else headroom()
    peer: Callable[[list[Trace]], list[Sequence[Message]]] | None = batch or (
        (lambda ts: [one(t) for t in ts]) if one else None
    )
    if peer is None and not args.no_peer:
        print(
            "headroom-ai is not installed (pip install headroom-ai): "
            "its rows are skipped\n"
        )
    for provider, corpus in (
        ("anthropic", "Claude Code (16 files)"),
        ("openai", "tau-bench (200 runs)"),
    ):
        mine = [t for t in traces if t.provider == provider]
        if not mine:
            continue
        print(f"{corpus}: facts from tool results and arguments surviving")
        print(
            f"{'method':<28}{'tokens in':>12}{'tokens out':>12}{'out':>7}"
            + "".join(f"{k:>12}" for k in KINDS)
            + f"{'ph':>7}{'max':>6}{'sum':>6}{'time':>9}"
        )
        base = Row()
        for t in mine:
            base.add(t, t.messages)
        for k in KINDS:
            base.kept[k] = base.total[k]
        print(
            f"{'facts (distinct per file)':<28}"
            + " " * 31
            + "".join(f"{base.total[k]:>12,}" for k in KINDS)
        )
        rows: list[tuple[str, Row]] = []
        for label, share in (
            ("default at 50 %", 0.5),
            ("default at 25 %", 0.25),
            ("default at 10 %", 0.1),
            ("default at the window", None),
        ):
            r = Row()
            start = time.perf_counter()
            for t in mine:
                limit = WINDOWS[provider] if share is None else int(t.tokens * share)
                r.add(t, ours(t, limit))
            r.seconds = time.perf_counter() - start
            rows.append((label, r))
            show(label, r)
        if peer is not None:
            r, same = Row(), Row()
            outs: list[Sequence[Message]] = []
            start = time.perf_counter()
            outs.extend(peer(mine))
            r.seconds = time.perf_counter() - start
            for t, out in zip(mine, outs, strict=True):
                r.add(t, out)
            show("headroom compress()", r)
            start = time.perf_counter()
            for t, out in zip(mine, outs, strict=True):
                size = t.counter.messages(list(out))
                same.add(t, ours(t, size))
            same.seconds = time.perf_counter() - start
            show("default at headroom's size", same)
        print()


if __name__ == "__main__":
    sys.exit(main())
