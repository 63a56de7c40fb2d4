"""The edge: messages in any shape a user holds become neutral, and go back out.

Contract:

- ``coerce_messages(data)`` is the one function every public call taking
  messages runs at entry. It accepts ``Message`` objects, OpenAI Chat
  Completions dicts, Anthropic Messages dicts (and a request body with
  ``system``), OpenAI Responses items (and a body with ``input``), provider
  SDK objects (anything with pydantic's ``model_dump``: ``ChatCompletionMessage``,
  an Anthropic ``Message`` or its content blocks inside a dict, Responses
  output items), one message alone, and any iterable of these (a generator
  is read once).
- The shape is detected per call: each item names the shapes it can be in
  (``{"role": "user", "content": "hi"}`` fits all three; a ``tool_use``
  block only Anthropic's), and the call reads every item in the one shape
  all of them fit, preferring ``provider`` when given, then ``hint``. A mixed
  list (an SDK object among Anthropic dicts) is read run by run, each
  ambiguous item in the shape of the nearest unambiguous one before it.
  ``provider`` given with ``force=True`` skips detection.
- A list of ``Message`` costs one type check per message and is returned as
  it is (the same list object).
- Bad input raises ``InvalidMessageError`` naming ``messages[i].field`` (with
  the caller's ``name``), never an ``AttributeError`` from inside.
- ``Shape.write(messages)`` gives the conversation back in the shape it came
  in: dicts for dicts, a body for a body (its other keys kept), and for
  Anthropic always a ``{"system", "messages"}`` body, since its system prompt
  lives outside the messages.

Example:
    >>> c = coerce_messages([{"role": "user", "content": "hi"},
    ...                      {"role": "assistant", "content": [
    ...                          {"type": "tool_use", "id": "t1", "name": "ls",
    ...                           "input": {}}]}])
    >>> c.shape.kind, [m.role for m in c.messages]
    ('anthropic', ['user', 'assistant'])
    >>> c.shape.write(c.messages)["messages"][0]
    {'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from contextwindow._args import check_bool
from contextwindow._validate import type_name
from contextwindow.errors import InvalidMessageError
from contextwindow.formats._common import too_deep
from contextwindow.formats.anthropic import (
    AnthropicRequest,
    from_anthropic,
    to_anthropic,
)
from contextwindow.formats.openai_chat import from_openai, to_openai
from contextwindow.formats.openai_responses import (
    ITEM_TYPES,
    from_responses,
    to_responses,
)
from contextwindow.messages import PROVIDERS, Message, Provider, ToolSpec

__all__ = [
    "NEUTRAL",
    "Coerced",
    "Shape",
    "ShapeKind",
    "coerce_messages",
    "coerce_tools",
    "neutral",
    "request_turn",
]

ShapeKind = Literal["neutral", "openai", "anthropic", "responses"]
"""Where messages came from: ``Message`` objects, or a provider's wire shape."""

_ALL: frozenset[Provider] = frozenset(PROVIDERS)
_OPENAI: frozenset[Provider] = frozenset(("openai",))
_ANTHROPIC: frozenset[Provider] = frozenset(("anthropic",))
_RESPONSES: frozenset[Provider] = frozenset(("responses",))
_NOT_ANTHROPIC: frozenset[Provider] = frozenset(("openai", "responses"))

# Content part types only one shape has (``text`` is OpenAI's and Anthropic's;
# ``refusal`` and ``input_audio`` are OpenAI Chat's and Responses').
_PART_SHAPES: dict[str, frozenset[Provider]] = {
    "image_url": _OPENAI,
    "file": _OPENAI,
    "audio": _OPENAI,
    "text": frozenset(("openai", "anthropic")),
    "refusal": _NOT_ANTHROPIC,
    "input_audio": _NOT_ANTHROPIC,
    "input_text": _RESPONSES,
    "output_text": _RESPONSES,
    "input_image": _RESPONSES,
    "input_file": _RESPONSES,
    "tool_use": _ANTHROPIC,
    "tool_result": _ANTHROPIC,
    "image": _ANTHROPIC,
    "thinking": _ANTHROPIC,
    "redacted_thinking": _ANTHROPIC,
    "document": _ANTHROPIC,
    "search_result": _ANTHROPIC,
    "server_tool_use": _ANTHROPIC,
    "web_search_tool_result": _ANTHROPIC,
    "web_fetch_tool_result": _ANTHROPIC,
    "code_execution_tool_result": _ANTHROPIC,
    "bash_code_execution_tool_result": _ANTHROPIC,
    "text_editor_code_execution_tool_result": _ANTHROPIC,
    "mcp_tool_use": _ANTHROPIC,
    "mcp_tool_result": _ANTHROPIC,
    "container_upload": _ANTHROPIC,
    "tool_search_tool_result": _ANTHROPIC,
    "tool_reference": _ANTHROPIC,
}
_OPENAI_KEYS = ("tool_calls", "tool_call_id", "function_call", "reasoning_content")
# What a provider's *response* object carries that its request does not take.
_ANTHROPIC_RESPONSE_KEYS = frozenset(
    (
        "id",
        "type",
        "model",
        "stop_reason",
        "stop_sequence",
        "stop_details",
        "usage",
        "container",
        "diagnostics",
    )
)


@dataclass(frozen=True, slots=True)
class Shape:
    """The shape messages came in, to write a conversation back in it.

    Example:
        >>> Shape("openai").write([Message.user("hi")])
        [{'role': 'user', 'content': 'hi'}]
        >>> Shape("anthropic").write([Message.system("Be brief."), Message.user("hi")])
        {'system': 'Be brief.', 'messages': [{'role': 'user', 'content': 'hi'}]}
    """

    kind: ShapeKind = "neutral"
    """``neutral`` (``Message`` objects) or the provider's wire shape."""
    body: Mapping[str, Any] | None = field(default=None, compare=False)
    """The request body the messages came in, if they came in one (its other
    keys, ``model`` or ``tools`` say, are written back)."""

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tools of the request body the messages came in (none without one).

        A body's tools are sent with its messages, so whatever counts the
        body counts them when no other tools are given (``fit``,
        ``count_messages``, ``inspect_messages``).

        Raises:
            InvalidMessageError: A tool is malformed (``tools[i].field``).

        Example:
            >>> coerce_messages({"messages": [], "tools": [
            ...     {"name": "ls", "input_schema": {"type": "object"}}]}).shape.tools
            (ToolSpec(name='ls', description='', parameters={'type': 'object'}),)
        """
        raw = None if self.body is None else self.body.get("tools")
        return coerce_tools(raw) if raw else ()

    def write(self, messages: Sequence[Message]) -> Any:
        """``messages`` in this shape (see the module's contract).

        Raises:
            InvalidMessageError: A message cannot be written in this shape.
        """
        kind = self.kind
        body = self.body
        if kind == "openai":
            out = to_openai(messages)
            return out if body is None else {**body, "messages": out}
        if kind == "anthropic":
            req = to_anthropic(messages).body()
            if body is None:
                return req
            rest = {k: v for k, v in body.items() if k != "system"}
            return {**rest, **req}
        if kind == "responses":
            if body is None:
                return to_responses(messages)
            return _responses_body(messages, body)
        return list(messages)


def _responses_body(
    messages: Sequence[Message], body: Mapping[str, Any]
) -> dict[str, Any]:
    out = dict(body)
    first = messages[0] if messages else None
    # ``instructions`` were read as a leading system message without meta.
    if (
        "instructions" in body
        and first is not None
        and first.role == "system"
        and "responses" not in first.meta
    ):
        out["instructions"] = first.text
        messages = messages[1:]
    else:
        out.pop("instructions", None)
    out["input"] = to_responses(messages)
    return out


NEUTRAL = Shape()
"""The shape of ``Message`` objects."""


@dataclass(frozen=True, slots=True)
class Coerced:
    """Neutral messages, and the shape they came in.

    Example:
        >>> c = coerce_messages([Message.user("hi")])
        >>> (c.shape.kind, len(c.messages))
        ('neutral', 1)
    """

    messages: list[Message]
    """The conversation, in the neutral form."""
    shape: Shape
    """Where it came from (``Shape.write`` gives it back so)."""


def coerce_messages(
    data: object,
    *,
    provider: Provider | None = None,
    hint: Provider | None = None,
    force: bool = False,
    name: str = "messages",
) -> Coerced:
    """Read messages in any shape a user holds (see the module's contract).

    Args:
        data: The messages: a list or any iterable of ``Message`` objects,
            provider dicts or SDK objects; a request body; or one message.
        provider: The shape to prefer where items are ambiguous (with
            ``force``, the shape every item is read in).
        hint: The shape to prefer next (the caller's target provider, say).
        force: Read every non-``Message`` item as ``provider``, undetected.
        name: How error messages name ``data``.

    Returns:
        The neutral messages and the shape detected.

    Raises:
        InvalidMessageError: ``data`` holds something that is no message, or a
            message is malformed; the error names ``name[i].field``.
        ArgumentTypeError: ``force`` is not a ``bool`` (``"no"`` would read
            every item as ``provider``, undetected).

    Example:
        >>> c = coerce_messages({"system": "Be brief.",
        ...                      "messages": [{"role": "user", "content": "hi"}]})
        >>> c.shape.kind, [m.role for m in c.messages]
        ('anthropic', ['system', 'user'])
        >>> coerce_messages([Message.user("hi"), {"role": "robot", "content": "x"}])
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: messages[1].role: unknown role 'robot'
    """
    if force is not False and force is not True:  # the common case costs two tests
        check_bool(force, "force")
    # ``kind``, not ``type(data)`` twice: a type checker narrows ``data`` by
    # the latter to a list of unknowns, past this block too.
    kind = type(data)
    if kind is list or kind is tuple:
        seq = cast("Sequence[Any]", data)
        for m in seq:
            if m.__class__ is not Message:
                break
        else:
            return Coerced(
                cast("list[Message]", seq) if kind is list else list(seq), NEUTRAL
            )
    if provider is not None and provider not in PROVIDERS:
        raise InvalidMessageError(
            "provider",
            f"unknown provider {provider!r} (expected one of {', '.join(PROVIDERS)})",
        )
    return _coerce(data, provider, hint, force, name)


def neutral(
    data: object,
    *,
    hint: Provider | None = None,
    name: str = "messages",
    start: int = 0,
) -> Sequence[Message]:
    """``data`` as neutral messages: itself when it is a list or tuple of them.

    The check every public call makes at entry; ``start`` skips messages the
    caller knows are ``Message`` objects (a manager's checked view).

    Example:
        >>> conv = [Message.user("hi")]
        >>> neutral(conv) is conv
        True
        >>> [m.role for m in neutral([{"role": "user", "content": "hi"}])]
        ['user']
    """
    kind = type(data)  # not narrowing ``data``, as in ``coerce_messages``
    if kind is list or kind is tuple:
        seq = cast("Sequence[Any]", data)
        for i in range(start, len(seq)):
            if seq[i].__class__ is not Message:
                break
        else:
            return seq
    return coerce_messages(data, hint=hint, name=name).messages


def _coerce(
    data: object,
    provider: Provider | None,
    hint: Provider | None,
    force: bool,
    name: str,
) -> Coerced:
    if isinstance(data, Message):
        return Coerced([data], NEUTRAL)
    if isinstance(data, AnthropicRequest):
        data = data.body()
    if isinstance(data, str):
        if provider == "responses":
            return Coerced(from_responses(data, path=name), Shape("responses"))
        raise InvalidMessageError(name, f"{_expected(name)}, got a string")
    if not isinstance(data, Mapping) and hasattr(data, "model_dump"):
        return _read_items([data], provider, hint, force, name, single=True)
    if isinstance(data, Mapping):
        obj = cast("Mapping[str, Any]", data)
        if "role" in obj or "type" in obj:
            return _read_items([obj], provider, hint, force, name, single=True)
        return _read_body(obj, provider, hint, force, name)
    if not isinstance(data, Iterable) or isinstance(data, (bytes, bytearray)):
        raise InvalidMessageError(name, f"{_expected(name)}, got {type_name(data)}")
    try:
        items = list(cast("Iterable[object]", data))
    except InvalidMessageError:
        raise
    except Exception as exc:  # a generator of the user's failed while read
        raise InvalidMessageError(
            name, f"reading the messages failed: {type(exc).__name__}: {exc}"
        ) from exc
    return _read_items(items, provider, hint, force, name)


def _expected(name: str) -> str:
    if name == "message":
        return "expected a message (a Message, a provider dict or an SDK object)"
    return "expected a list of messages"


def _read_body(
    body: Mapping[str, Any],
    provider: Provider | None,
    hint: Provider | None,
    force: bool,
    name: str,
) -> Coerced:
    if "messages" in body:
        kind: Provider | None = "anthropic" if "system" in body else None
        if force and provider is not None:
            kind = provider
        if kind == "anthropic":
            msgs = _items(body["messages"], f"{name}.messages")
            system = body.get("system")
            read = from_anthropic(
                [_plain(m, f"{name}.messages[{i}]") for i, m in enumerate(msgs)],
                system=system,
                path=f"{name}.messages",
            )
            return Coerced(read, Shape("anthropic", body))
        inner = _read_items(
            _items(body["messages"], f"{name}.messages"),
            provider,
            hint,
            force,
            f"{name}.messages",
        )
        found = inner.shape.kind
        # No message says which: the caller's preference.
        shape: ShapeKind = (
            found if found != "neutral" else (provider or hint or "openai")
        )
        return Coerced(inner.messages, Shape(shape, body))
    if "input" in body:
        raw = body["input"]
        path = f"{name}.input"
        plain: Any = (
            raw
            if isinstance(raw, str)
            else [_plain(m, f"{path}[{i}]") for i, m in enumerate(_items(raw, path))]
        )
        read = from_responses(plain, instructions=body.get("instructions"), path=path)
        return Coerced(read, Shape("responses", body))
    raise InvalidMessageError(
        name,
        "expected a list of messages or a request body with 'messages' or 'input'",
    )


def _items(value: object, path: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        got = type_name(cast("Any", value))
        raise InvalidMessageError(path, f"expected an array, got {got}")
    return list(cast("Iterable[object]", value))


def _read_items(
    items: list[Any],
    provider: Provider | None,
    hint: Provider | None,
    force: bool,
    name: str,
    *,
    single: bool = False,
) -> Coerced:
    plain: list[Any] = []
    cands: list[frozenset[Provider] | None] = []  # None: a Message
    for i, item in enumerate(items):
        if isinstance(item, Message):
            plain.append(item)
            cands.append(None)
            continue
        p = name if single else f"{name}[{i}]"
        obj = _plain(item, p)
        plain.append(obj)
        cands.append(_ALL if force else _shapes(obj) & _sdk_shapes(item) or _ALL)
    foreign = [c for c in cands if c is not None]
    if not foreign:
        return Coerced(cast("list[Message]", plain), NEUTRAL)
    prefer: list[Provider] = [x for x in (provider, hint) if x is not None]
    common = foreign[0].intersection(*foreign[1:])
    chosen: list[Provider | None]
    if force and provider is not None:
        chosen = [None if c is None else provider for c in cands]
    elif common:
        one = _pick(common, prefer)
        chosen = [None if c is None else one for c in cands]
    else:
        chosen = _per_item(cands, prefer)
    out: list[Message] = []
    k = 0
    n = len(plain)
    while k < n:
        kind = chosen[k]
        j = k + 1
        while j < n and chosen[j] == kind:
            j += 1
        if kind is None:
            out.extend(cast("list[Message]", plain[k:j]))
        else:
            out.extend(_read_run(plain[k:j], kind, name, k, single))
        k = j
    last: Provider = next(c for c in reversed(chosen) if c is not None)
    return Coerced(out, Shape(last))


def _pick(options: frozenset[Provider], prefer: Sequence[Provider]) -> Provider:
    for p in prefer:
        if p in options:
            return p
    for p in PROVIDERS:
        if p in options:
            return p
    raise AssertionError(
        "no shape to pick"
    )  # pragma: no cover -- options is never empty


def _per_item(
    cands: Sequence[frozenset[Provider] | None], prefer: Sequence[Provider]
) -> list[Provider | None]:
    """Each item's shape in a mixed list: its own, or the nearest decided one's."""
    out: list[Provider | None] = []
    current: Provider | None = None
    first = next((c for c in cands if c is not None and len(c) == 1), None)
    if first is not None:
        current = next(iter(first))
    for c in cands:
        if c is None:
            out.append(None)
            continue
        if current is not None and current in c:
            out.append(current)
            continue
        current = _pick(c, prefer)
        out.append(current)
    return out


def _read_run(
    run: list[Any], kind: Provider, name: str, offset: int, single: bool
) -> list[Message]:
    path = name
    try:
        if kind == "openai":
            return from_openai(run, path=path)
        if kind == "anthropic":
            return from_anthropic(run, path=path)
        return from_responses(run, path=path)
    except InvalidMessageError as exc:
        if single:
            raise _renamed(exc, f"{name}[0]", name) from None
        if offset:
            raise _shifted(exc, name, offset) from None
        raise


def _renamed(exc: InvalidMessageError, old: str, new: str) -> InvalidMessageError:
    path = exc.path
    if path.startswith(old):
        path = new + path[len(old) :]
    return InvalidMessageError(path, exc.reason)


def _shifted(exc: InvalidMessageError, name: str, offset: int) -> InvalidMessageError:
    """The error with its index counted in the whole list, not the run."""
    path = exc.path
    head = f"{name}["
    if path.startswith(head):
        end = path.find("]", len(head))
        index = path[len(head) : end]
        if end > 0 and index.isdigit():
            path = f"{head}{int(index) + offset}{path[end:]}"
    return InvalidMessageError(path, exc.reason)


# -- one item ------------------------------------------------------------------------


def _dump(obj: object) -> Any:
    """A pydantic object as JSON data, without its unset optional fields."""
    try:
        return obj.model_dump(exclude_none=True, mode="json")  # type: ignore[attr-defined]  # duck-typed: any pydantic model
    except Exception as exc:
        raise InvalidMessageError(
            "model_dump", f"{type(obj).__name__}.model_dump failed: {exc}"
        ) from exc


def _plain(item: object, path: str) -> Any:
    """One message as JSON data: SDK objects dumped, response-only keys left out."""
    if isinstance(item, Mapping):
        obj = cast("Mapping[str, Any]", item)
        obj = request_turn(obj)
        content = obj.get("content")
        if isinstance(content, (list, tuple)) and any(
            not isinstance(b, (Mapping, str)) and hasattr(b, "model_dump")
            for b in cast("Sequence[Any]", content)
        ):
            # ``{"role": "assistant", "content": response.content}``
            blocks = [
                _dump(b) if hasattr(b, "model_dump") else b
                for b in cast("Sequence[Any]", content)
            ]
            return {**obj, "content": blocks}
        return obj
    if type(item).__module__.startswith("langchain_core.messages"):
        # Its dump reads as a Responses item of an unknown type: say what to do.
        raise InvalidMessageError(
            path,
            f"a LangChain {type(item).__name__}: read LangChain messages with "
            "contextwindow.integrations.langchain.from_langchain (its trim_messages "
            "and middleware take them as they are)",
        )
    if hasattr(item, "model_dump") and not isinstance(item, type):
        dumped = _dump(item)
        if not isinstance(dumped, Mapping):
            raise InvalidMessageError(
                path, f"{type(item).__name__}.model_dump gave no object"
            )
        obj = cast("Mapping[str, Any]", dumped)
        if "role" not in obj and "type" not in obj:
            # A response holds its messages in a list; an item's ``output``
            # (an MCP call's, say) is its own text.
            for key, fix in _WHOLE_RESPONSES:
                if isinstance(obj.get(key), list):
                    raise InvalidMessageError(
                        path, f"a whole {type(item).__name__}: pass {fix}"
                    )
        if obj.get("role") == "assistant" and "type" not in obj:
            return _chat_reply(obj)
        return _plain(obj, path)
    raise InvalidMessageError(
        path,
        f"expected a message (a Message, a provider dict or an SDK object), "
        f"got {type(item).__name__}",
    )


def request_turn(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A message as a request takes it: an Anthropic response (dumped) is its turn.

    ``Message.model_dump()`` adds the response's own keys (``type:
    "message"``, ``id``, ``model``, ``usage``, ``stop_reason``) to the role
    and content a request sends back: they are left out, so that neither
    detection (``type`` is otherwise a Responses item's) nor the written
    request carries them. Anything else is returned as it is.

    Example:
        >>> request_turn({"type": "message", "role": "assistant", "content": [],
        ...               "usage": {"input_tokens": 3}})
        {'role': 'assistant', 'content': []}
    """
    if "role" in obj and ("stop_reason" in obj or "usage" in obj):
        return {k: v for k, v in obj.items() if k not in _ANTHROPIC_RESPONSE_KEYS}
    return obj


def _chat_reply(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions response message as the next request takes it.

    ``annotations`` are the response's alone. An audio reply is sent back
    by its id (a request's ``audio`` takes nothing else): it becomes an
    ``audio`` content part holding ``{"id": ...}`` and its transcript, which
    the writer puts in the ``audio`` field as ``{"id": ...}`` and counting
    reads by the transcript (``formats._opaque``).
    """
    out = {k: v for k, v in obj.items() if k not in ("annotations", "audio")}
    audio = obj.get("audio")
    if not isinstance(audio, Mapping):
        return out
    reply = cast("Mapping[str, Any]", audio)
    if not isinstance(reply.get("id"), str):
        return out
    block: dict[str, Any] = {"type": "audio", "audio": {"id": reply.get("id")}}
    transcript = reply.get("transcript")
    if isinstance(transcript, str) and transcript:
        block["transcript"] = transcript
    content = out.get("content")
    parts: list[Any] = []
    if isinstance(content, str) and content:
        parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        parts.extend(cast("Sequence[Any]", content))
    out["content"] = [*parts, block]
    return out


_WHOLE_RESPONSES = (
    ("choices", "response.choices[0].message"),
    ("output", "response.output (its items)"),
)
"""Response objects that hold messages, and where the messages are."""


_SDK_MODULES: tuple[tuple[str, frozenset[Provider]], ...] = (
    ("anthropic.", _ANTHROPIC),
    ("openai.types.chat.", _OPENAI),
    ("openai.types.responses.", _RESPONSES),
)


def _sdk_shapes(item: object) -> frozenset[Provider]:
    """The shapes an SDK object (or a dict of its blocks) can be in, by package.

    Anything else can be in every shape. The SDKs are never imported.
    """
    probe = item
    if isinstance(item, Mapping):
        content = cast("Mapping[str, Any]", item).get("content")
        if not isinstance(content, (list, tuple)) or not content:
            return _ALL
        probe = cast("Sequence[Any]", content)[0]
    module = type(probe).__module__
    if not isinstance(module, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a class may set __module__ to anything
        return _ALL
    for prefix, shapes in _SDK_MODULES:
        if module.startswith(prefix):
            return shapes
    return _ALL


def _shapes(obj: object) -> frozenset[Provider]:
    """The shapes one message could be in (all three when it could be any)."""
    if not isinstance(obj, Mapping):
        return _ALL  # the reader names the fault
    m = cast("Mapping[str, Any]", obj)
    kind = m.get("type")
    if kind is not None and kind != "message":
        # Only Responses items have a type and no role: its reader names an
        # unknown one with the types it knows.
        return _RESPONSES if kind in ITEM_TYPES or "role" not in m else _ALL
    role = m.get("role")
    if role in ("tool", "function") or any(k in m for k in _OPENAI_KEYS):
        return _OPENAI
    found: frozenset[Provider] = _ANTHROPIC | _NOT_ANTHROPIC
    if kind == "message":
        found = _RESPONSES
    if role in ("system", "developer"):
        found = found & _NOT_ANTHROPIC
    content = m.get("content")
    if isinstance(content, list):
        for block in cast("Sequence[Any]", content):
            if isinstance(block, Mapping):
                btype = cast("Mapping[str, Any]", block).get("type")
                shapes = _PART_SHAPES.get(btype) if isinstance(btype, str) else None
                if shapes is not None and shapes & found:
                    found = found & shapes
    return found or _ALL


# -- tools ---------------------------------------------------------------------------


def coerce_tools(tools: object, *, name: str = "tools") -> tuple[ToolSpec, ...]:
    """Read tool definitions as the SDKs take them into ``ToolSpec`` objects.

    Accepted, each item on its own: a ``ToolSpec``; OpenAI Chat
    ``{"type": "function", "function": {"name", "description", "parameters"}}``;
    a Responses function tool ``{"type": "function", "name", "parameters"}``;
    Anthropic ``{"name", "description", "input_schema"}``; an MCP tool
    ``{"name", "description", "inputSchema"}``; a custom tool
    ``{"type": "custom", "name", ...}``; SDK objects of any of these. A hosted
    tool (``{"type": "web_search"}``, Anthropic's ``web_search_20250305``) is
    counted by its name: the providers do not publish how they render them.

    Schemas are checked where counting reads them: ``parameters`` an object,
    ``properties`` an object, ``required`` a list of strings, ``enum`` a
    list, all JSON; anything else is refused naming the place.

    Raises:
        InvalidMessageError: A tool is malformed; the error names
            ``tools[i].field``.

    Example:
        >>> coerce_tools([{"type": "function", "function": {
        ...     "name": "ls", "parameters": {"type": "object"}}}])
        (ToolSpec(name='ls', description='', parameters={'type': 'object'}),)
        >>> coerce_tools([{"name": "ls", "input_schema": {"properties": []}}])
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: tools[0].input_schema.properties: expected an object, got array
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if isinstance(tools, ToolSpec):
        tools = (tools,)
    if isinstance(tools, tuple) and all(
        t.__class__ is ToolSpec and t.parameters.__class__ is dict
        for t in cast("Sequence[Any]", tools)
    ):
        specs = cast("tuple[ToolSpec, ...]", tools)
        for i, spec in enumerate(specs):
            _check_schema(spec.parameters, f"{name}[{i}].parameters")
        return specs
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise InvalidMessageError(
            name, f"expected a list of tools, got {type_name(cast('Any', tools))}"
        )
    out: list[ToolSpec] = []
    for i, raw in enumerate(cast("Iterable[object]", tools)):
        out.append(_tool(raw, f"{name}[{i}]"))
    return tuple(out)


def _tool(raw: object, p: str) -> ToolSpec:
    if isinstance(raw, ToolSpec):
        if not isinstance(raw.parameters, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # a ToolSpec is not checked when built
            raise InvalidMessageError(
                f"{p}.parameters",
                f"expected an object, got {type_name(raw.parameters)}",
            )
        _check_schema(raw.parameters, f"{p}.parameters")
        return raw
    if not isinstance(raw, Mapping) and hasattr(raw, "model_dump"):
        raw = _dump(raw)
    if not isinstance(raw, Mapping):
        raise InvalidMessageError(
            p, f"expected a tool (a ToolSpec or a tool dict), got {type_name(raw)}"
        )
    obj = cast("Mapping[str, Any]", raw)
    kind = obj.get("type")
    if kind == "function" and isinstance(obj.get("function"), Mapping):
        return _spec(
            cast("Mapping[str, Any]", obj["function"]), "parameters", f"{p}.function"
        )
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in obj:
            return _spec(obj, key, p)
    if kind == "function":
        return _spec(obj, "parameters", p)
    label = obj.get("name", kind)
    if not isinstance(label, str) or not label:
        raise InvalidMessageError(
            f"{p}.name", "missing (a tool needs a name, a type or a schema)"
        )
    description = obj.get("description", "")
    if not isinstance(description, str):
        raise InvalidMessageError(
            f"{p}.description", f"expected a string, got {type_name(description)}"
        )
    return ToolSpec(label, description)


def _spec(obj: Mapping[str, Any], key: str, p: str) -> ToolSpec:
    tool_name = obj.get("name")
    if not isinstance(tool_name, str):
        why = (
            "missing"
            if tool_name is None
            else f"expected a string, got {type_name(tool_name)}"
        )
        raise InvalidMessageError(f"{p}.name", why)
    description = obj.get("description") or ""
    if not isinstance(description, str):
        raise InvalidMessageError(
            f"{p}.description", f"expected a string, got {type_name(description)}"
        )
    schema = obj.get(key)
    if schema is None:
        schema = {}
    if not isinstance(schema, Mapping):
        raise InvalidMessageError(
            f"{p}.{key}", f"expected an object, got {type_name(schema)}"
        )
    with too_deep(f"{p}.{key}"):  # a schema past the stack: the tool named
        params = copy.deepcopy(dict(cast("Mapping[str, Any]", schema)))
    _check_schema(params, f"{p}.{key}")
    return ToolSpec(tool_name, description, params)


def _check_schema(schema: Mapping[str, Any], p: str, depth: int = 0) -> None:
    """Refuse what counting cannot read, naming the place; JSON values only."""
    if depth > 64:
        raise InvalidMessageError(p, "nested too deeply (more than 64 levels)")
    if depth == 0:
        with too_deep(p):
            try:
                json.dumps(schema, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidMessageError(p, f"not JSON: {exc}") from None
    for key, ok, want in _SCHEMA_KEYS:
        value = schema.get(key)
        if value is not None and not ok(value):
            raise InvalidMessageError(
                f"{p}.{key}", f"expected {want}, got {type_name(value)}"
            )
    props = schema.get("properties")
    if isinstance(props, Mapping):
        for key, sub in cast("Mapping[str, Any]", props).items():
            if isinstance(sub, Mapping):
                _check_schema(
                    cast("Mapping[str, Any]", sub), f"{p}.properties.{key}", depth + 1
                )
    items = schema.get("items")
    if isinstance(items, Mapping):
        _check_schema(cast("Mapping[str, Any]", items), f"{p}.items", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for k, sub in enumerate(cast("Sequence[Any]", options)):
                if isinstance(sub, Mapping):
                    _check_schema(
                        cast("Mapping[str, Any]", sub), f"{p}.{key}[{k}]", depth + 1
                    )


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, str) for v in cast("Sequence[Any]", value)
    )


_SCHEMA_KEYS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("properties", lambda v: isinstance(v, Mapping), "an object"),
    ("required", _strings, "a list of names"),
    ("enum", lambda v: isinstance(v, list), "a list of values"),
    ("type", lambda v: isinstance(v, str) or _strings(v), "a type name or a list"),
    ("description", lambda v: isinstance(v, str), "a string"),
)
"""What counting reads of a schema, and what it must be."""
