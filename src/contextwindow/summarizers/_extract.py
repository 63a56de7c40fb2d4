"""Extraction: every fact in one message, found with regular expressions.

``facts.extract_facts`` groups what ``facts_in`` finds into a record; the
rules (which parts are read for which kinds) are in ``facts``' contract.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextwindow._memo import WhileAlive
from contextwindow.handles import is_marker, marker_names, without_handles
from contextwindow.messages import Message, Text, Thinking, ToolCall, ToolResult
from contextwindow.summarizers._patterns import (
    CODE_FENCE,
    COMMAND_KEYS,
    COMMAND_TOOLS,
    DECISION,
    ERROR_LINE,
    PATH_KEYS,
    TASK,
    URL,
    USER_REQUEST,
    backtick_spans,
    commands_of,
    identifiers_in,
    is_command,
    is_identifier,
    numbers_in,
    paths_in,
    sentences,
    without_references,
)

if TYPE_CHECKING:
    from contextwindow.summarizers.facts import FactKind

__all__ = ["MAX_ERRORS_PER_RESULT", "MAX_SENTENCE", "facts_in", "short"]

MAX_SENTENCE = 200
"""Characters a task, decision or error keeps (cut at a word, with ``…``)."""

MAX_ERRORS_PER_RESULT = 3
"""Error lines read from one tool result."""


LONG_MESSAGE = 1_000
"""A message of at least this many characters of text is read once even when
it holds no fact (``_KNOWN``)."""


def _long(m: Message) -> bool:
    return sum(len(p.text) for p in m.parts if isinstance(p, Text | ToolResult)) >= (
        LONG_MESSAGE
    )


_KNOWN = WhileAlive[Message, "tuple[tuple[FactKind, str], ...]"](keep_empty=_long)
"""The facts of each message read while it lives (by content: they depend on
its role and parts alone). A summary made again as the cut moves reads the
whole older history again; each message with facts is read once, and so is a
long one without (about half of all hold none: keeping the short ones costs
more memory than reading them again; a long one costs more to read)."""


def facts_in(m: Message) -> tuple[tuple[FactKind, str], ...]:
    """Every fact in one message as ``(kind, text)``, in order, repeats included."""
    return _KNOWN.get(m, _read)


def _read(m: Message) -> tuple[tuple[FactKind, str], ...]:
    return tuple(_facts(m))


def _facts(m: Message) -> Iterator[tuple[FactKind, str]]:
    for part in m.parts:
        if isinstance(part, Text) and m.role in ("user", "assistant"):
            # A run's line names its handle: no identifier of the agent's.
            yield from _text_facts(without_handles(part.text), m.role)
        elif isinstance(part, Thinking) and m.role == "assistant":
            yield from _named_facts(part.text)
        elif isinstance(part, ToolCall):
            yield from _call_facts(part)
        elif isinstance(part, ToolResult):
            yield from _result_facts(part)


def _text_facts(text: str, role: str) -> Iterator[tuple[FactKind, str]]:
    prose = CODE_FENCE.sub(" ", text)
    for sentence in sentences(prose):
        if (
            role == "user" and (TASK.search(sentence) or USER_REQUEST.match(sentence))
        ) or (TASK.search(sentence) and "?" not in sentence):
            yield "task", short(sentence)
        elif DECISION.search(sentence):
            yield "decision", short(sentence)
    spans = backtick_spans(text)
    yield from _references(text, spans)
    for span in spans:
        if is_command(span):
            yield from _tag("command", commands_of(span))
        elif is_identifier(span):
            yield "identifier", span
    yield from _tag("identifier", identifiers_in(without_references(prose)))
    yield from _tag("number", numbers_in(prose, dates=True))


def _named_facts(text: str) -> Iterator[tuple[FactKind, str]]:
    """What reasoning names in code spans: commands and identifiers.

    Its sentences and bare words are thinking aloud (a path it guesses, a
    task it considers), not a record; a name it marks as code is.
    """
    for span in backtick_spans(text):
        if is_command(span):
            yield from _tag("command", commands_of(span))
        elif is_identifier(span):
            yield "identifier", span


def _references(text: str, spans: Sequence[str] = ()) -> Iterator[tuple[FactKind, str]]:
    """URLs and paths (paths outside URLs)."""
    urls = [u.rstrip(".,;:!?)]'\"") for u in URL.findall(text)]
    yield from _tag("url", urls)
    rest = URL.sub(" ", text)
    yield from _tag("path", paths_in(rest))


def _call_facts(call: ToolCall) -> Iterator[tuple[FactKind, str]]:
    args = call.input
    if not isinstance(args, dict):
        return
    values = cast("dict[str, Any]", args)
    command_tool = call.name.lower() in COMMAND_TOOLS
    for key, value in values.items():
        if not isinstance(value, str) or not value:
            continue
        k = key.lower()
        if k in PATH_KEYS and "\n" not in value and len(value) < 300:
            yield "path", value.strip()
        elif k in COMMAND_KEYS and (command_tool or is_command(value)):
            yield from _tag("command", commands_of(value))
            yield from _references(value)
        elif k == "url":
            yield "url", value.strip()
        elif len(value) < 2000:  # a description, a pattern, a query
            yield from _references(value)


def _result_facts(result: ToolResult) -> Iterator[tuple[FactKind, str]]:
    if is_marker(result):
        # A cut's marker: its size, lines and handle describe the cut; what
        # the output said is only what it named (the original's error line is
        # not in it).
        yield from _references(marker_names(result.text))
        return
    text = without_handles(result.text)  # a handle is no fact
    errors = 0
    if result.is_error:
        lines = [ln.strip() for ln in _TAGS.sub("", text).splitlines() if ln.strip()]
        if lines:
            head = lines[0]
            if _EXIT.match(head) and len(lines) > 1:
                head = f"{head}: {lines[1]}"
            yield "error", short(head)
            errors += 1
    for line in ERROR_LINE.findall(text):
        if errors >= MAX_ERRORS_PER_RESULT:
            break
        line = line.strip()
        if line:
            yield "error", short(line)
            errors += 1
    yield from _references(text)
    # Code spans in output are prose about code (an issue, a plan, docs):
    # the names they mark; bare names in output are file contents.
    yield from _tag("identifier", (s for s in backtick_spans(text) if is_identifier(s)))
    yield from _tag("number", numbers_in(text, dates=False))


_TAGS = re.compile(r"</?tool_use_error>")
_EXIT = re.compile(r"Exit code \d+$")
"""A failed command's first line: the line after it says what went wrong."""


def _tag(kind: FactKind, texts: Iterable[str]) -> Iterator[tuple[FactKind, str]]:
    return ((kind, t) for t in texts)


def short(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_SENTENCE:
        return text
    cut = text[: MAX_SENTENCE - 1].rsplit(" ", 1)[0]
    return cut + "…"
