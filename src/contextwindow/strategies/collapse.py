r"""Collapsing runs of cut tool exchanges: no flood of placeholders and bare calls.

Contract:

- A *cut* exchange is an unpinned tool exchange whose every result is a
  one-line marker (cleared, stale, deduplicated: ``is_marker``). Its calls
  are *bare* when the calling message takes at most ``BARE_CALL_TOKENS``; a
  call carrying a whole file to write is content, and only its markers count
  as cut (with ``edits``; without it such an exchange is left alone). Once
  clearing has made many of them, they are most of what is sent and say
  little (a cleared exchange costs about as much as its placeholder and its
  call).
- ``collapse_runs`` replaces runs of consecutive cut exchanges, oldest first,
  each by one assistant line naming the tools called and the paths, commands
  and short arguments they touched, and what their results named (a
  ``digest`` within ``RUN_DIGEST_SHARE`` of the run), with the handle of the
  run (``handles.run_handle``), until cut exchanges and runs' lines take at
  most ``max_share`` of the request (of the newest units the budget holds,
  when the conversation is still over it: the runs before those go whole
  too, and when the lines made it fit, the share is that of all of it). A
  run may hold the agent's own text messages between its exchanges (what
  the agent wrote, in them and in the calling messages, stays, before the
  line; reasoning goes) and exchanges of a bare call and results of at most
  ``FOLD_TOKENS``, which clearing would not shrink. The line keeps the id of
  the run's first calling message; the rest of the run goes; each run is one
  ``collapsed`` change. While still over once every run is a line, and
  cut exchanges and lines take more than ``FLOOR_TOKENS``, the oldest lines
  lose what their results named (``plain_line``; the last of them only the
  second half or three quarters of its names, when that is enough), then
  all but their count and handle (``bare_line``): one more ``collapsed``
  change for a line made before. What a run's markers named goes into its
  line, not their own figures (``marker_names``: the size a placeholder
  states is no fact of the output).
- Each cut moves in steps of the budget (``step_end``): the window starts
  at a step boundary, the runs that start in the step the last run needed
  ends in collapse too, and so do the lines shortened (the last keeps a
  part of its names only when no other line starts in its step). What is
  collapsed is then the same while the conversation grows by less than a
  step: a re-fit sends the request it sent before, and the new messages.
- ``cut_share`` is the measure: tokens of cut exchanges (their markers, and
  their calls when bare) and of runs' lines (``line_of``; not the agent's
  text before them) over the request's.
- ``CollapseRuns(strategy)`` bounds any strategy's output so: the default
  pipeline's, whatever stage it stopped at.
- Incremental: what each unit is (its cost, whether it is pinned, cut, or
  the agent's text) and the runs are kept in the budget's memo for the
  conversation seen last (one per caller); a conversation sharing a prefix
  with it has only the units from where they may differ looked at again (the
  shared prefix, the final messages), and a run collapsed before is the same
  line, the same object, when it holds the same messages. The result is what
  a call from scratch gives.

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
    >>> fitted = collapse_runs(conv, budget, 0.5, "ClearToolResults")
    >>> print(fitted.messages[1].text.replace("; ", ";\n"))
    [4 earlier tool calls, results cut: Read x4 (m0.py, m1.py, m2.py, m3.py);
    recall ce55461887+8]
    >>> [(c.kind, c.units, c.index) for c in fitted.report.changes]
    [('collapsed', 4, 1)]
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, compress, islice
from operator import attrgetter, is_
from typing import Any, cast

from contextwindow._args import check_messages
from contextwindow._prefix import common_prefix, shared_spans
from contextwindow.handles import (
    NAMING,
    ORIGIN_KEY,
    is_marker,
    marker_names,
    naming_span,
    output_of,
    run_handle,
)
from contextwindow.messages import (
    Message,
    Text,
    Thinking,
    ToolCall,
    Unit,
    units,
)
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    Report,
    check_budget,
    final_indices,
    finish,
    pinned_one,
    relocate,
    shares,
    step_end,
    trusted,
    verify,
)
from contextwindow.strategies.digest import Counted, digest, names
from contextwindow.strategies.files import file_actions

__all__ = [
    "MAX_CUT_SHARE",
    "CollapseRuns",
    "bare_line",
    "collapse_runs",
    "cut_share",
    "is_marker",
    "line_of",
    "marker_names",
    "named_in",
    "plain_line",
    "run_line",
]

MAX_CUT_SHARE = 0.1
"""The most of a request's tokens that cut exchanges (markers and their bare
calls) may take before runs of them collapse: measured on the Claude Code
sessions and a long session built from them (see benchmarks/README)."""

FLOOR_TOKENS = 200
"""Lines are never made shorter while cut exchanges and lines take at most
this many tokens in all: a short conversation's few lines are no flood."""

MAX_SUBJECTS = 24
"""Distinct paths, commands or arguments a run's line names per tool."""

SUBJECT_CHARS = 80
"""A command or argument is cut to this many characters in a run's line."""


MAX_NAMED = 12
"""Names (paths, identifiers, numbers) ``named_in`` keeps by default."""


def named_in(text: str, limit: int = MAX_NAMED) -> list[str]:
    """Paths, code identifiers and numbers of 3+ digits in ``text``: paths first.

    The first ``limit`` of ``digest.names``.

    Example:
        >>> named_in("see lib/a.ex and Repo.all at port 8080; lib/a.ex again")
        ['lib/a.ex', 'Repo.all', '8080']
    """
    return names(text)[:limit]


RUN_DIGEST_SHARE = 0.25
"""The share of a run's tokens its line may spend naming what its results
held (chosen on the Claude Code sessions: see benchmarks/README)."""


BARE_CALL_TOKENS = 200
"""A calling message larger than this carries content (an edit, a file to
write): its exchange is not a cut one, and is never collapsed."""


def _holds_items(m: Message) -> bool:
    """Whether ``m`` holds items a provider ran itself (a Responses web search).

    Read as text, they go back out as those items, so they are never folded
    into a collapsed line's text.
    """
    entry = m.meta.get("responses")
    items = (
        cast("Mapping[str, object]", entry).get("items")
        if isinstance(entry, Mapping)
        else None
    )
    return isinstance(items, list) and any(
        isinstance(e, Mapping) and "item" in e for e in cast("list[object]", items)
    )


def _is_cut(
    messages: Sequence[Message], unit: Unit, budget: Budget, *, bare: bool = True
) -> bool:
    """Whether a unit is a cut exchange (``bare``: with bare calls only)."""
    if unit.kind != "tool_exchange" or _holds_items(messages[unit.start]):
        return False
    if bare and budget.counter.message(messages[unit.start]) > BARE_CALL_TOKENS:
        return False
    results = [r for m in messages[unit.start + 1 : unit.stop] for r in m.tool_results]
    return bool(results) and all(is_marker(r) for r in results)


def cut_share(
    messages: Sequence[Message], budget: Budget, stage: str = "", edits: bool = False
) -> float:
    """Tokens of cut exchanges and runs' lines over the request's (0 when empty).

    ``edits``: whether the markers of calls carrying content count too.
    """
    total = budget.count(messages)
    if total <= 0:
        return 0.0
    return _tables(messages, budget, stage, edits).cutsum[-1] / total


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


def run_line(
    messages: Sequence[Message],
    run: Sequence[Unit],
    handle: str,
    named: str = "",
) -> str:
    """The one line standing for a run of cut exchanges.

    ``named``: what the run's results held (a ``digest``), said after the tools.
    """
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
    held = f", naming {named}" if named else ""
    return (
        f"[{n} earlier tool {calls}, results cut: {', '.join(parts)}{held}; "
        f"recall {handle}]"
    )


FOLD_TOKENS = 48
"""A result of at most this many tokens is folded into a run it lies inside
(``File created successfully at: a.py``): clearing it would not pay, and it
would break the run into two lines."""


def _is_small(messages: Sequence[Message], unit: Unit, budget: Budget) -> bool:
    """Whether a unit is an exchange of a bare call and small results (or markers)."""
    if unit.kind != "tool_exchange" or _holds_items(messages[unit.start]):
        return False
    if budget.counter.message(messages[unit.start]) > BARE_CALL_TOKENS:
        return False
    results = [r for m in messages[unit.start + 1 : unit.stop] for r in m.tool_results]
    return bool(results) and all(
        is_marker(r)
        or (
            isinstance(r.content, str) and budget.counter.text(r.content) <= FOLD_TOKENS
        )
        for r in results
    )


def _is_said(messages: Sequence[Message], unit: Unit) -> bool:
    """Whether a unit is an assistant message of text (and reasoning) alone.

    A run's line is not: it stands for what was cut, and is counted so.
    """
    m = messages[unit.start]
    return (
        unit.kind == "message"
        and m.role == "assistant"
        and all(isinstance(p, (Text, Thinking)) for p in m.parts)
        and not _holds_items(m)
        and line_of(m) is None
    )


_LINE = re.compile(
    r"\[\d+ earlier tool calls?, results cut[:;][^\n]*recall [0-9a-f]{10}\+\d+\]\Z"
)


def line_of(message: Message) -> str | None:
    """The line of a collapsed run in ``message`` (``None``: it is no run's line).

    A run's line is the last line of an assistant message that
    ``collapse_runs`` made (its record names a run's handle); the agent's
    text the run kept comes before it.
    """
    if message.role != "assistant" or not message.parts:
        return None
    last = message.parts[-1]
    if not isinstance(last, Text):
        return None
    record = message.meta.get(ORIGIN_KEY)
    handle = (
        cast("Mapping[str, object]", record).get("handle")
        if isinstance(record, Mapping)
        else None
    )
    if not isinstance(handle, str) or "+" not in handle:
        return None
    found = _LINE.search(last.text)
    return found.group(0) if found else None


_BARE = re.compile(r"\[(\d+) earlier tool calls?, results cut: .*; recall (\S+)\]\Z")


def bare_line(line: str) -> str:
    """A run's line with its count and handle alone.

    Example:
        >>> bare_line("[2 earlier tool calls, results cut: ls x2 (a, b); "
        ...           "recall 0123456789+4]")
        '[2 earlier tool calls, results cut; recall 0123456789+4]'
    """
    found = _BARE.match(line)
    if found is None:
        return line
    n, handle = found.groups()
    calls = "call" if n == "1" else "calls"
    return f"[{n} earlier tool {calls}, results cut; recall {handle}]"


def _name_count(line: str) -> int:
    """How many names the digest of a run's line holds."""
    found = _digest_of(line)
    return 0 if found is None else line.count(", ", *found)


def _digest_of(line: str) -> tuple[int, int] | None:
    """Where the digest of a run's line lies (``None``: it has none)."""
    found = naming_span(line)
    if found is None or " " in line[found[0] + len(NAMING) : found[1]].replace(
        ", ", ""
    ):
        return None  # names hold no spaces
    return found


def plain_line(line: str, keep: int = 0) -> str:
    """A run's line without what its results named, but the first ``keep`` names.

    Its calls and handle stay. The names go from the end of the digest, which
    holds its paths first and a JSON object's keys last.

    Example:
        >>> line = ("[2 earlier tool calls, results cut: ls x2, naming a.py, "
        ...         "8080; recall 0123456789+4]")
        >>> plain_line(line)
        '[2 earlier tool calls, results cut: ls x2; recall 0123456789+4]'
        >>> plain_line(line, keep=1)
        '[2 earlier tool calls, results cut: ls x2, naming a.py; recall 0123456789+4]'
    """
    found = _digest_of(line)
    if found is None:
        return line
    at, end = found
    if keep <= 0:
        return line[:at] + line[end:]
    named = line[at + len(NAMING) : end].split(", ")
    return line[:at] + NAMING + ", ".join(named[:keep]) + line[end:]


class _Tables:
    """What ``collapse_runs`` knows of each unit of one conversation.

    As machine numbers (``array``, ``bytearray``): a few bytes a unit, not an
    object and a pointer, since the memo keeps them between calls.
    """

    __slots__ = (
        "cost",
        "cut",
        "cutsum",
        "finals",
        "joins",
        "lines",
        "marked",
        "messages",
        "runs",
        "us",
    )

    def __init__(
        self,
        messages: Sequence[Message],
        us: tuple[Unit, ...],
        cost: array[int],
        cut: bytearray,
        joins: bytearray,
        marked: array[int],
        cutsum: array[int],
        runs: array[int],
        finals: tuple[int, ...],
        lines: list[int],
    ) -> None:
        self.lines = lines
        """The index of each message holding a run's line made before."""
        self.marked = marked
        """Each unit's tokens that count as cut."""
        self.messages = messages
        self.us = us
        self.cost = cost
        """Each unit's tokens."""
        self.cut = cut
        """Whether each unit is a cut exchange (unpinned)."""
        self.joins = joins
        """Whether each unit joins a run (cut, or the agent's own text)."""
        self.cutsum = cutsum
        """Tokens of the cut units before each unit (running sum)."""
        self.runs = runs
        """Each run of joined units, four numbers a run: first, last, and
        its trimmed bounds (-1, -1: it holds no cut unit)."""
        self.finals = finals


_TABLES_KEY = "contextwindow.collapse.tables"


def _tables(
    messages: Sequence[Message], budget: Budget, stage: str = "", edits: bool = False
) -> _Tables:
    """Each unit's cost, cut flag and the runs, from the memo's where it can.

    ``stage``: whose tables (each caller keeps its own, so each resumes);
    ``edits``: whether cut exchanges whose calls carry content join runs.
    """
    key = (_TABLES_KEY, stage, edits, budget.protected, budget.provider)
    old = budget.memo.get(key)
    if isinstance(old, _Tables) and old.messages is messages:
        return old
    us = units(messages)
    run_tokens = budget.counter.running(messages)
    finals = final_indices(messages, budget.provider)
    start = 0  # the first unit looked at again
    if isinstance(old, _Tables) and old.us and us:
        # Units that end before the last shared message stand (``units``
        # keeps those very objects), if the messages are the same objects,
        # and before the first place whose pin changed (the final message
        # moves on; a thinking turn's task and opener stay pinned).
        changed = set(old.finals).symmetric_difference(finals)
        k = min((common_prefix(messages, old.messages), *changed))
        n = bisect_left(old.us, k, key=_stop)
        n = min(n, len(us))
        if (
            n
            and old.us[n - 1] is us[n - 1]
            and shares(budget, messages, old.messages, old.us[n - 1].stop)
        ):
            start = n
    if start:
        assert isinstance(old, _Tables)
        cost, cut, joins = old.cost[:start], old.cut[:start], old.joins[:start]
        marked = old.marked[:start]
        runs = old.runs[: _RUN * _runs_before(old.runs, start - 1)]
        lines = old.lines[: bisect_left(old.lines, us[start - 1].stop)]
    else:
        cost, marked, runs = array("q"), array("q"), array("q")
        cut, joins, lines = bytearray(), bytearray(), []
    # What a unit is depends on its messages alone, but for the final ones:
    # a run of units met before at other places (the oldest units gone, runs
    # collapsed before them, messages appended after) is known, moved.
    moved = _moved_runs(old, messages, us, start, finals)
    markers = budget.protected
    i = start
    while i < len(us):
        if moved and i == moved[0][0]:
            assert isinstance(old, _Tables)
            i, k, n, d = moved.pop(0)
            cost += old.cost[k : k + n]
            cut += old.cut[k : k + n]
            joins += old.joins[k : k + n]
            marked += old.marked[k : k + n]
            a, b = old.us[k].start, old.us[k + n - 1].stop
            lines += [j + d for j in old.lines[bisect_left(old.lines, a) :] if j < b]
            i += n
            continue
        u = us[i]
        c = run_tokens[u.stop] - run_tokens[u.start]
        pinned = any(u.start <= f < u.stop for f in finals) or any(
            pinned_one(messages[j], markers) for j in range(u.start, u.stop)
        )
        is_cut, tokens, joined, line = _facts(messages, u, c, pinned, budget, edits)
        cost.append(c)
        cut.append(is_cut)
        marked.append(tokens)
        joins.append(joined)
        if line:
            lines.append(u.start)
        i += 1
    # The running sum of what is known stands; only the rest is added up.
    known = old.cutsum[: start + 1] if start and isinstance(old, _Tables) else None
    cutsum = known if known is not None else array("q", [0])
    cutsum.extend(accumulate(marked[start:], initial=cutsum[-1]))
    del cutsum[start + 1]  # ``initial`` again
    _add_runs(runs, joins, cut)
    found = _Tables(messages, us, cost, cut, joins, marked, cutsum, runs, finals, lines)
    budget.memo.put(key, found)
    return found


def _moved_runs(
    old: object,
    messages: Sequence[Message],
    us: tuple[Unit, ...],
    start: int,
    finals: tuple[int, ...],
) -> list[tuple[int, int, int, int]]:
    """Where ``old`` tables' units lie again in ``messages``, from ``start`` on.

    Each ``(i, k, n, d)``: units ``us[i : i + n]`` are ``old.us[k : k + n]``
    moved by ``d`` messages, over the very same message objects; none of
    them holds a final message of either. In order, not overlapping.
    """
    if not isinstance(old, _Tables) or not old.us or start >= len(us):
        return []
    # Old units must end before old's last message (the final ones, and the
    # last unit, which what was appended may extend, are not known).
    last_old = min((*old.finals, len(old.messages) - 1))
    last_new = min(finals, default=len(messages))
    found: list[tuple[int, int, int, int]] = []
    for first, end, d in shared_spans(old.messages, messages, us[start].start):
        i = bisect_left(us, first, lo=start, key=_start)
        while i < len(us) and us[i].stop <= end:
            k = bisect_left(old.us, us[i].start - d, key=_start)
            if k < len(old.us) and old.us[k].start == us[i].start - d:
                break
            i += 1
        else:
            continue
        n = bisect_right(old.us, min(end - d, last_old), lo=k, key=_stop) - k
        n = min(n, bisect_right(us, last_new, lo=i, key=_stop) - i)
        if n > 0 and us[i + n - 1].stop - d == old.us[k + n - 1].stop:
            found.append((i, k, n, d))
    return found


_start = attrgetter("start")
"""A unit's first message (``bisect``'s key)."""


_RUN = 4
"""Numbers a run takes in ``_Tables.runs``."""


def _runs_before(runs: array[int], last: int) -> int:
    """How many of ``runs`` (in order) end before unit ``last``."""
    k = len(runs) // _RUN
    while k and runs[_RUN * k - 3] >= last:
        k -= 1
    return k


def _trimmed(runs: array[int]) -> list[tuple[int, int]]:
    """Each run's trimmed bounds, of the runs holding a cut unit."""
    firsts = runs[2::_RUN]
    # At C speed: this runs each call, over every run of the conversation.
    return list(
        compress(zip(firsts, runs[3::_RUN], strict=True), map((-1).__lt__, firsts))
    )


def _add_runs(runs: array[int], joins: bytearray, cut: bytearray) -> None:
    """Add the runs of joined units, from the end of the last one in ``runs``."""
    a = -1
    n = len(joins)
    for i in range(runs[-3] + 1 if runs else 0, n):
        if joins[i]:
            if a < 0:
                a = i
        elif a >= 0:
            runs.extend((a, i - 1, *_trim(a, i - 1, cut)))
            a = -1
    if a >= 0:
        runs.extend((a, n - 1, *_trim(a, n - 1, cut)))


def _facts(
    messages: Sequence[Message],
    u: Unit,
    cost: int,
    pinned: bool,
    budget: Budget,
    edits: bool,
) -> tuple[bool, int, bool, str | None]:
    """What ``u`` (of ``cost`` tokens) is, for ``_tables``.

    Whether it is cut, its tokens that count as cut, whether it joins a run,
    and the run's line it holds (made before).
    """
    first = messages[u.start]
    is_cut = not pinned and _is_cut(messages, u, budget, bare=not edits)
    line = None if pinned or u.kind != "message" else line_of(first)
    # What is cut: a cut exchange's markers, and its calls when bare (a call
    # carrying a file to write is content); a run's line made before (only
    # its line, not the agent's text before it), which joins no run.
    if is_cut:
        call = budget.counter.message(first)
        marked = cost if call <= BARE_CALL_TOKENS else cost - call
    else:
        marked = budget.counter.text(line) if line else 0
    joined = is_cut or (
        not pinned and (_is_said(messages, u) or _is_small(messages, u, budget))
    )
    return is_cut, marked, joined, line


def _stop(u: Unit) -> int:
    return u.stop


def _trim(a: int, b: int, cut: bytearray) -> tuple[int, int]:
    """A run's bounds without the text units at its edges (-1, -1: no cut unit)."""
    while a <= b and not cut[a]:
        a += 1
    while b >= a and not cut[b]:
        b -= 1
    return (a, b) if a <= b else (-1, -1)


def collapse_runs(
    messages: Sequence[Message],
    budget: Budget,
    max_share: float,
    stage: str,
    *,
    edits: bool = False,
    again: bool = False,
    lane: str = "",
) -> Fitted:
    """Collapse the oldest runs of cut exchanges until they take at most ``max_share``.

    Args:
        messages: The conversation (its cut exchanges' markers already made).
        budget: Its budget (what counts, what is pinned).
        max_share: The share of the request's tokens cut exchanges may keep.
        stage: The strategy reported as making the changes.
        edits: Whether cut exchanges whose calls carry content (an edit, a
            file written) join runs too, their markers counted.
        again: Whether this is the second pass over a conversation the first
            made fit (its own memo, so that each pass resumes).
        lane: Whose memo, of a caller collapsing several conversations
            each call (each resumes from what its lane saw last).
    """
    total = counted = budget.count(messages)
    memo = stage + lane + (" again" if again else "")
    t = _tables(messages, budget, memo, edits)
    us, cost, cut, cutsum = t.us, t.cost, t.cut, t.cutsum
    window = 0  # the first message of what the budget holds
    older = 0  # the runs before it, all collapsed
    left = cutsum[-1]
    runs = _trimmed(t.runs)
    at = budget.counter.running(messages)  # where each message starts
    if total > budget.limit:
        held = _held(messages, budget, us, runs, at)
        if held is not None:  # else nothing of note fits: collapse from the oldest
            # The runs before go whole too: what room the lines free lets
            # older units back in, as lines, not as a flood of cut exchanges.
            older, total, start = held
            left = cutsum[-1] - cutsum[start]
            window = us[start].start
    # The lines made last time, by their runs' first message and length
    # (wherever the run stands now: the oldest units dropped move it).
    key = ("contextwindow.collapse.lines", memo, budget.rules)
    known = budget.memo.get(key)  # only this module puts it
    lines: _Lines = cast("_Lines", known) if isinstance(known, dict) else {}
    made: dict[tuple[int, int], _Line] = {}
    changes: list[Change] = []
    done: list[tuple[int, int, Message]] = []  # message span replaced, by its line
    # The runs before the window all collapse, whatever the share: mostly
    # those of the last call, over the same messages, taken as they were.
    older_key = ("contextwindow.collapse.older", memo, edits, budget.rules)
    counts = _take_older(
        budget.memo.get(older_key),
        (messages, us, runs, older),
        budget,
        made,
        done,
        changes,
    )
    reach = -1  # runs that start before this token position go too
    for k in range(len(counts) - 1, len(runs)):
        a, b = runs[k]
        needed = k < older or not (total <= 0 or left <= max_share * total)
        if not needed and at[us[a].start] >= reach:
            break
        if needed and k >= older:
            # The runs starting in the step this one ends in go too
            # (``step_end``): the last run collapsed stays put while the
            # conversation grows by less than a step.
            reach = step_end(at[us[b].stop], budget)
        span_at = (us[a].start, us[b].stop)
        before = sum(cost[a : b + 1])
        run_key = (id(messages[span_at[0]]), span_at[1] - span_at[0])
        hit = lines.get(run_key)
        if (
            hit is not None
            and hit[1].tokens_before == before
            and _same(hit[0], messages, span_at)
        ):
            span, change, line, tail = hit
            if change.index != span_at[0]:
                change = change.at(span_at[0])
        else:
            span = tuple(messages[span_at[0] : span_at[1]])
            change, line = _collapsed(
                messages, us[a : b + 1], cut[a : b + 1], before, budget, stage
            )
            tail = budget.counter.text(line.text.rsplit("\n", 1)[-1])
        made[run_key] = (span, change, line, tail)
        if change.tokens_after < before:
            done.append((span_at[0], span_at[1], line))
            changes.append(change)
        if k < older:
            counts.append(len(changes))
            continue
        if change.tokens_after >= before:
            continue
        total -= change.saved
        # The run's line is a placeholder too: what is left counts it.
        left -= cutsum[b + 1] - cutsum[a] - tail
    budget.memo.put(key, made)
    budget.memo.put(older_key, _Older.of(messages, runs, made, counts, done, changes))
    if total > 0 and left > max(max_share * total, FLOOR_TOKENS):
        # Every run is one line and cut exchanges still take too much: the
        # oldest lines lose what their results named, until they do not.
        _plainer(
            messages,
            budget,
            (stage, memo),
            max_share,
            (window, at),
            total,
            left,
            done,
            changes,
            t,
        )
    if not changes:
        return finish(stage, messages, messages, (), budget)
    out = _spliced(messages, done)
    # Whole units, and lines that are assistant turns of non-blank text alone,
    # valid wherever a unit may stand: only the first-turn rule can break.
    # Each change counts the messages it replaced and what stands for them.
    fitted = finish(stage, messages, out, changes, budget, kept=True, counted=counted)
    if not window or again or fitted.report.tokens_after > budget.limit:
        return fitted
    # It was over, and the lines made it fit: all of it is sent, so the share
    # is that of all of it.
    if cut_share(fitted.messages, budget, memo + " again", edits) <= max_share:
        return fitted
    more = collapse_runs(
        fitted.messages, budget, max_share, stage, edits=edits, again=True, lane=lane
    )
    later = named_runs(relocate(more.report, messages, fitted.messages), fitted.report)
    report = fitted.report.then(later)
    return Fitted(more.messages, replace(report, stages=fitted.report.stages))


def _spliced(
    messages: Sequence[Message], done: Sequence[tuple[int, int, Message]]
) -> list[Message]:
    """``messages`` with each span of ``done`` replaced by its line."""
    out: list[Message] = []
    at = 0
    for begin, stop, line in sorted(done, key=_first):
        out.extend(messages[at:begin])
        out.append(line)
        at = stop
    out.extend(messages[at:])
    return out


_Line = tuple[tuple[Message, ...], Change, Message, int]
"""A run's line as ``collapse_runs`` keeps it: the messages it stands for,
its change, the line, and the tokens of its last line (what it counts as)."""
_Lines = dict[tuple[int, int], _Line]
"""The lines of a call, by their runs' first message and length."""


@dataclass(frozen=True, slots=True)
class _Older:
    """What ``collapse_runs`` made of the runs before the window, last call."""

    messages: Sequence[Message]
    runs: list[tuple[int, int]]
    """Those runs, by their trimmed units."""
    made: list[tuple[tuple[int, int], _Line]]
    """Each run's line, as ``collapse_runs`` keeps them (one per run, in order)."""
    counts: list[int]
    """The lines put in by the runs before each (``len(runs) + 1`` of them)."""
    done: list[tuple[int, int, Message]]
    changes: list[Change]

    @staticmethod
    def of(
        messages: Sequence[Message],
        runs: Sequence[tuple[int, int]],
        made: dict[tuple[int, int], _Line],
        counts: list[int],
        done: list[tuple[int, int, Message]],
        changes: list[Change],
    ) -> _Older:
        n = len(counts) - 1  # the older runs gone through
        return _Older(
            messages,
            list(runs[:n]),
            list(islice(made.items(), n)),
            counts,
            done[: counts[-1]],
            changes[: counts[-1]],
        )


def _take_older(
    prior: object,
    now: tuple[Sequence[Message], Sequence[Unit], Sequence[tuple[int, int]], int],
    budget: Budget,
    made: dict[tuple[int, int], _Line],
    done: list[tuple[int, int, Message]],
    changes: list[Change],
) -> list[int]:
    """Put in what ``prior`` made of the leading older runs it shares with ``now``.

    ``now``: the messages, their units, the runs and how many lie before
    the window. The leading runs both have, up to the message after the
    last of them (which decides where that unit ends), over the very same
    objects: the same units, tokens and lines. Returns the count of changes
    after each run taken (``[0]`` and one more a run).
    """
    messages, us, runs, older = now
    if not isinstance(prior, _Older) or not older or not prior.runs:
        return [0]
    n = min(older, common_prefix(runs, prior.runs))
    while n:
        end = us[runs[n - 1][1]].stop
        if end < len(messages) and end < len(prior.messages):
            if not shares(budget, messages, prior.messages, end + 1):
                return [0]
            counts = prior.counts[: n + 1]
            made.update(islice(prior.made, n))
            done += prior.done[: counts[-1]]
            changes += prior.changes[: counts[-1]]
            return counts
        n -= 1
    return [0]


def _held(
    messages: Sequence[Message],
    budget: Budget,
    us: Sequence[Unit],
    runs: Sequence[tuple[int, int]],
    run_tokens: Sequence[int],
) -> tuple[int, int, int] | None:
    """For a conversation still over: the newest units the budget holds.

    The oldest units will go (``DropOldest``), so the share that matters is
    that of the longest run of units, from the end, whose tokens fit, from
    the end of a step (``step_end``, so that it moves in steps as the
    conversation grows): the number of runs before it, its tokens and its
    first unit (``None`` when no run lies in it). ``run_tokens``: the
    messages' running totals.
    """
    end = run_tokens[-1]
    # The first unit starting at or after the step boundary at or above
    # where what fits begins.
    begin = step_end(end - budget.limit - 1, budget)
    lo, hi = 0, len(us)  # the first unit of that run lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if run_tokens[us[mid].start] >= begin:
            hi = mid
        else:
            lo = mid + 1
    kept = end - run_tokens[us[lo].start] if lo < len(us) else 0
    first = bisect_left(runs, lo, key=_first)
    return (first, kept, lo) if first < len(runs) else None


def _plainer(
    messages: Sequence[Message],
    budget: Budget,
    names: tuple[str, str],
    max_share: float,
    where: tuple[int, Sequence[int]],
    total: int,
    left: int,
    done: list[tuple[int, int, Message]],
    changes: list[Change],
    tables: _Tables,
) -> None:
    """Make lines shorter, oldest first, until within ``max_share``.

    ``names``: the stage the changes name, and whose memo (its lane);
    ``where``: the first message of what the budget holds, and where each
    message starts (the running token totals).

    First each line loses what its results named (``plain_line``; the last
    line touched keeps the first half or quarter of its names when that is
    enough), then, if that is not enough, what its calls touched
    (``bare_line``). In each pass, the lines starting in the step of the
    budget (``step_end``) that the last one needed ends in go too, so the
    lines shortened stay put while the conversation grows by less than a
    step; the last line keeps a part of its names only when no other line
    starts in that step. ``done`` and
    ``changes`` (the runs collapsed now, and their changes) are updated in
    place: a new line becomes shorter in its change; a line made before (in
    ``messages``, where ``tables`` found them) is one more ``collapsed``
    change. A line made shorter before is that same message again (the
    budget's memo keeps them for the lines of the last call).
    """
    window, starts = where
    new = {begin: k for k, (begin, _, _) in enumerate(done)}
    change_at = {c.index: j for j, c in enumerate(changes)}
    before = tables.lines[bisect_left(tables.lines, window) :]
    at = sorted({*before, *(b for b in new if b >= window)})
    stage, memo = names  # the stage reported, whose memo
    key = ("contextwindow.collapse.shorter", memo, budget.rules)
    found = budget.memo.get(key)
    # The lines made shorter last call, and a new run's change with its line
    # made shorter: the same objects for the same line and change (a re-fit
    # redoes these each call). One memo entry: the memo is small.
    known: _Shorters
    moved: _Moved
    if isinstance(found, tuple):  # only this function puts it
        known, moved = cast("tuple[_Shorters, _Moved]", found)
    else:
        known, moved = {}, {}
    made: _Shorters = {}
    kept: _Moved = {}
    budget.memo.put(key, (made, kept))

    def shorter(m: Message, keep: int) -> _Shorter:
        hit = known.get((id(m), keep))
        if hit is None or hit[0] is not m:
            hit = _shorter(m, keep, budget)
        made[id(m), keep] = hit
        return hit

    for bare in (False, True):
        reach = -1  # lines starting before this token position go too
        for n_at, i in enumerate(at):
            allowed = max(max_share * total, FLOOR_TOKENS)
            if left <= allowed and starts[i] >= reach:
                return
            k = new.get(i)
            m = done[k][2] if k is not None else messages[i]
            hit = shorter(m, BARE if bare else 0)
            if hit[1] is None:
                continue
            if left > allowed:
                # The lines starting in the step this one's messages end in
                # go too: the lines shortened stay put while the
                # conversation grows by less than a step.
                reach = step_end(starts[done[k][1] if k is not None else i + 1], budget)
                last = n_at + 1 == len(at) or starts[at[n_at + 1]] >= reach
                if not bare and last:
                    hit = _part(m, hit, left, total, max_share, shorter)
            _, fewer, less, after = hit
            assert fewer is not None
            left -= less
            total -= less
            if k is not None:
                begin, stop, _ = done[k]
                done[k] = (begin, stop, fewer)
                j = change_at[begin]
                was = changes[j]
                pair = moved.get((id(was), after))
                if pair is None or pair[0] is not was:
                    pair = (was, was.at(was.index, after))
                kept[id(was), after] = pair
                changes[j] = pair[1]
                continue
            new[i] = len(done)
            done.append((i, i + 1, fewer))
            change_at[i] = len(changes)
            changes.append(
                Change(
                    "collapsed",
                    stage,
                    (m.id,),
                    i,
                    budget.counter.message(m),
                    after,
                    SHORTER,
                    1,
                )
            )


def _part(
    m: Message,
    hit: _Shorter,
    left: int,
    total: int,
    max_share: float,
    shorter: Callable[[Message, int], _Shorter],
) -> _Shorter:
    """``hit`` (``m``'s line without its digest), or a part of it enough frees.

    Losing its whole digest may free more than the share needs: then the
    line keeps the first half or quarter of its names when that frees
    enough (a few fixed steps, so that a re-fit finds the same line).
    """
    # What must go for the share to hold: the request shrinks with the
    # line, so a share of it allows a little less after.
    need: float = left - FLOOR_TOKENS
    if max_share < 1:
        need = min(need, (left - max_share * total) / (1 - max_share))
    if hit[2] <= need:
        return hit
    line = line_of(m)
    n = _name_count(line) if line is not None else 0
    for keep in sorted({n // 2, n // 4} - {0, n}, reverse=True):
        part = shorter(m, keep)
        if part[1] is not None and part[2] >= need:
            return part
    return hit


_Shorter = tuple[Message, Message | None, int, int]
"""A line's message, it made shorter (``None``: it cannot be), the tokens
its line lost and the shorter message's tokens."""
_Shorters = dict[tuple[int, int], _Shorter]
"""Lines made shorter, by their message's ``id`` and what they keep."""
_Moved = dict[tuple[int, int], tuple[Change, Change]]
"""A new run's change and it again for its line made shorter, by the change's
``id`` and the shorter message's tokens."""


BARE = -1
"""``_shorter``'s ``keep`` for a line made bare."""


def _shorter(m: Message, keep: int, budget: Budget) -> _Shorter:
    """``m`` with its run's line made shorter.

    ``bare_line`` when ``keep`` is ``BARE``, else ``plain_line`` keeping the
    first ``keep`` names.
    """
    line = line_of(m)
    if line is None:
        return (m, None, 0, 0)
    short = bare_line(line) if keep == BARE else plain_line(line, keep)
    if short == line:
        return (m, None, 0, 0)
    last = m.parts[-1]
    assert isinstance(last, Text)
    fewer = replace(m, parts=(*m.parts[:-1], Text(last.text[: -len(line)] + short)))
    text = budget.counter.text
    return (m, fewer, text(line) - text(short), budget.counter.message(fewer))


SHORTER = "a run's line made shorter"
"""What a change making a line made before shorter says."""


def named_runs(later: Report, earlier: Report) -> Report:
    """``later`` with each line it made shorter naming its run's messages.

    A line made before is known by its own id alone; the ``collapsed`` change
    of ``earlier`` that made it names every message of its run.

    Example:
        >>> r = Report(10, 8, 10, (Change("collapsed", "x", ("a", "b"), 0, 9, 4,
        ...                               "2 cut tool exchanges into one line", 2),))
        >>> s = Report(8, 7, 10, (Change("collapsed", "x", ("a",), 0, 4, 3, SHORTER),))
        >>> named_runs(s, r).changes[0].ids
        ('a', 'b')
    """
    runs = {c.ids[0]: c.ids for c in earlier.changes if c.kind == "collapsed"}
    changes = tuple(
        replace(c, ids=runs.get(c.ids[0], c.ids), units=1)
        if c.kind == "collapsed" and c.what == SHORTER and len(c.ids) == 1
        else c
        for c in later.changes
    )
    return replace(later, changes=changes)


def _first(r: tuple[int, ...] | tuple[int, int, Message]) -> int:
    return r[0]  # pyright: ignore[reportReturnType]  # an int, first in each


def _same(
    span: tuple[Message, ...], messages: Sequence[Message], at: tuple[int, int]
) -> bool:
    """Whether ``messages[at[0]:at[1]]`` are the very objects of ``span``."""
    a, b = at
    if b - a != len(span) or b > len(messages):
        return False
    return all(map(is_, span, messages[a:b]))  # at C speed


def _collapsed(
    messages: Sequence[Message],
    run: Sequence[Unit],
    cut: Sequence[int],
    before: int,
    budget: Budget,
    stage: str,
) -> tuple[Change, Message]:
    """The line standing for ``run`` (whose units take ``before``), and its change."""
    first = messages[run[0].start]
    handle = run_handle(messages[run[0].start : run[-1].stop])
    said = [
        p.text
        for u in run
        for p in messages[u.start].parts
        if isinstance(p, Text) and p.text.strip()
    ]
    plain = run_line(messages, run, handle)
    # A marker's own figures (the size it states, a line count, a message
    # index) are no facts of the output: only what it named is.
    held = [
        output_of(r)
        for u in run
        for m in messages[u.start + 1 : u.stop]
        for r in m.tool_results
    ]
    # What calls carrying content (a file written, an edit) held, after it.
    held += [
        c.arguments
        for u in run
        if budget.counter.message(messages[u.start]) > BARE_CALL_TOKENS
        for c in messages[u.start].tool_calls
    ]
    tok = Counted(budget.counter.text)
    cap = int(before * RUN_DIGEST_SHARE)
    named = digest("\n".join(held), cap, tok, kept=plain) if cap > 0 else ""
    line = Message.assistant(
        "\n".join([*said, run_line(messages, run, handle, named)]),
        id=first.id,
        agent=first.agent,
        meta={ORIGIN_KEY: {"handle": handle, "tokens": []}},
    )
    after = budget.counter.message(line)
    ids = tuple(m.id for u in run for m in messages[u.start : u.stop])
    change = Change(
        "collapsed",
        stage,
        ids,
        run[0].start,
        before,
        after,
        _what(len(run), sum(cut)),
        len(run),
    )
    return change, line


def _what(n: int, cut: int) -> str:
    """What a collapsed change says it replaced: every exchange of the run.

    Example:
        >>> _what(2, 2), _what(6, 5)
        ('2 cut tool exchanges into one line', '6 tool exchanges (5 cut) into one line')
    """
    if cut == n:
        return f"{n} cut tool exchanges into one line"
    return f"{n} tool exchanges ({cut} cut) into one line"


@dataclass(frozen=True, slots=True)
class CollapseRuns:
    r"""Run a strategy, then keep cut exchanges to ``max_share`` of what it returns.

    Whatever stage made the markers (``Deduplicate``, ``StaleReads``,
    ``ClearToolResults``) and whatever ran after it (a truncation, a drop of
    the oldest units), the request this returns holds at most ``max_share``
    of cut exchanges and runs' lines (``cut_share``): the oldest runs of them
    collapse (``collapse_runs``), then the oldest lines lose what their
    results named, while over. Only when every run is one plain line does
    more remain (a conversation of little else). It only takes tokens away,
    so what fitted still fits.

    Args:
        strategy: The strategy whose output is bounded. A user's is checked
            as ``fit`` checks a stage (``verify``): its output made valid,
            what every strategy keeps put back, its changes accounted under
            its own name.
        max_share: The share of the request cut exchanges may take.

    Raises:
        ContextWindowError: ``max_share`` outside [0, 1], or a ``strategy``
            that is not one; when called, a user's ``strategy`` that
            returned something other than a ``Fitted`` (naming it).

    Example:
        >>> import json
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget, StaleReads
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.user("go")]
        >>> for i in range(4):
        ...     args = json.dumps({"file_path": "a.py"})
        ...     call = ToolCall(f"c{i}", "Read", args)
        ...     conv += [Message.assistant(tool_calls=[call]),
        ...              Message.tool(f"c{i}", "x = 1\n" * 40)]
        >>> conv.append(Message.user("and now?"))
        >>> budget = Budget(200, TokenCounter(FakeTokenizer()))
        >>> fitted = CollapseRuns(StaleReads())(conv, budget)
        >>> [c.kind for c in fitted.report.changes]
        ['stale', 'stale', 'stale', 'collapsed']
        >>> print(fitted.messages[1].text)
        [3 earlier tool calls, results cut: Read x3 (a.py); recall c0876a6575+6]
    """

    strategy: Any
    """The strategy whose output is bounded."""
    max_share: float = MAX_CUT_SHARE
    """The share of the request cut exchanges may take."""

    def __post_init__(self) -> None:
        from contextwindow._args import as_strategy, check_number

        object.__setattr__(self, "strategy", as_strategy(self.strategy, "strategy"))
        check_number(self.max_share, "max_share", low=0, high=1)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Fit with ``strategy``; collapse what it left over ``max_share``."""
        # The budget is checked and a generator read here (both are used
        # again below); the messages, by ``strategy`` (a pipeline checks only
        # what is new since its last input).
        check_budget(budget)
        if not isinstance(messages, list | tuple):
            messages = check_messages(messages)
        fitted: Fitted = self.strategy(messages, budget)
        if not trusted(self.strategy):
            # A user's strategy: its output is checked as ``fit`` checks it
            # (a wrong type named, pins and pairs put back, its changes
            # accounted under its own name), before any of it is collapsed.
            fitted = verify(self.strategy, messages, fitted, budget)
        got = fitted.messages
        share = cut_share(got, budget, "CollapseRuns", edits=True)
        if self.max_share >= 1 or share <= self.max_share:
            return fitted
        later = collapse_runs(got, budget, self.max_share, "CollapseRuns", edits=True)
        if not later.report.changes:
            return fitted
        moved = relocate(later.report, messages, got, memo=budget.memo)
        report = fitted.report.then(named_runs(moved, fitted.report))
        return replace(fitted, messages=later.messages, report=report)
