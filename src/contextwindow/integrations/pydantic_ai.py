"""pydantic-ai: a capability and a history processor that fit each model request.

Contract:

- ``ContextWindow(model=..., ...)`` is a pydantic-ai capability
  (``Agent(..., capabilities=[ContextWindow("claude-sonnet-4-5")])``): before
  every model request it fits the messages sent to the model into the
  window (the instructions and tool definitions of the request counted,
  never dropped), and leaves the run's own history whole, so
  ``result.all_messages()`` keeps every message. After every response it
  feeds the reported ``usage.input_tokens`` to its ``Calibration`` against
  the count of the request, so the next budget is in the provider's tokens.
- ``fit_history(...)`` is the same fitting as a plain history processor
  (``ProcessHistory(fit_history(...))``, the installed pydantic-ai's form of
  ``history_processors``), for agents already built around one;
  pydantic-ai then keeps what it returns as the history. The capability
  keeps a ``ContextManager`` per conversation underneath (compaction is
  incremental, the prefix sent stays stable); the processor fits afresh.
- ``from_pydantic_ai`` / ``to_pydantic_ai`` convert ``ModelMessage`` lists
  to neutral messages and back: every part is kept, whole and serialised, in
  ``Message.meta["pydantic_ai"]``, so ``to_pydantic_ai(from_pydantic_ai(m))``
  dumps as ``m`` does (``ModelMessagesTypeAdapter``) for every part kind,
  including those the neutral model has no part for (written back in
  place). A ``ModelRequest`` becomes one neutral message per part (system
  prompt, user prompt, tool return, retry feedback); consecutive messages of
  one request are one request again on writing. A ``ModelResponse`` is one
  assistant message: text, thinking, tool calls; builtin tool calls and
  returns (run by the provider, answered in the same response) are text,
  so they are counted and never taken for calls awaiting a result.
- Every part is counted as the model receives it, never as nothing: a
  capability part as pydantic-ai renders it (an operator's instruction a
  system message, data framed on the user channel behind its note), speech
  by its transcript, a retry naming a tool as that call's failed result
  (as pydantic-ai reads it: the exchange stays whole), an image (a tool's
  too) as an ``Image``, a PDF, audio or other file as an ``Opaque``
  ``input_file`` / ``input_audio`` (pages, seconds, bytes; never its
  base64). A part kind with no neutral form (an instruction record, a kind
  newer than this module) is counted by its text or JSON on the message it
  is carried with.
- A part a strategy changed (a truncated tool return, a cut tool call) is
  written from its neutral form, its other fields kept; every other part
  of its message, and every file or image of its content, is written as it
  came (a thinking part's signature and id, builtin tool parts, files).
- pydantic-ai is imported when this module is; without it, importing fails
  with the ``pip install 'contextwindow[pydantic-ai]'`` to run.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

try:
    import pydantic
    from pydantic_ai import messages as pm
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import RunContext
except ImportError as exc:  # pragma: no cover -- the extra is installed in CI
    raise ImportError(
        "contextwindow.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'contextwindow[pydantic-ai]'"
    ) from exc

from contextwindow._args import shown
from contextwindow._images import data_uri, data_uri_bytes, parse_data_uri
from contextwindow._lru import LRU
from contextwindow.errors import ArgumentTypeError
from contextwindow.fitting import fit
from contextwindow.formats._coerce import coerce_tools
from contextwindow.formats._opaque import opaque_text
from contextwindow.integrations._fitting import Conversations
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
    ToolSpec,
)
from contextwindow.models import ModelInfo
from contextwindow.strategies.base import Report, Strategy
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration
from contextwindow.tokens.counting import TokenCounter

__all__ = ["ContextWindow", "fit_history", "from_pydantic_ai", "to_pydantic_ai"]

KEY = "pydantic_ai"
"""The ``Message.meta`` key holding what a neutral message came from."""

_ADAPTER = pm.ModelMessagesTypeAdapter
_TOOL_RETURNS = ("tool-return", "tool-search-return", "capability-load-return")
_TOOL_CALLS = ("tool-call", "tool-search-call", "capability-load-call")
_BUILTIN = (
    "builtin-tool-call",
    "builtin-tool-return",
    "builtin-tool-search-call",
    "builtin-tool-search-return",
)
_FILES = (
    "binary",
    "image-url",
    "document-url",
    "audio-url",
    "video-url",
    "uploaded-file",
)
_SILENT = ("speech", "capability", "capability-load-delta")
"""Request parts that reach the model as nothing when they have no neutral
form: speech with neither transcript nor audio, a capability part rendering
to nothing, the record of a capability's load (``prepare_messages`` drops it)."""


# -- reading ---------------------------------------------------------------------


def from_pydantic_ai(messages: Iterable[pm.ModelMessage]) -> list[Message]:
    """Neutral messages for a pydantic-ai history (see the module's contract).

    Example:
        >>> from pydantic_ai.messages import (ModelRequest, ModelResponse,
        ...     SystemPromptPart, UserPromptPart, ToolCallPart, ToolReturnPart)
        >>> history = [
        ...     ModelRequest(parts=[SystemPromptPart("Be brief."),
        ...                         UserPromptPart("List files.")]),
        ...     ModelResponse(parts=[ToolCallPart("ls", {"dir": "."}, "c1")]),
        ...     ModelRequest(parts=[ToolReturnPart("ls", "a.txt", "c1")])]
        >>> neutral = from_pydantic_ai(history)
        >>> [(m.role, m.text or m.parts[0].kind) for m in neutral]
        [('system', 'Be brief.'), ('user', 'List files.'), ('assistant', 'tool_call'), ('tool', 'a.txt')]
        >>> back = to_pydantic_ai(neutral)
        >>> [type(m).__name__ for m in back], back[1].parts[0].args
        (['ModelRequest', 'ModelResponse', 'ModelRequest'], {'dir': '.'})
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    return _convert(list(messages), lambda n, _msg: str(n))


def _convert(
    messages: Sequence[Any],
    key: Callable[[int, Any], str],
    cache: LRU[int, tuple[Any, list[Message]]] | None = None,
) -> list[Message]:
    """Read ``messages``, each group named by ``key``; ``cache`` by identity."""
    out: list[Message] = []
    carried: list[Any] = []
    for n, msg in enumerate(messages):
        if cache is not None and not carried:
            hit = cache.get(id(msg))
            if hit is not None and hit[0] is msg:
                out.extend(hit[1])
                continue
        had = bool(carried)
        converted = _read_message(msg, n, key(n, msg), carried)
        if cache is not None and converted and not had:
            cache.put(id(msg), (msg, converted))
        out.extend(converted)
    if carried and out:  # a trailing message of parts only: kept on the last
        info = dict(out[-1].meta[KEY])
        info["carried_after"] = carried
        records = [d for c in carried for d in c.get("parts", ())]
        out[-1] = _with_records(out[-1], info, records)
    return out


def _read_message(msg: Any, n: int, group: str, carried: list[Any]) -> list[Message]:
    """The neutral messages of one ``ModelMessage``; ``carried`` as explained below.

    A message holding only parts with no neutral form is carried to the next
    neutral message (written back before it).
    """
    if not isinstance(msg, (pm.ModelRequest, pm.ModelResponse)):
        from contextwindow.errors import InvalidMessageError

        raise InvalidMessageError(
            f"messages[{n}]",
            f"expected a ModelRequest or ModelResponse, got {type(msg).__name__}",
        )
    dumped = _ADAPTER.dump_python([msg], mode="json")[0]
    parts: list[dict[str, Any]] = dumped.pop("parts")
    out: list[Message] = []
    if dumped["kind"] == "response":
        neutral = [p for d in parts if (p := _response_part(d)) is not None]
        info: dict[str, Any] = {"message": dumped, "group": group, "parts": parts}
        if neutral:
            out.append(Message("assistant", tuple(neutral), meta={KEY: info}))
    else:
        before: list[dict[str, Any]] = []
        for d in parts:
            read = _request_part(d)
            if read is None:
                before.append(d)
                continue
            role, neutral_parts = read
            info = {"message": dumped, "group": group, "parts": [d]}
            m = Message(role, neutral_parts, meta={KEY: info})
            if before:
                info["before"] = before
                m = _with_records(m, info, before)
                before = []
            out.append(m)
        if before and out:
            info = dict(out[-1].meta[KEY])
            info["after"] = before
            out[-1] = _with_records(out[-1], info, before)
        elif before:
            dumped_whole = dict(dumped, parts=before)
            carried.append(dumped_whole)
            return []
    if not out:
        carried.append(dict(dumped, parts=parts))
        return []
    if carried:
        info = dict(out[0].meta[KEY])
        info["carried"] = list(carried)
        out[0] = _with_records(
            out[0], info, [d for c in carried for d in c.get("parts", ())]
        )
        carried.clear()
    return out


def _with_records(m: Message, info: dict[str, Any], records: Sequence[Any]) -> Message:
    """``m`` carrying ``records`` (parts with no neutral form), each counted.

    A part the neutral model has no form for (an instruction delta, a
    part kind newer than this module) is written back in place, beside the
    message it is carried with; what the model reads of it is counted as a
    ``Text`` part appended to that message (``info["records"]`` says how
    many), never as nothing.
    """
    texts = [t for d in records if (t := _record(d)) is not None]
    if texts:
        info["records"] = int(info.get("records", 0)) + len(texts)
    return Message(
        m.role, (*m.parts, *texts), name=m.name, agent=m.agent, pinned=m.pinned,
        id=m.id, meta={**m.meta, KEY: info},
    )  # fmt: skip


def _record(d: Mapping[str, Any]) -> Text | None:
    """What a part with no neutral form is counted as: its text, else its JSON."""
    kind = d.get("part_kind")
    if kind in _SILENT:
        return None
    content = d.get("content")
    if isinstance(content, str):
        return Text(content) if content else None
    return Text(_json(d))


def _own_parts(m: Message) -> tuple[Part, ...]:
    """``m``'s parts without those counting its carried records.

    Only a tail equal to what the records are counted as is theirs: a
    message a strategy replaced whole (a placeholder) keeps its parts.
    """
    info = _info(m)
    records = info.get("records", 0)
    if not isinstance(records, int) or not 0 < records < len(m.parts):
        return m.parts
    carried = [*info.get("carried", ()), *info.get("carried_after", ())]
    held = [*info.get("before", ()), *info.get("after", ())]
    held.extend(d for c in carried for d in c.get("parts", ()))
    texts = {t for d in held if (t := _record(d)) is not None}
    tail = m.parts[len(m.parts) - records :]
    return m.parts[: len(m.parts) - records] if set(tail) <= texts else m.parts


def _text(content: Any) -> str:
    return content if isinstance(content, str) else _json(content)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _user_item(item: Any) -> Part:
    if isinstance(item, str):
        return Text(item)
    d: Mapping[str, Any] = {}
    if isinstance(item, Mapping):
        d = cast("Mapping[str, Any]", item)
    if d.get("kind") == "text-content":
        return Text(str(d.get("content", "")))
    return _file(d) or Text(_json(item))  # structured content: its JSON


def _file(d: Mapping[str, Any]) -> Image | Opaque | None:
    """An image, or a file read as the library reads a Responses ``input_file``.

    A PDF, audio or any other file is an ``Opaque`` part (``input_file``,
    ``input_audio``): counted by its payload (PDF pages, audio seconds,
    file bytes) or as a reference, never as its base64 text.
    """
    kind = d.get("kind")
    media = str(d.get("media_type") or "application/octet-stream")
    if kind == "image-url":
        return Image(str(d.get("url", "")))
    if kind == "binary":
        data = str(d.get("data", ""))
        if media.startswith("image/"):
            return Image(data_uri(media, data))
        if media.startswith("audio/"):
            audio = {"data": data, "format": media[6:]}
            return Opaque.of("responses", {"type": "input_audio", "input_audio": audio})
        name = str(d.get("identifier") or "file")
        return Opaque.of(
            "responses",
            {
                "type": "input_file",
                "filename": name,
                "file_data": data_uri(media, data),
            },
        )
    if kind in ("document-url", "audio-url", "video-url"):
        return Opaque.of("responses", {"type": "input_file", "file_url": str(d["url"])})
    if kind == "uploaded-file":
        file_id = str(d.get("file_id", ""))
        return Opaque.of("responses", {"type": "input_file", "file_id": file_id})
    return None


def _items(content: Any) -> list[Any]:
    """A user prompt's or a tool's content as a list of items."""
    return (
        list(cast("Iterable[Any]", content)) if isinstance(content, list) else [content]
    )


def _result(d: Mapping[str, Any], *, is_error: bool) -> ToolResult:
    """A tool return: its text, or its parts where it holds a file or an image."""
    content = d.get("content")
    items = _items(content)
    body: str | tuple[Any, ...] = _text(content)
    if any(
        isinstance(x, Mapping) and cast("Mapping[str, Any]", x).get("kind") in _FILES
        for x in items
    ):
        body = tuple(_user_item(x) for x in items)
    return ToolResult(
        str(d.get("tool_call_id") or ""),
        body,
        is_error=is_error,
        name=d.get("tool_name"),
    )


def _request_part(d: Mapping[str, Any]) -> tuple[Role, tuple[Part, ...]] | None:
    kind = d.get("part_kind")
    if kind == "system-prompt":
        return "system", (Text(str(d["content"])),)
    if kind == "user-prompt":
        content = d["content"]
        if isinstance(content, str):
            return "user", (Text(content),)
        return "user", tuple(_user_item(x) for x in _items(content))
    if kind in _TOOL_RETURNS:
        failed = d.get("outcome", "success") != "success"
        return "tool", (_result(d, is_error=failed),)
    if kind == "retry-prompt" and d.get("tool_name") is not None:
        # pydantic-ai's reading: the call's own result, an error (``retried``).
        return "tool", (_result(d, is_error=True),)
    if kind in ("retry-feedback", "retry-prompt"):
        return "user", (Text(_text(d.get("content"))),)
    if kind == "capability":
        return _capability(d)
    if kind == "speech":  # as ``prepare_messages`` sends it: the transcript
        if d.get("transcript"):
            return "user", (Text(str(d["transcript"])),)
        audio = d.get("audio")
        if isinstance(audio, Mapping):
            return "user", (_user_item(audio),)
    return None


def _capability(d: Mapping[str, Any]) -> tuple[Role, tuple[Part, ...]] | None:
    """A capability part as pydantic-ai renders it to every model.

    An instruction with the operator's authority is a system message; any
    other is its content framed on the user channel, behind its note.
    """
    role: Role = "system"
    parts: list[Part] = []
    for rendered in _rendered(d):
        read = _request_part(rendered)
        if read is not None:
            role = "user" if read[0] == "user" else role
            parts.extend(read[1])
    return (role, tuple(parts)) if parts else None


def _renderer() -> Callable[[Any], Any] | None:
    try:
        from pydantic_ai import _capability_parts
    except ImportError:  # pragma: no cover -- a pydantic-ai without capability parts
        return None
    return getattr(_capability_parts, "render_capability_part", None)


_RENDER = _renderer()
_RENDERED: LRU[str, list[dict[str, Any]]] = LRU(1024)
_rendered_lock = threading.Lock()


def _rendered(d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The system and user prompt parts a capability part is rendered as.

    Rendering is a pure function of the stored part (pydantic-ai's
    contract), so it is cached by the part's JSON.
    """
    key = _json(d)
    with _rendered_lock:
        found = _RENDERED.get(key)
    if found is not None:
        return found
    content = d.get("content")
    found = [{"part_kind": "user-prompt", "content": _items(content)}]
    if _RENDER is not None:
        try:
            request = _ADAPTER.validate_python([{"kind": "request", "parts": [d]}])[0]
            out = _RENDER(request.parts[0]).parts
            back = pm.ModelRequest(parts=list(out))
            found = _ADAPTER.dump_python([back], mode="json")[0]["parts"]
        except Exception:  # any failure to render: its content is counted
            pass
    with _rendered_lock:
        _RENDERED.put(key, found)
    return found


def _response_part(d: dict[str, Any]) -> Part | None:
    kind = d.get("part_kind")
    if kind == "text":
        return Text(str(d["content"]))
    if kind == "thinking":
        return Thinking(str(d["content"]), d.get("signature"))
    if kind in _TOOL_CALLS:
        args = d.get("args")
        arguments = args if isinstance(args, str) else _json(args or {})
        return ToolCall(str(d["tool_call_id"]), str(d["tool_name"]), arguments)
    if kind in _BUILTIN:
        body = d.get("args") if kind.endswith("call") else d.get("content")
        return Text(f"{d.get('tool_name', '')} {_text(body)}")
    if kind == "compaction" and isinstance(d.get("content"), str):
        return Text(d["content"])
    if kind == "speech":  # as ``prepare_messages`` sends it back: the transcript
        lines = [str(d["transcript"])] if d.get("transcript") else []
        if d.get("interrupted_at_ms") is not None:
            lines.append(f"[Interrupted after {d['interrupted_at_ms']} ms]")
        return Text("\n".join(lines)) if lines else None
    if kind == "file" and isinstance(d.get("content"), Mapping):
        found = _file(cast("Mapping[str, Any]", d["content"]))
        if found is not None:
            return found
    return Text(_json(d))  # a kind this module does not know: never nothing


# -- writing ---------------------------------------------------------------------


def to_pydantic_ai(messages: Iterable[Message]) -> list[pm.ModelMessage]:
    """A pydantic-ai history for neutral messages (see the module's contract).

    Messages read by ``from_pydantic_ai`` are written back as they were; a
    message a strategy made (a summary) or changed is written from its
    neutral form.

    Example:
        >>> from contextwindow import Message, ToolCall
        >>> out = to_pydantic_ai([Message.user("hi"),
        ...     Message.assistant(tool_calls=[ToolCall("c1", "ls", '{"d": 1}')]),
        ...     Message.tool("c1", "a.txt", name="ls")])
        >>> [[p.part_kind for p in m.parts] for m in out]
        [['user-prompt'], ['tool-call'], ['tool-return']]
    """
    dumped: list[dict[str, Any]] = []
    group: str | None = None
    for m in messages:
        info = _info(m)
        own = _own_parts(m)
        if own is not m.parts:  # the records counted are written as they came
            m = Message(m.role, own, name=m.name, meta=m.meta)
        carried = info.get("carried", ())
        if carried:
            dumped.extend(carried)
            group = None
        after_message = info.get("carried_after", ())
        if m.role == "assistant":
            dumped.append(_write_response(m, info))
            group = None
        else:
            parts = [*info.get("before", ()), _write_request_part(m, info)]
            parts.extend(info.get("after", ()))
            mine = info.get("group")
            if group is not None and mine == group and dumped[-1]["kind"] == "request":
                dumped[-1]["parts"].extend(parts)
            else:
                base = dict(info.get("message") or {"kind": "request"})
                if base.get("kind") != "request":
                    base = {"kind": "request"}
                dumped.append({**base, "parts": parts})
            group = mine if isinstance(mine, str) else None
        if after_message:
            dumped.extend(after_message)
            group = None
    return list(_ADAPTER.validate_python(dumped))


def _info(m: Message) -> Mapping[str, Any]:
    value = m.meta.get(KEY)
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _write_request_part(m: Message, info: Mapping[str, Any]) -> dict[str, Any]:
    stored: list[Mapping[str, Any]] = list(info.get("parts") or ())
    if len(stored) == 1 and _request_part(stored[0]) == (m.role, m.parts):
        return dict(stored[0])  # unchanged: as it came
    old: dict[str, Any] = dict(stored[0]) if len(stored) == 1 else {}
    if m.role == "system":
        return _kept(old, "system-prompt", content=m.text)
    if m.role == "tool":
        result = next((p for p in m.parts if isinstance(p, ToolResult)), None)
        if result is None:
            return _kept(old, "user-prompt", content=m.text)
        content = _result_content(result.content, old.get("content"))
        name = result.name or old.get("tool_name") or ""
        if old.get("part_kind") == "retry-prompt":
            # What pydantic-ai reads a retry answering a call as.
            retried = {k: v for k, v in old.items() if k == "timestamp" and v}
            return {
                **retried, "part_kind": "tool-return", "tool_call_id": result.call_id,
                "tool_name": name, "content": content, "outcome": "retried",
            }  # fmt: skip
        outcome = "failed" if result.is_error else "success"
        if result.is_error and old.get("outcome") not in (None, "success"):
            outcome = old["outcome"]
        kind = str(old.get("part_kind"))
        return _kept(
            old,
            kind if kind in _TOOL_RETURNS else "tool-return",
            tool_call_id=result.call_id,
            tool_name=name,
            content=content,
            outcome=outcome,
        )  # fmt: skip
    if old.get("part_kind") in ("retry-feedback",) and len(m.parts) == 1:
        return _kept(old, "retry-feedback", content=m.text)
    return _kept(old, "user-prompt", content=_user_content(m.parts, old))


def _kept(old: dict[str, Any], kind: str, **fields: Any) -> dict[str, Any]:
    """``fields`` as a part of ``kind``, with ``old``'s other fields if it is one."""
    if old.get("part_kind") == kind:
        return {**old, **fields}
    return {"part_kind": kind, **fields}


def _image(img: Image) -> dict[str, Any]:
    data = data_uri_bytes(img.url)
    if data is not None:
        media = img.url[5 : img.url.index(";")] if ";" in img.url else "image/png"
        encoded = base64.b64encode(data).decode()
        return {"kind": "binary", "data": encoded, "media_type": media}
    return {"kind": "image-url", "url": img.url}


def _originals(content: Any) -> dict[Part, Any]:
    """Each file or content item of ``content`` by its neutral form.

    A changed prompt or tool return writes the items left alone as they
    came (an image's identifier, a document's vendor metadata).
    """
    found: dict[Part, Any] = {}
    for item in _items(content):
        if isinstance(item, Mapping):
            found.setdefault(_user_item(item), item)
    return found


def _item(p: Part, originals: Mapping[Part, Any]) -> Any:
    """A neutral part as a pydantic-ai content item (``None``: none)."""
    if p in originals:
        return originals[p]
    if isinstance(p, Text):
        return p.text
    if isinstance(p, Image):
        return _image(p)
    if isinstance(p, Opaque):
        return _file_item(p)
    return None


def _file_item(p: Opaque) -> Any:
    """An ``Opaque`` file as pydantic-ai's file, else the text a model reads in it."""
    block = p.block
    kind = block.get("type")
    data = block.get("file_data")
    parsed = parse_data_uri(data) if isinstance(data, str) else None
    if kind == "input_file" and parsed is not None:
        name = block.get("filename")
        named = {"identifier": name} if isinstance(name, str) and name else {}
        return {"kind": "binary", "data": parsed[1], "media_type": parsed[0], **named}
    audio = block.get("input_audio")
    if kind == "input_audio" and isinstance(audio, Mapping):
        audio = cast("Mapping[str, Any]", audio)
        media = f"audio/{audio.get('format') or 'wav'}"
        return {"kind": "binary", "data": audio.get("data", ""), "media_type": media}
    url = block.get("file_url")
    if kind == "input_file" and isinstance(url, str):
        return {"kind": "document-url", "url": url}
    # A document or search result is returned as the text a model reads in it.
    return opaque_text(p)


def _user_content(parts: Sequence[Part], old: Mapping[str, Any]) -> str | list[Any]:
    if len(parts) == 1 and isinstance(parts[0], Text):
        return parts[0].text
    originals = _originals(old.get("content")) if old else {}
    return [x for p in parts if (x := _item(p, originals)) is not None]


def _result_content(content: str | tuple[ResultPart, ...], old: Any = None) -> Any:
    if isinstance(content, str):
        return content
    originals = _originals(old)
    return [x for p in content if (x := _item(p, originals)) is not None]


def _write_response(m: Message, info: Mapping[str, Any]) -> dict[str, Any]:
    """A response: each part whose neutral form is unchanged written as it came.

    Only a part a strategy changed is written from its neutral form, with
    its other fields kept (a thinking part's id, signature and provider);
    parts the neutral form has none for (builtin tool calls and returns,
    files, speech) are never rewritten as text.
    """
    base = info.get("message")
    message: dict[str, Any] = {}
    if isinstance(base, Mapping):
        message.update(cast("Mapping[str, Any]", base))
    message["kind"] = "response"
    stored: list[dict[str, Any]] = list(info.get("parts") or ())
    read = [_response_part(d) for d in stored]
    readable = [p for p in read if p is not None]
    if stored and tuple(readable) == m.parts:
        return {**message, "parts": [dict(d) for d in stored]}  # unchanged
    by_call = {
        str(d.get("tool_call_id")): d
        for d in stored
        if d.get("part_kind") in _TOOL_CALLS
    }
    parts: list[dict[str, Any]] = []
    if len(readable) == len(m.parts):  # each part in its place, some changed
        new = iter(m.parts)
        for d, was in zip(stored, read, strict=True):
            now = None if was is None else next(new)
            if now is None or now == was:
                parts.append(dict(d))
            else:
                parts.extend(_rewritten(now, d, by_call))
    else:  # parts removed or added: those left alone are written as they came
        at = 0
        for p in m.parts:
            j = next((k for k in range(at, len(stored)) if read[k] == p), None)
            if j is None:
                parts.extend(_rewritten(p, {}, by_call))
                continue
            parts.extend(dict(stored[k]) for k in range(at, j) if read[k] is None)
            parts.append(dict(stored[j]))
            at = j + 1
        rest = zip(stored[at:], read[at:], strict=True)
        parts.extend(dict(d) for d, was in rest if was is None)
    return {**message, "parts": parts}


def _rewritten(
    p: Part, old: Mapping[str, Any], by_call: Mapping[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """A changed response part, with ``old``'s other fields where it is one."""
    was = dict(old)
    if isinstance(p, Text):
        return [_kept(was, "text", content=p.text)]
    if isinstance(p, Thinking):
        return [_kept(was, "thinking", content=p.text, signature=p.signature)]
    if isinstance(p, ToolCall):
        call = by_call.get(p.id, {})
        same = _response_part(call) == p if call else False
        return [
            {**call, "part_kind": call.get("part_kind", "tool-call"),
             "tool_name": p.name, "tool_call_id": p.id,
             "args": call.get("args") if same else p.arguments}
        ]  # fmt: skip
    if isinstance(p, Image) and data_uri_bytes(p.url) is not None:
        return [_kept(was, "file", content=_image(p))]
    return []  # an image by URL, a document: no pydantic-ai response form


# -- fitting ---------------------------------------------------------------------


@dataclass
class _Fitter:
    """What the capability and the processor share: the model, the strategy, counts.

    The managers, counts and calibration are ``integrations._fitting``'s
    ``Conversations``; this adds pydantic-ai's messages on either side.
    """

    def __init__(
        self,
        model: str | ModelInfo | None,
        limit: int | None,
        reserve: int | None,
        strategy: Strategy | str | None,
        provider: Provider | None,
        tokenizer: Tokenizer | str | None,
        calibration: Calibration | None,
    ) -> None:
        self.conversations = Conversations(
            model,
            limit=limit,
            reserve=reserve,
            strategy=strategy,
            provider=provider,
            tokenizer=tokenizer,
            calibration=calibration,
        )
        self.strategy = strategy
        self.cache: LRU[int, tuple[Any, list[Message]]] = LRU(8192)
        self.last: Report | None = None

    @property
    def calibration(self) -> Calibration:
        """The calibration the conversations' managers share."""
        return self.conversations.calibration

    @property
    def counter(self) -> TokenCounter:
        """The counter of every fit."""
        return self.conversations.counter

    @property
    def budget(self) -> int:
        """What a request may take, counted here (calibrated when approximate)."""
        usable = self.conversations.window - self.conversations.reserve
        if self.counter.tokenizer.exact:
            return usable
        return self.calibration.limit(usable)

    def neutral(self, messages: Sequence[pm.ModelMessage]) -> list[Message]:
        """``from_pydantic_ai``, each message read once for the life of the run."""
        return _convert(messages, _identity_key, self.cache)

    def managed(
        self,
        messages: Sequence[pm.ModelMessage],
        instructions: str | None,
        tools: Sequence[ToolSpec],
    ) -> tuple[list[pm.ModelMessage], int]:
        """Like ``fit``, through a ``ContextManager`` kept per conversation.

        The history a run hands over only grows: what is new is pushed, the
        manager compacts incrementally (the prefix sent stays stable, and a
        long run costs what each step adds). A history that is not the one
        fed so far (another conversation) gets a manager of its own.
        """
        neutral = self.neutral(messages)
        extra = self.conversations.extra_tokens(instructions, tools)
        prepared = self.conversations.prepare(neutral, extra)
        self.last = prepared.report or Report(
            prepared.tokens, prepared.tokens, prepared.budget
        )
        kept = list(prepared.conversation)
        tokens = prepared.tokens + extra
        if len(kept) == len(neutral) and all(
            a is b for a, b in zip(kept, neutral, strict=True)
        ):
            return list(messages), tokens
        return _write_kept(kept, messages, neutral), tokens

    def fit(
        self,
        messages: Sequence[pm.ModelMessage],
        instructions: str | None,
        tools: Sequence[ToolSpec],
    ) -> tuple[list[pm.ModelMessage], int]:
        """The messages to send, and their count (instructions and tools in it)."""
        neutral = self.neutral(messages)
        lead = [Message.system(instructions, pinned=True)] if instructions else []
        fitted = fit(
            [*lead, *neutral],
            limit=self.budget,
            reserve=0,
            strategy=self.strategy,
            provider=self.conversations.provider,
            tokenizer=self.counter,
            tools=tools,
        )
        self.last = fitted.report
        kept = list(fitted.messages[len(lead) :])
        tokens = fitted.report.tokens_after
        if [id(m) for m in kept] == [id(m) for m in neutral]:
            return list(messages), tokens  # nothing changed: the very list
        return _write_kept(kept, messages, neutral), tokens


def _identity_key(_n: int, msg: Any) -> str:
    return f"#{id(msg)}"


def _write_kept(
    kept: list[Message],
    originals: Sequence[pm.ModelMessage],
    neutral: Sequence[Message],
) -> list[pm.ModelMessage]:
    """Write ``kept``, giving back each original message whose neutral form is whole.

    What a strategy left alone goes back as the same object, not an equal
    copy: pydantic-ai and the provider's prompt cache see what they sent.
    """
    by_group = {_identity_key(0, msg): msg for msg in originals}
    read: dict[str, list[int]] = {}
    for m in neutral:
        g = _info(m).get("group")
        if isinstance(g, str):
            read.setdefault(g, []).append(id(m))
    left: dict[str, list[int]] = {}
    for m in kept:
        g = _info(m).get("group")
        if isinstance(g, str):
            left.setdefault(g, []).append(id(m))
    whole = {g for g, ids in left.items() if g in by_group and ids == read.get(g)}
    out: list[pm.ModelMessage] = []
    run: list[Message] = []
    done: set[str] = set()
    for m in kept:
        info = _info(m)
        g = info.get("group")
        if isinstance(g, str) and g in whole and not info.get("carried"):
            if g not in done:
                if run:
                    out.extend(to_pydantic_ai(run))
                    run.clear()
                out.append(by_group[g])
                done.add(g)
            continue
        run.append(m)
    if run:
        out.extend(to_pydantic_ai(run))
    return out


def _given_tools(tools: Sequence[Any]) -> tuple[ToolSpec, ...]:
    """``fit_history``'s tools as specs: pydantic-ai's, or what ``fit`` takes."""
    if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("tools", shown(tools), "a sequence of tools")
    ours: list[Any] = []
    specs: list[ToolSpec] = []
    for t in tools:
        found = getattr(t, "tool_def", t)  # a Tool's definition
        schema = getattr(found, "parameters_json_schema", None)
        if isinstance(schema, Mapping):
            name = found.name
            schema = cast("Mapping[str, Any]", schema)
            specs.append(ToolSpec(name, found.description or "", dict(schema)))
        else:
            ours.append(t)
    return (*specs, *coerce_tools(ours))


def _specs(params: Any) -> list[ToolSpec]:
    tools = [
        *getattr(params, "function_tools", ()),
        *getattr(params, "output_tools", ()),
    ]
    return [
        ToolSpec(t.name, t.description or "", dict(t.parameters_json_schema or {}))
        for t in tools
    ]


def _instructions(params: Any, messages: Sequence[pm.ModelMessage]) -> str | None:
    parts = getattr(params, "instruction_parts", None)
    if parts:
        return "\n\n".join(p.content for p in parts if p.content)
    for msg in reversed(messages):
        if isinstance(msg, pm.ModelRequest):
            return msg.instructions
    return None


def _run_key(ctx: Any) -> object:
    """The run a hook is called for (each step gets a new ``RunContext``)."""
    return getattr(ctx, "run_id", None) or id(ctx)


@dataclass
class ContextWindow(AbstractCapability[Any]):
    """A capability fitting every model request into the window (see the module).

    Args:
        model: The model (a name or a ``ModelInfo``): its window, tokenizer
            and provider are the defaults.
        limit: The window in tokens (default: the model's).
        reserve: Tokens kept free for the reply (default: the model's output
            limit, at most a quarter of the window).
        strategy: How to make room (default: ``fit``'s), or a spec.
        provider: Whose rules and framing apply (default: the model's).
        tokenizer: Counts text (default: the model's).
        calibration: Learns from the usage each response reports (default:
            a new ``Calibration``; share one between agents of a model).

    Example:
        >>> import asyncio
        >>> from pydantic_ai import Agent
        >>> from pydantic_ai.models.function import FunctionModel, AgentInfo
        >>> from pydantic_ai.messages import ModelResponse, TextPart
        >>> seen = []
        >>> def reply(messages, info: AgentInfo):
        ...     seen.append(len(messages))
        ...     return ModelResponse(parts=[TextPart("ok")])
        >>> window = ContextWindow("gpt-4o", limit=300, reserve=50)
        >>> agent = Agent(FunctionModel(reply), capabilities=[window])
        >>> history = []
        >>> for i in range(20):
        ...     run = agent.run("hello " * 20, message_history=history)
        ...     history = asyncio.run(run).all_messages()
        >>> len(history), seen[-1] < len(history), window.last_report.fits
        (40, True, True)
    """

    model: str | ModelInfo | None = None
    limit: int | None = None
    reserve: int | None = None
    strategy: Strategy | str | None = None
    provider: Provider | None = None
    tokenizer: Tokenizer | str | None = None
    calibration: Calibration | None = None
    _fitter: _Fitter = field(init=False, repr=False)
    _counted: dict[object, int] = field(
        init=False, repr=False, default_factory=dict[object, int]
    )

    def __post_init__(self) -> None:
        self._fitter = _Fitter(
            self.model, self.limit, self.reserve, self.strategy, self.provider,
            self.tokenizer, self.calibration,
        )  # fmt: skip
        self.calibration = self._fitter.calibration

    @property
    def last_report(self) -> Report | None:
        """The report of the last request fitted."""
        return self._fitter.last

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Fit the request's messages; the run's history is left whole."""
        params = request_context.model_request_parameters
        messages = request_context.messages
        sent, tokens = self._fitter.managed(
            messages, _instructions(params, messages), _specs(params)
        )
        request_context.messages = sent
        self._counted[_run_key(ctx)] = tokens
        return request_context

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: pm.ModelResponse,
    ) -> pm.ModelResponse:
        """Feed the reported input tokens to the calibration."""
        counted = self._counted.pop(_run_key(ctx), None)
        if counted is not None and self.calibration is not None:
            self.calibration.observe(counted, response.usage.input_tokens or 0)
        return response

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not serialisable in an agent spec (it holds a calibration)."""
        return None


def fit_history(
    model: str | ModelInfo | None = None,
    *,
    limit: int | None = None,
    reserve: int | None = None,
    strategy: Strategy | str | None = None,
    provider: Provider | None = None,
    tokenizer: Tokenizer | str | None = None,
    calibration: Calibration | None = None,
    tools: Sequence[Any] = (),
) -> Callable[[list[pm.ModelMessage]], list[pm.ModelMessage]]:
    """A history processor fitting the history into the window.

    Use it as ``ProcessHistory(fit_history(...))``. The arguments are
    ``ContextWindow``'s. pydantic-ai keeps what a history
    processor returns as the run's history, so what is dropped is gone from
    it; the capability keeps the history whole. Reported usage found in the
    history (the ``usage`` of each response answering a history this
    processor returned) feeds ``calibration``, paired with that request's
    count, so runs sharing the processor each teach their own pairs.

    A history processor is not shown the agent's tools, so their schemas
    count only when given as ``tools`` (pydantic-ai ``Tool`` objects or
    ``ToolDefinition``s, ``ToolSpec``s, or a provider's tool dicts); the
    capability, ``ContextWindow``, counts them on its own.

    Example:
        >>> from pydantic_ai.messages import ModelRequest, UserPromptPart
        >>> trim = fit_history("gpt-4o", limit=60, reserve=0)
        >>> history = [ModelRequest(parts=[UserPromptPart(f"note {i} " * 8)])
        ...            for i in range(10)]
        >>> len(trim(history)) < 10
        True
    """
    fitter = _Fitter(model, limit, reserve, strategy, provider, tokenizer, calibration)
    specs = _given_tools(tools)
    pending: LRU[int, tuple[pm.ModelMessage, int]] = LRU(_PENDING_RUNS)
    """By the last message of each history returned: it, and the request's count."""
    lock = threading.Lock()  # pydantic-ai runs a plain processor in threads

    def process(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
        _observe_answer(messages, pending, lock, fitter.calibration)
        out, tokens = fitter.fit(messages, _instructions(None, messages), specs)
        if out:
            with lock:
                pending.put(id(out[-1]), (out[-1], tokens))
        return out

    return process


_PENDING_RUNS = 256
"""Requests a processor remembers awaiting their response: one per run in
flight (a run that ended before its response leaves one, dropped in turn)."""


def _observe_answer(
    messages: Sequence[pm.ModelMessage],
    pending: LRU[int, tuple[pm.ModelMessage, int]],
    lock: threading.Lock,
    calibration: Calibration,
) -> None:
    """Feed ``calibration`` the usage of the response answering a request sent.

    pydantic-ai keeps what a processor returned as the run's history and
    appends the response to it: the response follows the last message
    returned, which identifies the request (and so the run) it answers. A
    global "last request" would pair one run's response with another's
    request when runs share the processor (ratios thousands of times off).
    Each request's usage is observed once: its entry goes when it is used.
    """
    if len(messages) < 2 or not isinstance(messages[-1], pm.ModelRequest):
        return
    at = next(
        (
            i
            for i in range(len(messages) - 1, 0, -1)
            if isinstance(messages[i], pm.ModelResponse)
        ),
        None,
    )
    if at is None:
        return
    answered = messages[at - 1]
    with lock:
        entry = pending.get(id(answered))
        if entry is None or entry[0] is not answered:
            return
        pending.pop(id(answered))
    response = cast("pm.ModelResponse", messages[at])
    calibration.observe(entry[1], response.usage.input_tokens or 0)


_ = pydantic  # imported above so a missing pydantic fails with the install hint
