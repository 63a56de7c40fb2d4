"""Writing a growing conversation in a provider's shape, paying for the new part.

Contract: ``Writer(provider).write(messages)`` returns what
``contextwindow.formats.to_provider(messages, provider)`` returns, as a
``(messages, system)`` pair. The output of the longest prefix shared with the
sequence written last is reused, never changed; only the rest is converted.
A prefix is shared when its messages compare equal, so a caller that puts an
equal message with other ``meta`` in its place calls ``reset`` first. Errors
name the index in the whole sequence, as ``to_provider`` does.

OpenAI and Responses write each message on its own, so any message boundary
can be cut at. Anthropic writes a run of tool messages (and a user message
after it) as one user turn: a cut never falls inside such a run. And Anthropic
renames tool call ids it refuses (reused, or with other characters than
``[A-Za-z0-9_-]``) across the whole request: while the calls written so far
hold none, new ones are checked against them; once one does, every write
converts everything (as ``to_provider`` names them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from contextwindow.errors import InvalidMessageError
from contextwindow.formats import to_provider
from contextwindow.formats.anthropic import CALL_ID
from contextwindow.messages import Message, Provider, ToolCall

__all__ = ["Writer"]

System = "str | list[dict[str, Any]] | None"


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

    __slots__ = ("_calls", "_ends", "_last", "_out", "_provider", "_system")

    def __init__(self, provider: Provider) -> None:
        self._provider: Provider = provider
        self._last: tuple[Message, ...] = ()
        self._out: list[dict[str, Any]] = []
        self._ends: list[int] = []
        """For each message of ``_last``: the length of the output after it."""
        self._system: str | list[dict[str, Any]] | None = None
        self._calls: dict[str, int] | None = {}
        """Anthropic: each tool call id of ``_last`` and the index of its
        message, or ``None`` when one is reused or spelt as Anthropic refuses."""

    def reset(self) -> None:
        """Forget the last sequence (the next write converts everything)."""
        self._last, self._out, self._ends, self._system = (), [], [], None
        self._calls = {}

    def write(
        self, messages: Sequence[Message], *, shared: int | None = None
    ) -> tuple[list[dict[str, Any]], str | list[dict[str, Any]] | None]:
        """The provider's shape of ``messages``: the messages and Anthropic's system.

        Args:
            messages: The sequence to write.
            shared: How many leading messages the caller knows are the same
                as those written last (found by comparing, when not given).
        """
        seq = messages if isinstance(messages, tuple) else tuple(messages)
        k = self._cut(seq, shared)
        if self._provider == "anthropic":
            k = self._named(seq, k)
        written = None
        try:
            if k:
                # On an error, all is written again: its message names the index.
                with contextlib.suppress(InvalidMessageError):
                    written = self._convert(seq, k)
            if written is None:
                written = self._convert(seq, 0)
        except BaseException:
            self.reset()  # a conversion may have stopped half way
            raise
        self._last = seq
        self._out, self._ends = written
        return list(self._out), self._system

    def _cut(self, seq: tuple[Message, ...], shared: int | None) -> int:
        """How many leading messages keep their output (0: write it all)."""
        last = self._last
        n = len(last)
        if not n:
            return 0
        if shared is not None:
            k = min(shared, n)
        elif n <= len(seq) and seq[n - 1] is last[-1] and seq[:n] == last:
            k = n  # extended: the agent loop's case
        elif n - 1 <= len(seq) and seq[: n - 1] == last[: n - 1]:
            k = n - 1  # the last message changed (a call left out, now answered)
        else:
            k = 0
            for a, b in zip(seq, last, strict=False):
                if not (a is b or a == b):
                    break
                k += 1
        if self._provider == "anthropic":
            # The system prompt gathers every system message; a tool run may
            # still grow into the turn it is written in.
            if any(m.role == "system" for m in seq[k:]) or any(
                m.role == "system" for m in last[k:]
            ):
                return 0
            while k and seq[k - 1].role == "tool":
                k -= 1
            if k and seq[k - 1].role == "system":
                return 0  # a system message inside the run: write it all
        return k

    def _named(self, seq: tuple[Message, ...], k: int) -> int:
        """``k``, or 0 where the calls of ``seq`` need ids renamed across it.

        Keeps ``_calls`` for ``seq``: the calls of the ``k`` messages kept,
        and those after them.
        """
        known = self._calls
        calls: dict[str, int] = {}
        start = 0
        if k and known is not None:
            calls = (
                known
                if k == len(self._last)
                else {i: at for i, at in known.items() if at < k}
            )
            start = k
        for at in range(start, len(seq)):
            for part in seq[at].parts:
                if isinstance(part, ToolCall):
                    if part.id in calls or not CALL_ID.fullmatch(part.id):
                        self._calls = None
                        return 0
                    calls[part.id] = at
        self._calls = calls
        return k if start else 0

    def _convert(
        self, seq: tuple[Message, ...], k: int
    ) -> tuple[list[dict[str, Any]], list[int]]:
        """The output of ``seq``, reusing that of ``seq[:k]``; and the ends."""
        kept = self._ends[k - 1] if k else 0
        if k and k == len(self._ends):
            # Appends only: grow the lists in place (callers got copies).
            out, ends = self._out, self._ends
        else:
            out, ends = self._out[:kept], self._ends[:k]
        tail = seq[k:]
        if self._provider == "anthropic":
            system, turns = to_provider(tail, "anthropic")
            if not k:
                self._system = system
            out.extend(turns)
            ends.extend(_anthropic_ends(tail, kept))
            return out, ends
        self._system = None
        for i, m in enumerate(tail, k):
            try:
                out.extend(to_provider((m,), self._provider))
            except InvalidMessageError as exc:  # name the index in the whole sequence
                path = exc.path.replace("messages[0]", f"messages[{i}]", 1)
                raise InvalidMessageError(path, exc.reason) from None
            ends.append(len(out))
        return out, ends


def _anthropic_ends(tail: Sequence[Message], start: int) -> list[int]:
    """Turns written after each message of ``tail`` (which starts a turn)."""
    ends: list[int] = []
    turns = start
    open_tool_turn = False
    for m in tail:
        if m.role == "tool":
            if not open_tool_turn:
                turns += 1
            open_tool_turn = True
        elif m.role != "system":
            if not (m.role == "user" and open_tool_turn):
                turns += 1
            open_tool_turn = False
        ends.append(turns)
    return ends
