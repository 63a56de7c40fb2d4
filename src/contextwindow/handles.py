r"""Handles: the way back from a cut to the original in the full history.

Contract:

- A message's *handle* is ten hex digits of a hash of its content (role,
  name and parts; not its id or meta), so it names the same message in the
  history a strategy was given, in a manager's log and in a store, whatever
  ids a conversion gave the messages.
- The first strategy that rewrites a message (clears, truncates,
  deduplicates, marks stale, compacts) records the original's handle, and
  the tokens each of its tool results took, in the rewritten message's
  ``meta[ORIGIN_KEY]``; later stages keep that record, so a marker always
  names the original, never an intermediate rewrite, and a placeholder states
  the original size. A marker shows the handle in its text.
- A run of messages (one line standing for many) has a handle made of its
  messages' handles, and a count: ``3f2a9c1b0d+12`` (``run_handle``), so it
  names that run even where the same message occurs elsewhere.
- ``originals(history, handle)`` finds what a handle names: the message with
  that content hash, the run with that handle, or the message with that id.
  Nothing is changed.
- ``originals_of(history, messages)`` puts back, in a list of messages,
  the original of each rewrite (and the messages of each run's line) that
  ``history`` holds, found by id (a rewrite keeps its message's id; a run's
  line its first message's) and checked by handle: what a summary of
  compacted messages should read, not their placeholders.
- A marker's text is read here too: ``is_marker`` (a one-line result with a
  handle), ``marker_names`` (what it named of the original: the rest, its
  size and lines, describes the cut), ``output_of`` (a result's output, a
  marker's names) and ``without_handles``; a summary shows ``span_handle``
  of what it replaced.

Example:
    >>> from contextwindow.messages import Message
    >>> history = [Message.user("fix a.py"), Message.tool("c1", "x = 1\n" * 50)]
    >>> h = handle_of(history[1])
    >>> (len(h), originals(history, h) == [history[1]])
    (10, True)
    >>> originals(history, run_handle(history)) == history
    True
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from contextwindow._args import shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.messages import Message, ToolResult

__all__ = [
    "HANDLE_PATTERN",
    "NAMING",
    "ORIGIN_KEY",
    "content_handle",
    "find_handles",
    "handle_of",
    "is_marker",
    "marker_names",
    "naming_span",
    "original_sizes",
    "originals",
    "originals_of",
    "output_of",
    "run_handle",
    "span_handle",
    "with_origin",
    "without_handles",
]

ORIGIN_KEY = "contextwindow.origin"
"""The ``Message.meta`` key of the record a rewrite keeps of its original."""

HANDLE_PATTERN = re.compile(r"\b([0-9a-f]{10})(?:\+(\d+))?\b")
"""A handle as markers show it: ten hex digits, and ``+count`` for a run."""

_MARKED = re.compile(r"(?:recall|handle) ([0-9a-f]{10}(?:\+\d+)?)")


def content_handle(message: Message) -> str:
    """Ten hex digits of the hash of ``message``'s content (role, name, parts).

    Computed once per message object (kept in a slot of its own): a re-fit
    asks again for the handles of every message it cuts or runs together.

    Example:
        >>> content_handle(Message.user("hi")) == content_handle(Message.user("hi"))
        True
    """
    try:
        return message._handle  # pyright: ignore[reportPrivateUsage]  # the slot kept for it
    except AttributeError:
        pass
    shown = repr((message.role, message.name, message.parts))
    found = hashlib.sha1(shown.encode(), usedforsecurity=False).hexdigest()[:10]
    object.__setattr__(message, "_handle", found)
    return found


def _origin(message: Message) -> Mapping[str, Any]:
    value = message.meta.get(ORIGIN_KEY)
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def handle_of(message: Message) -> str:
    """The handle of ``message``'s original: its record's, else its own content's."""
    handle = _origin(message).get("handle")
    return handle if isinstance(handle, str) else content_handle(message)


def original_sizes(message: Message) -> tuple[int, ...] | None:
    """Tokens of each tool result of the original, when a rewrite recorded them."""
    sizes: Any = _origin(message).get("tokens")
    if isinstance(sizes, list):
        given = cast("Sequence[Any]", sizes)
        found = [n for n in given if isinstance(n, int)]
        if len(found) == len(given):
            return tuple(found)
    return None


def with_origin(
    new: Message, old: Message, sizes: Sequence[int] | None = None
) -> Message:
    """``new`` with ``old``'s origin record (a fresh one when ``old`` has none).

    Args:
        new: The rewritten message.
        old: The message it was made from (an original or an earlier rewrite).
        sizes: Tokens of each of ``old``'s tool results, used when ``old``
            holds no record yet (then ``old`` is the original); ``None``
            records none (``original_sizes`` then has none to give).

    Example:
        >>> old = Message.assistant("ok")
        >>> new = with_origin(Message.assistant("ok!", id=old.id), old)
        >>> handle_of(new) == content_handle(old), original_sizes(new)
        (True, None)
    """
    record = _origin(old)
    if not record:
        fresh: dict[str, Any] = {"handle": content_handle(old)}
        if sizes is not None:
            fresh["tokens"] = list(sizes)
        record = fresh
    if _origin(new) == record:
        return new
    meta = {**new.meta, ORIGIN_KEY: dict(record)}
    return Message(new.role, new.parts, new.name, new.agent, new.pinned, new.id, meta)


def run_handle(messages: Sequence[Message]) -> str:
    """The handle of a run of messages: their originals' handles hashed, and a count.

    Example:
        >>> run_handle([Message.user("a"), Message.user("b")]).endswith("+2")
        True
    """
    return f"{_joined([handle_of(m) for m in messages])}+{len(messages)}"


def span_handle(messages: Sequence[Message]) -> str:
    """Ten hex digits naming ``messages`` together, by their originals' content.

    What a summary of them shows (``summary_handle``): the same messages give
    the same handle, whatever their ids.

    Example:
        >>> span_handle([Message.user("a")]) == span_handle([Message.user("a")])
        True
    """
    return _joined([handle_of(m) for m in messages])


def _joined(handles: Sequence[str]) -> str:
    digest = hashlib.sha1("+".join(handles).encode(), usedforsecurity=False)
    return digest.hexdigest()[:10]


def find_handles(text: str) -> list[str]:
    """The handles a marker's text names (after ``recall`` or ``handle``).

    Example:
        >>> find_handles("[tool result cleared: 9 tokens; recall 0123456789]")
        ['0123456789']
    """
    return _MARKED.findall(text)


NAMING = ", naming "
"""What comes before the names a marker keeps of what it cut."""


def is_marker(result: ToolResult) -> bool:
    """Whether a result is one of the strategies' one-line markers (with a handle).

    Example:
        >>> text = "[tool result cleared: 9 tokens; recall 0123456789]"
        >>> (is_marker(ToolResult("c1", text)), is_marker(ToolResult("c1", "9 tokens")))
        (True, False)
    """
    if not isinstance(result.content, str):
        return False
    text = result.content
    return (
        text.startswith("[")
        and text.endswith("]")
        and "\n" not in text
        and bool(find_handles(text))
    )


def marker_names(text: str) -> str:
    """What a one-line marker named (``", naming a.py, 8080"``: ``"a.py, 8080"``).

    Empty when it names nothing: the rest of a marker (the size it states,
    its lines, its sha, the message that superseded it) describes the cut,
    not what the output said.

    Example:
        >>> marker_names("[tool result cleared: 375 tokens, lines 1-80, "
        ...              "naming a.py, 8080; recall 0123456789]")
        'a.py, 8080'
        >>> marker_names("[tool result cleared: 375 tokens; recall 0123456789]")
        ''
    """
    found = naming_span(text)
    return text[found[0] + len(NAMING) : found[1]] if found else ""


def output_of(result: ToolResult) -> str:
    """What a result holds of its tool's output: its text, or a marker's names.

    Of a marker only what it named counts (``marker_names``): its size, lines
    and handle describe the cut, not what the output said.

    Example:
        >>> output_of(ToolResult("c1", "[tool result cleared: 375 tokens, "
        ...                      "naming a.py; recall 0123456789]"))
        'a.py'
        >>> output_of(ToolResult("c1", "port 8080"))
        'port 8080'
    """
    return marker_names(result.text) if is_marker(result) else result.text


def naming_span(text: str) -> tuple[int, int] | None:
    """Where ``, naming ...`` lies before a marker's ``; recall`` (``None``: none)."""
    end = text.rfind("; recall ")
    at = text.rfind(NAMING, 0, end)
    return (at, end) if at >= 0 and end >= 0 else None


def without_handles(text: str) -> str:
    """``text`` with the handles its markers show taken out: they are no facts.

    Example:
        >>> without_handles("[tool result cleared: 9 tokens; recall 0123456789]")
        '[tool result cleared: 9 tokens; recall]'
    """
    return (
        _MARKED.sub(_keyword, text) if "recall " in text or "handle " in text else text
    )


def _keyword(found: re.Match[str]) -> str:
    return found.group(0).split(" ", 1)[0]


def originals(history: Sequence[Message], handle: str) -> list[Message]:
    """The messages of ``history`` that ``handle`` names (see the module's contract).

    Returns:
        The original message, or the run of them, in history order; ``[]``
        when nothing in ``history`` has that handle or id.
    """
    handle = handle.strip()
    m = HANDLE_PATTERN.fullmatch(handle)
    if m is not None:
        digest, count = m.group(1), m.group(2)
        if count is None:
            for msg in history:
                if content_handle(msg) == digest:
                    return [msg]
        else:
            n = int(count)
            own = [content_handle(msg) for msg in history]
            for i in range(len(history) - n + 1):
                if n > 0 and _joined(own[i : i + n]) == digest:
                    return list(history[i : i + n])
    for msg in history:
        if msg.id == handle:
            return [msg]
    return []


def originals_of(
    history: Sequence[Message], messages: Sequence[Message]
) -> list[Message]:
    r"""``messages``, each rewrite replaced by its original in ``history``.

    A rewrite (its record names an original) is found by its id and kept
    only when that message's content has the recorded handle; a run's line
    (``handle+count``) becomes the ``count`` messages from its id on when
    they hash to its handle. A message with no record, or whose original
    ``history`` does not hold (another conversation, a repaired message),
    stays as it is. Costs one pass over ``history`` when ``messages`` holds
    a rewrite; nothing is changed.

    Raises:
        ContextWindowError: An item of ``history`` that is no ``Message``
            (named by its index).

    Example:
        >>> history = [Message.user("fix a.py"), Message.tool("c1", "x = 1\n" * 50)]
        >>> cleared = with_origin(Message.tool("c1", "[cleared]", id=history[1].id),
        ...                       history[1], [99])
        >>> originals_of(history, [history[0], cleared]) == history
        True
    """
    if not any(ORIGIN_KEY in m.meta for m in messages):
        return list(messages)
    at: dict[str, int] = {}
    for k, m in enumerate(history):
        if not isinstance(m, Message):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError(f"history[{k}]", shown(m), "a Message")
        at.setdefault(m.id, k)
    out: list[Message] = []
    for m in messages:
        handle = _origin(m).get("handle")
        i = at.get(m.id)
        if not isinstance(handle, str) or i is None:
            out.append(m)
            continue
        digest, _, count = handle.partition("+")
        if not count:
            found = [history[i]] if content_handle(history[i]) == digest else []
        else:
            span = history[i : i + int(count)] if count.isdigit() else ()
            found = list(span) if span and run_handle(span) == handle else []
        out.extend(found or [m])
    return out
