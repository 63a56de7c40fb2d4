"""The ``Transcript`` value and the list of formats; shared by the readers.

Contract: a ``Transcript`` is a frozen value; ``meta`` takes no part in
equality. Nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from contextwindow.messages import Message, ToolSpec

__all__ = ["FORMATS", "Records", "Transcript"]

FORMATS: tuple[str, ...] = (
    "openai",
    "openai_request",
    "anthropic",
    "anthropic_request",
    "responses",
    "jsonl",
    "claude_code",
    "tau_bench",
    "locomo",
)
"""Every format name ``read_transcripts`` accepts."""

Records = list[tuple[int, Any]]
"""JSONL records with their 1-based line numbers."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """One conversation read from a file, with what the file says about it.

    Example:
        >>> Transcript((Message.user("hi"),), "openai", "chat.json").model is None
        True
    """

    messages: tuple[Message, ...]
    """The conversation, in order."""
    format: str
    """The format it was read as, one of ``FORMATS``."""
    title: str
    """A human-readable name: the file name, a session id, a trajectory."""
    model: str | None = None
    """The model the file names, if any (Claude Code: the last assistant
    message's model; request bodies: ``model``)."""
    tools: tuple[ToolSpec, ...] = ()
    """Function tools offered in a request body (their schemas cost tokens)."""
    meta: Mapping[str, Any] = field(
        default_factory=dict[str, Any], compare=False, hash=False
    )
    """Format-specific facts: ``claude_code``: ``session_id``, ``agent_id``,
    ``compactions`` (``index`` of the first message after each boundary,
    ``trigger``, ``pre_tokens``), ``usage`` (the last one) and ``left_out``
    (the message records not read: ``duplicates``, ``sidechain``,
    ``abandoned``); ``tau_bench``:
    ``task_id``, ``trial``, ``reward``, ``info``; ``locomo``: ``sample_id``,
    the speakers and ``qa``; request bodies: the other ``request`` fields."""
