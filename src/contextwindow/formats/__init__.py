"""Convert between neutral messages and each provider's wire shape.

Contract:

- Every converter is a pure function: input is never mutated, output is new.
- ``from_x`` validates at the edge: malformed input raises
  ``InvalidMessageError(path, reason)`` naming the exact place
  (``messages[2].role: unknown role 'robot'``), never a ``KeyError`` or a
  ``TypeError`` from deep inside.
- ``to_x(from_x(data))`` gives ``data`` back (as dicts) for the shapes each
  module documents: what the neutral model does not carry is kept in
  ``Message.meta[provider]`` (``"openai"``, ``"anthropic"`` or
  ``"responses"``) and written back only by that provider's writer. The
  layout of that entry is private to the module; treat it as opaque.
- ``coerce_messages`` is the edge every public call taking messages runs at
  entry: messages in any of these shapes (dicts, request bodies, the SDKs'
  pydantic objects, mixed lists, generators) become neutral, and
  ``Shape.write`` gives a conversation back in the shape it came in.
  ``coerce_tools`` does the same for the tool lists the SDKs take.
- Across providers, what both carry survives: texts, images, tool calls
  (id, name, arguments), tool results (call id, content; ``is_error`` where the
  target has it) and, between readers and writers of the same provider,
  reasoning.

Example:
    >>> conv = from_provider([{"role": "user", "content": "hi"}], "openai")
    >>> to_provider(conv, "anthropic").messages
    [{'role': 'user', 'content': 'hi'}]
    >>> to_provider(conv, "responses")
    [{'type': 'message', 'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast, overload

from contextwindow._images import image_size
from contextwindow._validate import expect_mapping
from contextwindow.errors import InvalidMessageError
from contextwindow.formats._coerce import (
    Coerced,
    Shape,
    coerce_messages,
    coerce_tools,
)
from contextwindow.formats.anthropic import (
    AnthropicRequest,
    from_anthropic,
    to_anthropic,
)
from contextwindow.formats.openai_chat import from_openai, to_openai
from contextwindow.formats.openai_responses import from_responses, to_responses
from contextwindow.messages import PROVIDERS, Message, Provider

__all__ = [
    "AnthropicRequest",
    "Coerced",
    "Shape",
    "coerce_messages",
    "coerce_tools",
    "from_anthropic",
    "from_openai",
    "from_provider",
    "from_responses",
    "image_size",
    "to_anthropic",
    "to_openai",
    "to_provider",
    "to_responses",
]


@overload
def to_provider(
    messages: Sequence[Message], provider: Literal["anthropic"]
) -> AnthropicRequest: ...
@overload
def to_provider(
    messages: Sequence[Message], provider: Literal["openai", "responses"]
) -> list[dict[str, Any]]: ...
@overload
def to_provider(
    messages: Sequence[Message], provider: Provider
) -> list[dict[str, Any]] | AnthropicRequest: ...
def to_provider(
    messages: Sequence[Message], provider: Provider
) -> list[dict[str, Any]] | AnthropicRequest:
    """Write a conversation in ``provider``'s shape.

    Args:
        messages: The conversation.
        provider: ``"openai"`` (Chat Completions), ``"anthropic"`` or
            ``"responses"``.

    Returns:
        A list of message dicts (OpenAI), an ``AnthropicRequest`` (Anthropic) or
        a list of input items (Responses).

    Raises:
        InvalidMessageError: The provider is unknown, or a message cannot be
            written (see the provider's ``to_x``).

    Example:
        >>> to_provider([Message.system("Be brief.")], "anthropic").system
        'Be brief.'
    """
    if provider == "openai":
        return to_openai(messages)
    if provider == "anthropic":
        return to_anthropic(messages)
    if provider == "responses":
        return to_responses(messages)
    raise _unknown(provider)


def from_provider(data: Any, provider: Provider) -> list[Message]:
    """Read a conversation in ``provider``'s shape.

    Args:
        data: A list of messages (items for Responses), or a request body:
            ``{"messages": [...]}`` for OpenAI; ``{"system": ...,
            "messages": [...]}`` for Anthropic; ``{"instructions": ...,
            "input": ...}`` for Responses. An ``AnthropicRequest`` works too.
        provider: ``"openai"``, ``"anthropic"`` or ``"responses"``.

    Returns:
        The neutral conversation.

    Raises:
        InvalidMessageError: The provider is unknown or the data is malformed.

    Example:
        >>> body = {"system": "Be brief.",
        ...         "messages": [{"role": "user", "content": "hi"}]}
        >>> [m.role for m in from_provider(body, "anthropic")]
        ['system', 'user']
    """
    if provider not in PROVIDERS:
        raise _unknown(provider)
    if isinstance(data, AnthropicRequest):
        data = data.body()
    if provider == "responses":
        if isinstance(data, Mapping):
            body = cast("Mapping[str, Any]", data)
            return from_responses(
                _field(body, "input"), instructions=body.get("instructions")
            )
        return from_responses(data)
    if isinstance(data, Mapping):
        body = cast("Mapping[str, Any]", data)
        messages = _field(body, "messages")
        if provider == "anthropic":
            return from_anthropic(messages, system=body.get("system"))
        return from_openai(messages)
    if provider == "anthropic":
        return from_anthropic(data)
    return from_openai(data)


def _field(data: Mapping[str, Any], key: str) -> Any:
    expect_mapping(data, "body")
    if key not in data:
        raise InvalidMessageError(key, "missing")
    return data[key]


def _unknown(provider: object) -> InvalidMessageError:
    return InvalidMessageError(
        "provider",
        f"unknown provider {provider!r} (expected one of {', '.join(PROVIDERS)})",
    )
