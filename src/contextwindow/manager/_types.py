"""The values a manager hands out, and the policy it is configured with.

``Prepared``, ``Compaction`` and ``Event`` come out of a manager;
``CompactionPolicy`` goes in.

Contract: every value here is frozen; nothing here holds or changes state.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from contextwindow._args import check_int, check_number, check_percent, shown
from contextwindow.errors import ArgumentValueError
from contextwindow.formats._coerce import NEUTRAL, Shape
from contextwindow.messages import Message, Provider, check_provider
from contextwindow.strategies.base import Report
from contextwindow.validity import ensure_valid

__all__ = ["Compaction", "CompactionPolicy", "Event", "Prepared", "Trigger"]

Trigger = Literal["watermark", "limit", "forced", "handler", "max_messages", "repair"]
"""Why the view changed: usage crossed the compact-at watermark; the request
would not fit the window; ``force_compress``; a threshold handler; the
``max_messages`` cap; a repair of messages no provider accepts."""


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When a manager compacts on its own, and how far.

    Usage is a percentage of what a request may take (the window less the
    reserve). Compaction starts when usage reaches ``at`` percent and
    brings the request down to ``to`` percent, so that many turns of plain
    appends (and cache hits) follow each compaction instead of one
    compaction per turn. A compaction that would save less than
    ``min_saving`` percent of the window is refused (and not retried until
    the conversation has grown by that much), and at most ``max_per_turn``
    compactions run between two user messages. Neither rule ever lets a
    request exceed the window: one that would not fit is compacted anyway.

    Args:
        at: Usage (percent of the window less the reserve) that starts a
            compaction.
        to: Usage a compaction brings the request down to.
        min_saving: Least saving worth a compaction, in percent of the window.
        max_per_turn: Automatic compactions allowed between user messages.

    Raises:
        ArgumentError: Watermarks outside ``0 < to < at <= 100``, a
            negative ``min_saving`` or ``max_per_turn``.

    Example:
        >>> CompactionPolicy(at=85, to=50)
        CompactionPolicy(at=85, to=50, min_saving=5.0, max_per_turn=2)
    """

    at: float = 90.0
    """Usage (percent of the window less the reserve) that starts a compaction."""
    to: float = 60.0
    """Usage (percent of the window less the reserve) a compaction brings the
    request to."""
    min_saving: float = 5.0
    """Least saving worth a compaction, in percent of the window."""
    max_per_turn: int = 2
    """Automatic compactions allowed between two user messages."""

    def __post_init__(self) -> None:
        check_percent(self.at, "at")
        check_percent(self.to, "to")
        if not self.to < self.at:
            raise ArgumentValueError(
                "to", shown(self.to), f"a percentage below at ({self.at:g})"
            )
        check_number(self.min_saving, "min_saving", low=0, high=100)
        check_int(self.max_per_turn, "max_per_turn", low=0)


@dataclass(frozen=True, slots=True)
class Compaction:
    """One change to a manager's view, applied or refused, and why.

    Example:
        >>> r = Report(1000, 600, 700)
        >>> c = Compaction("watermark", True, r, 120, "usage 91.0% >= 90%")
        >>> (c.saved, c.prefix_tokens)
        (400, 120)
    """

    trigger: Trigger
    """What asked for it (see ``Trigger``)."""
    applied: bool
    """Whether the view now holds the result (a refused one changed nothing)."""
    report: Report
    """What the strategy changed, and the tokens before and after."""
    prefix_tokens: int
    """Leading tokens of the view kept byte-identical, so a provider's
    prompt cache over them survives."""
    reason: str
    """Why it ran, or why it was refused."""

    @property
    def saved(self) -> int:
        """Tokens the change saved (what it would have saved, when refused)."""
        return self.report.saved


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send: the messages in the provider's shape, and figures.

    Warning:
        The dicts in ``messages`` are shared with later ``prepare`` calls
        (so that preparing costs what was appended, not the history):
        copy one before changing it.

    Example:
        >>> p = Prepared([{"role": "user", "content": "hi"}], None, "openai",
        ...              (Message.user("hi"),), 8, 1000, 1000)
        >>> (p.usage, p.body())
        (0.8, {'messages': [{'role': 'user', 'content': 'hi'}]})
    """

    messages: list[dict[str, Any]]
    """The messages (Responses: input items) in the provider's shape."""
    system: str | list[dict[str, Any]] | None
    """Anthropic's top-level ``system``; ``None`` for other providers."""
    provider: Provider
    """The provider the request is shaped and checked for."""
    conversation: tuple[Message, ...]
    """The same request as neutral messages."""
    tokens: int
    """Tokens of the request (framing, reply priming and tools included)."""
    context_limit: int
    """The model's window."""
    budget: int
    """Tokens the request may take: the window less the reserve."""
    report: Report | None = None
    """What the compactions of this call changed, joined; ``None`` when none ran."""
    compactions: tuple[Compaction, ...] = ()
    """Every change made to the view by this call, in order (refused ones too)."""
    prefix_tokens: int = 0
    """Leading tokens identical to the previous prepared request (a cache hit)."""
    thresholds: tuple[float, ...] = ()
    """The thresholds whose handlers fired during this call."""
    shape: Shape = field(default=NEUTRAL, compare=False, repr=False)
    """The shape the pushed messages came in (``as_input`` writes it)."""

    @property
    def usage(self) -> float:
        """Tokens as a percentage of ``budget`` (what the request may take)."""
        return 100.0 * self.tokens / self.budget if self.budget else 0.0

    def as_input(self) -> Any:
        """The request in the shape the pushed messages came in.

        OpenAI dicts give OpenAI dicts, Responses items Responses items,
        Anthropic dicts a ``{"system", "messages"}`` body, ``Message`` objects
        the neutral ``conversation`` (as a list).

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager("gpt-4o", system="Be brief.")
            >>> m.push({"role": "user", "content": [{"type": "text", "text": "hi"}]})
            >>> m.prepare().as_input()[1]
            {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}
        """
        kind = self.shape.kind
        if kind == self.provider:
            return self.body() if kind == "anthropic" else self.messages
        return self.shape.write(self.conversation)

    def to(self, provider: Provider) -> Any:
        """The request in ``provider``'s shape (a body for Anthropic).

        Example:
            >>> from contextwindow import ContextManager
            >>> m = ContextManager("gpt-4o", system="Be brief.")
            >>> m.push(Message.user("hi"))
            >>> m.prepare().to("anthropic")
            {'system': 'Be brief.', 'messages': [{'role': 'user', 'content': 'hi'}]}
        """
        check_provider(provider)
        if provider == self.provider:
            return self.body() if provider == "anthropic" else self.messages
        return Shape(provider).write(ensure_valid(self.conversation, provider).messages)

    def body(self) -> dict[str, Any]:
        """The request's fields: ``messages`` and ``system``, or ``input``."""
        if self.provider == "responses":
            return {"input": self.messages}
        if self.provider == "anthropic" and self.system is not None:
            return {"system": self.system, "messages": self.messages}
        return {"messages": self.messages}


@dataclass(frozen=True, slots=True)
class Event:
    """Something a manager did, as structured data (also sent to ``logging``).

    Example:
        >>> e = Event("action", "coder", {"action": "pruned", "removed": 12})
        >>> (e.kind, e.data["removed"])
        ('action', 12)
    """

    kind: str
    """``push``, ``threshold``, ``compaction``, ``compaction_refused``,
    ``action``, ``restore``, ``clear``, ``system``, ``strategy``, ``tokenizer``
    or ``marker``."""
    agent: str | None
    """The manager's agent name."""
    data: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """The figures of the event (tokens, usage, threshold, ...)."""
    time: float = field(default_factory=time.time)
    """When it happened (seconds since the epoch)."""
