"""OpenAI Responses input items: ``from_responses`` and ``to_responses``.

Contract:

- ``to_responses(from_responses(items)) == items`` for every well-formed list of
  the supported items, as dicts. Each neutral message records, in
  ``Message.meta["responses"]["items"]``, which items it was read from (their
  ``id``, ``status`` and other keys, and how many parts each gave), so item ids
  such as ``rs_…``, ``msg_…`` and ``fc_…`` are written back.
- Supported items: ``message`` (also without ``"type"``; roles ``user``,
  ``system``, ``developer`` (read as ``system``) and ``assistant``; content a
  string or ``input_text`` / ``output_text`` / ``input_image`` parts, with
  ``refusal``, ``input_file``, ``input_audio`` parts and an image by file id
  read as ``Opaque`` parts in their place: counted and kept like other
  content; another provider's are written as their Responses equivalent or
  left out with a ``ContentDroppedWarning``),
  ``function_call``, ``function_call_output`` and ``reasoning``; and the
  items agents send besides, each written back unchanged while the part read
  from it is unchanged:

  - tool calls the client answers (``computer_call``, ``local_shell_call``,
    ``shell_call``, ``apply_patch_call``, ``custom_tool_call``,
    ``mcp_approval_request``) become ``ToolCall`` parts (the tool's name, or
    the kind's: ``computer``, ``local_shell`` ...; the action or input as JSON
    text), and their outputs (``computer_call_output``,
    ``local_shell_call_output``, ``shell_call_output``,
    ``apply_patch_call_output``, ``custom_tool_call_output``,
    ``mcp_approval_response``) ``ToolResult`` parts answering them, so
    ``units`` keeps each call and its output together. An output is read as
    what the model reads (a shell output's stdout and stderr, a custom
    tool's parts, a screenshot's image) and a cut or rewritten one is
    written in the item's own shape, so that reading it back gives the part
    that was counted: the text, one shell chunk's ``stdout``. A screenshot
    or an approval takes no text: ``result_takes_text`` says so, and the
    strategies leave such a result whole (they drop its exchange instead);
  - items the provider ran itself, which need no answer (``web_search_call``,
    ``file_search_call``, ``code_interpreter_call``, ``image_generation_call``,
    ``mcp_call``, ``mcp_list_tools``, ``tool_search_call``,
    ``tool_search_output``, ``program``, ``program_output``,
    ``item_reference``), become one ``Text`` part of the assistant message:
    the item's JSON without ``id``, ``status``, an image's base64
    ``result`` and a program's ``fingerprint``, which is what is counted;
  - a ``compaction`` item becomes an ``Opaque`` part of the assistant
    message, its ``encrypted_content`` counted by a stated estimate
    (``tokens._opaque.ENCRYPTED_BYTES_PER_TOKEN``); another provider's
    writer leaves it out with a ``ContentDroppedWarning``;
  - the developer's ``additional_tools`` and ``configuration_update``
    items become a ``system`` message each, in place, with one ``Text``
    part (their JSON as above).

  Any other item type is an error naming the supported ones.
- Consecutive ``reasoning``, assistant ``message`` and ``function_call`` items
  form ONE assistant message (``Thinking``, ``Text`` and ``ToolCall`` parts in
  order); consecutive ``function_call_output`` items form one ``tool`` message.
- A ``reasoning`` item becomes one ``Thinking``: its summary texts and then
  its ``reasoning_text`` content joined by a blank line (both counted, and
  split back on writing), ``encrypted_content`` as the signature. Writing
  emits reasoning items only for ``Thinking`` parts read from this shape
  (they need their ``rs_`` id); another provider's reasoning is dropped
  (``thinking_sent``, which the token counter asks too).
- A custom tool's call read from Chat (``_common.custom_calls``) is
  written as a ``custom_tool_call`` (its input the text it is), and the
  result answering it as a ``custom_tool_call_output``.
- An ``input_image`` is written with a ``detail`` (``"auto"`` when the
  image has none: the API's type requires it), except one read without
  one, written back as it came.
- JSON nested too deep for Python's stack is an ``InvalidMessageError``
  (``nested too deeply``) naming the item, or its field.
- ``instructions`` become a leading system message; writing emits it as a
  ``system`` message item. ``is_error`` of a tool result and ``Message.name``
  have no place in this shape and are dropped.

Example:
    >>> msgs = from_responses([
    ...     {"type": "message", "role": "user", "content": "Time in Oslo?"},
    ...     {"type": "reasoning", "id": "rs_1", "summary": []},
    ...     {"type": "function_call", "id": "fc_1", "call_id": "c1",
    ...      "name": "clock", "arguments": "{}"},
    ...     {"type": "function_call_output", "call_id": "c1", "output": "09:00"},
    ... ])
    >>> [(m.role, len(m.parts)) for m in msgs]
    [('user', 1), ('assistant', 2), ('tool', 1)]
    >>> [item["type"] for item in to_responses(msgs)]
    ['message', 'reasoning', 'function_call', 'function_call_output']
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence, Set
from typing import Any, cast

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
    check_json,
    custom_calls,
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
from contextwindow.formats._opaque import result_target, to_target
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
)

__all__ = ["ITEM_TYPES", "from_responses", "result_takes_text", "to_responses"]

# Client-answered calls: kind -> (id key, name or None for the item's "name",
# arguments key).
_CALLS: dict[str, tuple[str, str | None, str]] = {
    "computer_call": ("call_id", "computer", "action"),
    "local_shell_call": ("call_id", "local_shell", "action"),
    "shell_call": ("call_id", "shell", "action"),
    "apply_patch_call": ("call_id", "apply_patch", "operation"),
    "custom_tool_call": ("call_id", None, "input"),
    "mcp_approval_request": ("id", None, "arguments"),
}
# Their outputs: kind -> (the key naming the call, the output key).
_OUTPUTS: dict[str, tuple[str, str]] = {
    "computer_call_output": ("call_id", "output"),
    "local_shell_call_output": ("id", "output"),
    "shell_call_output": ("call_id", "output"),
    "apply_patch_call_output": ("call_id", "output"),
    "custom_tool_call_output": ("call_id", "output"),
    "mcp_approval_response": ("approval_request_id", "approve"),
}
# Items the provider ran itself: no answer follows them.
_HOSTED = frozenset(
    (
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "tool_search_call",
        "tool_search_output",
        "program",
        "program_output",
        "item_reference",
    )
)
# Items the developer sends (tools, settings from here on): system messages.
_SETTINGS = frozenset(("additional_tools", "configuration_update"))
_ITEMS = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    *_CALLS,
    *_OUTPUTS,
    *sorted(_HOSTED),
    *sorted(_SETTINGS),
    "compaction",
)
ITEM_TYPES: frozenset[str] = frozenset(_ITEMS)
"""Every Responses item type ``from_responses`` reads."""
_UNSHOWN = frozenset(("id", "status"))
# What else an item holds that the model does not read: an image's base64,
# a program's replay fingerprint.
_UNSHOWN_OF: dict[str, frozenset[str]] = {
    "image_generation_call": frozenset(("result",)),
    "program": frozenset(("fingerprint",)),
}
# Outputs whose shape takes no text: a cut of them cannot be written.
_FIXED = frozenset(("computer_call_output", "mcp_approval_response"))
_OPAQUE_PARTS = frozenset(("refusal", "input_file", "input_audio"))
_TEXT_PARTS = frozenset(("input_text", "output_text"))
_SEP = "\n\n"

Layout = dict[str, Any]


def from_responses(
    items: Sequence[Mapping[str, Any]] | str,
    *,
    instructions: str | None = None,
    path: str = "input",
) -> list[Message]:
    """Read Responses input items into neutral messages.

    Args:
        items: The request's ``input``: a list of items, or a string (one user
            message).
        instructions: The request's ``instructions``, if any.
        path: How error messages name the list.

    Returns:
        The neutral conversation.

    Raises:
        InvalidMessageError: An item is malformed; the error names where.

    Example:
        >>> try:
        ...     from_responses([{"type": "telepathy_call"}])
        ... except InvalidMessageError as exc:
        ...     print(exc.path, "|", exc.reason[:34])
        input[0].type | unknown item type 'telepathy_call'

    """
    out: list[Message] = []
    if instructions is not None:
        if not isinstance(instructions, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # defensive check on external JSON
            raise InvalidMessageError(
                "instructions", f"expected a string, got {type_name(instructions)}"
            )
        out.append(Message.system(instructions))
    if isinstance(items, str):
        meta = {"responses": {"input": "str"}}
        out.append(Message("user", (Text(items),) if items else (), meta=meta))
        return out
    role: Role | None = None  # the open group: "assistant", "tool" or None
    parts: list[Part] = []
    layout: list[Layout] = []

    def flush() -> None:
        if role is not None:
            meta = {"responses": {"items": list(layout)}}
            out.append(Message(role, tuple(parts), meta=meta))
        parts.clear()
        layout.clear()

    for i, raw in enumerate(expect_list(items, path)):
        p = f"{path}[{i}]"
        with too_deep(p):  # JSON past the stack: this item named
            obj = expect_mapping(raw, p)
            kind = _item_type(obj, p)
            new_parts: tuple[Part, ...]
            if kind == "message":
                msg_role = expect_str(obj, "role", p)
                if msg_role not in ("user", "system", "developer", "assistant"):
                    raise InvalidMessageError(f"{p}.role", f"unknown role {msg_role!r}")
                new_parts, lay = _read_message(obj, p, msg_role)
                if msg_role != "assistant":
                    flush()
                    role = None
                    neutral: Role = "user" if msg_role == "user" else "system"
                    kept = {"responses": {"items": [_ordered(obj, lay)]}}
                    out.append(Message(neutral, new_parts, meta=kept))
                    continue
                group: Role = "assistant"
            elif kind in _SETTINGS:
                # The developer's: kept in place as a system message of its own.
                flush()
                role = None
                lay = _kept(obj, kind)
                kept_part = _read_kept(lay)
                assert kept_part is not None  # a settings item always reads
                out.append(
                    Message(
                        "system", (kept_part,), meta={"responses": {"items": [lay]}}
                    )
                )
                continue
            else:
                new_parts, lay, group = _read_item(obj, p, kind)
            if group != role:
                flush()
                role = group
            parts.extend(new_parts)
            layout.append(_ordered(obj, lay))
    flush()
    return out


def to_responses(messages: Sequence[Message] | Iterable[Any]) -> list[dict[str, Any]]:
    """Write neutral messages as Responses input items.

    Args:
        messages: The conversation.

    Returns:
        New item dicts, in order.

    Raises:
        InvalidMessageError: A part cannot be written where it is (a tool call
            in a user message, say); the error names ``messages[i].parts[j]``.

    Example:
        >>> for item in to_responses([Message.user("hi"), Message.tool("c1", "ok")]):
        ...     print(item)
        {'type': 'message', 'role': 'user', 'content': 'hi'}
        {'type': 'function_call_output', 'call_id': 'c1', 'output': 'ok'}
    """
    messages = as_neutral(messages)
    out: list[dict[str, Any]] = []
    custom: set[str] = set()  # the custom calls so far: their outputs follow
    for i, m in enumerate(messages):
        with too_deep(f"messages[{i}]"):
            custom |= custom_calls(m)
            k = 0
            for e in _layout(m, i, custom):
                n = e["n"]
                chunk = m.parts[k : k + n]
                k += n
                item = _write_item(m, e, chunk, f"messages[{i}].parts", k - n)
                if item is not None:
                    item = put_extras(item, e.get("extra"))
                    out.append(
                        _reordered(item, e.get("order")) if "order" in e else item
                    )
    return out


def thinking_sent(message: Message) -> frozenset[int]:
    """The indices of the ``Thinking`` parts ``to_responses`` writes.

    Those read from a ``reasoning`` item, while the items recorded still
    describe the message's parts: a reasoning item needs its ``rs_`` id
    (and its ``encrypted_content``). Another provider's reasoning is left
    out. The token counter asks this too, so that what is not sent is not
    counted.

    Example:
        >>> msg = from_responses([{"type": "reasoning", "id": "rs_1",
        ...     "summary": [{"type": "summary_text", "text": "Plan."}]}])[0]
        >>> thinking_sent(msg), thinking_sent(Message.assistant([Thinking("x")]))
        (frozenset({0}), frozenset())
    """
    layout = _recorded(message)
    if layout is None:
        return frozenset()  # the default layout sends no reasoning
    out: set[int] = set()
    k = 0
    for e in layout:
        if e["type"] == "reasoning":
            out.add(k)
        k += e["n"]
    return frozenset(out)


def _recorded(m: Message) -> Sequence[Any] | None:
    """The items ``m`` was read from, if they still describe its parts."""
    recorded = provider_meta(m.meta, "responses").get("items")
    if isinstance(recorded, list):
        items = cast("Sequence[Any]", recorded)
        if _fits(items, m.parts):
            return items
    return None


def _layout(m: Message, i: int, custom: Set[str] = frozenset()) -> Sequence[Any]:
    """The items ``m`` is written as: those it was read from, or the default.

    ``custom``: the ids of the custom calls written so far (and in ``m``).
    """
    found = _recorded(m)
    if found is not None:
        return found
    recorded = provider_meta(m.meta, "responses").get("items")
    kept = cast("Sequence[Any]", recorded) if isinstance(recorded, list) else ()
    return _default_layout(m, i, kept, custom)


# -- reading ---------------------------------------------------------------------


def _item_type(obj: Mapping[str, Any], p: str) -> str:
    if "type" not in obj:
        if "role" in obj:
            return "message"
        raise InvalidMessageError(f"{p}.type", "missing")
    kind = obj["type"]
    if not isinstance(kind, str):
        raise InvalidMessageError(
            f"{p}.type", f"expected a string, got {type_name(kind)}"
        )
    if kind not in _ITEMS:
        raise InvalidMessageError(
            f"{p}.type",
            f"unknown item type {kind!r} (supported: {', '.join(_ITEMS)})",
        )
    return kind


def _default_text(role: str) -> str:
    return "output_text" if role == "assistant" else "input_text"


def _read_parts(
    content: object, p: str, text_type: str, inline: bool = False
) -> tuple[tuple[Text | Image | Opaque, ...], Layout]:
    """Read a content list; the layout holds part entries and opaque parts.

    Parts kept as they are become ``Opaque`` parts where ``inline`` (a
    message, a tool's output); elsewhere they go to the layout and are
    written back in place.
    """
    seq = expect_list(content, p)
    parts: list[Text | Image | Opaque] = []
    entries: list[Any] = []
    opaque: list[Any] = []
    for j, raw in enumerate(seq):
        pp = f"{p}[{j}]"
        part = expect_mapping(raw, pp)
        kind = expect_str(part, "type", pp)
        ent: dict[str, Any] = {}
        if kind in _TEXT_PARTS:
            parts.append(Text(expect_str(part, "text", pp)))
            extra = extras(part, ("type", "text"))
        elif kind == "input_image" and part.get("image_url") is not None:
            url = expect_str(part, "image_url", pp)
            parts.append(image_from_url(url, opt_str(part, "detail", pp)))
            extra = extras(part, ("type", "image_url", "detail"), ("detail",))
            if part.get("detail") is None:  # written back without one
                ent["no_detail"] = True
        elif kind in _OPAQUE_PARTS or kind == "input_image":
            if not inline:
                opaque.append([j, copy.deepcopy(dict(part))])
                continue
            parts.append(opaque_part("responses", part, pp))
            extra = {}
        else:
            raise InvalidMessageError(f"{pp}.type", f"unknown part type {kind!r}")
        if kind != text_type and kind in _TEXT_PARTS:
            ent["type"] = kind
        if extra:
            ent["extra"] = extra
        entries.append(ent or None)
    lay: Layout = {}
    if part_extras(entries):
        lay["parts"] = entries
    if opaque:
        lay["opaque"] = opaque
    return tuple(parts), lay


def _read_message(
    obj: Mapping[str, Any], p: str, role: str
) -> tuple[tuple[Text | Image | Opaque, ...], Layout]:
    if "content" not in obj:
        raise InvalidMessageError(f"{p}.content", "missing")
    content = obj["content"]
    parts: tuple[Text | Image | Opaque, ...]
    if isinstance(content, str):
        parts = (Text(content),) if content else ()
        lay: Layout = {"type": "message", "n": len(parts), "content_form": "str"}
    else:
        parts, extra_lay = _read_parts(
            content, f"{p}.content", _default_text(role), inline=True
        )
        lay = {"type": "message", "n": len(parts), "content_form": "list", **extra_lay}
    if role == "developer":
        lay["role"] = "developer"  # a str, whatever subclass of one ``role`` is
    if "type" not in obj:
        lay["no_type"] = True
    extra = extras(obj, ("type", "role", "content"))
    if extra:
        lay["extra"] = extra
    return parts, lay


def _read_call(obj: Mapping[str, Any], p: str) -> tuple[tuple[Part, ...], Layout]:
    args = expect_str(obj, "arguments", p)
    check_json(args, f"{p}.arguments")
    call = ToolCall(expect_str(obj, "call_id", p), expect_str(obj, "name", p), args)
    lay: Layout = {"type": "function_call", "n": 1}
    extra = extras(obj, ("type", "call_id", "name", "arguments"))
    if extra:
        lay["extra"] = extra
    return (call,), lay


def _read_output(obj: Mapping[str, Any], p: str) -> tuple[tuple[Part, ...], Layout]:
    call_id = expect_str(obj, "call_id", p)
    if "output" not in obj:
        raise InvalidMessageError(f"{p}.output", "missing")
    output = obj["output"]
    lay: Layout = {"type": "function_call_output", "n": 1}
    content: str | tuple[ResultPart, ...]
    if isinstance(output, str):
        content = output
    elif isinstance(output, list):
        content, extra_lay = _read_parts(
            cast("Sequence[Any]", output), f"{p}.output", "input_text", inline=True
        )
        lay.update(extra_lay)
    else:
        raise InvalidMessageError(
            f"{p}.output", f"expected a string or a list, got {type_name(output)}"
        )
    extra = extras(obj, ("type", "call_id", "output"))
    if extra:
        lay["extra"] = extra
    return (ToolResult(call_id, content),), lay


def _read_reasoning(obj: Mapping[str, Any], p: str) -> tuple[tuple[Part, ...], Layout]:
    lay: Layout = {"type": "reasoning", "n": 1}
    texts: list[str] = []
    if "summary" in obj:
        for k, raw in enumerate(expect_list(obj["summary"], f"{p}.summary")):
            sp = f"{p}.summary[{k}]"
            item = expect_mapping(raw, sp)
            kind = expect_str(item, "type", sp)
            if kind != "summary_text":
                raise InvalidMessageError(
                    f"{sp}.type", f"unknown summary type {kind!r}"
                )
            texts.append(expect_str(item, "text", sp))
        lay["summary"] = [len(t) for t in texts]
    known = ["type", "summary", "encrypted_content"]
    shown = _reasoning_texts(obj.get("content"))
    if shown:  # the reasoning text itself: what the model reads, counted
        lay["content"] = [len(t) for t in shown]
        first = cast("list[Mapping[str, Any]]", obj["content"])[0]
        if next(iter(first)) == "text":  # an SDK object's dump: text first
            lay["text_first"] = True
        texts.extend(shown)
        known.append("content")
    signature = opt_str(obj, "encrypted_content", p)
    extra = extras(obj, known, ("encrypted_content",))
    if extra:
        lay["extra"] = extra
    return (Thinking(_SEP.join(texts), signature),), lay


def _reasoning_texts(content: object) -> list[str] | None:
    """The texts of a reasoning item's ``reasoning_text`` parts.

    ``None`` (the content kept as it is, not read) unless ``content`` is a
    non-empty list of such parts with no other keys.
    """
    if not isinstance(content, list) or not content:
        return None
    texts: list[str] = []
    for raw in cast("Sequence[Any]", content):
        if not isinstance(raw, Mapping):
            return None
        part = cast("Mapping[str, Any]", raw)
        text = part.get("text")
        if part.keys() != {"type", "text"} or part["type"] != "reasoning_text":  # pyright: ignore[reportUnnecessaryComparison]  # a KeysView equals a set of its keys
            return None
        if not isinstance(text, str):
            return None
        texts.append(text)
    return texts


_NATURAL: dict[str, tuple[str, ...]] = {
    "message": ("type", "role", "content"),
    "function_call": ("type", "call_id", "name", "arguments"),
    "function_call_output": ("type", "call_id", "output"),
    "reasoning": ("type", "summary", "encrypted_content"),
}


def _ordered(obj: Mapping[str, Any], lay: Layout) -> Layout:
    """Record the item's key order where the writer's would differ."""
    first = _NATURAL.get(str(lay.get("type")))
    if first is not None:
        keys = list(obj)
        natural = [k for k in first if k in obj] + [k for k in keys if k not in first]
        # A reasoning item's content goes where its reader put it.
        if keys != natural or (first is _NATURAL["reasoning"] and "content" in obj):
            lay["order"] = keys
    return lay


def _reordered(item: dict[str, Any], order: object) -> dict[str, Any]:
    if not isinstance(order, list):
        return item
    keys = [k for k in cast("Sequence[Any]", order) if k in item]
    return {**{k: item[k] for k in keys}, **item}


def _read_item(
    obj: Mapping[str, Any], p: str, kind: str
) -> tuple[tuple[Part, ...], Layout, Role]:
    """Any item but a message: its parts, layout and the group it joins."""
    if kind == "function_call_output":
        return (*_read_output(obj, p), "tool")
    if kind == "function_call":
        return (*_read_call(obj, p), "assistant")
    if kind in _OUTPUTS:
        return (_read_kept_output(obj, p, kind),), _kept(obj, kind), "tool"
    if kind in _CALLS:
        return (_read_kept_call(obj, p, kind),), _kept(obj, kind), "assistant"
    if kind in _HOSTED:
        return (Text(_shown(obj)),), _kept(obj, kind), "assistant"
    if kind == "compaction":
        expect_str(obj, "encrypted_content", p)
        return (opaque_part("responses", obj, p),), _kept(obj, kind), "assistant"
    return (*_read_reasoning(obj, p), "assistant")


def _kept(obj: Mapping[str, Any], kind: str) -> Layout:
    """The layout of an item written back as it was read."""
    return {"type": kind, "n": 1, "item": copy.deepcopy(dict(obj))}


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _shown(obj: Mapping[str, Any]) -> str:
    """What a hosted item shows the model: its JSON, less ids and base64 images."""
    also = _UNSHOWN_OF.get(str(obj.get("type")), frozenset())
    return _compact({k: v for k, v in obj.items() if k not in _UNSHOWN | also})


def _read_kept_call(obj: Mapping[str, Any], p: str, kind: str) -> ToolCall:
    id_key, fixed, args_key = _CALLS[kind]
    call_id = expect_str(obj, id_key, p)
    name = fixed if fixed is not None else expect_str(obj, "name", p)
    if args_key not in obj:
        raise InvalidMessageError(f"{p}.{args_key}", "missing")
    value = obj[args_key]
    if kind == "mcp_approval_request":
        args = expect_str(obj, args_key, p)
        check_json(args, f"{p}.{args_key}")
    else:
        with too_deep(f"{p}.{args_key}"):
            try:  # no NaN: ``ToolCall`` takes JSON alone
                args = dump_json(value)
            except (TypeError, ValueError):
                raise InvalidMessageError(f"{p}.{args_key}", "not JSON") from None
    return ToolCall(call_id, name, args)


def _read_kept_output(obj: Mapping[str, Any], p: str, kind: str) -> ToolResult:
    id_key, out_key = _OUTPUTS[kind]
    call_id = expect_str(obj, id_key, p)
    value = obj.get(out_key)
    content: str | tuple[ResultPart, ...]
    if isinstance(value, str):
        content = value
    elif isinstance(value, Mapping) and isinstance(
        cast("Mapping[str, Any]", value).get("image_url"), str
    ):
        url = cast("Mapping[str, Any]", value)["image_url"]
        content = (image_from_url(url),)
    elif kind == "mcp_approval_response":
        content = "approved" if value else "denied"
        reason = obj.get("reason")
        if isinstance(reason, str) and reason:
            content += f": {reason}"
    elif kind == "shell_call_output" and (
        (text := _shell_text(cast("object", value))) is not None
    ):
        content = text
    elif kind == "custom_tool_call_output" and isinstance(value, list):
        try:
            content = _read_parts(
                cast("Sequence[Any]", value), f"{p}.{out_key}", "input_text", True
            )[0]
        except InvalidMessageError:  # parts of a kind not read here: their JSON
            content = _compact(cast("Sequence[Any]", value))
    else:
        with too_deep(f"{p}.{out_key}"):
            try:
                content = "" if value is None else _compact(cast("object", value))
            except (TypeError, ValueError):
                raise InvalidMessageError(f"{p}.{out_key}", "not JSON") from None
    return ToolResult(call_id, content)


def _read_kept(e: Mapping[str, Any]) -> Part | None:
    """The part an item kept as it was read gives, or ``None`` for no such item."""
    kind = e.get("type")
    item = e.get("item")
    if not isinstance(item, Mapping) or not isinstance(kind, str):
        return None
    obj = cast("Mapping[str, Any]", item)
    try:
        if kind in _CALLS:
            return _read_kept_call(obj, "item", kind)
        if kind in _OUTPUTS:
            return _read_kept_output(obj, "item", kind)
        if kind in _HOSTED or kind in _SETTINGS:
            return Text(_shown(obj))
        if kind == "compaction":
            return Opaque.of("responses", dict(obj))
    except InvalidMessageError:
        return None
    return None


# -- writing ---------------------------------------------------------------------


def _fits(layout: object, parts: Sequence[Part]) -> bool:
    """Whether a recorded layout still describes these parts."""
    if not isinstance(layout, list):
        return False
    k = 0
    for raw in cast("Sequence[Any]", layout):
        if not isinstance(raw, Mapping):
            return False
        e = cast("Mapping[str, Any]", raw)
        if not isinstance(e.get("n"), int):
            return False
        n: int = e["n"]
        chunk = parts[k : k + n]
        if len(chunk) != n:
            return False
        kind = e.get("type")
        if kind == "message":
            ok = all(isinstance(q, (Text, Image, Opaque)) for q in chunk)
        elif "item" in e:
            ok = (
                n == 1
                and _read_kept(e) is not None
                and isinstance(chunk[0], _KEPT_PART.get(str(kind), Text))
            )
        else:
            want = {
                "reasoning": Thinking,
                "function_call": ToolCall,
                "function_call_output": ToolResult,
            }.get(str(kind))
            ok = want is not None and n == 1 and isinstance(chunk[0], want)
        if not ok:
            return False
        k += n
    return k == len(parts)


_KEPT_PART: dict[str, type[Part]] = {
    **dict.fromkeys(_CALLS, ToolCall),
    **dict.fromkeys(_OUTPUTS, ToolResult),
    "compaction": Opaque,
}
"""The part each item kept as it was read gives (``Text`` for the others)."""


def _default_layout(
    m: Message, i: int, recorded: Sequence[Any] = (), custom: Set[str] = frozenset()
) -> list[Layout]:
    # Items kept as they were read go back as such where their part is still
    # there (a repair removed another call of the message, say).
    kept: dict[Part, Layout] = {}
    for e in recorded:
        if isinstance(e, Mapping) and "item" in e:
            part = _read_kept(cast("Mapping[str, Any]", e))
            if part is not None:
                kept.setdefault(part, cast("Layout", e))
    layout: list[Layout] = []
    for j, part in enumerate(m.parts):
        found = kept.get(part) if kept else None
        if found is None and (
            isinstance(part, Opaque)
            and part.provider == "responses"
            and part.type == "compaction"
        ):
            found = _kept(part.block, "compaction")  # an item, wherever it is
        if found is not None:
            layout.append(found)
        elif isinstance(part, (Text, Image, Opaque)) and m.role != "tool":
            if layout and layout[-1]["type"] == "message":
                layout[-1]["n"] += 1
            else:
                layout.append({"type": "message", "n": 1})
        elif isinstance(part, Thinking) and m.role == "assistant":
            layout.append({"type": "skip", "n": 1})
        elif isinstance(part, ToolCall) and m.role == "assistant":
            # A custom tool's call read from Chat: Responses' own custom form.
            call = "custom_tool_call" if part.id in custom else "function_call"
            layout.append({"type": call, "n": 1})
        elif isinstance(part, ToolResult) and m.role == "tool":
            output = (
                "custom_tool_call_output"
                if part.call_id in custom
                else "function_call_output"
            )
            layout.append({"type": output, "n": 1})
        else:
            raise InvalidMessageError(
                f"messages[{i}].parts[{j}]",
                f"a {part.kind} part cannot be sent in a {m.role} message",
            )
    if not m.parts and m.role in ("system", "user", "assistant"):
        layout.append({"type": "message", "n": 0})
    return layout


def _write_item(
    m: Message, e: Mapping[str, Any], chunk: Sequence[Part], where: str, first: int
) -> dict[str, Any] | None:
    """The item for ``chunk``, the parts of ``where`` from ``first`` on."""
    kind = e["type"]
    if kind == "message":
        return _write_message(m, e, chunk, where, first)
    part = chunk[0]
    if "item" in e:
        return _write_kept(e, part)
    if isinstance(part, ToolCall) and kind == "custom_tool_call":
        value = part.input  # the text, as the Chat writer writes it
        text = value if isinstance(value, str) else part.arguments
        return {
            "type": "custom_tool_call",
            "call_id": part.id,
            "name": part.name,
            "input": text,
        }
    if isinstance(part, ToolCall):
        return {
            "type": "function_call",
            "call_id": part.id,
            "name": part.name,
            "arguments": part.arguments,
        }
    if isinstance(part, ToolResult):
        output = (
            "custom_tool_call_output"
            if kind == "custom_tool_call_output"
            else "function_call_output"
        )
        out: dict[str, Any] = {"type": output, "call_id": part.call_id}
        if isinstance(part.content, str):
            out["output"] = part.content
        else:
            at = f"{where}[{first}].content"
            out["output"] = _write_parts(part.content, e, "input_text", at, result=True)
        return out
    if isinstance(part, Thinking) and kind == "reasoning":
        return _write_reasoning(part, e)
    return None  # reasoning from another provider


def _write_kept(e: Mapping[str, Any], part: Part) -> dict[str, Any]:
    """An item read as it was: the same item while its part is unchanged."""
    item: dict[str, Any] = copy.deepcopy(dict(e["item"]))
    kind = e["type"]
    if part == _read_kept(e):
        return item
    if isinstance(part, ToolResult) and kind in _OUTPUTS:
        return _write_output(item, kind, part)
    if isinstance(part, ToolCall) and kind in _CALLS:
        id_key, fixed, args_key = _CALLS[kind]
        item[id_key] = part.id
        if fixed is None:
            item["name"] = part.name
        item[args_key] = (
            part.arguments if kind == "mcp_approval_request" else part.input
        )
        return item
    if isinstance(part, Opaque):  # a compaction: nothing in it to edit
        return item
    text = part.text if isinstance(part, Text) else ""
    if kind in _SETTINGS:
        content = [{"type": "input_text", "text": text}]
        return {"type": "message", "role": "developer", "content": content}
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def _write_output(item: dict[str, Any], kind: str, part: ToolResult) -> dict[str, Any]:
    """A client's output item holding ``part``, a cut or rewritten result.

    Written in the item's own shape so that reading it back gives ``part``
    again (what was counted is what is sent): the text where the output is
    text, a shell output's text as one chunk's ``stdout`` (the last chunk's
    outcome kept), a custom tool's parts as parts. A screenshot or an
    approval takes no text (``result_takes_text`` keeps strategies from
    cutting them): only an image in place of the screenshot, or the
    approval's own verdict with another reason, can be written; anything
    else leaves the item as it was.
    """
    out_key = _OUTPUTS[kind][1]
    value = item.get(out_key)
    content = part.content
    if kind == "computer_call_output":
        images = part.images
        if images and isinstance(value, Mapping):
            prior = cast("Mapping[str, Any]", value)
            shot = {k: v for k, v in prior.items() if k != "file_id"}
            item[out_key] = {**shot, "image_url": images[0].url}
        return item
    if kind == "mcp_approval_response":
        verdict = "approved" if value else "denied"
        text = part.text
        if text == verdict:
            item.pop("reason", None)
        elif text.startswith(f"{verdict}: "):
            item["reason"] = text[len(verdict) + 2 :]
        return item
    if kind == "shell_call_output" and isinstance(value, list):
        chunks = cast("Sequence[Any]", value)
        last = chunks[-1] if chunks else None
        outcome = (
            cast("Mapping[str, Any]", last).get("outcome")
            if isinstance(last, Mapping)
            else None
        )
        if outcome is None:
            outcome = {"type": "exit", "exit_code": 0}
        chunk = {"stdout": part.text, "stderr": "", "outcome": outcome}
        item[out_key] = [chunk]
        return item
    if kind == "custom_tool_call_output" and not isinstance(content, str):
        e: Layout = {}
        item[out_key] = _write_parts(content, e, "input_text", "", 0, result=True)
        return item
    item[out_key] = part.text
    return item


def _shell_text(value: object) -> str | None:
    """A shell output's text: its chunks' stdout and stderr, in order.

    ``None`` when ``value`` is not a list of such chunks (then its JSON is
    read). Pieces are joined by a newline where one does not end in one.
    """
    if not isinstance(value, list):
        return None
    out = ""
    for chunk in cast("Sequence[Any]", value):
        if not isinstance(chunk, Mapping):
            return None
        c = cast("Mapping[str, Any]", chunk)
        for key in ("stdout", "stderr"):
            piece = c.get(key)
            if not isinstance(piece, str):
                return None
            if piece:
                if out and not out.endswith("\n"):
                    out += "\n"
                out += piece
    return out


def result_takes_text(message: Message, result: ToolResult) -> bool:
    """Whether ``result``, rewritten as text, can be written where it was read.

    A Responses screenshot (``computer_call_output``) or an MCP approval
    takes no text: a strategy that cut one would count a cut the writer
    cannot make. Every other result, and every result of another shape,
    takes text.

    Example:
        >>> shot = {"type": "computer_call_output", "call_id": "c1", "output":
        ...         {"type": "computer_screenshot", "image_url": "https://x/1.png"}}
        >>> (msg,) = from_responses([shot])
        >>> result_takes_text(msg, msg.parts[0])
        False
        >>> result_takes_text(Message.tool("c1", "ok"), ToolResult("c1", "ok"))
        True
    """
    rm = message.meta.get("responses")
    if not rm or not isinstance(rm, Mapping):
        return True
    items = cast("Mapping[str, Any]", rm).get("items")
    if not isinstance(items, list):
        return True
    for e in cast("Sequence[Any]", items):
        if not isinstance(e, Mapping):
            continue
        kind = cast("Mapping[str, Any]", e).get("type")
        item = cast("Mapping[str, Any]", e).get("item")
        if kind in _FIXED and isinstance(item, Mapping):
            id_key = _OUTPUTS[cast("str", kind)][0]
            if cast("Mapping[str, Any]", item).get(id_key) == result.call_id:
                return False
    return True


def _write_parts(
    parts: Sequence[Text | Image | Opaque],
    e: Mapping[str, Any],
    text_type: str,
    where: str = "",
    first: int = 0,
    result: bool = False,
) -> list[Any]:
    """The content list; ``first``: the first part's index in ``where``.

    ``result``: the parts are a tool's output (``result_target``).
    """
    entries = e.get("parts")
    items: list[Any] = []
    target = result_target if result else to_target
    for k, part in enumerate(parts):
        ent = entry(entries, k, len(parts))
        d: dict[str, Any]
        if isinstance(part, Opaque):
            found = target(part, "responses", f"{where}[{first + k}]")
            if found is None:
                continue
            if not isinstance(found, Text):
                items.append(found)
                continue
            part = found
        if isinstance(part, Text):
            kind = ent.get("type")
            d = {"type": kind if kind in _TEXT_PARTS else text_type, "text": part.text}
        else:
            d = {"type": "input_image", "image_url": part.url}
            if part.detail is not None:
                d["detail"] = part.detail
            elif not ent.get("no_detail"):
                # Required by the API's type; an item read without one is
                # written back as it came.
                d["detail"] = "auto"
        items.append(put_extras(d, ent.get("extra")))
    return insert_opaque(items, e.get("opaque"))


def _write_message(
    m: Message, e: Mapping[str, Any], chunk: Sequence[Part], where: str, first: int
) -> dict[str, Any]:
    role: str = m.role
    if role == "system" and e.get("role") == "developer":
        role = "developer"
    parts = [p for p in chunk if isinstance(p, (Text, Image, Opaque))]
    out: dict[str, Any] = {} if e.get("no_type") else {"type": "message"}
    out["role"] = role
    form = e.get("content_form")
    plain = len(parts) <= 1 and all(isinstance(p, Text) for p in parts)
    if form is None:
        form = "str" if plain and len(parts) == 1 else "list"
    if form == "str" and plain and not e.get("opaque"):
        out["content"] = parts[0].text if parts and isinstance(parts[0], Text) else ""
    else:
        text_type = _default_text(m.role)
        out["content"] = _write_parts(parts, e, text_type, where, first)
    return out


def _write_reasoning(part: Thinking, e: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "reasoning"}
    lens = e.get("summary")
    shown = e.get("content")  # the reasoning text's parts, after the summary
    text = part.text
    summary: Sequence[Any] = (
        cast("Sequence[Any]", lens) if isinstance(lens, list) else []
    )
    both: list[Any] = [
        *summary,
        *(cast("Sequence[Any]", shown) if isinstance(shown, list) else []),
    ]
    if (lens is not None or shown is not None) and _splits(both, text):
        texts: list[str] = []
        start = 0
        for n in cast("list[int]", both):
            texts.append(text[start : start + n])
            start += n + len(_SEP)
        k = len(summary)
        if lens is not None:
            out["summary"] = [{"type": "summary_text", "text": t} for t in texts[:k]]
        if isinstance(shown, list):
            out["content"] = [
                {"text": t, "type": "reasoning_text"}
                if e.get("text_first")
                else {"type": "reasoning_text", "text": t}
                for t in texts[k:]
            ]
    elif text or lens is not None:
        out["summary"] = [{"type": "summary_text", "text": text}] if text else []
    if part.signature is not None:
        out["encrypted_content"] = part.signature
    return out


def _splits(lens: Sequence[Any], text: str) -> bool:
    if not all(isinstance(n, int) and n >= 0 for n in lens):
        return False
    if not lens:
        return text == ""
    return int(sum(lens)) + len(_SEP) * (len(lens) - 1) == len(text)
