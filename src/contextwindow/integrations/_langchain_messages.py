"""LangChain ``BaseMessage`` <-> neutral ``Message``, losslessly, both ways.

Contract:

- ``from_langchain(messages)`` reads ``BaseMessage`` objects (and anything
  ``convert_to_messages`` takes: dicts, ``(role, text)`` tuples, strings) into
  neutral messages: ``human`` -> user, ``ai`` -> assistant (its
  ``tool_calls`` as ``ToolCall`` parts), ``system`` -> system, ``tool`` -> a
  tool message with one ``ToolResult``; ``chat`` messages by their role;
  chunks as their message. Content blocks become parts: text, images (every
  LangChain image form), thinking and reasoning; a block with no neutral part
  is counted as its JSON text.
- Whatever has no neutral field (the message's class, ``id``,
  ``additional_kwargs``, ``response_metadata``, ``usage_metadata``,
  ``invalid_tool_calls``, a tool message's ``artifact``, content blocks that
  the parts do not rebuild exactly) is kept in ``meta["langchain"]``, so
  ``to_langchain(from_langchain(ms)) == ms``.
- ``to_langchain(messages)`` writes neutral messages back: a message whose
  parts are the ones read gets its original content and fields back; one a
  strategy changed (a truncated result, a summary) is written from its parts.
  A tool message holding several results becomes one ``ToolMessage`` each.
  Neutral fields LangChain has no place for (``agent``, ``pinned``, other
  ``meta``) travel in ``additional_kwargs["contextwindow"]``, which
  LangChain's chat models do not send.
- A tool call whose arguments are JSON but not an object (a custom tool's
  free text, an array) is written as ``args={"input": <the value>}``, as
  ``to_anthropic`` writes it (LangChain's ``args`` takes an object alone);
  its original arguments travel in ``additional_kwargs["contextwindow"]``,
  so reading it back gives the call that was written while its ``args``
  are unchanged.
- JSON nested too deep for Python's stack is an ``InvalidMessageError``
  naming the message (``nested too deeply``), never a ``RecursionError``.
- The input is never mutated: kept values are deep copies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    convert_to_messages,
)

from contextwindow.errors import ContextWindowError, InvalidMessageError
from contextwindow.formats._common import too_deep
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Part,
    Provider,
    ResultPart,
    Role,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    new_id,
)

__all__ = ["KEY", "from_langchain", "to_langchain"]

KEY = "langchain"
"""The ``meta`` key holding what LangChain carries and ``Message`` does not."""

EXTRA = "contextwindow"
"""The ``additional_kwargs`` key holding neutral fields LangChain lacks."""

_CLASSES: dict[str, type[BaseMessage]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
    "chat": ChatMessage,
    "HumanMessageChunk": HumanMessageChunk,
    "AIMessageChunk": AIMessageChunk,
    "SystemMessageChunk": SystemMessageChunk,
    "ToolMessageChunk": ToolMessageChunk,
    "ChatMessageChunk": ChatMessageChunk,
}
_ROLE_TYPE: dict[str, str] = {
    "user": "human",
    "assistant": "ai",
    "system": "system",
    "tool": "tool",
}
_TYPE_ROLE: dict[str, Role] = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
}
_CHAT_ROLES: dict[str, Role] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}
# Fields written from the parts, never from what was kept.
_FROM_PARTS = frozenset(("content", "tool_calls", "type", "name", "tool_call_id"))


def from_langchain(messages: Iterable[Any], *, name: str = "messages") -> list[Message]:
    """LangChain messages as neutral messages (see the module's contract).

    Raises:
        InvalidMessageError: A message LangChain cannot read, of a kind with no
            neutral role (a ``RemoveMessage``, a ``FunctionMessage``), or a
            tool call whose arguments are not JSON; the error names
            ``messages[i]``.

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> ms = from_langchain([HumanMessage("hi", id="h1"),
        ...     AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}],
        ...               usage_metadata={"input_tokens": 9, "output_tokens": 3,
        ...                               "total_tokens": 12})])
        >>> [(m.role, m.id) for m in ms], ms[1].tool_calls[0].name
        ([('user', 'h1'), ('assistant', ...)], 'ls')
        >>> ms[1].meta["langchain"]["usage_metadata"]["input_tokens"]
        9
    """
    try:
        read = convert_to_messages(list(messages))
    except (ValueError, TypeError, NotImplementedError) as exc:
        raise InvalidMessageError(name, f"not a LangChain message: {exc}") from None
    out: list[Message] = []
    for i, m in enumerate(read):
        with too_deep(f"{name}[{i}]"):
            out.append(_read(m, f"{name}[{i}]"))
    return out


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """Neutral messages as LangChain messages (see the module's contract).

    Raises:
        InvalidMessageError: A tool result outside a tool message, or a tool
            call outside an assistant message (LangChain has no place for
            either), naming ``messages[i].parts[k]``.

    Example:
        >>> from contextwindow import Message, ToolCall
        >>> out = to_langchain([Message.user("hi"),
        ...     Message.assistant(tool_calls=[ToolCall("c1", "ls", "{}")]),
        ...     Message.tool("c1", "a.py")])
        >>> [type(m).__name__ for m in out], out[1].tool_calls[0]["id"]
        (['HumanMessage', 'AIMessage', 'ToolMessage'], 'c1')
        >>> to_langchain(from_langchain(out)) == out
        True
    """
    out: list[BaseMessage] = []
    for i, m in enumerate(messages):
        with too_deep(f"messages[{i}]"):
            out.extend(_write(m, f"messages[{i}]"))
    return out


# -- reading -------------------------------------------------------------------


def _read(msg: BaseMessage, path: str) -> Message:
    kind = msg.type
    role: Role | None
    if isinstance(msg, ChatMessage):
        role = _CHAT_ROLES.get(msg.role)
    else:
        role = _TYPE_ROLE.get(kind)
    if role is None:
        raise InvalidMessageError(
            f"{path}.type", f"a {type(msg).__name__} has no neutral role"
        )
    kept = _kept_fields(msg)
    extra = kept.get("additional_kwargs", {}).pop(EXTRA, None)
    if not kept.get("additional_kwargs", True):
        del kept["additional_kwargs"]
    if kind != _ROLE_TYPE[role]:
        kept["type"] = kind
    if role == "tool":
        result = _tool_result(msg, path)
        parts: tuple[Part, ...] = (result,)
        rebuilt = (
            result.content
            if isinstance(result.content, str)
            else _content(result.content, as_list=True)
        )
        if rebuilt != msg.content:
            kept["content"] = copy.deepcopy(msg.content)
    else:
        parts = _parts(msg.content, path)
        if _content(parts) != msg.content:
            kept["content"] = copy.deepcopy(msg.content)
        if isinstance(msg, AIMessage):
            calls = _unwrapped(_calls(msg, path), extra)
            parts += calls
            if _tool_calls(calls) != msg.tool_calls:
                kept["tool_calls"] = copy.deepcopy(msg.tool_calls)
    agent, pinned, meta = _extra(extra, path)
    return Message(
        role,
        parts,
        name=msg.name if role != "tool" else None,
        agent=agent,
        pinned=pinned,
        id=msg.id if msg.id is not None else new_id(),
        meta={**meta, KEY: kept},
    )


def _kept_fields(msg: BaseMessage) -> dict[str, Any]:
    """The message's fields not at their default, deep-copied."""
    kept: dict[str, Any] = {}
    for key, info in type(msg).model_fields.items():
        if key in _FROM_PARTS or key == "status":
            continue
        value = getattr(msg, key)
        if key == "id" or value != info.get_default(call_default_factory=True):
            kept[key] = copy.deepcopy(value)
    return kept


def _extra(extra: Any, path: str) -> tuple[str | None, bool, dict[str, Any]]:
    if extra is None:
        return None, False, {}
    if not isinstance(extra, Mapping):
        raise InvalidMessageError(
            f"{path}.additional_kwargs.{EXTRA}", "expected a mapping"
        )
    fields = cast("Mapping[str, Any]", extra)
    meta = fields.get("meta", {})
    return fields.get("agent"), bool(fields.get("pinned", False)), dict(meta)


def _parts(content: Any, path: str) -> tuple[Part, ...]:
    if isinstance(content, str):
        return (Text(content),) if content else ()
    parts: list[Part] = []
    for k, block in enumerate(content):
        part = _block(block, f"{path}.content[{k}]")
        if part is not None:
            parts.append(part)
    return tuple(parts)


def _block(item: Any, path: str) -> Part | None:
    if isinstance(item, str):
        return Text(item)
    if not isinstance(item, Mapping):
        raise InvalidMessageError(path, "expected a str or a content block")
    block = cast("Mapping[str, Any]", item)
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return Text(block["text"])
    image = _image(block)
    if image is not None:
        return image
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        signature = block.get("signature")
        return Thinking(
            block["thinking"],
            signature=signature if isinstance(signature, str) else None,
        )
    if kind == "redacted_thinking" and isinstance(block.get("data"), str):
        return Thinking("", signature=block["data"], redacted=True)
    if kind == "reasoning" and isinstance(block.get("reasoning", ""), str):
        return Thinking(block.get("reasoning", ""))
    if kind in ("tool_use", "tool_call", "function_call"):
        return None  # the message's tool_calls carry it
    provider = _OPAQUE.get(kind) if isinstance(kind, str) else None
    if provider is not None:
        try:
            return Opaque.of(provider, block)
        except ContextWindowError:
            pass  # not JSON: read as the text below
    # No neutral part: counted as the JSON it is sent as.
    return Text(json.dumps(block, ensure_ascii=False, default=str))


_OPAQUE: dict[str, Provider] = {
    "document": "anthropic",
    "search_result": "anthropic",
    "file": "openai",
    "input_audio": "openai",
    "refusal": "openai",
    "input_file": "responses",
}
"""The provider-native blocks a LangChain message carries as they are (its
chat models pass them on): read as ``Opaque`` parts of that provider, so they
are counted as the content they are and written back as they came."""


def _image(block: Mapping[str, Any]) -> Image | None:
    kind = block.get("type")
    if kind == "image_url":
        value = block.get("image_url")
        if isinstance(value, str):
            return Image(value)
        if not isinstance(value, Mapping):
            return None
        image_url = cast("Mapping[str, Any]", value)
        url = image_url.get("url")
        if isinstance(url, str):
            detail = image_url.get("detail")
            return Image(url, detail=detail if isinstance(detail, str) else None)
        return None
    if kind != "image":
        return None
    if isinstance(block.get("url"), str):
        return Image(block["url"])
    data = block.get("base64", block.get("data"))
    mime = block.get("mime_type", "image/png")
    source = block.get("source")
    if isinstance(source, Mapping):  # Anthropic's own block
        source = cast("Mapping[str, Any]", source)
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return Image(source["url"])
        data, mime = source.get("data"), source.get("media_type", mime)
    if isinstance(data, str) and isinstance(mime, str):
        return Image(f"data:{mime};base64,{data}")
    return None


def _unwrapped(calls: tuple[ToolCall, ...], extra: Any) -> tuple[ToolCall, ...]:
    """``calls``, those written wrapped given back their original arguments.

    ``_tool_calls`` writes arguments that are not a JSON object as
    ``{"input": <the value>}`` and keeps the originals in ``extra["args"]``
    (by call id); a call whose ``args`` are still that wrapping is read as
    the call written. One whose ``args`` changed is read as it is now.
    """
    raw = (
        cast("Mapping[str, Any]", extra).get("args")
        if isinstance(extra, Mapping)
        else None
    )
    if not isinstance(raw, Mapping) or not raw:
        return calls
    originals = cast("Mapping[str, Any]", raw)
    out: list[ToolCall] = []
    for call in calls:
        original = originals.get(call.id)
        if isinstance(original, str):
            with suppress(ContextWindowError):
                was = ToolCall(call.id, call.name, original)
                if _args(was) == call.input:
                    call = was
        out.append(call)
    return tuple(out)


def _calls(msg: AIMessage, path: str) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for k, call in enumerate(msg.tool_calls):
        try:
            # As ToolCall serialises a mapping: compact, non-ASCII kept.
            with too_deep(f"{path}.tool_calls[{k}].args"):
                args = json.dumps(
                    call["args"], ensure_ascii=False, separators=(",", ":")
                )
            call_id = call.get("id")  # pyright: ignore[reportUnknownMemberType]  # langchain's ToolCall.type reads as Unknown
            calls.append(ToolCall(call_id or "", call["name"], args))
        except InvalidMessageError:
            raise
        except (ContextWindowError, TypeError, ValueError) as exc:
            raise InvalidMessageError(f"{path}.tool_calls[{k}]", str(exc)) from None
    return tuple(calls)


def _tool_result(msg: BaseMessage, path: str) -> ToolResult:
    call_id = getattr(msg, "tool_call_id", None)
    if not isinstance(call_id, str):
        raise InvalidMessageError(f"{path}.tool_call_id", "missing")
    content: str | tuple[ResultPart, ...]
    if isinstance(msg.content, str):
        content = msg.content
    else:
        content = tuple(
            p if isinstance(p, (Text, Image, Opaque)) else Text(_part_text(p))
            for p in _parts(msg.content, path)
        )
    status = getattr(msg, "status", "success")
    return ToolResult(call_id, content, is_error=status == "error", name=msg.name)


def _part_text(part: Part) -> str:
    if isinstance(part, Thinking):
        return part.text
    return json.dumps(part.kind)  # pragma: no cover -- _parts yields no calls


# -- writing -------------------------------------------------------------------


def _write(m: Message, path: str) -> list[BaseMessage]:
    kept: dict[str, Any] = copy.deepcopy(dict(m.meta.get(KEY, {})))
    others = {k: v for k, v in m.meta.items() if k != KEY}
    extra: dict[str, Any] = {}
    if m.agent is not None:
        extra["agent"] = m.agent
    if m.pinned:
        extra["pinned"] = True
    wrapped = {c.id: c.arguments for c in m.tool_calls if not isinstance(c.input, dict)}
    if wrapped and m.role == "assistant":
        extra["args"] = wrapped  # read back as the calls they were
    if others:
        extra["meta"] = copy.deepcopy(others)
    if extra:
        kept["additional_kwargs"] = {**kept.get("additional_kwargs", {}), EXTRA: extra}
    kept.setdefault("id", m.id)
    if m.role == "tool":
        return _write_results(m, kept, path)
    for k, part in enumerate(m.parts):
        if isinstance(part, ToolResult) or (
            isinstance(part, ToolCall) and m.role != "assistant"
        ):
            raise InvalidMessageError(
                f"{path}.parts[{k}]", f"a {part.kind} in a {m.role} message"
            )
    body = tuple(p for p in m.parts if not isinstance(p, ToolCall))
    content = kept.pop("content", None)
    if content is None or _parts(content, path) != body:
        content = _content(body)
    kind = kept.pop("type", _ROLE_TYPE[m.role])
    fields: dict[str, Any] = {**kept, "content": content, "name": m.name}
    if m.role == "assistant":
        calls = _tool_calls(m.tool_calls)
        original = kept.get("tool_calls")
        fields["tool_calls"] = (
            original if original is not None and _same_calls(original, m) else calls
        )
    else:
        fields.pop("tool_calls", None)
    if kind == "chat" and "role" not in fields:
        fields["role"] = m.role
    return [_CLASSES.get(kind, _CLASSES[_ROLE_TYPE[m.role]])(**fields)]


def _write_results(m: Message, kept: dict[str, Any], path: str) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    content = kept.pop("content", None)
    kind = kept.pop("type", "tool")
    for k, part in enumerate(m.parts):
        if not isinstance(part, ToolResult):
            raise InvalidMessageError(
                f"{path}.parts[{k}]", f"a {part.kind} in a tool message"
            )
        fields = dict(kept) if k == 0 else {**kept, "id": f"{m.id}-{k}"}
        body: Any = part.content
        if k == 0 and content is not None and _same_result(content, part, path):
            body = content
        elif not isinstance(body, str):
            body = _content(body, as_list=True)
        fields.update(
            content=body,
            tool_call_id=part.call_id,
            name=part.name,
            status="error" if part.is_error else "success",
        )
        out.append(_CLASSES.get(kind, ToolMessage)(**fields))
    return out


def _same_result(content: Any, part: ToolResult, path: str) -> bool:
    if isinstance(content, str):
        return content == part.content
    probe = ToolMessage(content=content, tool_call_id=part.call_id)
    return _tool_result(probe, path).content == part.content


def _same_calls(original: Any, m: Message) -> bool:
    try:
        return _calls(AIMessage("", tool_calls=original), "") == m.tool_calls
    except (ContextWindowError, ValueError, TypeError, KeyError):
        return False


def _content(
    parts: Sequence[Part], *, as_list: bool = False
) -> str | list[str | dict[str, Any]]:
    if not as_list:
        if not parts:
            return ""
        if len(parts) == 1 and isinstance(parts[0], Text):
            return parts[0].text
    blocks: list[str | dict[str, Any]] = []
    for p in parts:
        if isinstance(p, Text):
            blocks.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            url: dict[str, Any] = {"url": p.url}
            if p.detail is not None:
                url["detail"] = p.detail
            blocks.append({"type": "image_url", "image_url": url})
        elif isinstance(p, Opaque):
            blocks.append(p.block)  # a provider's own block, passed on as it came
        elif isinstance(p, Thinking):
            if p.redacted:
                blocks.append({"type": "redacted_thinking", "data": p.signature or ""})
            else:
                block: dict[str, Any] = {"type": "thinking", "thinking": p.text}
                if p.signature is not None:
                    block["signature"] = p.signature
                blocks.append(block)
    return blocks


def _tool_calls(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "args": _args(c), "id": c.id, "type": "tool_call"}
        for c in calls
    ]


def _args(call: ToolCall) -> Any:
    """The call's ``args``: its arguments, or ``{"input": <them>}``.

    LangChain's ``args`` takes an object alone; arguments that are another
    JSON value (a custom tool's free text, an array) are wrapped as
    ``to_anthropic`` wraps them for ``tool_use.input``.
    """
    value = call.input
    return (
        cast("dict[str, Any]", value) if isinstance(value, dict) else {"input": value}
    )
