"""Anthropic Messages: ``from_anthropic`` and ``to_anthropic``.

Contract:

- ``to_anthropic(from_anthropic(m, system=s))`` gives back ``s`` and ``m`` as
  dicts for every well-formed request whose user turns put their
  ``tool_result`` blocks first (as the API requires) and where no user turn
  of results alone is directly followed by another user turn (the two are
  written as one). Keys and blocks the
  neutral model does not carry (``cache_control``, ``citations``, ``caller``,
  an explicit ``"is_error": false``…) are kept in
  ``Message.meta["anthropic"]`` and written back in place.
- Blocks the neutral model does not interpret (``document``,
  ``search_result``, server tool blocks, an image by file id) become
  ``Opaque`` parts in their place: counted, cut and kept like other content.
  Another provider's ``Opaque`` part is written as its Anthropic equivalent
  (a PDF file as a ``document``, a refusal as text), or left out with a
  ``ContentDroppedWarning``. Such blocks inside a ``tool_result`` are
  ``Opaque`` parts of its content (``formats._opaque.result_target``).
- A user turn's ``tool_result`` blocks become ONE neutral ``tool`` message; its
  other blocks become a following ``user`` message, in their order. Writing
  does the reverse: consecutive ``tool`` messages and a directly following
  ``user`` message become one user turn, results first. No other repair is
  made (role alternation, first turn): that is ``ensure_valid``'s job.
- ``tool_use.input`` becomes ``ToolCall.arguments`` as compact JSON text
  (``messages.dump_json``: no ``NaN``, which no provider takes) and is
  parsed back on writing. Arguments that are a JSON object are written as
  they are; any other JSON value (a freeform tool's input, a Responses
  ``custom_tool_call`` or a Chat ``custom`` call, is a JSON string) as
  ``{"input": <the value>}``, since ``tool_use.input`` takes an object alone
  (``_tool_input``). A ``ToolCall`` holds JSON alone (no ``NaN``), so every
  call can be written; a lone surrogate escape in its arguments is written
  as U+FFFD, since a raw one cannot be sent as UTF-8.
- Images: a ``base64`` source becomes a ``data:`` URI (its size read from the
  header), a ``url`` source the URL; other sources are kept as they are.
  Writing, a ``data:`` URI becomes a ``base64`` source of a media type
  Anthropic takes (the one the bytes' signature says, else the URI's in
  lower case, ``image/jpg`` as ``image/jpeg``; ``_image_source``), or an
  ``InvalidMessageError``.
- ``thinking`` / ``redacted_thinking`` become ``Thinking`` parts. Writing drops
  ``Thinking`` parts of messages read from OpenAI shapes (``meta["openai"]`` or
  ``meta["responses"]``): their signatures mean nothing to Anthropic
  (``thinking_sent``, which the token counter asks too).
- JSON nested too deep for Python's stack is an ``InvalidMessageError``
  (``nested too deeply``) naming the turn, or the block's ``input``.
- System messages, wherever they are, go to the top-level ``system``: a string
  when there is one plain text system message, else a list of text blocks.
- Malformed input raises ``InvalidMessageError`` naming the place, e.g.
  ``messages[1].content[0].type: unknown block type 'foo'``.

Example:
    >>> msgs = from_anthropic([
    ...     {"role": "assistant", "content": [
    ...         {"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "."}}]},
    ...     {"role": "user", "content": [
    ...         {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"},
    ...         {"type": "text", "text": "and now?"}]},
    ... ], system="Be brief.")
    >>> [m.role for m in msgs]
    ['system', 'assistant', 'tool', 'user']
    >>> msgs[1].tool_calls[0].arguments
    '{"dir":"."}'
    >>> req = to_anthropic(msgs)
    >>> req.system, [t["role"] for t in req.messages]
    ('Be brief.', ['assistant', 'user'])
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any, NamedTuple, cast

from contextwindow._images import (
    data_uri,
    data_uri_bytes,
    decode_base64,
    image_type,
    parse_data_uri,
)
from contextwindow._json import has_surrogate_escape, replace_surrogates
from contextwindow._validate import (
    expect_list,
    expect_mapping,
    expect_str,
    opt_str,
    type_name,
)
from contextwindow.errors import InvalidMessageError
from contextwindow.formats._common import (
    as_neutral,
    entry,
    extras,
    image_from_url,
    insert_opaque,
    opaque_part,
    part_extras,
    provider_meta,
    put_extras,
    too_deep,
)
from contextwindow.formats._opaque import dropped, result_target, to_target
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Part,
    ResultPart,
    Role,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    dump_json,
    parse_json,
)

__all__ = [
    "AnthropicRequest",
    "from_anthropic",
    "from_anthropic_message",
    "to_anthropic",
]

_OPAQUE_BLOCKS = frozenset(
    (
        "document",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "tool_search_tool_result",
        "tool_reference",  # in a tool result: a tool the search found
    )
)
_ASSISTANT_ONLY = frozenset(("tool_use", "thinking", "redacted_thinking"))
_FOREIGN = ("openai", "responses")
_SOURCE_KEYS = {"base64": ("type", "media_type", "data"), "url": ("type", "url")}
_MEDIA_TYPES = frozenset(("image/jpeg", "image/png", "image/gif", "image/webp"))
"""The media types of a ``base64`` image source Anthropic takes."""
_MEDIA_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
"""Names for JPEG in use (a file's ``.jpg``, old Internet Explorer)."""


class AnthropicRequest(NamedTuple):
    """The conversation part of a Messages request: ``system`` and ``messages``.

    A named tuple, so ``system, messages = to_anthropic(conv)`` works too.

    Example:
        >>> AnthropicRequest("Be brief.", []).body()
        {'system': 'Be brief.', 'messages': []}
    """

    system: str | list[dict[str, Any]] | None
    """The top-level system prompt; ``None`` when there is no system message."""
    messages: list[dict[str, Any]]
    """The user and assistant turns."""

    def body(self) -> dict[str, Any]:
        """The request fields as a dict (``system`` left out when ``None``)."""
        out: dict[str, Any] = {}
        if self.system is not None:
            out["system"] = self.system
        out["messages"] = self.messages
        return out


class _Blocks(NamedTuple):
    parts: list[Part]
    entries: list[Any]
    opaque: list[Any]


def from_anthropic(
    messages: Sequence[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    path: str = "messages",
) -> list[Message]:
    """Read Anthropic Messages turns (and the top-level system) into neutral ones.

    Args:
        messages: The ``messages`` list of a request.
        system: The request's ``system``: a string or a list of text blocks.
        path: How error messages name the list.

    Returns:
        The system message (if any), then the turns; a user turn holding tool
        results gives a ``tool`` message and, if anything else remains, a
        ``user`` message.

    Raises:
        InvalidMessageError: Something is malformed; the error names where.

    Example:
        >>> try:
        ...     from_anthropic([{"role": "user", "content": [{"type": "foo"}]}])
        ... except InvalidMessageError as exc:
        ...     print(exc)
        messages[0].content[0].type: unknown block type 'foo'
    """
    out: list[Message] = []
    if system is not None:
        with too_deep("system"):
            out.append(_read_system(system))
    for i, raw in enumerate(expect_list(messages, path)):
        out.extend(from_anthropic_message(raw, path=f"{path}[{i}]"))
    return out


def from_anthropic_message(message: object, *, path: str) -> list[Message]:
    """Read one Anthropic turn: one neutral message, or a tool and a user message.

    Transcript readers use this to convert record by record with their own
    error paths (``session.jsonl:line 12.message``).

    Example:
        >>> [m.role for m in from_anthropic_message(
        ...     {"role": "user", "content": "hi"}, path="m")]
        ['user']
    """
    with too_deep(path):  # JSON past the stack: this turn named
        return _read_turn(message, path)


def _read_turn(message: object, path: str) -> list[Message]:
    obj = expect_mapping(message, path)
    role = expect_str(obj, "role", path)
    if role not in ("user", "assistant"):
        hint = " (the system prompt is a separate field)" if role == "system" else ""
        raise InvalidMessageError(f"{path}.role", f"unknown role {role!r}{hint}")
    neutral: Role = "user" if role == "user" else "assistant"
    if "content" not in obj:
        raise InvalidMessageError(f"{path}.content", "missing")
    content = obj["content"]
    extra = extras(obj, ("role", "content"))
    if isinstance(content, str):
        am: dict[str, Any] = {"extra": extra} if extra else {}
        parts = (Text(content),) if content else ()
        if _default_list(parts, None, None):
            am["content_form"] = "str"
        return [Message(neutral, parts, meta=_meta(am))]
    if not isinstance(content, list):
        raise InvalidMessageError(
            f"{path}.content", f"expected a string or a list, got {type_name(content)}"
        )
    results, rest = _read_blocks(
        cast("Sequence[Any]", content), role, f"{path}.content"
    )
    out: list[Message] = []
    if results.parts:
        tm: dict[str, Any] = {"extra": extra} if extra else {}
        if part_extras(results.entries):
            tm["parts"] = results.entries
        out.append(Message("tool", tuple(results.parts), meta=_meta(tm)))
    if rest.parts or rest.opaque or not results.parts:
        am = {"extra": extra} if extra else {}
        if part_extras(rest.entries):
            am["parts"] = rest.entries
        if rest.opaque:
            am["opaque"] = rest.opaque
        if not _default_list(rest.parts, am.get("parts"), rest.opaque):
            am["content_form"] = "list"
        out.append(Message(neutral, tuple(rest.parts), meta=_meta(am)))
    return out


def to_anthropic(messages: Sequence[Message] | Iterable[Any]) -> AnthropicRequest:
    """Write neutral messages as an Anthropic ``system`` and ``messages``.

    Args:
        messages: The conversation.

    Returns:
        The request's ``system`` and ``messages`` (new dicts).

    Raises:
        InvalidMessageError: A part cannot be written where it is (an image in a
            system message, a tool call in a user message); the error names
            ``messages[i].parts[j]``. Or an image's ``data:`` URI holds bytes
            of a type Anthropic does not take (``image/bmp``): the error names
            ``messages[i].parts[j].url``.

    Example:
        >>> turns = to_anthropic([Message.tool("t1", "ok"), Message.user("next")])[1]
        >>> [(t["role"], [b["type"] for b in t["content"]]) for t in turns]
        [('user', ['tool_result', 'text'])]
    """
    messages = as_neutral(messages)
    system: list[dict[str, Any]] = []
    plain_system = 0  # system messages that could be written as a string
    system_count = 0
    turns: list[dict[str, Any]] = []
    tool_turn = False  # turns[-1] is a user turn of results, open for more
    for i, m in enumerate(messages):
        with too_deep(f"messages[{i}]"):
            tool_turn, plain = _write_one(m, i, system, turns, tool_turn)
        if m.role == "system":
            system_count += 1
            plain_system += plain
    sys_out: str | list[dict[str, Any]] | None = system or None
    if system_count == 1 and plain_system == 1:
        sys_out = system[0]["text"]
    elif system_count and not system:
        sys_out = []
    _name_calls(turns)
    return AnthropicRequest(sys_out, turns)


def thinking_sent(message: Message) -> frozenset[int]:
    """The indices of the ``Thinking`` parts ``to_anthropic`` writes.

    All those of an assistant message, unless it was read from an OpenAI
    shape (``meta["openai"]`` or ``meta["responses"]``): their signatures
    mean nothing to Anthropic. The token counter asks this too, so that
    what is not sent is not counted.

    Example:
        >>> thinking_sent(Message.assistant([Thinking("x", signature="s")]))
        frozenset({0})
        >>> thinking_sent(Message.assistant([Thinking("x")], meta={"openai": {}}))
        frozenset()
    """
    if message.role != "assistant" or any(k in message.meta for k in _FOREIGN):
        return frozenset()
    return frozenset(
        j for j, part in enumerate(message.parts) if isinstance(part, Thinking)
    )


def _write_one(
    m: Message,
    i: int,
    system: list[dict[str, Any]],
    turns: list[dict[str, Any]],
    tool_turn: bool,
) -> tuple[bool, bool]:
    """Write ``m`` into ``system`` or ``turns``.

    Returns whether ``turns[-1]`` is now a user turn of results, open for
    more, and whether ``m`` is a system message that could be a string.
    """
    am = provider_meta(m.meta, "anthropic")
    if m.role == "system":
        blocks = _write_blocks(m.parts, am, i, m.role)
        system.extend(blocks)
        plain = (
            am.get("system_form") != "list"
            and len(blocks) == 1
            and blocks[0].keys() == {"type", "text"}
        )
        return tool_turn, plain
    if m.role == "tool":
        blocks = _write_blocks(m.parts, am, i, m.role)
        if tool_turn:
            turns[-1]["content"].extend(blocks)
            put_extras(turns[-1], am.get("extra"))
        else:
            turns.append(
                put_extras({"role": "user", "content": blocks}, am.get("extra"))
            )
        return True, False
    blocks = _write_blocks(m.parts, am, i, m.role, thinking_sent(m))
    insert_opaque(blocks, am.get("opaque"))
    if m.role == "user" and tool_turn:
        turns[-1]["content"].extend(blocks)
        put_extras(turns[-1], am.get("extra"))
    else:
        content: str | list[dict[str, Any]] = blocks
        if _write_as_str(blocks, am):
            content = blocks[0]["text"] if blocks else ""
        turns.append(put_extras({"role": m.role, "content": content}, am.get("extra")))
    return False, False


CALL_ID = re.compile(r"[A-Za-z0-9_-]+")
"""A ``tool_use`` id Anthropic takes (``fullmatch``)."""


def _name_calls(turns: list[dict[str, Any]]) -> None:
    """Give ``tool_use`` blocks ids Anthropic takes, and their results the same.

    Anthropic refuses a ``tool_use`` id used twice in a request, or holding
    characters outside ``[A-Za-z0-9_-]``; other providers' ids can be both
    (``call_0`` reused by a backend, ``functions.read_file:0``). Such an id
    becomes its characters with the others as ``_``, suffixed ``_2``, ``_3``
    until unused; each ``tool_result`` names what the latest call with its
    id became. Ids already valid and unique are written as they are.
    """
    blocks: list[dict[str, Any]] = [
        b
        for t in turns
        if isinstance(t["content"], list)
        for b in cast("list[dict[str, Any]]", t["content"])
    ]
    ids: list[str] = [b["id"] for b in blocks if b.get("type") == "tool_use"]
    if len(set(ids)) == len(ids) and all(map(CALL_ID.fullmatch, ids)):
        return
    taken = set(ids)
    used: set[str] = set()
    latest: dict[str, str] = {}
    for b in blocks:
        kind = b.get("type")
        if kind == "tool_use":
            given: str = b["id"]
            name = given
            if name in used or not CALL_ID.fullmatch(name):
                base = re.sub(r"[^A-Za-z0-9_-]", "_", given) or "call"
                name, k = base, 2
                while name in used or (name != given and name in taken):
                    name, k = f"{base}_{k}", k + 1
                b["id"] = name
            used.add(name)
            latest[given] = name
        elif kind == "tool_result":
            called: str = b["tool_use_id"]
            b["tool_use_id"] = latest.get(called, called)


# -- reading ---------------------------------------------------------------------


def _meta(am: dict[str, Any]) -> dict[str, Any]:
    return {"anthropic": am} if am else {}


def _default_list(parts: Sequence[Part], entries: object, opaque: object) -> bool:
    """Whether ``to_anthropic`` writes these parts as a list by default."""
    return bool(opaque or entries or len(parts) != 1 or not isinstance(parts[0], Text))


def _read_system(system: object) -> Message:
    if isinstance(system, str):
        return Message.system(system)
    blocks = expect_list(system, "system")
    parts: list[Part] = []
    entries: list[Any] = []
    for j, raw in enumerate(blocks):
        bp = f"system[{j}]"
        block = expect_mapping(raw, bp)
        kind = expect_str(block, "type", bp)
        if kind != "text":
            raise InvalidMessageError(
                f"{bp}.type", f"expected a text block in system, got {kind!r}"
            )
        parts.append(Text(expect_str(block, "text", bp)))
        extra = extras(block, ("type", "text"))
        entries.append({"extra": extra} if extra else None)
    am: dict[str, Any] = {"system_form": "list"}
    if part_extras(entries):
        am["parts"] = entries
    return Message("system", tuple(parts), meta={"anthropic": am})


def _read_blocks(content: Sequence[Any], role: str, p: str) -> tuple[_Blocks, _Blocks]:
    """Split blocks into tool results and the rest, each with per-part entries."""
    results = _Blocks([], [], [])
    rest = _Blocks([], [], [])
    for j, raw in enumerate(content):
        bp = f"{p}[{j}]"
        block = expect_mapping(raw, bp)
        kind = expect_str(block, "type", bp)
        if kind in _ASSISTANT_ONLY and role != "assistant":
            raise InvalidMessageError(
                f"{bp}.type", f"a {kind} block belongs in an assistant message"
            )
        if kind == "tool_result":
            if role != "user":
                raise InvalidMessageError(
                    f"{bp}.type", "a tool_result block belongs in a user message"
                )
            part, ent = _read_result(block, bp)
            results.parts.append(part)
            results.entries.append(ent)
        else:
            # A block the model does not interpret (a document, a search
            # result, an image by file id) is a part in its place: counted
            # and kept like any content.
            read = None if kind in _OPAQUE_BLOCKS else _read_block(block, kind, bp)
            if read is None:
                read = (opaque_part("anthropic", block, bp), None)
            rest.parts.append(read[0])
            rest.entries.append(read[1])
    return results, rest


def _read_block(
    block: Mapping[str, Any], kind: str, bp: str
) -> tuple[Part, dict[str, Any] | None] | None:
    """Read one content block; ``None`` for an image kept as it is."""
    part: Part
    if kind == "text":
        part = Text(expect_str(block, "text", bp))
        known: tuple[str, ...] = ("type", "text")
    elif kind == "image":
        image = _read_image(block, bp)
        if image is None:
            return None
        part, known = image, ("type", "source")
    elif kind == "tool_use":
        part = ToolCall(
            expect_str(block, "id", bp),
            expect_str(block, "name", bp),
            _dumps(block, bp),
        )
        known = ("type", "id", "name", "input")
    elif kind == "thinking":
        part = Thinking(
            expect_str(block, "thinking", bp), opt_str(block, "signature", bp)
        )
        known = ("type", "thinking", "signature")
    elif kind == "redacted_thinking":
        part = Thinking("", expect_str(block, "data", bp), redacted=True)
        known = ("type", "data")
    else:
        raise InvalidMessageError(f"{bp}.type", f"unknown block type {kind!r}")
    ent: dict[str, Any] = {}
    extra = extras(block, known, ("signature",))
    if extra:
        ent["extra"] = extra
    if isinstance(part, Image):  # keys of the source we do not model
        source = block["source"]
        inner = extras(source, _SOURCE_KEYS[source["type"]])
        if inner:
            ent["source"] = inner
    return part, (ent or None)


def _dumps(block: Mapping[str, Any], bp: str) -> str:
    if "input" not in block:
        raise InvalidMessageError(f"{bp}.input", "missing")
    value = expect_mapping(block["input"], f"{bp}.input")
    with too_deep(f"{bp}.input"):
        try:  # a NaN refused: no provider takes it (``ToolCall`` neither)
            return dump_json(value)
        except (TypeError, ValueError) as exc:
            raise InvalidMessageError(f"{bp}.input", f"not JSON: {exc}") from None


def _read_image(block: Mapping[str, Any], bp: str) -> Image | None:
    if "source" not in block:
        raise InvalidMessageError(f"{bp}.source", "missing")
    sp = f"{bp}.source"
    source = expect_mapping(block["source"], sp)
    kind = expect_str(source, "type", sp)
    if kind == "base64":
        media = expect_str(source, "media_type", sp)
        return image_from_url(data_uri(media, expect_str(source, "data", sp)))
    if kind == "url":
        return image_from_url(expect_str(source, "url", sp))
    return None  # a file id or another source: kept as is


def _read_result(block: Mapping[str, Any], bp: str) -> tuple[ToolResult, Any]:
    call_id = expect_str(block, "tool_use_id", bp)
    is_error = block.get("is_error", False)
    if not isinstance(is_error, bool) and is_error is not None:
        raise InvalidMessageError(
            f"{bp}.is_error", f"expected a bool, got {type_name(is_error)}"
        )
    ent: dict[str, Any] = {}
    content: str | tuple[ResultPart, ...]
    raw = block.get("content")
    if raw is None:
        content = ""
        ent["content"] = "absent" if "content" not in block else "null"
    elif isinstance(raw, str):
        content = raw
    elif isinstance(raw, list):
        inner = _read_inner(cast("Sequence[Any]", raw), f"{bp}.content")
        content = tuple(cast("list[ResultPart]", inner.parts))
        if part_extras(inner.entries):
            ent["inner"] = inner.entries
    else:
        raise InvalidMessageError(
            f"{bp}.content", f"expected a string or a list, got {type_name(raw)}"
        )
    extra = extras(block, ("type", "tool_use_id", "content", "is_error"), ("is_error",))
    if extra:
        ent["extra"] = extra
    return ToolResult(call_id, content, is_error=bool(is_error)), (ent or None)


def _read_inner(content: Sequence[Any], p: str) -> _Blocks:
    """A tool result's blocks: text, images, and the rest as ``Opaque`` parts.

    A ``search_result`` or ``document`` a tool returns is content the model
    reads: counted and cut like the result's text.
    """
    out = _Blocks([], [], [])
    for k, raw in enumerate(content):
        bp = f"{p}[{k}]"
        block = expect_mapping(raw, bp)
        kind = expect_str(block, "type", bp)
        if kind in ("text", "image"):
            read = _read_block(block, kind, bp)
            if read is not None:
                out.parts.append(read[0])
                out.entries.append(read[1])
                continue
        elif kind not in _OPAQUE_BLOCKS:
            raise InvalidMessageError(
                f"{bp}.type", f"unknown block type {kind!r} in a tool result"
            )
        out.parts.append(opaque_part("anthropic", block, bp))
        out.entries.append(None)
    return out


# -- writing ---------------------------------------------------------------------


def _write_as_str(blocks: list[dict[str, Any]], am: Mapping[str, Any]) -> bool:
    form = am.get("content_form")
    if form == "list":
        return False
    if form == "str" and not blocks:
        return True
    return len(blocks) == 1 and blocks[0].keys() == {"type", "text"}


def _write_blocks(
    parts: Sequence[Part],
    am: Mapping[str, Any],
    i: int,
    role: str,
    sent: Set[int] = frozenset(),
) -> list[dict[str, Any]]:
    """The blocks of a message's parts; ``sent``: the ``Thinking`` ones written."""
    entries = am.get("parts")
    out: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        ent = entry(entries, j, len(parts))
        where = f"messages[{i}].parts[{j}]"
        if isinstance(part, Opaque) and role != "tool":
            found = to_target(part, "anthropic", where)
            if found is None:
                continue
            if not isinstance(found, Text):
                if role == "system":  # the system prompt takes text alone
                    dropped(part, "anthropic", where, place="system prompt")
                else:
                    out.append(found)
                continue
            part = found
        if not _allowed(part, role):
            raise InvalidMessageError(
                where, f"a {part.kind} part cannot be sent in a {role} message"
            )
        if isinstance(part, Thinking) and j not in sent:
            continue  # another provider's reasoning (``thinking_sent``)
        block = _write_part(part, ent, where)
        out.append(put_extras(block, ent.get("extra")))
    return out


def _allowed(part: Part, role: str) -> bool:
    if role == "system":
        return isinstance(part, Text)
    if role == "tool":
        return isinstance(part, ToolResult)
    if role == "user":
        return isinstance(part, (Text, Image, Opaque))
    return not isinstance(part, ToolResult)


def _write_part(part: Part, ent: Mapping[str, Any], where: str) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        source = _image_source(part, where)
        return {"type": "image", "source": put_extras(source, ent.get("source"))}
    if isinstance(part, ToolCall):
        return {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": _tool_input(part, where),
        }
    if isinstance(part, Thinking):
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.signature or ""}
        block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
        if part.signature is not None:
            block["signature"] = part.signature
        return block
    if isinstance(part, Opaque):
        return part.block
    return _write_result(part, ent, where)


def _image_source(image: Image, where: str) -> dict[str, Any]:
    """An image block's ``source``: a URL, or a ``data:`` URI's bytes as base64.

    Anthropic takes four media types (the one the bytes are) and ``url``
    sources of http(s) URLs alone, while OpenAI takes any ``data:`` URI its
    server can decode. So a ``data:`` URI is always written as a ``base64``
    source (percent-encoded bytes encoded again) whose media type is the one
    the bytes' signature says (PNG, JPEG, GIF or WebP), else the URI's own
    in lower case, ``image/jpg`` as ``image/jpeg``.

    Raises:
        InvalidMessageError: A ``data:`` URI without a payload, or whose
            bytes are no PNG, JPEG, GIF or WebP and whose type is none of
            those; the error names ``where.url``.

    Example:
        >>> gif = "R0lGODlhAQABAAAAACw="  # GIF89a...
        >>> _image_source(Image("data:IMAGE/GIF;BASE64," + gif), "m")["media_type"]
        'image/gif'
        >>> _image_source(Image("data:;base64," + gif), "m")["media_type"]
        'image/gif'
        >>> _image_source(Image("data:image/jpg;base64,AAAA"), "m")["media_type"]
        'image/jpeg'
        >>> _image_source(Image("data:image/bmp;base64,Qk0="), "messages[0].parts[1]")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: messages[0].parts[1].url: media type 'image/bmp': Anthropic takes image/jpeg, image/png, image/gif or image/webp
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    parsed = parse_data_uri(image.url)
    if parsed is None:
        if not image.url.startswith("data:"):
            return {"type": "url", "url": image.url}
        raw = data_uri_bytes(image.url)  # not base64: percent-encoded bytes
        if raw is None:
            raise InvalidMessageError(f"{where}.url", "a data: URI without data")
        head = image.url[5:].split(",", 1)[0]
        parsed = head.split(";", 1)[0], base64.b64encode(raw).decode("ascii")
    declared, data = parsed
    media = image_type(decode_base64(data, 64))
    if media is None:  # bytes of no format known here (or not decodable)
        media = declared.strip().lower()
        media = _MEDIA_ALIASES.get(media, media)
        if media not in _MEDIA_TYPES:
            raise InvalidMessageError(
                f"{where}.url",
                f"media type {declared!r}: Anthropic takes image/jpeg, image/png, "
                "image/gif or image/webp",
            )
    return {"type": "base64", "media_type": media, "data": data}


def _tool_input(call: ToolCall, where: str) -> dict[str, Any]:
    r"""The ``tool_use.input`` a call is written with: an object, always.

    Its arguments when they are a JSON object (``{}`` when empty); any other
    JSON value ``v`` as ``{"input": v}``, since ``input`` takes an object
    alone: a freeform tool's text (a Responses ``custom_tool_call``, a Chat
    ``custom`` call, whose arguments are a JSON string), or an array, a
    number or ``null`` another shape's call carried. So every call a
    ``ToolCall`` holds can be written, and ``validity`` needs no rule for it.

    A lone surrogate escape in the arguments (``\ud83d``, a string cut
    inside an emoji: valid JSON text) is written as U+FFFD: ``input`` is a
    value, and the raw surrogate it would hold cannot be sent as UTF-8.

    Raises:
        InvalidMessageError: The arguments are nested too deeply to parse
            here, or (a part that skipped the constructor) not JSON; the
            error names ``where.arguments``.

    Example:
        >>> _tool_input(ToolCall("c1", "patch", '"+x"'), "messages[1].parts[0]")
        {'input': '+x'}
        >>> _tool_input(ToolCall("c2", "f", ""), "messages[1].parts[1]")
        {}
        >>> _tool_input(ToolCall("c3", "sum", "[1, 2]"), "messages[1].parts[2]")
        {'input': [1, 2]}
        >>> cut = ToolCall("c4", "say", '{"t": "cut \\ud83d"}')  # the escape
        >>> _tool_input(cut, "messages[1].parts[3]") == {"t": "cut \ufffd"}
        True
    """
    if not call.arguments:
        return {}
    with too_deep(f"{where}.arguments"):
        try:
            value = parse_json(call.arguments)
        except ValueError:
            raise InvalidMessageError(f"{where}.arguments", "not valid JSON") from None
    if has_surrogate_escape(call.arguments):
        # ``input`` is a value, not text: a lone surrogate escape would be
        # sent as the raw surrogate, which no UTF-8 request body can carry.
        # (One the arguments held raw came so and goes as it came.)
        value = replace_surrogates(value)
    if not isinstance(value, dict):
        return {"input": value}
    return cast("dict[str, Any]", value)


def _write_result(
    result: ToolResult, ent: Mapping[str, Any], where: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    form = ent.get("content")
    if isinstance(result.content, str):
        if not (result.content == "" and form == "absent"):
            out["content"] = (
                None if (form == "null" and not result.content) else result.content
            )
    else:
        inner = ent.get("inner")
        blocks: list[Any] = []
        for k, p in enumerate(result.content):
            e = entry(inner, k, len(result.content))
            if isinstance(p, Opaque):
                found = result_target(p, "anthropic", f"{where}.content[{k}]")
                if not isinstance(found, Text):
                    if found is not None:
                        blocks.append(found)
                    continue
                p = found
            block = _write_part(p, e, f"{where}.content[{k}]")
            blocks.append(put_extras(block, e.get("extra")))
        # Blocks an earlier version kept aside (stored messages): in place.
        out["content"] = insert_opaque(blocks, ent.get("opaque"))
    if result.is_error:
        out["is_error"] = True
    return out
