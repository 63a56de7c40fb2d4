"""Summary messages: their one shape, and the way back to what they replaced.

Contract:

- A summary message is a ``user`` message (valid first turn for every
  provider, and valid anywhere after it) whose text is a header line,
  ``[Summary of 42 earlier messages; recall 3f2a9c1b0d]`` (a handle of
  what it replaced, by content, which ``context_recall`` takes as it takes
  a marker's: ``summary_handle``), then the summary and its fact record.
  Its ``meta[SUMMARY_KEY]`` holds the ids of every message it replaces
  (``summary_sources``, through earlier summaries too), their handles by
  content (``summary_handles``) and the facts it holds
  (``summary_facts``), as JSON values, so stores keep them.
- Its id is derived from what it replaces, so summarising the same messages
  twice gives the same id (a stable prefix for prompt caches).
- ``is_summary`` tells one apart by its ``meta``; every strategy but
  ``Summarize`` treats it as pinned (``strategies.base.pinned_flags``).
  ``summary_header`` reads its header's handle and count from the text
  alone, where the ``meta`` was lost (provider dicts carry none).
- ``recall(history, ids)`` brings the originals back from the full history,
  in history order; ``summary_originals(history, summary)`` those of a
  summary: by id, or, in a history whose ids differ (provider dicts get
  new ids at each conversion), by content.
- A summary whose fact record could not list every fact (``Summarize``
  gives the record only part of the summary's room) says in its header how
  many it does not list (``[Summary of 42 earlier messages (+97 facts not
  listed); recall 3f2a9c1b0d]``): the handle reads them back.

Example:
    >>> from contextwindow.summarizers.facts import Fact, Facts
    >>> history = [Message.user("Fix a.py", id="u1"),
    ...            Message.assistant("Done.", id="a1")]
    >>> s = summary_message("user asked to fix a.py; done.", ["u1", "a1"],
    ...                     Facts((Fact("path", "a.py", ("u1",)),)))
    >>> print(s.text)
    [Summary of 2 earlier messages]
    user asked to fix a.py; done.
    >>> (is_summary(s), summary_sources(s), summary_body(s))
    (True, ('u1', 'a1'), 'user asked to fix a.py; done.')
    >>> [m.id for m in recall(history, summary_sources(s))]
    ['u1', 'a1']
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from contextwindow._args import (
    check_int,
    check_messages,
    check_str,
    check_strs,
    shown,
)
from contextwindow.errors import ArgumentTypeError
from contextwindow.handles import content_handle
from contextwindow.messages import Message
from contextwindow.summarizers.facts import Facts

__all__ = [
    "SUMMARY_KEY",
    "is_summary",
    "recall",
    "summary_body",
    "summary_facts",
    "summary_handle",
    "summary_handles",
    "summary_header",
    "summary_message",
    "summary_originals",
    "summary_sources",
    "unlisted_words",
]

SUMMARY_KEY = "contextwindow.summary"
"""The ``Message.meta`` key that marks a summary message."""


def _message(message: object) -> None:
    if not isinstance(message, Message):
        raise ArgumentTypeError("message", shown(message), "a Message")


def is_summary(message: Message) -> bool:
    """Whether ``message`` is a summary message (see the module's contract)."""
    _message(message)
    return message.role == "user" and isinstance(message.meta.get(SUMMARY_KEY), Mapping)


def _record(message: Message) -> Mapping[str, Any]:
    value = message.meta.get(SUMMARY_KEY) if message.role == "user" else None
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def summary_sources(message: Message) -> tuple[str, ...]:
    """The ids of the messages a summary replaces, in order (``()`` for others)."""
    _message(message)
    ids = _record(message).get("sources")
    if not isinstance(ids, list):
        return ()
    return tuple(i for i in cast("Sequence[Any]", ids) if isinstance(i, str))


def summary_facts(message: Message) -> Facts:
    """The facts a summary holds (read from its text when ``meta`` lost them)."""
    record = _record(message)
    if "facts" in record:
        return Facts.from_json(record["facts"])
    return Facts.parse(message.text) if is_summary(message) else Facts()


def summary_handles(message: Message) -> tuple[str, ...]:
    """The content handles of the messages a summary replaces (``()``: none kept)."""
    _message(message)
    handles = _record(message).get("handles")
    if not isinstance(handles, list):
        return ()
    return tuple(h for h in cast("Sequence[Any]", handles) if isinstance(h, str))


def summary_body(message: Message) -> str:
    """A summary's text without its header line: the ``previous`` to roll forward."""
    text = message.text
    first, sep, rest = text.partition("\n")
    if first.startswith("[Summary of ") and first.endswith("]"):
        return rest if sep else ""
    return text


def unlisted_words(count: int) -> str:
    """What a summary's header adds when its record does not list ``count`` facts.

    Example:
        >>> unlisted_words(97)
        ' (+97 facts not listed)'
    """
    return f" (+{count:,} fact{'' if count == 1 else 's'} not listed)" if count else ""


def summary_message(
    body: str,
    sources: Sequence[str],
    facts: Facts,
    *,
    handle: str | None = None,
    handles: Sequence[str] = (),
    unlisted: int = 0,
) -> Message:
    """The summary message replacing the messages ``sources`` names.

    Args:
        body: The summary (and its fact record).
        sources: Ids of every message it replaces, in order.
        facts: The facts it holds, for ``summary_facts``.
        handle: What its header shows for ``context_recall`` (ten hex digits
            of what it replaced, by content: ``Summarize``'s); none when
            ``None``.
        handles: The content handles (``handles.handle_of``) of the
            messages it replaces, in order: ``summary_originals`` finds
            them by these where their ids are not the history's.
        unlisted: How many facts of what it replaces its record does not
            list, said in its header (``unlisted_words``).

    Raises:
        ArgumentTypeError: ``body`` or ``handle`` not a ``str``, ``sources``
            not an iterable of ids (a lone ``str`` neither: its characters
            would count as messages), or ``facts`` not a ``Facts``.
    """
    check_str(body, "body")
    sources = check_strs(sources, "sources", lone=False)
    if not isinstance(facts, Facts):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("facts", shown(facts), "a Facts")
    check_str(handle, "handle", none=True)
    handles = check_strs(handles, "handles", lone=False)
    check_int(unlisted, "unlisted", low=0)
    n = len(sources)
    header = f"[Summary of {n} earlier message{'' if n == 1 else 's'}"
    header += unlisted_words(unlisted)
    header += f"; recall {handle}]" if handle else "]"
    digest = hashlib.sha1("\n".join(sources).encode(), usedforsecurity=False)
    record: dict[str, Any] = {"sources": list(sources), "facts": facts.to_json()}
    if handles:
        record["handles"] = list(handles)
    meta = {SUMMARY_KEY: record}
    return Message.user(
        f"{header}\n{body}", id=f"summary-{digest.hexdigest()[:16]}", meta=meta
    )


def summary_handle(message: Message) -> str | None:
    """The handle a summary's header shows (``None``: it shows none).

    Example:
        >>> s = summary_message("done.", ["u1"], Facts(), handle="0123456789")
        >>> (s.text.splitlines()[0], summary_handle(s))
        ('[Summary of 1 earlier message; recall 0123456789]', '0123456789')
    """
    if not is_summary(message):
        return None
    found = _HANDLE.search(message.text.partition("\n")[0])
    return found.group(1) if found else None


_HANDLE = re.compile(r"; recall ([0-9a-f]{10})\]$")


def summary_header(message: Message) -> tuple[str, int] | None:
    """The handle and the message count a summary's header shows, by its text.

    Read from the text alone, so a summary is known where its ``meta`` was
    lost: the provider dicts ``Fitted.as_input()`` gives carry none (and
    Anthropic's merges it into one turn with the user turn after it). The
    header is a whole line of a user message: ``None`` for any other text.

    Example:
        >>> s = summary_message("done.", ["u1", "a1"], Facts(), handle="0123456789")
        >>> summary_header(Message.user(s.text))  # no meta
        ('0123456789', 2)
        >>> summary_header(Message.user("[Summary of 2 earlier messages]")) is None
        True
    """
    _message(message)
    if message.role != "user":
        return None
    text = message.text
    if "[Summary of " not in text:
        return None
    found = _HEADER.search(text)
    return (found.group(2), int(found.group(1))) if found else None


_HEADER = re.compile(
    r"^\[Summary of (\d+) earlier messages?(?: \(\+[\d,]+ facts? not listed\))?"
    r"; recall ([0-9a-f]{10})\]$",
    re.MULTILINE,
)


def recall(history: Iterable[Message], ids: Iterable[str]) -> list[Message]:
    """The messages of ``history`` whose id is in ``ids``, in history order.

    Example:
        >>> h = [Message.user("a", id="1"), Message.user("b", id="2")]
        >>> [m.text for m in recall(h, ["2", "1", "9"])]
        ['a', 'b']
    """
    history = check_messages(history, "history")
    wanted = set(check_strs(ids, "ids"))
    return [m for m in history if m.id in wanted]


def summary_originals(history: Sequence[Message], message: Message) -> list[Message]:
    """The messages of ``history`` a summary replaced, in history order.

    By their ids; where ``history`` lacks some of them (the same
    conversation converted again from provider dicts, which carry no ids),
    by the content handles the summary keeps (``summary_handles``): each
    one the next message of ``history`` with that content, one that none
    has skipped. Whichever finds more.

    Example:
        >>> history = [Message.user("Fix a.py"), Message.assistant("Done.")]
        >>> s = summary_message("fixed", ["u1", "a1"], Facts(),
        ...                     handles=[content_handle(m) for m in history])
        >>> summary_originals(history, s) == history  # other ids: by content
        True
    """
    history = check_messages(history, "history")
    _message(message)
    ids = summary_sources(message)
    found = recall(history, ids)
    wanted = summary_handles(message)
    if len(found) >= len(set(ids)) or len(found) >= len(wanted):
        return found
    at: dict[str, list[int]] = {}
    for k, m in enumerate(history):
        at.setdefault(content_handle(m), []).append(k)
    chosen: list[int] = []
    last = -1
    for h in wanted:
        places = at.get(h, [])
        i = bisect_right(places, last)
        if i < len(places):
            last = places[i]
            chosen.append(last)
    return found if len(chosen) <= len(found) else [history[k] for k in chosen]
