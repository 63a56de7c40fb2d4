"""Writing a growing conversation in a provider's shape, paying for the new part.

Contract: ``Writer(provider).write(messages)`` returns what
``contextwindow.formats.to_provider(messages, provider)`` returns, as a
``(messages, system)`` pair. When ``messages`` extends the sequence written
last (the same message objects first), only the new messages are converted;
the dicts of the earlier ones are reused, never changed. Errors name the
index in the whole sequence, as ``to_provider`` does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from contextwindow.errors import InvalidMessageError
from contextwindow.formats import to_provider
from contextwindow.messages import Message, Provider

__all__ = ["Writer"]

Written = tuple[list[dict[str, Any]], "str | list[dict[str, Any]] | None"]


class Writer:
    """Converts sequences for one provider, reusing the last one's output.

    Example:
        >>> w = Writer("anthropic")
        >>> conv = [Message.system("Be brief."), Message.user("hi")]
        >>> w.write(conv)
        ([{'role': 'user', 'content': 'hi'}], 'Be brief.')
        >>> w.write([*conv, Message.assistant("hello")])[0][-1]
        {'role': 'assistant', 'content': 'hello'}
    """

    __slots__ = ("_last", "_out", "_provider", "_system")

    def __init__(self, provider: Provider) -> None:
        self._provider: Provider = provider
        self._last: list[Message] = []
        self._out: list[dict[str, Any]] = []
        self._system: str | list[dict[str, Any]] | None = None

    def reset(self) -> None:
        """Forget the last sequence (the next write converts everything)."""
        self._last = []
        self._out = []
        self._system = None

    def write(self, messages: Sequence[Message]) -> Written:
        """The provider's shape of ``messages``: the messages and Anthropic's system."""
        seq = list(messages)
        last = self._last
        k = len(last)
        reused = (
            0 < k <= len(seq) and seq[k - 1] is last[-1] and seq[:k] == last
        ) and not any(m.role == "system" for m in seq[k:])
        written = None
        if reused:
            # On an error, everything is written again: its message names the index.
            with contextlib.suppress(InvalidMessageError):
                written = self._tail(seq, k)
        if written is None:
            written = self._full(seq)
        self._last = seq
        self._out, self._system = written
        return list(written[0]), written[1]

    def _full(self, seq: Sequence[Message]) -> Written:
        if self._provider == "anthropic":
            system, turns = to_provider(seq, "anthropic")
            return turns, system
        return to_provider(seq, self._provider), None

    def _tail(self, seq: list[Message], k: int) -> Written | None:
        """Convert ``seq[k:]`` onto the last output; ``None`` to convert all."""
        if k == len(seq):
            return self._out, self._system
        if self._provider != "anthropic":
            return self._out + to_provider(seq[k:], self._provider), None
        # Anthropic writes a run of tool messages (and a user message after
        # it) as one user turn: when the old sequence ends in such a run and
        # the new part may join it, that turn is written again from its start.
        start = k
        while start > 0 and seq[start - 1].role == "tool":
            start -= 1
        if start > 0 and seq[start - 1].role == "system":
            return None  # a system message inside the run: let the writer decide
        if start < k and seq[k].role in ("tool", "user"):
            _, turns = to_provider(seq[start:], "anthropic")
            return self._out[:-1] + turns, self._system
        _, turns = to_provider(seq[k:], "anthropic")
        return self._out + turns, self._system
