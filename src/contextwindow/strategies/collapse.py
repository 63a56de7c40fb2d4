r"""Collapsing runs of cut tool exchanges: no flood of placeholders and bare calls.

Contract:

- A *cut* exchange is an unpinned tool exchange whose calls are bare (the
  calling message takes at most ``BARE_CALL_TOKENS``: a call carrying a whole
  file to write is content, not a bare call) and whose every result is a
  one-line marker
  (cleared, stale, deduplicated: ``is_marker``). Its cost is its call and
  its markers; once clearing has made many of them, they are most of what is
  sent and say little (a cleared exchange costs about as much as its
  placeholder and its call).
- ``collapse_runs`` replaces runs of consecutive cut exchanges, oldest first,
  each by one assistant line naming the tools called and the paths, commands
  and short arguments they touched, with the handle of the run
  (``handles.run_handle``), until cut exchanges take at most ``max_share`` of
  the request's tokens (of the newest units the budget holds, when the
  conversation is still over it and the oldest units are to go). A run may
  hold the agent's own text messages between its exchanges: what the agent
  wrote (in them and in the calling messages) stays, before the line;
  reasoning goes. The line keeps the id of the run's first calling message;
  the rest of the run goes; each run is one ``collapsed`` change.
- ``cut_share`` is the measure: tokens of cut exchanges over the request's.

Example:
    >>> import json
    >>> from contextwindow import Message, TokenCounter, ToolCall
    >>> from contextwindow.strategies import Budget
    >>> from contextwindow.testing import FakeTokenizer
    >>> conv = [Message.user("go")]
    >>> for i in range(4):
    ...     args = json.dumps({"file_path": f"m{i}.py"})
    ...     conv += [Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
    ...              Message.tool(f"c{i}", f"[tool result cleared: 90 tokens; "
    ...                                    f"recall 000000000{i}]")]
    >>> conv.append(Message.user("and now?"))
    >>> budget = Budget(1000, TokenCounter(FakeTokenizer()))
    >>> round(cut_share(conv, budget), 2)
    0.86
    >>> fitted = collapse_runs(conv, budget, 0.1, "ClearToolResults")
    >>> print(fitted.messages[1].text.replace("; ", ";\n"))
    [4 earlier tool calls, results cut: Read x4 (m0.py, m1.py, m2.py, m3.py);
    recall ce55461887+8]
    >>> [(c.kind, c.units, c.index) for c in fitted.report.changes]
    [('collapsed', 4, 1)]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from contextwindow.handles import ORIGIN_KEY, find_handles, run_handle
from contextwindow.messages import Message, Text, Thinking, ToolCall, ToolResult, Unit
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    finish,
    pinned_units,
)
from contextwindow.strategies.files import file_actions

__all__ = [
    "MAX_CUT_SHARE",
    "collapse_runs",
    "cut_share",
    "is_marker",
    "named_in",
    "run_line",
]

MAX_CUT_SHARE = 0.1
"""The most of a request's tokens that cut exchanges (markers and their bare
calls) may take before runs of them collapse: measured on the Claude Code
sessions and a long session built from them (see benchmarks/README)."""

MAX_SUBJECTS = 24
"""Distinct paths, commands or arguments a run's line names per tool."""

SUBJECT_CHARS = 80
"""A command or argument is cut to this many characters in a run's line."""


_NAMED = re.compile(
    r"(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w@-][\w.@-]*\.[A-Za-z]\w{0,7}\b"  # paths
    r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"  # CamelCase
    r"|\b[A-Z][A-Za-z0-9]*\.[a-z_][a-z0-9_]*\b"  # Module.function
    r"|(?<![\w.])\d{3,}(?![\w.])(?![ \t]*→)"  # numbers, not Read's line numbers
)

MAX_NAMED = 12
"""Names (paths, identifiers, numbers) a placeholder keeps from what it replaces."""


def named_in(text: str, limit: int = MAX_NAMED) -> list[str]:
    """Paths, code identifiers and numbers of 3+ digits in ``text``: paths first.

    Example:
        >>> named_in("see lib/a.ex and Repo.all at port 8080; lib/a.ex again")
        ['lib/a.ex', 'Repo.all', '8080']
    """
    seen: dict[str, int] = {}
    for m in _NAMED.finditer(text):
        seen.setdefault(m.group(0), len(seen))
    rank = sorted(seen, key=lambda n: ("/" not in n, n[0].isdigit(), seen[n]))
    return rank[:limit]


def is_marker(result: ToolResult) -> bool:
    """Whether a result is one of the strategies' one-line markers (with a handle)."""
    if not isinstance(result.content, str):
        return False
    text = result.content
    return (
        text.startswith("[")
        and text.endswith("]")
        and "\n" not in text
        and bool(find_handles(text))
    )


BARE_CALL_TOKENS = 200
"""A calling message larger than this carries content (an edit, a file to
write): its exchange is not a cut one, and is never collapsed."""


def _holds_items(m: Message) -> bool:
    """Whether ``m`` holds items a provider ran itself (a Responses web search).

    Read as text, they go back out as those items, so they are never folded
    into a collapsed line's text.
    """
    entry = m.meta.get("responses")
    items = entry.get("items") if isinstance(entry, Mapping) else None
    return isinstance(items, list) and any(
        isinstance(e, Mapping) and "item" in e for e in items
    )


def _is_cut(messages: Sequence[Message], unit: Unit, budget: Budget) -> bool:
    if unit.kind != "tool_exchange" or _holds_items(messages[unit.start]):
        return False
    if budget.counter.message(messages[unit.start]) > BARE_CALL_TOKENS:
        return False
    results = [r for m in messages[unit.start + 1 : unit.stop] for r in m.tool_results]
    return bool(results) and all(is_marker(r) for r in results)


def cut_share(messages: Sequence[Message], budget: Budget) -> float:
    """Tokens of cut exchanges over the tokens of the request (0 when empty)."""
    total = budget.count(messages)
    if total <= 0:
        return 0.0
    us, pinned = pinned_units(messages, budget.protected, budget.provider)
    run = budget.counter.running(messages)
    cut = sum(
        run[u.stop] - run[u.start]
        for u, p in zip(us, pinned, strict=True)
        if not p and _is_cut(messages, u, budget)
    )
    return cut / total


def _subjects(call: ToolCall) -> list[str]:
    """What a call touched: its files, its command, else its short arguments."""
    paths = [a.path for a in file_actions(call)]
    if paths:
        return paths
    args: Any = call.input
    if not isinstance(args, dict):
        return []
    given = cast("dict[str, Any]", args)
    command = given.get("command")
    if isinstance(command, list):
        command = " ".join(str(w) for w in cast("list[object]", command))
    if isinstance(command, str) and command.strip():
        line = command.strip().split("\n", 1)[0]
        return [f"`{line[:SUBJECT_CHARS]}`"]
    shown: list[str] = []
    for key in ("path", "pattern", "url", "query"):
        v = given.get(key)
        if isinstance(v, str) and v:
            shown.append(v[:SUBJECT_CHARS])
    if shown:
        return shown
    for v in given.values():
        if isinstance(v, (str, int)) and not isinstance(v, bool):
            text = str(v)
            if text and len(text) <= SUBJECT_CHARS and "\n" not in text:
                shown.append(text)
        if len(shown) == 2:
            break
    return shown


def run_line(messages: Sequence[Message], run: Sequence[Unit], handle: str) -> str:
    """The one line standing for a run of cut exchanges."""
    tools: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    n = 0
    for u in run:
        for c in messages[u.start].tool_calls:
            n += 1
            counts[c.name] = counts.get(c.name, 0) + 1
            seen = tools.setdefault(c.name, [])
            for s in _subjects(c):
                if s not in seen:
                    seen.append(s)
    parts: list[str] = []
    for name, subjects in tools.items():
        k = counts[name]
        label = f"{name} x{k}" if k > 1 else name
        if subjects:
            more = len(subjects) - MAX_SUBJECTS
            shown = ", ".join(subjects[:MAX_SUBJECTS]) + (
                f", +{more} more" if more > 0 else ""
            )
            label += f" ({shown})"
        parts.append(label)
    calls = "call" if n == 1 else "calls"
    return (
        f"[{n} earlier tool {calls}, results cut: {', '.join(parts)}; recall {handle}]"
    )


def _is_said(messages: Sequence[Message], unit: Unit) -> bool:
    """Whether a unit is an assistant message of text (and reasoning) alone."""
    m = messages[unit.start]
    return (
        unit.kind == "message"
        and m.role == "assistant"
        and all(isinstance(p, (Text, Thinking)) for p in m.parts)
        and not _holds_items(m)
    )


def _trimmed(ks: list[int], cut: Sequence[bool]) -> list[int]:
    """The run without the text units at its edges (nothing to collapse there)."""
    first = next(i for i, k in enumerate(ks) if cut[k])
    last = max(i for i, k in enumerate(ks) if cut[k])
    return ks[first : last + 1]


def collapse_runs(
    messages: Sequence[Message], budget: Budget, max_share: float, stage: str
) -> Fitted:
    """Collapse the oldest runs of cut exchanges until they take at most ``max_share``.

    Args:
        messages: The conversation (its cut exchanges' markers already made).
        budget: Its budget (what counts, what is pinned).
        max_share: The share of the request's tokens cut exchanges may keep.
        stage: The strategy reported as making the changes.
    """
    total = budget.count(messages)
    us, pinned = pinned_units(messages, budget.protected, budget.provider)
    run_tokens = budget.counter.running(messages)
    cost = [run_tokens[u.stop] - run_tokens[u.start] for u in us]
    cut = [
        not p and _is_cut(messages, u, budget) for u, p in zip(us, pinned, strict=True)
    ]
    left = sum(c for c, is_cut in zip(cost, cut, strict=True) if is_cut)
    # A run: cut exchanges, and the agent's own text between them (kept).
    joins = [
        cut[k] or (not pinned[k] and _is_said(messages, u)) for k, u in enumerate(us)
    ]
    runs: list[list[int]] = []
    for k, joined in enumerate(joins):
        if joined:
            if runs and runs[-1][-1] == k - 1:
                runs[-1].append(k)
            else:
                runs.append([k])
    runs = [_trimmed(ks, cut) for ks in runs if any(cut[k] for k in ks)]
    if total > budget.limit:
        # Still over: the oldest units will go (DropOldest), so the share that
        # matters is that of the newest units the budget holds.
        kept, start = 0, len(us)
        while start > 0 and kept + cost[start - 1] <= budget.limit:
            start -= 1
            kept += cost[start]
        newest = [ks for ks in runs if ks[0] >= start]
        if newest:  # else nothing of note fits: collapse from the oldest
            runs, total = newest, kept
            left = sum(cost[k] for k in range(start, len(us)) if cut[k])
    replaced: dict[int, Message] = {}  # first unit of a run -> its line
    gone: set[int] = set()
    changes: list[Change] = []
    for ks in runs:
        if total <= 0 or left <= max_share * total:
            break
        run = [us[k] for k in ks]
        first = messages[run[0].start]
        handle = run_handle(messages[run[0].start : run[-1].stop])
        said = [
            p.text
            for u in run
            for p in messages[u.start].parts
            if isinstance(p, Text) and p.text.strip()
        ]
        line = Message.assistant(
            "\n".join([*said, run_line(messages, run, handle)]),
            id=first.id,
            agent=first.agent,
            meta={ORIGIN_KEY: {"handle": handle, "tokens": []}},
        )
        before = sum(cost[k] for k in ks)
        after = budget.counter.message(line)
        if after >= before:
            continue
        replaced[ks[0]] = line
        gone.update(ks)
        total -= before - after
        left -= sum(cost[k] for k in ks if cut[k])
        ids = tuple(m.id for u in run for m in messages[u.start : u.stop])
        changes.append(
            Change(
                "collapsed",
                stage,
                ids,
                run[0].start,
                before,
                after,
                f"{sum(cut[k] for k in ks)} cut tool exchanges into one line",
                len(run),
            )
        )
    if not changes:
        return finish(stage, messages, messages, (), budget)
    out: list[Message] = []
    for k, u in enumerate(us):
        if k in replaced:
            out.append(replaced[k])
        elif k not in gone:
            out.extend(messages[u.start : u.stop])
    return finish(stage, messages, out, changes, budget)
