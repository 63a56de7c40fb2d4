"""The ``Summarizer`` protocol: turn older messages into a short text.

Contract:

- ``summarize(messages, previous=..., max_tokens=...)`` returns the text of a
  summary of ``messages``. When ``previous`` is given (the text of the summary
  those messages follow), the result covers both: summaries are rolled
  forward, never rebuilt from the whole history.
- ``max_tokens`` is a target, not a hard cap: the ``Summarize`` strategy
  measures what comes back and refuses a summary that does not save enough.
- A summarizer never mutates its input and raises ``SummarizerError`` (never a
  transport error) when it cannot produce a summary.
- The library's summarizers read their arguments alike (``summary_input``):
  messages in any shape a user holds, ``previous`` a ``str`` or ``None``,
  ``max_tokens`` an ``int`` of at least 1 or ``None``; anything else is an
  ``ArgumentError`` (or ``InvalidMessageError``) naming the argument.
- ``AsyncSummarizer`` is the same contract with ``asummarize``; a summarizer
  may implement both.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from contextwindow._args import check_int, check_str, shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.formats._coerce import coerce_messages
from contextwindow.messages import Message

__all__ = ["AsyncSummarizer", "Summarizer", "summary_input", "summary_text"]


def summary_input(
    messages: object, previous: object, max_tokens: object = None
) -> tuple[Message, ...]:
    """A summarizer's arguments as it reads them, or an error naming the bad one.

    ``messages`` in any shape a user holds (``Message`` objects, provider
    dicts, SDK objects); ``previous`` a ``str`` or ``None``; ``max_tokens``
    an ``int`` of at least 1 or ``None`` (a summary of no tokens is no
    summary: every summarizer refuses it alike).

    Example:
        >>> [m.role for m in summary_input([{"role": "user", "content": "hi"}], None)]
        ['user']
        >>> summary_input([], None, 0)
        Traceback (most recent call last):
        ...
        contextwindow.errors.ArgumentValueError: max_tokens: expected an int >= 1, got 0
    """
    read = coerce_messages(messages).messages
    check_str(previous, "previous", none=True)
    check_int(max_tokens, "max_tokens", low=1, none=True)
    return tuple(read)


def summary_text(summarizer: object, value: object) -> str:
    """``value`` if it is the ``str`` a summarizer returns, else the user's fault named.

    Example:
        >>> class Broken:
        ...     def __repr__(self):
        ...         return "Broken()"
        >>> try:
        ...     summary_text(Broken(), None)
        ... except TypeError as exc:
        ...     print(exc)
        summarizer: expected a Summarizer whose summarize returns a str, got Broken() (Broken) returning None

    A wrong answer is the summarizer's bug, not an outage: it is an
    ``ArgumentTypeError`` (a ``TypeError``), which ``Pipeline`` does not
    skip as it skips a ``SummarizerError``.
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if not isinstance(value, str):
        if inspect.iscoroutine(value):
            # A summarize that is no ``async def`` yet returned a coroutine (a
            # wrapped one): closed, so that the error is all that is said.
            value.close()
        raise ArgumentTypeError(
            "summarizer",
            f"{shown(summarizer)} returning {shown(value)}",
            "a Summarizer whose summarize returns a str",
        )
    return value


@runtime_checkable
class Summarizer(Protocol):
    r"""Anything with ``summarize(messages, *, previous, max_tokens) -> str``.

    Example:
        >>> class FirstLines:
        ...     def summarize(self, messages, *, previous=None, max_tokens=None):
        ...         lines = [m.text.splitlines()[0] for m in messages if m.text]
        ...         return "\n".join(([previous] if previous else []) + lines)
        >>> isinstance(FirstLines(), Summarizer)
        True
        >>> FirstLines().summarize([Message.user("Fix the build.\nIt fails.")])
        'Fix the build.'
    """

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Return a summary of ``messages``, folding in ``previous``."""
        ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """The async twin of ``Summarizer``: ``await asummarize(...) -> str``."""

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Return a summary of ``messages``, folding in ``previous``."""
        ...
