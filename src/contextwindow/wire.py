"""contextwindow's own JSON form of messages, for storage and transcripts.

Contract:

- Lossless: ``message_from_dict(message_to_dict(m))`` equals ``m`` and keeps its
  ``id`` and ``meta`` (which equality ignores), for every field of ``Message``
  and of every part.
- Compact: a field at its default (``None``, ``False``, empty ``meta``) is left
  out; ``id`` and ``parts`` are always written. Reading accepts an explicit
  ``null`` wherever a field may be left out.
- Each part carries a ``"kind"`` discriminator (``text``, ``image``,
  ``tool_call``, ``tool_result``, ``thinking``, ``opaque``), as the
  dataclasses do.
- Versioned once, not per message: ``WIRE_VERSION`` is the version of this form.
  Whatever stores many messages records it once (``to_document`` writes
  ``{"v": 1, "messages": [...]}``; a JSONL transcript puts it in its header).
- Validated at the edge: malformed input raises ``InvalidMessageError`` naming
  the exact place (``messages[3].parts[1].call_id: missing``). Unknown fields
  are errors too, so nothing is dropped silently.
- ``meta`` is copied shallowly; it is expected to hold JSON values.
- Messages an earlier version stored read as today's readers give them: the
  blocks it kept aside in ``meta`` (an Anthropic ``document``, a Chat
  ``file``, a Responses ``input_file``: ``[index, block]`` pairs under
  ``"opaque"``) become ``Opaque`` parts at the place they were read from,
  and leave ``meta``, so they are counted and written once (a Chat system
  message's too, as its reader gives them now).

Example:
    >>> call = ToolCall("c1", "ls", "{}")
    >>> m = Message.assistant("On it.", tool_calls=[call], id="m1")
    >>> d = message_to_dict(m)
    >>> d["parts"][1]
    {'kind': 'tool_call', 'id': 'c1', 'name': 'ls', 'arguments': '{}'}
    >>> message_from_dict(d) == m and message_from_dict(d).id == "m1"
    True
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict, cast

from contextwindow._validate import expect_mapping, expect_str, opt_str, type_name
from contextwindow.errors import ArgumentError, InvalidMessageError
from contextwindow.messages import (
    PROVIDERS,
    ROLES,
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
    parse_json,
)

__all__ = [
    "WIRE_VERSION",
    "DocumentDict",
    "ImageDict",
    "MessageDict",
    "OpaqueDict",
    "PartDict",
    "TextDict",
    "ThinkingDict",
    "ToolCallDict",
    "ToolResultDict",
    "from_dicts",
    "from_document",
    "message_from_dict",
    "message_to_dict",
    "to_dicts",
    "to_document",
]

WIRE_VERSION = 1
"""The version of this JSON form. Bumped on any change a reader of the old
form could misread; readers refuse versions they do not know."""


class TextDict(TypedDict):
    """A ``Text`` part."""

    kind: Literal["text"]
    text: str


class _ImageBase(TypedDict):
    kind: Literal["image"]
    url: str


class ImageDict(_ImageBase, total=False):
    """An ``Image`` part; optional fields are left out at their default."""

    detail: str
    width: int
    height: int


class ToolCallDict(TypedDict):
    """A ``ToolCall`` part; ``arguments`` is JSON text, as in the model."""

    kind: Literal["tool_call"]
    id: str
    name: str
    arguments: str


class _ToolResultBase(TypedDict):
    kind: Literal["tool_result"]
    call_id: str
    content: str | list[TextDict | ImageDict | OpaqueDict]


class ToolResultDict(_ToolResultBase, total=False):
    """A ``ToolResult`` part; ``content``: a string, or text, image and opaque parts."""

    is_error: bool
    name: str


class _ThinkingBase(TypedDict):
    kind: Literal["thinking"]
    text: str


class ThinkingDict(_ThinkingBase, total=False):
    """A ``Thinking`` part."""

    signature: str
    redacted: bool


class OpaqueDict(TypedDict):
    """An ``Opaque`` part; ``raw`` is the block's JSON text, as in the model."""

    kind: Literal["opaque"]
    provider: Literal["openai", "anthropic", "responses"]
    raw: str


PartDict = (
    TextDict | ImageDict | ToolCallDict | ToolResultDict | ThinkingDict | OpaqueDict
)
"""Any part, told apart by ``kind``."""


class _MessageBase(TypedDict):
    role: Role
    parts: list[PartDict]
    id: str


class MessageDict(_MessageBase, total=False):
    """A ``Message``; optional fields are left out at their default."""

    name: str
    agent: str
    pinned: bool
    meta: dict[str, Any]


class DocumentDict(TypedDict):
    """A conversation with the version of the form it is written in."""

    v: int
    messages: list[MessageDict]


# -- writing ---------------------------------------------------------------------


def _content_to_dict(part: ResultPart) -> TextDict | ImageDict | OpaqueDict:
    if isinstance(part, Text):
        return {"kind": "text", "text": part.text}
    if isinstance(part, Opaque):
        return {"kind": "opaque", "provider": part.provider, "raw": part.raw}
    d: ImageDict = {"kind": "image", "url": part.url}
    if part.detail is not None:
        d["detail"] = part.detail
    if part.width is not None:
        d["width"] = part.width
    if part.height is not None:
        d["height"] = part.height
    return d


def _part_to_dict(part: Part) -> PartDict:
    if isinstance(part, (Text, Image, Opaque)):
        return _content_to_dict(part)
    if isinstance(part, ToolCall):
        return {
            "kind": "tool_call",
            "id": part.id,
            "name": part.name,
            "arguments": part.arguments,
        }
    if isinstance(part, ToolResult):
        content = part.content
        r: ToolResultDict = {
            "kind": "tool_result",
            "call_id": part.call_id,
            "content": (
                content
                if isinstance(content, str)
                else [_content_to_dict(p) for p in content]
            ),
        }
        if part.is_error:
            r["is_error"] = True
        if part.name is not None:
            r["name"] = part.name
        return r
    t: ThinkingDict = {"kind": "thinking", "text": part.text}
    if part.signature is not None:
        t["signature"] = part.signature
    if part.redacted:
        t["redacted"] = True
    return t


def message_to_dict(msg: Message) -> MessageDict:
    """The JSON form of one message.

    Example:
        >>> message_to_dict(Message.system("Be brief.", id="s1"))
        {'role': 'system', 'parts': [{'kind': 'text', 'text': 'Be brief.'}], 'id': 's1'}
        >>> message_to_dict(Message.user("hi", agent="ada", pinned=True))["agent"]
        'ada'
    """
    d: MessageDict = {
        "role": msg.role,
        "parts": [_part_to_dict(p) for p in msg.parts],
        "id": msg.id,
    }
    if msg.name is not None:
        d["name"] = msg.name
    if msg.agent is not None:
        d["agent"] = msg.agent
    if msg.pinned:
        d["pinned"] = True
    if msg.meta:
        d["meta"] = dict(msg.meta)
    return d


def to_dicts(msgs: Iterable[Message]) -> list[MessageDict]:
    """The JSON form of several messages, in order."""
    return [message_to_dict(m) for m in msgs]


def to_document(msgs: Iterable[Message]) -> DocumentDict:
    """A versioned JSON document holding a conversation.

    Example:
        >>> to_document([Message.user("hi", id="u1")])["v"]
        1
    """
    return {"v": WIRE_VERSION, "messages": to_dicts(msgs)}


# -- reading ---------------------------------------------------------------------


def _check_keys(d: Mapping[str, Any], allowed: frozenset[str], path: str) -> None:
    for key in d:
        if key not in allowed:
            raise InvalidMessageError(f"{path}.{key}", "unknown field")


def _str(d: Mapping[str, Any], key: str, path: str) -> str:
    # An explicit null reads as "left out", which a required field cannot be.
    if d.get(key) is None:
        raise InvalidMessageError(f"{path}.{key}", "missing")
    return expect_str(d, key, path)


def _opt_bool(d: Mapping[str, Any], key: str, path: str) -> bool:
    value = d.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidMessageError(
            f"{path}.{key}", f"expected a boolean, got {type_name(value)}"
        )
    return value


def _opt_size(d: Mapping[str, Any], key: str, path: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidMessageError(
            f"{path}.{key}", f"expected a non-negative integer, got {value!r}"
        )
    return value


_PART_KEYS: dict[str, frozenset[str]] = {
    "text": frozenset({"kind", "text"}),
    "image": frozenset({"kind", "url", "detail", "width", "height"}),
    "tool_call": frozenset({"kind", "id", "name", "arguments"}),
    "tool_result": frozenset({"kind", "call_id", "content", "is_error", "name"}),
    "thinking": frozenset({"kind", "text", "signature", "redacted"}),
    "opaque": frozenset({"kind", "provider", "raw"}),
}
_KINDS = ", ".join(_PART_KEYS)
_MESSAGE_KEYS = frozenset({"role", "parts", "id", "name", "agent", "pinned", "meta"})


def _kind(d: Mapping[str, Any], path: str, allowed: Sequence[str]) -> str:
    kind = _str(d, "kind", path)
    if kind not in allowed:
        raise InvalidMessageError(
            f"{path}.kind", f"unknown kind {kind!r} (expected {', '.join(allowed)})"
        )
    _check_keys(d, _PART_KEYS[kind], path)
    return kind


def _content_from_dict(value: object, path: str) -> ResultPart:
    d = expect_mapping(value, path)
    kind = _kind(d, path, ("text", "image", "opaque"))
    if kind == "text":
        return Text(_str(d, "text", path))
    if kind == "opaque":
        return _opaque_from_dict(d, path)
    return Image(
        _str(d, "url", path),
        detail=opt_str(d, "detail", path),
        width=_opt_size(d, "width", path),
        height=_opt_size(d, "height", path),
    )


def _result_content(d: Mapping[str, Any], path: str) -> str | tuple[ResultPart, ...]:
    content = d.get("content")
    if content is None:
        raise InvalidMessageError(f"{path}.content", "missing")
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        raise InvalidMessageError(
            f"{path}.content",
            f"expected a string or an array of parts, got {type_name(content)}",
        )
    return tuple(
        _content_from_dict(p, f"{path}.content[{i}]")
        for i, p in enumerate(cast("Sequence[Any]", content))
    )


def _part_from_dict(value: object, path: str) -> Part:
    d = expect_mapping(value, path)
    kind = _kind(d, path, tuple(_PART_KEYS))
    if kind in ("text", "image"):
        return _content_from_dict(d, path)
    if kind == "tool_call":
        arguments = "{}" if d.get("arguments") is None else _str(d, "arguments", path)
        if arguments:  # as the readers do: ``""`` is a call without arguments
            try:
                parse_json(arguments)  # no NaN: ``ToolCall`` takes JSON alone
            except ValueError:
                raise InvalidMessageError(
                    f"{path}.arguments", "not valid JSON"
                ) from None
        return ToolCall(_str(d, "id", path), _str(d, "name", path), arguments)
    if kind == "tool_result":
        return ToolResult(
            _str(d, "call_id", path),
            _result_content(d, path),
            is_error=_opt_bool(d, "is_error", path),
            name=opt_str(d, "name", path),
        )
    if kind == "opaque":
        return _opaque_from_dict(d, path)
    return Thinking(
        _str(d, "text", path),
        signature=opt_str(d, "signature", path),
        redacted=_opt_bool(d, "redacted", path),
    )


def _opaque_from_dict(d: Mapping[str, Any], path: str) -> Opaque:
    provider = _str(d, "provider", path)
    if provider not in PROVIDERS:
        raise InvalidMessageError(
            f"{path}.provider",
            f"unknown provider {provider!r} (expected {', '.join(PROVIDERS)})",
        )
    raw = _str(d, "raw", path)
    try:
        return Opaque(provider, raw)
    except ArgumentError:
        raise InvalidMessageError(f"{path}.raw", "not a JSON object") from None


def message_from_dict(d: object, *, path: str = "messages[0]") -> Message:
    """Read one message from its JSON form, validating every field.

    Args:
        d: The decoded JSON object.
        path: Where ``d`` sits, for error messages.

    Raises:
        InvalidMessageError: ``d`` is malformed; ``path`` names the field.

    Example:
        >>> message_from_dict({"role": "tool", "parts": [{"kind": "tool_result"}]})
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: messages[0].parts[0].call_id: missing
    """
    obj = expect_mapping(d, path)
    _check_keys(obj, _MESSAGE_KEYS, path)
    role = _str(obj, "role", path)
    if role not in ROLES:
        raise InvalidMessageError(
            f"{path}.role",
            f"expected one of system, user, assistant, tool, got {role!r}",
        )
    raw_parts = obj.get("parts")
    if raw_parts is None:
        raise InvalidMessageError(f"{path}.parts", "missing")
    if not isinstance(raw_parts, (list, tuple)):
        raise InvalidMessageError(
            f"{path}.parts", f"expected an array, got {type_name(raw_parts)}"
        )
    parts = tuple(
        _part_from_dict(p, f"{path}.parts[{i}]")
        for i, p in enumerate(cast("Sequence[Any]", raw_parts))
    )
    raw_meta = obj.get("meta")
    meta: Mapping[str, Any]
    if raw_meta is None:
        meta = {}
    elif not isinstance(raw_meta, Mapping):
        raise InvalidMessageError(
            f"{path}.meta", f"expected an object, got {type_name(raw_meta)}"
        )
    else:
        meta = cast("Mapping[str, Any]", raw_meta)
    meta = dict(meta)
    if meta.keys() & _KEPT_ASIDE:
        parts = _lift_kept(role, parts, meta)
    ident = opt_str(obj, "id", path)
    return Message(
        cast(Role, role),
        parts,
        name=opt_str(obj, "name", path),
        agent=opt_str(obj, "agent", path),
        pinned=_opt_bool(obj, "pinned", path),
        id=new_id() if ident is None else ident,
        meta=meta,
    )


def from_dicts(ds: object, *, path: str = "messages") -> list[Message]:
    """Read several messages; errors name ``messages[i]...``.

    Example:
        >>> [m.text for m in from_dicts([{"role": "user", "parts": []}])]
        ['']
    """
    if isinstance(ds, (str, bytes, Mapping)) or not isinstance(ds, Iterable):
        raise InvalidMessageError(path, f"expected an array, got {type_name(ds)}")  # pyright: ignore[reportUnknownArgumentType]  # ds narrowed to Mapping[Unknown, Unknown]; type_name takes any object
    return [
        message_from_dict(d, path=f"{path}[{i}]")
        for i, d in enumerate(cast("Iterable[object]", ds))
    ]


def from_document(doc: object) -> list[Message]:
    """Read a document written by ``to_document``, checking its version.

    Raises:
        InvalidMessageError: Not such a document, a version this code does not
            read, or a malformed message.

    Example:
        >>> from_document({"v": 2, "messages": []})
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: v: unsupported version 2 (reads 1)
    """
    d = expect_mapping(doc, "document")
    _check_keys(d, frozenset({"v", "messages"}), "document")
    version = d.get("v")
    if version is None:
        raise InvalidMessageError("v", "missing")
    if version != WIRE_VERSION or isinstance(version, bool):  # pyright: ignore[reportUnnecessaryIsInstance]  # True == 1: reject a boolean v
        raise InvalidMessageError(
            "v", f"unsupported version {version!r} (reads {WIRE_VERSION})"
        )
    if "messages" not in d:
        raise InvalidMessageError("messages", "missing")
    return from_dicts(d["messages"])


# -- what earlier versions kept aside ----------------------------------------------
#
# Before Opaque parts (575520e; 0b71215 inside tool results), the readers kept
# the blocks the neutral model did not interpret in ``meta`` as ``[index,
# block]`` pairs, the index a place in the content list as read, and the
# writers put them back there (``formats._common.insert_opaque``). Counting
# reads parts, not meta: a document stored so counted 0 while the request
# carried it. Read here, they become the parts today's readers give.

_KEPT_ASIDE = frozenset(("anthropic", "openai", "responses"))
_CONTENT = (Text, Image, Opaque)


def _kept_pairs(provider: Provider, value: object) -> list[tuple[int, Opaque]] | None:
    """The ``[index, block]`` pairs as parts; ``None`` unless all are well formed."""
    given = _list(value)
    if not given:
        return None
    out: list[tuple[int, Opaque]] = []
    for item in given:
        pair = _list(item)
        if len(pair) != 2:
            return None
        index, block = pair
        if type(index) is not int or index < 0 or not isinstance(block, Mapping):
            return None
        try:
            out.append((index, Opaque.of(provider, cast("Mapping[str, Any]", block))))
        except ArgumentError:
            return None
    return out


def _place(
    items: list[Any],
    entries: object,
    pairs: list[tuple[int, Opaque]],
    content_only: bool = False,
) -> None:
    """Insert ``pairs`` where ``insert_opaque`` wrote them, in ascending order.

    ``content_only``: an index counts a message's text, image and opaque
    parts alone (Chat's content list). A per-part ``entries`` list that still
    fits the parts gets a ``None`` for each part put in, so it keeps fitting.
    """
    count = sum(isinstance(q, _CONTENT) for q in items) if content_only else len(items)
    kept = _list(entries)
    aligned = isinstance(entries, list) and len(kept) == count
    for index, part in pairs:
        if aligned:
            kept.insert(min(index, len(kept)), None)
        at = _content_at(items, index) if content_only else min(index, len(items))
        items.insert(at, part)


def _content_at(items: list[Any], k: int) -> int:
    """Where content place ``k`` is among a message's parts.

    Chat's content is a message's text, image and opaque parts; its thinking
    comes before them, its calls after.
    """
    places = [j for j, q in enumerate(items) if isinstance(q, _CONTENT)]
    if k < len(places):
        return places[k]
    if places:
        return places[-1] + 1
    return next((j for j, q in enumerate(items) if isinstance(q, ToolCall)), len(items))


def _in_result(
    part: Part, entries: object, pairs: list[tuple[int, Opaque]] | None
) -> Part:
    """A tool result with ``pairs`` put into its content."""
    if pairs is None or not isinstance(part, ToolResult):
        return part
    content = part.content
    items: list[Any] = (
        ([Text(content)] if content else [])
        if isinstance(content, str)
        else list(content)
    )
    _place(items, entries, pairs)
    return ToolResult(
        part.call_id, tuple(items), is_error=part.is_error, name=part.name
    )


def _lift_kept(
    role: str, parts: tuple[Part, ...], meta: dict[str, Any]
) -> tuple[Part, ...]:
    """``parts`` with the blocks ``meta`` kept aside put in; ``meta`` updated."""
    items = list(parts)
    changed: list[str] = []  # the providers whose meta was copied to change
    am = meta.get("anthropic")
    if isinstance(am, Mapping) and _anthropic_kept(cast("Mapping[str, Any]", am)):
        am = meta["anthropic"] = copy.deepcopy(dict(cast("Mapping[str, Any]", am)))
        changed.append("anthropic")
        pairs = _kept_pairs("anthropic", am.get("opaque"))
        if pairs is not None and role in ("user", "assistant"):
            _place(items, am.get("parts"), pairs)
            del am["opaque"]
        results = _list(am.get("parts"))
        if role == "tool" and len(results) == len(items):
            for j, raw in enumerate(results):
                ent = _dict(raw)
                if ent is not None and "opaque" in ent:
                    found = _kept_pairs("anthropic", ent["opaque"])
                    if found is not None:
                        items[j] = _in_result(items[j], ent.get("inner"), found)
                        del ent["opaque"]
    om = meta.get("openai")
    if isinstance(om, Mapping) and "opaque" in om:
        om = meta["openai"] = copy.deepcopy(dict(cast("Mapping[str, Any]", om)))
        changed.append("openai")
        pairs = _kept_pairs("openai", om["opaque"])
        if pairs is not None and role != "tool":
            _place(items, om.get("parts"), pairs, content_only=True)
            del om["opaque"]
        elif pairs is not None and len(items) == 1:
            items[0] = _in_result(items[0], om.get("parts"), pairs)
            del om["opaque"]
    rm = meta.get("responses")
    if isinstance(rm, Mapping) and _responses_kept(cast("Mapping[str, Any]", rm)):
        rm = meta["responses"] = copy.deepcopy(dict(cast("Mapping[str, Any]", rm)))
        items = _responses_lift(items, rm["items"])
    for provider in changed:
        if not meta[provider]:  # it held the blocks alone
            del meta[provider]
    return tuple(items)


def _anthropic_kept(am: Mapping[str, Any]) -> bool:
    entries = _list(am.get("parts"))
    return "opaque" in am or any("opaque" in (_dict(e) or ()) for e in entries)


def _responses_kept(rm: Mapping[str, Any]) -> bool:
    return any("opaque" in (_dict(e) or ()) for e in _list(rm.get("items")))


def _responses_lift(items: list[Part], layout: list[Any]) -> list[Part]:
    """Each item's kept-aside blocks put into its parts (``n`` counts them)."""
    out: list[Part] = []
    k = 0
    for raw in layout:
        e = _dict(raw) or {}
        n = e.get("n")
        if type(n) is not int or n < 0 or k + n > len(items):
            break  # not a layout that fits: the rest is left as it is
        chunk: list[Any] = items[k : k + n]
        k += n
        pairs = _kept_pairs("responses", e.get("opaque"))
        if pairs is not None and e.get("type") == "message":
            _place(chunk, e.get("parts"), pairs)
            e["n"] = len(chunk)
            del e["opaque"]
        elif pairs is not None and n == 1 and e.get("type") == "function_call_output":
            chunk[0] = _in_result(chunk[0], e.get("parts"), pairs)
            del e["opaque"]
        out.extend(chunk)
    out.extend(items[k:])
    return out


def _list(value: object) -> list[Any]:
    """``value`` if it is a list, else a new empty one."""
    return cast(Any, value) if isinstance(value, list) else []


def _dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a dict, else ``None``."""
    return cast(Any, value) if isinstance(value, dict) else None
