"""OpenAI Chat Completions messages: ``from_openai`` and ``to_openai``.

Contract:

- ``to_openai(from_openai(x)) == x`` for every well-formed list of Chat
  Completions messages, as dicts (key order aside): whatever the neutral model
  does not carry is kept in ``Message.meta["openai"]`` and written back.
- Roles: ``system`` and ``developer`` (kept as ``meta["openai"]["role"]``) become
  ``system``; ``user``; ``assistant`` (``tool_calls`` become ``ToolCall`` parts,
  ``reasoning_content`` a leading ``Thinking`` part); ``tool`` becomes a ``tool``
  message with one ``ToolResult``. The legacy ``function_call`` / ``function``
  pair is converted: the call gets the id ``legacy_<index>`` and the result is
  paired with the earliest pending call of the same name.
- Content parts: ``text`` and ``image_url`` are modelled; ``input_audio``,
  ``file``, ``audio`` and ``refusal`` parts become ``Opaque`` parts in their
  place, in every role (counted and kept like other content, as the
  Responses reader keeps them); any other type is an error. An assistant's
  ``refusal`` and ``audio`` fields become ``Opaque`` parts too (a refusal
  part's shape; ``{"type": "audio", "audio": ...}``) and are written back to
  those fields. Another provider's ``Opaque`` part is written as its Chat
  equivalent (a PDF document as a ``file``, a text document as text) or left
  out with a ``ContentDroppedWarning``.
- A ``tool`` message's content takes text parts alone
  (``ChatCompletionToolMessageParam``): an image in another shape's tool
  result (an Anthropic ``tool_result``'s image, say) is left out with a
  ``ContentDroppedWarning`` naming ``messages[i].parts[j].content[k]``, not
  moved to a user message of its own (that would put a turn in the
  exchange the model did not see). A tool message read from Chat with
  image parts (some compatible servers take them) is written back as it
  came.
- ``function.arguments`` must be JSON text (or empty); it is kept byte for byte.
  JSON nested too deep for Python's stack is an ``InvalidMessageError``
  (``nested too deeply``), as in every reader and writer.
- A custom tool's call (``"type": "custom"``) and a Responses
  ``custom_tool_call`` (``_common.custom_calls``) are written as a custom
  call, its input as the text it is.
- Writing: ``Thinking`` parts are written (as ``reasoning_content``) only when
  they were read from it (``thinking_sent``, which the token counter asks
  too: what is not sent is not counted); another provider's reasoning
  carries signatures that mean nothing here. ``is_error`` of a tool result
  has no place in this shape and is dropped. A ``tool`` message holding
  several results becomes several tool messages.
- Malformed input raises ``InvalidMessageError`` naming the place, e.g.
  ``messages[3].tool_calls[0].function.arguments: not valid JSON``.

Example:
    >>> msgs = from_openai([
    ...     {"role": "user", "content": "2+2?"},
    ...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
    ...      "type": "function", "function": {"name": "calc", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "4"},
    ... ])
    >>> [m.role for m in msgs], msgs[2].parts[0].call_id
    (['user', 'assistant', 'tool'], 'c1')
    >>> to_openai(msgs)[1]["content"] is None
    True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, cast

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
from contextwindow.formats._opaque import (
    dropped,
    left_out,
    result_target,
    to_target,
    translate,
)
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Part,
    ResultPart,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)

__all__ = ["from_openai", "to_openai"]

_OPAQUE_PARTS = frozenset(("input_audio", "file", "audio", "refusal"))
_FORMS = frozenset(("absent", "null", "str", "list"))


class _Content(NamedTuple):
    parts: tuple[Text | Image | Opaque, ...]
    entries: list[Any] | None
    form: str


def from_openai(
    messages: Sequence[Mapping[str, Any]], *, path: str = "messages"
) -> list[Message]:
    """Read Chat Completions messages into neutral messages.

    Args:
        messages: The ``messages`` list of a Chat Completions request.
        path: How error messages name the list.

    Returns:
        One neutral message per input message, in order.

    Raises:
        InvalidMessageError: A message is malformed; the error names where.

    Example:
        >>> from_openai([{"role": "developer", "content": "Be brief."}])[0].text
        'Be brief.'
        >>> from_openai([{"role": "robot", "content": "beep"}])
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: messages[0].role: unknown role 'robot'
    """
    seq = expect_list(messages, path)
    out: list[Message] = []
    legacy: list[tuple[str, str]] = []  # pending legacy calls: (name, id)
    for i, raw in enumerate(seq):
        p = f"{path}[{i}]"
        with too_deep(p):
            out.append(_read_one(raw, p, i, legacy))
    return out


def _read_one(raw: object, p: str, i: int, legacy: list[tuple[str, str]]) -> Message:
    obj = expect_mapping(raw, p)
    role = expect_str(obj, "role", p)
    if role in ("system", "developer", "user"):
        return _read_plain(obj, role, p)
    if role == "assistant":
        msg = _read_assistant(obj, p, i)
        if obj.get("function_call") is not None:
            legacy.extend((c.name, c.id) for c in msg.tool_calls)
        return msg
    if role == "tool":
        return _read_tool(obj, p)
    if role == "function":
        return _read_function(obj, p, i, legacy)
    raise InvalidMessageError(f"{p}.role", f"unknown role {role!r}")


def to_openai(messages: Sequence[Message] | Iterable[Any]) -> list[dict[str, Any]]:
    """Write neutral messages as Chat Completions messages.

    Args:
        messages: The conversation.

    Returns:
        New dicts; a tool message with several results gives several dicts.

    Raises:
        InvalidMessageError: A part sits in a role that cannot carry it (a tool
            call in a user message, say); the error names ``messages[i].parts[j]``.

    Example:
        >>> to_openai([Message.tool("c1", "4", name="calc")])
        [{'role': 'tool', 'tool_call_id': 'c1', 'content': '4', 'name': 'calc'}]
    """
    messages = as_neutral(messages)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        om = provider_meta(m.meta, "openai")
        with too_deep(f"messages[{i}]"):
            if m.role == "tool":
                out.extend(_write_tool(m, om, i))
            else:
                out.append(_write_message(m, om, i))
    return out


def thinking_sent(message: Message) -> frozenset[int]:
    """The indices of the ``Thinking`` parts ``to_openai`` writes.

    Those of an assistant message read with ``reasoning_content`` (and not
    redacted: a redacted block has no text to send), joined into that
    field. Another provider's reasoning is left out: its signatures mean
    nothing here. The token counter asks this too, so that what is not
    sent is not counted.

    Example:
        >>> msg = from_openai([{"role": "assistant", "content": "4",
        ...                     "reasoning_content": "2+2"}])[0]
        >>> thinking_sent(msg), thinking_sent(Message.assistant([Thinking("x")]))
        (frozenset({0}), frozenset())
    """
    if message.role != "assistant" or not provider_meta(message.meta, "openai").get(
        "reasoning_content"
    ):
        return frozenset()
    return frozenset(
        j
        for j, part in enumerate(message.parts)
        if isinstance(part, Thinking) and not part.redacted
    )


# -- reading ---------------------------------------------------------------------


def _read_content(obj: Mapping[str, Any], p: str) -> _Content:
    """Read ``content``; parts kept as they are become ``Opaque`` parts in place.

    A system message's too: what the model reads there is counted and cut
    like the rest. (Messages stored by earlier versions kept them in
    ``meta["openai"]["opaque"]``: the writer still puts those back.)
    """
    if "content" not in obj:
        return _Content((), None, "absent")
    content = obj["content"]
    if content is None:
        return _Content((), None, "null")
    if isinstance(content, str):
        return _Content((Text(content),) if content else (), None, "str")
    if not isinstance(content, list):
        raise InvalidMessageError(
            f"{p}.content",
            f"expected a string, a list or null, got {type_name(content)}",
        )
    parts: list[Text | Image | Opaque] = []
    entries: list[dict[str, Any] | None] = []
    for j, raw in enumerate(cast("Sequence[Any]", content)):
        pp = f"{p}.content[{j}]"
        part = expect_mapping(raw, pp)
        kind = expect_str(part, "type", pp)
        ent: dict[str, Any] = {}
        if kind == "text":
            parts.append(Text(expect_str(part, "text", pp)))
            extra = extras(part, ("type", "text"))
        elif kind == "image_url":
            if "image_url" not in part:
                raise InvalidMessageError(f"{pp}.image_url", "missing")
            iu = expect_mapping(part["image_url"], f"{pp}.image_url")
            url = expect_str(iu, "url", f"{pp}.image_url")
            parts.append(image_from_url(url, opt_str(iu, "detail", f"{pp}.image_url")))
            extra = extras(part, ("type", "image_url"))
            inner = extras(iu, ("url", "detail"), ("detail",))
            if inner:
                ent["image_url"] = inner
        elif kind in _OPAQUE_PARTS:
            parts.append(opaque_part("openai", part, pp))
            extra = {}
        else:
            raise InvalidMessageError(f"{pp}.type", f"unknown part type {kind!r}")
        if extra:
            ent["extra"] = extra
        entries.append(ent or None)
    return _Content(tuple(parts), part_extras(entries), "list")


def _default_form(
    parts: Sequence[Text | Image | Opaque], entries: object, opaque: object, empty: str
) -> str:
    """The content form ``to_openai`` writes when the reader recorded none."""
    if opaque:
        return "list"
    if not parts:
        return empty
    if len(parts) == 1 and isinstance(parts[0], Text) and not entries:
        return "str"
    return "list"


def _content_meta(c: _Content, empty: str) -> dict[str, Any]:
    om: dict[str, Any] = {}
    if c.entries:
        om["parts"] = c.entries
    if c.form != _default_form(c.parts, c.entries, None, empty):
        om["content_form"] = c.form
    return om


def _message(
    role: Any, parts: tuple[Part, ...], name: str | None, om: dict[str, Any]
) -> Message:
    return Message(role, parts, name=name, meta={"openai": om} if om else {})


def _read_plain(obj: Mapping[str, Any], role: str, p: str) -> Message:
    c = _read_content(obj, p)
    om = _content_meta(c, "str")
    if role == "developer":
        om["role"] = "developer"  # a str, whatever subclass of one ``role`` is
    extra = extras(obj, ("role", "content", "name"), ("name",))
    if extra:
        om["extra"] = extra
    neutral = "system" if role == "developer" else role
    return _message(neutral, c.parts, opt_str(obj, "name", p), om)


def _read_assistant(obj: Mapping[str, Any], p: str, index: int) -> Message:
    c = _read_content(obj, p)
    parts: list[Part] = []
    om: dict[str, Any] = {}
    reasoning = opt_str(obj, "reasoning_content", p)
    if reasoning is not None:
        parts.append(Thinking(reasoning))
        om["reasoning_content"] = True
    parts.extend(c.parts)
    # A refusal and an audio reply are the assistant's content: parts (of
    # the content part's shape), written back to their fields.
    refusal = opt_str(obj, "refusal", p)
    if refusal is not None:
        parts.append(Opaque.of("openai", {"type": "refusal", "refusal": refusal}))
        om["refusal"] = "field"
    audio = obj.get("audio")
    if isinstance(audio, Mapping):
        kept = dict(cast("Mapping[str, Any]", audio))
        audio_block: dict[str, Any] = {"type": "audio", "audio": kept}
        parts.append(opaque_part("openai", audio_block, f"{p}.audio"))
    calls, call_entries = _read_calls(obj, p)
    if "function_call" in obj and obj["function_call"] is not None:
        if calls:
            raise InvalidMessageError(
                f"{p}.function_call", "cannot be combined with tool_calls"
            )
        fp = f"{p}.function_call"
        fc = expect_mapping(obj["function_call"], fp)
        args = expect_str(fc, "arguments", fp)
        check_json(args, f"{fp}.arguments")
        calls = [ToolCall(f"legacy_{index}", expect_str(fc, "name", fp), args)]
        om["legacy"] = True
    parts.extend(calls)
    # An audio reply has no text: its content is null by default, as with calls.
    spoken = any(isinstance(q, Opaque) and q.type == "audio" for q in parts)
    om.update(_content_meta(c, "null" if calls or spoken else "str"))
    if call_entries:
        om["tool_calls"] = call_entries
    known = (
        "role",
        "content",
        "name",
        "tool_calls",
        "reasoning_content",
        "refusal",
        "audio",
    )
    optional = ("name", "tool_calls", "reasoning_content", "refusal", "audio")
    extra = extras(obj, (*known, "function_call"), (*optional, "function_call"))
    if extra:
        om["extra"] = extra
    return _message("assistant", tuple(parts), opt_str(obj, "name", p), om)


def _read_calls(obj: Mapping[str, Any], p: str) -> tuple[list[ToolCall], Any]:
    raw_calls = obj.get("tool_calls")
    if raw_calls is None:
        return [], None
    seq = expect_list(raw_calls, f"{p}.tool_calls")
    calls: list[ToolCall] = []
    entries: list[dict[str, Any] | None] = []
    for k, raw in enumerate(seq):
        cp = f"{p}.tool_calls[{k}]"
        call = expect_mapping(raw, cp)
        kind = expect_str(call, "type", cp)
        if kind == "custom":
            calls.append(_read_custom(call, cp))
            extra = extras(call, ("id", "type", "custom"))
            entries.append({"custom": True, **({"extra": extra} if extra else {})})
            continue
        if kind != "function":
            raise InvalidMessageError(
                f"{cp}.type", f"unknown tool call type {kind!r} (function or custom)"
            )
        if "function" not in call:
            raise InvalidMessageError(f"{cp}.function", "missing")
        fn = expect_mapping(call["function"], f"{cp}.function")
        name = expect_str(fn, "name", f"{cp}.function")
        args = expect_str(fn, "arguments", f"{cp}.function")
        check_json(args, f"{cp}.function.arguments")
        calls.append(ToolCall(expect_str(call, "id", cp), name, args))
        ent: dict[str, Any] = {}
        extra = extras(call, ("id", "type", "function"))
        if extra:
            ent["extra"] = extra
        fn_extra = extras(fn, ("name", "arguments"))
        if fn_extra:
            ent["function"] = fn_extra
        entries.append(ent or None)
    return calls, part_extras(entries)


def _read_custom(call: Mapping[str, Any], p: str) -> ToolCall:
    """A custom tool's call (``{"type": "custom", "custom": {"name", "input"}}``).

    Its input is free text, not JSON: the call's arguments are that text as a
    JSON string, as a Responses ``custom_tool_call``'s are.
    """
    if "custom" not in call:
        raise InvalidMessageError(f"{p}.custom", "missing")
    custom = expect_mapping(call["custom"], f"{p}.custom")
    name = expect_str(custom, "name", f"{p}.custom")
    text = expect_str(custom, "input", f"{p}.custom")
    return ToolCall(
        expect_str(call, "id", p), name, json.dumps(text, ensure_ascii=False)
    )


def _read_result(obj: Mapping[str, Any], p: str, call_id: str) -> Message:
    c = _read_content(obj, p)
    content: str | tuple[ResultPart, ...]
    if c.form == "list":
        content = c.parts
    else:
        content = c.parts[0].text if c.parts and isinstance(c.parts[0], Text) else ""
    name = opt_str(obj, "name", p)
    om = _content_meta(c, "list" if c.form == "list" else "str")
    if any(isinstance(q, Image) for q in c.parts):
        # A server that took it may take it again: written back as it came.
        om["images"] = True
    return Message("tool", (ToolResult(call_id, content, name=name),), meta=om)


def _read_tool(obj: Mapping[str, Any], p: str) -> Message:
    msg = _read_result(obj, p, expect_str(obj, "tool_call_id", p))
    om = dict(msg.meta)
    extra = extras(obj, ("role", "content", "tool_call_id", "name"), ("name",))
    if extra:
        om["extra"] = extra
    return Message("tool", msg.parts, meta={"openai": om} if om else {})


def _read_function(
    obj: Mapping[str, Any], p: str, index: int, legacy: list[tuple[str, str]]
) -> Message:
    name = expect_str(obj, "name", p)
    call_id = f"legacy_{index}"
    for k, (pending, cid) in enumerate(legacy):
        if pending == name:
            call_id = cid
            del legacy[k]
            break
    msg = _read_result(obj, p, call_id)
    om = dict(msg.meta)
    om["legacy"] = True
    extra = extras(obj, ("role", "content", "name"))
    if extra:
        om["extra"] = extra
    return Message("tool", msg.parts, meta={"openai": om})


# -- writing ---------------------------------------------------------------------


def _write_parts(
    parts: Sequence[Text | Image | Opaque],
    entries: object,
    where: str = "",
    at: Sequence[int] = (),
    result: bool = False,
) -> list[Any]:
    """The content list; ``at``: each part's index in its message, for warnings.

    ``result``: the parts are a tool's output, which takes text alone.
    """
    items: list[Any] = []
    target = result_target if result else to_target
    for k, part in enumerate(parts):
        ent = entry(entries, k, len(parts))
        d: dict[str, Any]
        if isinstance(part, Opaque):
            found = target(part, "openai", f"{where}[{at[k] if at else k}]")
            if found is None:
                continue
            if not isinstance(found, Text):
                items.append(found)
                continue
            part = found
        if isinstance(part, Text):
            d = {"type": "text", "text": part.text}
        else:
            iu: dict[str, Any] = {"url": part.url}
            if part.detail is not None:
                iu["detail"] = part.detail
            d = {"type": "image_url", "image_url": put_extras(iu, ent.get("image_url"))}
        items.append(put_extras(d, ent.get("extra")))
    return items


def _put_content(
    out: dict[str, Any],
    parts: Sequence[Text | Image | Opaque],
    om: Mapping[str, Any],
    empty: str,
    where: str = "",
    at: Sequence[int] = (),
    result: bool = False,
) -> None:
    """Set ``out["content"]`` in the recorded form, if it still fits the parts."""
    recorded = om.get("parts")
    entries = cast("Sequence[Any]", recorded) if isinstance(recorded, list) else None
    if entries is not None and len(entries) != len(parts):
        entries = None
    opaque = om.get("opaque")
    form = om.get("content_form")
    default = _default_form(parts, entries, opaque, empty)
    empty_fits = not (parts or opaque)
    str_fits = not opaque and len(parts) <= 1 and _all_text(parts)
    if (
        form not in _FORMS
        or (form in ("absent", "null") and not empty_fits)
        or (form == "str" and not str_fits)
    ):
        form = default
    if form == "absent":
        return
    if form == "null":
        out["content"] = None
    elif form == "str":
        out["content"] = parts[0].text if parts and isinstance(parts[0], Text) else ""
    else:
        items = _write_parts(parts, entries, where, at, result)
        out["content"] = insert_opaque(items, opaque)


def _all_text(parts: Sequence[Part]) -> bool:
    return all(isinstance(p, Text) for p in parts)


def _misplaced(part: Part, role: str, i: int, j: int) -> InvalidMessageError:
    return InvalidMessageError(
        f"messages[{i}].parts[{j}]",
        f"a {part.kind} part cannot be sent in a {role} message",
    )


def _write_message(m: Message, om: Mapping[str, Any], i: int) -> dict[str, Any]:
    role: str = m.role
    if role == "system" and om.get("role") == "developer":
        role = "developer"
    content: list[Text | Image | Opaque] = []
    at: list[int] = []  # each content part's index in the message
    calls: list[ToolCall] = []
    thinking: list[str] = []
    fields: dict[str, Any] = {}  # refusal, audio: the assistant's own fields
    sent = thinking_sent(m)
    for j, part in enumerate(m.parts):
        field = _field(part, m.role, om, fields)
        if field is not None:
            fields[field[0]] = field[1]
        elif m.role == "system" and _off_system(part, f"messages[{i}].parts[{j}]"):
            continue
        elif isinstance(part, (Text, Image, Opaque)):
            content.append(part)
            at.append(j)
        elif m.role == "assistant" and isinstance(part, ToolCall):
            calls.append(part)
        elif m.role == "assistant" and isinstance(part, Thinking):
            if j in sent:
                thinking.append(part.text)
        else:
            raise _misplaced(part, m.role, i, j)
    out: dict[str, Any] = {"role": role}
    empty = "null" if calls or "audio" in fields else "str"
    _put_content(out, content, om, empty, f"messages[{i}].parts", at)
    out.update(fields)
    if m.name is not None:
        out["name"] = m.name
    if thinking:
        out["reasoning_content"] = "".join(thinking)
    if om.get("legacy") and len(calls) == 1:
        out["function_call"] = {"name": calls[0].name, "arguments": calls[0].arguments}
    elif calls:
        entries = om.get("tool_calls")
        custom = custom_calls(m)
        out["tool_calls"] = [
            _write_call(c, entry(entries, k, len(calls)), c.id in custom)
            for k, c in enumerate(calls)
        ]
    return put_extras(out, om.get("extra"))


def _off_system(part: Part, where: str) -> bool:
    """Whether ``part`` is left out of a system message, with a warning.

    Chat's system prompt takes text parts alone: another provider's opaque
    block goes there only as its text.
    """
    if not isinstance(part, Opaque) or part.provider == "openai":
        return False
    found = translate(part, "openai")
    if isinstance(found, Text):
        return False
    dropped(part, "openai", where, place="shape" if found is None else "system prompt")
    return True


def _field(
    part: Part, role: str, om: Mapping[str, Any], fields: Mapping[str, Any]
) -> tuple[str, Any] | None:
    """The assistant field (``refusal``, ``audio``) ``part`` is written to, if any.

    An audio reply has no content part; a refusal goes back to the field it
    was read from (a refusal part read from ``content`` stays there).
    """
    if role != "assistant" or not isinstance(part, Opaque):
        return None
    found = translate(part, "openai")
    if not isinstance(found, Opaque):
        return None
    block = found.block
    kind = block.get("type")
    if kind == "audio" and "audio" not in fields:
        return "audio", block.get("audio")
    if kind == "refusal" and om.get("refusal") == "field" and "refusal" not in fields:
        return "refusal", block.get("refusal")
    return None


def _write_call(
    call: ToolCall, ent: Mapping[str, Any], custom: bool = False
) -> dict[str, Any]:
    """One ``tool_calls`` entry; ``custom``: a custom (free-form) tool's call."""
    if custom or ent.get("custom"):
        # Its input as text: the JSON string read, or what a rewrite made.
        value = call.input
        text = value if isinstance(value, str) else call.arguments
        out = {
            "id": call.id,
            "type": "custom",
            "custom": {"name": call.name, "input": text},
        }
        return put_extras(out, ent.get("extra"))
    fn = put_extras(
        {"name": call.name, "arguments": call.arguments}, ent.get("function")
    )
    out = {"id": call.id, "type": "function", "function": fn}
    return put_extras(out, ent.get("extra"))


def _tool_parts(
    content: Sequence[Text | Image | Opaque], om: Mapping[str, Any], where: str
) -> list[int]:
    """The indices of a tool result's parts that a Chat tool message takes.

    Its content takes text parts alone (``ChatCompletionToolMessageParam``):
    another shape's image is left out with a warning. Images read from a
    Chat tool message (``meta["openai"]["images"]``) are written back.
    """
    if om.get("images"):
        return list(range(len(content)))
    out: list[int] = []
    for k, part in enumerate(content):
        if isinstance(part, Image):
            left_out("image", "openai", f"{where}[{k}]", "tool result")
        else:
            out.append(k)
    return out


def _write_tool(m: Message, om: Mapping[str, Any], i: int) -> list[dict[str, Any]]:
    results: list[ToolResult] = []
    for j, part in enumerate(m.parts):
        if not isinstance(part, ToolResult):
            raise _misplaced(part, "tool", i, j)
        results.append(part)
    if len(results) != 1:
        om = {}  # the recorded shape belongs to a one-result message
    out: list[dict[str, Any]] = []
    for j, r in enumerate(results):
        d: dict[str, Any]
        if om.get("legacy"):
            d = {"role": "function", "name": r.name or ""}
        else:
            d = {"role": "tool", "tool_call_id": r.call_id}
        if isinstance(r.content, str):
            _put_content(d, [Text(r.content)] if r.content else [], om, "str")
        else:
            where = f"messages[{i}].parts[{j}].content"
            at = _tool_parts(r.content, om, where)
            parts = [r.content[k] for k in at]
            rom = dict(om)
            # All its parts left out: "" (an empty list given stays one).
            rom.setdefault("content_form", "list" if parts or not r.content else "str")
            _put_content(d, parts, rom, "list", where, at, result=True)
        if r.name is not None:
            d["name"] = r.name
        out.append(put_extras(d, om.get("extra")))
    return out
