"""Which ``Thinking`` parts each provider's writer sends, for the token counter.

Contract: ``thinking_sent(message, provider)`` is the set of indices of the
message's ``Thinking`` parts that ``to_<provider>`` writes, by the very rule
that writer applies (each writer module's own ``thinking_sent``). Reasoning
read from another provider is left out (its signatures mean nothing there),
so a count for ``provider`` counts it only where it is sent: the count of a
conversation is never below the count of what the writer writes.
"""

from __future__ import annotations

from collections.abc import Callable

from contextwindow.formats import anthropic, openai_chat, openai_responses
from contextwindow.messages import Message, Provider

__all__ = ["thinking_sent"]

_RULES: dict[str, Callable[[Message], frozenset[int]]] = {
    "openai": openai_chat.thinking_sent,
    "responses": openai_responses.thinking_sent,
    "anthropic": anthropic.thinking_sent,
}


def thinking_sent(message: Message, provider: Provider) -> frozenset[int]:
    """The indices of the ``Thinking`` parts ``to_<provider>`` writes.

    Example:
        >>> from contextwindow.messages import Thinking
        >>> signed = Message.assistant([Thinking("Plan.", signature="c2ln")])
        >>> thinking_sent(signed, "anthropic"), thinking_sent(signed, "openai")
        (frozenset({0}), frozenset())
    """
    return _RULES[provider](message)
