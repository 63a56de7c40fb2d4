"""The ``Scorer`` protocol, and the text a unit of a conversation is scored by.

Contract:

- A scorer is any callable ``scorer(documents, query, /) -> list[float]``:
  one score per document, higher is more relevant. The documents are the
  texts of a conversation's units, in conversation order, so a scorer may
  look at a unit's neighbours. Scores only rank: their scale means nothing
  across calls.
- A scorer is pure: the same documents and query give the same scores. It may
  cache what it computed per document (term counts, vectors), so scoring a
  conversation again after one new message costs that message, not the
  history; a cache never changes a result.
- ``document(messages)`` is the text of a unit: for each message its speaker
  name, the date its ``meta`` records (``date_time`` text, as the LoCoMo
  reader sets it, or an ISO ``timestamp``, as the Claude Code reader does), its
  text, its reasoning, its tool calls (name and arguments) and its tool
  results, one message per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

from contextwindow._args import check_messages, shown
from contextwindow.errors import ArgumentTypeError, InvalidMessageError
from contextwindow.messages import Message, Text, Thinking, ToolCall, ToolResult

__all__ = ["Scorer", "document", "when"]


class Scorer(Protocol):
    """Anything that ranks documents against a query.

    Example:
        >>> def shared_words(documents, query, /):
        ...     q = set(query.split())
        ...     return [float(len(q & set(d.split()))) for d in documents]
        >>> shared_words(["red car", "blue sky"], "a red sky")
        [1.0, 1.0]
    """

    def __call__(self, documents: Sequence[str], query: str, /) -> list[float]:
        """One score per document, in order (higher: more relevant)."""
        ...


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAY_MONTH_YEAR = re.compile(
    r"\b(\d{1,2})\s+(" + "|".join(_MONTHS) + r")\b,?\s+(\d{4})\b", re.IGNORECASE
)


def when(meta: Mapping[str, Any]) -> str:
    """The date a message's ``meta`` records, as ``day Month year``; else ``""``.

    Example:
        >>> when({"date_time": "1:56 pm on 8 May, 2023"})
        '8 May 2023'
        >>> when({"timestamp": "2026-02-10T09:15:00.000Z"})
        '10 February 2026'
        >>> when({})
        ''
    """
    if not isinstance(meta, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("meta", shown(meta), "a mapping (a message's meta)")
    text = meta.get("date_time")
    if isinstance(text, str):
        found = _date_text(text)
        if found:
            return found
    stamp = meta.get("timestamp")
    return _iso_date(stamp) if isinstance(stamp, str) else ""


@lru_cache(maxsize=4096)
def _date_text(text: str) -> str:
    m = _DAY_MONTH_YEAR.search(text)
    if m is None:
        return ""
    return f"{int(m.group(1))} {m.group(2).capitalize()} {m.group(3)}"


@lru_cache(maxsize=4096)
def _iso_date(stamp: str) -> str:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


def document(messages: Iterable[Message]) -> str:
    """The text a unit is scored by (see the module's contract).

    Example:
        >>> from contextwindow.messages import ToolCall
        >>> unit = [Message.assistant("Checking.", tool_calls=[
        ...             ToolCall("c1", "read_file", '{"path": "app.py"}')]),
        ...         Message.tool("c1", "def main(): ...")]
        >>> print(document(unit))
        Checking. read_file {"path": "app.py"}
        def main(): ...
    """
    if not isinstance(messages, list | tuple):
        messages = check_messages(messages)  # a generator: read once
    lines: list[str] = []
    for i, m in enumerate(messages):
        if m.__class__ is not Message and not isinstance(m, Message):  # pyright: ignore[reportUnnecessaryIsInstance]  # a list or tuple given may hold anything
            raise InvalidMessageError(
                f"messages[{i}]", f"expected a Message, got {type(m).__name__}"
            )
        words: list[str] = []
        if m.name:
            words.append(m.name)
        date = when(m.meta) if m.meta else ""
        if date:
            words.append(date)
        for p in m.parts:
            if isinstance(p, (Text, ToolResult)):
                words.append(p.text)
            elif isinstance(p, ToolCall):
                words.append(f"{p.name} {p.arguments}")
            elif isinstance(p, Thinking) and not p.redacted:
                words.append(p.text)
        lines.append(" ".join(words))
    return "\n".join(lines)
