r"""``CompactLossless``: shrink tool output and arguments without losing a thing.

Contract:

- Rewrites only what reads the same afterwards: JSON in tool results and
  tool-call arguments is re-serialised compactly where it parses as JSON
  (no ``NaN``, ``Infinity`` or ``1e400``), holds no repeated key and parses
  back to the same value, and a lone surrogate escape in it stays an escape
  (the text stays UTF-8); in tool results, trailing whitespace goes from
  each line, runs of blank lines become one, and a run of identical lines
  becomes the line and a count. Text parts, thinking, images,
  ids, names and error flags are never touched, nor anything in a pinned
  message.
- Each message is rewritten by ``compact_message``, a pure function of the
  message alone (so a caller may memoise it per message); the strategy works
  oldest first and stops once the conversation fits, like every stage.
- Each changed message is one ``compacted`` change; its ``what`` gives the
  tokens each rewrite saved (``json``, ``repeats``, ``whitespace``). The
  rewritten message keeps its original's handle (``contextwindow.handles``).

Example:
    >>> from contextwindow import Message, TokenCounter, ToolCall
    >>> from contextwindow.strategies import Budget
    >>> from contextwindow.testing import FakeTokenizer
    >>> log = "\n".join(["starting"] + ["waiting for the database"] * 5)
    >>> conv = [Message.user("go"),
    ...         Message.assistant(tool_calls=[ToolCall("c1", "run", '{"a": 1}')]),
    ...         Message.tool("c1", log),
    ...         Message.assistant(tool_calls=[ToolCall("c2", "get", "{}")]),
    ...         Message.tool("c2", '{\n  "ok": true,\n  "n": 3\n}'),
    ...         Message.assistant("done")]
    >>> fitted = CompactLossless()(conv, Budget(0, TokenCounter(FakeTokenizer())))
    >>> print(fitted.messages[2].text)
    starting
    waiting for the database
    [previous line repeated 4 more times]
    >>> fitted.messages[1].tool_calls[0].arguments, fitted.messages[4].text
    ('{"a":1}', '{"ok":true,"n":3}')
    >>> for c in fitted.report.changes:
    ...     print(c.kind, c.what, c.saved)
    compacted tool call: run (json 1) 1
    compacted tool result: run (repeats 10) 10
    compacted tool result: get (json 5) 5
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextwindow._json import escape_surrogates
from contextwindow.messages import (
    Message,
    Part,
    Text,
    ToolCall,
    ToolResult,
    dump_json,
    finite_float,
    refuse_constant,
)
from contextwindow.strategies._rescan import (
    Always,
    CallNames,
    Rewrite,
    rewrite_results,
    scan_messages,
)
from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    strategy_input,
)

__all__ = [
    "REWRITES",
    "CompactLossless",
    "compact_json",
    "compact_message",
    "squeeze_repeats",
    "squeeze_whitespace",
]

MIN_REPEATS = 3
"""Identical lines in a row that become one line and a count."""

_TRAILING = re.compile(r"(?<![ \t])[ \t]+$", re.MULTILINE)
"""A line's trailing blanks, tried only where a run of blanks starts: tried at
each blank, 40,000 spaces before a word took 11 s (each try ran to the word)."""
_BLANKS = re.compile(r"\n(?:[ \t]*\n){2,}")


class _Duplicate(ValueError):
    """A JSON object with a repeated key: compacting it would lose a value."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Duplicate
    return out


_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates,
    parse_constant=refuse_constant,
    parse_float=finite_float,
)
"""JSON alone: a repeated key, ``NaN``, ``Infinity`` and a number past a
double's range (``1e400``, which ``float`` reads as an infinity and writing
gives back as ``Infinity``) are a ``ValueError``."""


def compact_json(text: str) -> str | None:
    r"""``text`` as compact JSON, when it is JSON that survives the round trip.

    Non-ASCII text is written as it is, but a lone surrogate (``\ud83d``, a
    string cut inside an emoji) stays an escape: written raw, no UTF-8 text
    could carry it.

    Returns:
        The compact form, or ``None`` when ``text`` is not an object or an
        array, is not JSON (``NaN``, ``Infinity`` and ``1e400`` included),
        holds a repeated key, does not parse back to the same value, or is
        compact already.

    Example:
        >>> compact_json('{"a": [1, 2],\n "b": "x"}')
        '{"a":[1,2],"b":"x"}'
        >>> compact_json('{"a": 1, "a": 2}') is None  # a value would be lost
        True
        >>> compact_json('{"n": 1e400, "ok": true}') is None  # not Infinity
        True
        >>> compact_json('{"t": "cut \\ud83d",\n "n": 1}')
        '{"t":"cut \\ud83d","n":1}'
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = _DECODER.decode(stripped)
        out = escape_surrogates(dump_json(value))
        same = _DECODER.decode(out) == value
    except (ValueError, TypeError, RecursionError):
        return None
    return out if same and len(out) < len(text) else None


def squeeze_whitespace(text: str) -> str | None:
    r"""``text`` without trailing blanks on its lines, blank-line runs made one.

    Example:
        >>> squeeze_whitespace("a  \n\n\n\nb\t")
        'a\n\nb'
    """
    out = _BLANKS.sub("\n\n", _TRAILING.sub("", text))
    return out if out != text else None


def squeeze_repeats(text: str) -> str | None:
    r"""``text`` with each run of identical lines made the line and a count.

    Example:
        >>> print(squeeze_repeats("start\nwait\nwait\nwait\nwait\nend"))
        start
        wait
        [previous line repeated 3 more times]
        end
    """
    lines = text.split("\n")
    out: list[str] = []
    i, changed = 0, False
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j] == lines[i]:
            j += 1
        out.append(lines[i])
        n = j - i
        if n >= MIN_REPEATS and lines[i].strip():
            out.append(f"[previous line repeated {n - 1} more times]")
            changed = True
        else:
            out.extend(lines[i + 1 : j])
        i = j
    return "\n".join(out) if changed else None


REWRITES: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("json", compact_json),
    ("repeats", squeeze_repeats),
    ("whitespace", squeeze_whitespace),
)
"""The lossless rewrites of tool output, in the order applied, by name."""


def compact_message(
    message: Message, count: Callable[[str], int]
) -> tuple[Message, dict[str, int]]:
    """``message`` with its tool results and arguments compacted losslessly.

    Args:
        message: Any message (only tool results and tool calls change).
        count: Counts a text's tokens (for the savings).

    Returns:
        The message (the same object when nothing changed) and the tokens
        each rewrite saved, by name.
    """
    saved: dict[str, int] = {}
    parts: list[Part] = []
    changed = False
    for part in message.parts:
        new: Part = part
        if isinstance(part, ToolCall):
            args = compact_json(part.arguments)
            if args is not None:
                gain = count(part.arguments) - count(args)
                if gain > 0:
                    saved["json"] = saved.get("json", 0) + gain
                    new = replace(part, arguments=args)
        elif isinstance(part, ToolResult):
            new = _compact_result(part, count, saved)
        changed = changed or new is not part
        parts.append(new)
    return (message.with_parts(parts) if changed else message), saved


def _compact_result(
    result: ToolResult, count: Callable[[str], int], saved: dict[str, int]
) -> ToolResult:
    def squeeze(text: str) -> str:
        for name, rewrite in REWRITES:
            out = rewrite(text)
            if out is None:
                continue
            gain = count(text) - count(out)
            if gain > 0:
                saved[name] = saved.get(name, 0) + gain
                text = out
        return text

    if isinstance(result.content, str):
        text = squeeze(result.content)
        return result if text == result.content else replace(result, content=text)
    content = tuple(
        Text(squeeze(p.text)) if isinstance(p, Text) else p for p in result.content
    )
    return result if content == result.content else replace(result, content=content)


@dataclass(frozen=True, slots=True)
class CompactLossless:
    """Compact JSON, repeated lines and whitespace in tool output, losing nothing.

    See the module's contract. It has no options: what it does reads the
    same to a model, so there is nothing to tune.
    """

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Compact every unpinned message, oldest first, until the budget is met.

        Incremental as the tool-result stages are (``strategies._rescan``):
        a grown conversation reuses the compacted messages before the first
        place a decision can change.
        """
        messages = strategy_input(messages, budget)
        return rewrite_results(
            messages,
            budget,
            "CompactLossless",
            "compacted",
            _ALWAYS,
            self,
            _compact_scan,
        )


def _no_rewrite(result: ToolResult, position: int, origin: object) -> None:
    return None


_ALWAYS = Always(_no_rewrite)


def _compact_scan(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    rewrite: Rewrite,
    start: int,
    total: int,
    position: int,
    finals: tuple[int, ...],
) -> tuple[list[Message], list[Change], list[int], int]:
    """Compact from ``start`` while over budget (a ``_rescan.Scan``)."""
    counter = budget.counter
    names = CallNames(messages)

    def named(i: int, call_id: str) -> str:
        """The name of the call ``call_id`` (up to ``messages[i]``), else the id."""
        name = names(i + 1, call_id)
        return call_id if name is None else name

    def compact(
        i: int, m: Message
    ) -> tuple[Message, Callable[[], tuple[str, list[int]]]] | None:
        if m.role not in ("assistant", "tool") or not any(
            isinstance(p, (ToolCall, ToolResult)) for p in m.parts
        ):
            return None
        new, saved = compact_message(m, counter.text)
        if new is m or not saved:
            return None

        def describe() -> tuple[str, list[int]]:
            what = "tool call" if m.role == "assistant" else "tool result"
            shown = ", ".join(
                dict.fromkeys(
                    [c.name for c in m.tool_calls]
                    + [r.name or named(i, r.call_id) for r in m.tool_results]
                )
            )
            gains = ", ".join(f"{k} {v:,}" for k, v in saved.items())
            sizes = [counter.part(r) for r in m.tool_results]
            return f"{what}: {shown} ({gains})", sizes

        return new, describe

    return scan_messages(messages, budget, stage, kind, start, total, finals, compact)
