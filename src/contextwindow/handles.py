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
  Nothing is changed. A run made where a repair (or a caller's transform)
  left messages of the history out is not a window of ``history``: with
  ``kept``, the positions of the messages that were left in,
  ``originals`` finds it among those and gives back the stretch of the
  history it stood for, the left-out messages inside it included.
- ``originals_of(history, messages)`` puts back, in a list of messages,
  the original of each rewrite (and the messages of each run's line) that
  ``history`` holds, found by id (a rewrite keeps its message's id; a run's
  line its first message's) and checked by handle: what a summary of
  compacted messages should read, not their placeholders. A run whose
  view had left a message out between its messages (a repair's drop, a
  transform's) is found by trying which were left out, a bounded number of
  ways (``run_originals``), and gives the stretch of history holding them.
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
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from contextwindow._args import shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.messages import Message, ToolResult

__all__ = [
    "GAP_WORK",
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
    "run_originals",
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


def originals(
    history: Sequence[Message], handle: str, *, kept: Sequence[int] | None = None
) -> list[Message]:
    r"""The messages of ``history`` that ``handle`` names (see the module's contract).

    Args:
        history: The full history.
        handle: A marker's handle, a run's (``h+n``), or a message id.
        kept: Where a run's handle is looked for: the positions in
            ``history``, ascending, of the messages a repair left in (the
            run is ``n`` of them next to each other). ``None``: every
            message. A handle of one message, or an id, is looked for in
            the whole history either way.

    Returns:
        The original message, or the run of them, in history order (with
        ``kept``, every message of ``history`` from the run's first to its
        last); ``[]`` when nothing in ``history`` has that handle or id.

    Example:
        >>> run = [Message.user("a"), Message.assistant("b")]
        >>> history = [run[0], Message.tool("c9", "stray"), run[1]]
        >>> originals(history, run_handle(run))
        []
        >>> originals(history, run_handle(run), kept=[0, 2]) == history
        True
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
            at = list(range(len(history))) if kept is None else kept
            own = [content_handle(history[k]) for k in at]
            n = int(count)
            for i in range(len(at) - n + 1):
                if n > 0 and _joined(own[i : i + n]) == digest:
                    return list(history[at[i] : at[i + n - 1] + 1])
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
    they hash to its handle, or, where the view the run was made in had
    left messages of ``history`` out there (a repair's, a transform's),
    the stretch of ``history`` from its id that holds them with the others
    between (``run_originals``). A message with no record, or whose original
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
    at = _places(history)
    out: list[Message] = []
    for k, m in enumerate(messages):
        after = messages[k + 1] if k + 1 < len(messages) else None
        out.extend(_original(history, at, m, after) or [m])
    return out


def run_originals(
    history: Sequence[Message], line: Message, after: Message | None = None
) -> list[Message]:
    r"""The messages of ``history`` a rewrite or a run's line stands for.

    As ``originals_of`` finds them: for a run's line, its ``count`` messages
    from its id on, or, where the view it was made in had left messages of
    ``history`` out between them (an unanswered call, an orphan result or
    an empty turn a repair dropped; a message a transform took out), the
    stretch of ``history`` that holds them and those, found by trying which
    were left out: up to as many as lie before ``after`` (the message that
    followed the line in the view, when ``history`` holds it), else one;
    within ``GAP_WORK``.

    Returns:
        The originals, in history order; ``[]`` when ``history`` holds none.

    Raises:
        ContextWindowError: An item of ``history`` that is no ``Message``.

    Example:
        >>> run = [Message.user("a"), Message.assistant("b")]
        >>> history = [*run[:1], Message.assistant(""), *run[1:], Message.user("c")]
        >>> line = Message.assistant("[2 earlier ...]", id=run[0].id,
        ...                          meta={ORIGIN_KEY: {"handle": run_handle(run)}})
        >>> run_originals(history, line) == history[:3]
        True
    """
    return _original(history, _places(history), line, after)


GAP_WORK = 1 << 19
"""The most work ``run_originals`` does for one run, trying ways of leaving
messages out between its messages, in steps (one a gap, one eight of the
handles each way hashes): about a tenth of a second at most. Enough for
one gap in a run of 2,000 messages, two in one of 190, three in one of 60."""


def _places(history: Sequence[Message]) -> dict[str, int]:
    """Each id of ``history`` and where it first is (every item checked)."""
    at: dict[str, int] = {}
    for k, m in enumerate(history):
        if not isinstance(m, Message):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError(f"history[{k}]", shown(m), "a Message")
        at.setdefault(m.id, k)
    return at


def _original(
    history: Sequence[Message],
    at: Mapping[str, int],
    m: Message,
    after: Message | None,
) -> list[Message]:
    """What ``m`` (a rewrite, a run's line) stands for in ``history``; ``[]``: none."""
    handle = _origin(m).get("handle")
    i = at.get(m.id)
    if not isinstance(handle, str) or i is None:
        return []
    digest, _, count = handle.partition("+")
    if not count:
        return [history[i]] if content_handle(history[i]) == digest else []
    if not count.isdigit():
        return []
    n = int(count)
    span = history[i : i + n]
    if span and run_handle(span) == handle:
        return list(span)
    if n < 2:
        return []  # no message of it to leave another out after
    stop = at.get(after.id) if after is not None else None
    most = min(1 if stop is None else stop - i - n, len(history) - i - n)
    own = [handle_of(x) for x in history[i : i + n]]
    work = 0
    for gaps in range(1, most + 1):
        size = n + gaps
        # The first and the last are the run's: a gap after the last is
        # a narrower stretch, tried before.
        # Each way costs a step per gap here, and a hash of the run's
        # handles (in C: a step per few of them).
        work += math.comb(size - 2, gaps) * (gaps + size // 8)
        if work > GAP_WORK:
            break
        own.append(handle_of(history[i + size - 1]))
        for gone in itertools.combinations(range(1, size - 1), gaps):
            left: list[str] = []
            start = 0
            for k in gone:  # by slices: a run may hold thousands of messages
                left += own[start:k]
                start = k + 1
            left += own[start:size]
            if _joined(left) == digest:
                return list(history[i : i + size])
    return []
