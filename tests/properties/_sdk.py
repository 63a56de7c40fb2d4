"""Provider SDK types, for the edge's property tests: build, and check against.

``conform(value, tp)`` checks JSON data against a request type of the
``openai`` or ``anthropic`` package the way its type hints describe it: a
``TypedDict`` has its required keys and no key it does not declare, each value
of its declared type; a ``Literal`` is one of its values; an ``Iterable`` is a
list. The SDKs send what they are given without checking it, so this is the
check a request would otherwise only get from the provider's servers.

``sdk_objects(data, provider)`` turns the dicts a conversation is written in
into the objects a program holding the SDK's responses has: OpenAI
``ChatCompletionMessage`` for assistant turns, Anthropic content blocks (and
whole ``Message`` responses) for assistant turns, Responses output items.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import anthropic.types as at
import openai.types.chat as oc
import openai.types.responses as orr
import typing_extensions
from pydantic import TypeAdapter, ValidationError

__all__ = ["REQUEST_TYPES", "conform", "sdk_objects"]

REQUEST_TYPES: dict[str, Any] = {
    "openai": oc.ChatCompletionMessageParam,
    "anthropic": at.MessageParam,
    "responses": orr.ResponseInputItemParam,
}
"""What one message (item) of a request is, per provider."""

_SEQUENCES = (
    collections.abc.Iterable,
    collections.abc.Sequence,
    list,
    typing.List,  # noqa: UP006 -- the SDKs' own hints use it
)


def conform(value: object, tp: Any, path: str = "$") -> None:
    """Raise ``AssertionError`` naming where ``value`` breaks the type ``tp``."""
    problem = _problem(value, tp, path)
    if problem is not None:
        raise AssertionError(problem)


def _problem(value: object, tp: Any, path: str) -> str | None:  # noqa: C901 -- one case per kind of type hint
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any or tp is object:
        return None
    if origin in (
        typing.Annotated,
        typing_extensions.Required,
        typing_extensions.NotRequired,
    ):
        return _problem(value, args[0], path)
    if origin is typing.Union or origin is types.UnionType:
        found = [_problem(value, a, path) for a in args]
        if any(f is None for f in found):
            return None
        # The branch that matched deepest tells what is wrong.
        return max((f for f in found if f), key=lambda f: len(f.split(":")[0]))
    if origin in (typing.Literal, typing_extensions.Literal):
        return None if value in args else f"{path}: {value!r} not in {args}"
    if tp is type(None):
        return None if value is None else f"{path}: expected null"
    if typing_extensions.is_typeddict(tp):
        return _typeddict(value, tp, path)
    if origin in _SEQUENCES or getattr(tp, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return f"{path}: expected a list, got {type(value).__name__}"
        inner = args[0] if args else Any
        for k, item in enumerate(value):
            p = _problem(item, inner, f"{path}[{k}]")
            if p is not None:
                return p
        return None
    if origin in (dict, collections.abc.Mapping, typing.Dict):  # noqa: UP006 -- as above
        if not isinstance(value, dict):
            return f"{path}: expected an object"
        return None
    if tp is str:
        return None if isinstance(value, str) else f"{path}: expected a string"
    if tp is bool:
        return None if isinstance(value, bool) else f"{path}: expected a boolean"
    if tp in (int, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"{path}: expected a number"
    if isinstance(tp, type) and isinstance(value, tp):
        return None
    return f"{path}: cannot check {tp!r}"


def _typeddict(value: object, tp: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return f"{path}: expected an object ({tp.__name__}), got {type(value).__name__}"
    hints = typing.get_type_hints(tp, include_extras=True)
    for key in tp.__required_keys__:
        if key not in value:
            return f"{path}.{key}: missing ({tp.__name__})"
    for key, item in value.items():
        if key not in hints:
            return f"{path}.{key}: not a key of {tp.__name__}"
        p = _problem(item, hints[key], f"{path}.{key}")
        if p is not None:
            return p
    return None


# -- SDK objects -------------------------------------------------------------------

_CHAT = TypeAdapter(oc.ChatCompletionMessage)
_BLOCK: TypeAdapter[Any] = TypeAdapter(at.ContentBlock)
_OUTPUT: TypeAdapter[Any] = TypeAdapter(orr.ResponseOutputItem)


def sdk_objects(data: Any, provider: str) -> Any:
    """``data`` with each assistant-side message as the SDK's response object.

    Messages the SDK's response types cannot hold stay dicts (a mixed list,
    as a program appending responses to its own dicts holds).
    """
    if provider == "anthropic":
        if isinstance(data, Mapping):
            return {**data, "messages": _anthropic(data["messages"])}
        return _anthropic(data)
    out: list[Any] = []
    for item in data:
        adapter = _CHAT if provider == "openai" else _OUTPUT
        if provider == "openai" and item.get("role") != "assistant":
            out.append(item)
            continue
        try:
            out.append(adapter.validate_python(item))
        except ValidationError:
            out.append(item)
    return out


def _anthropic(turns: Sequence[Mapping[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for k, turn in enumerate(turns):
        content = turn.get("content")
        if turn.get("role") != "assistant" or not isinstance(content, list):
            out.append(turn)
            continue
        try:
            blocks = [_BLOCK.validate_python(b) for b in content]
        except ValidationError:
            out.append(turn)
            continue
        if k % 2:  # the whole response, as ``client.messages.create`` returns it
            out.append(
                at.Message(
                    id=f"msg_{k}",
                    type="message",
                    role="assistant",
                    content=blocks,
                    model="claude-sonnet-4-5",
                    stop_reason="end_turn",
                    stop_sequence=None,
                    usage=at.Usage(input_tokens=1, output_tokens=1),
                )
            )
        else:  # ``{"role": "assistant", "content": response.content}``
            out.append({**turn, "content": blocks})
    return out
