"""Read conversation files of many kinds into neutral transcripts.

Contract:

- ``read_transcripts(source)`` reads a path or an open file, detects its
  format (or takes the one named) and returns one ``Transcript`` per
  conversation in it; ``read_transcript`` insists on exactly one.
- Formats (``FORMATS``): ``openai`` (a JSON list of Chat Completions messages),
  ``openai_request`` (``{"model", "messages", "tools"}``), ``anthropic`` (a
  JSON list of Anthropic turns), ``anthropic_request`` (``{"model", "system",
  "messages", "tools"}``), ``responses`` (a list of Responses items or a body
  with ``input``), ``jsonl`` (one message or item per line, in any of those
  shapes; a message saved as the Anthropic SDK dumps a response, with
  ``type: "message"`` and ``usage``, is its Anthropic turn),
  ``claude_code`` (Claude Code session records: the conversation Claude
  Code itself would resume, ``_claude_code``; a file of records without
  messages, such as a lone ``file-history-snapshot``, is a session of no
  messages), ``tau_bench``
  (τ-bench trajectories, one transcript each) and ``locomo`` (LoCoMo
  conversations, one transcript each).
- Messages are converted by ``contextwindow.formats``, so the same rules and
  the same ``meta`` apply; readers add only where a message came from.
- Reading a file twice gives the same message ids: the file's own (a Claude
  Code record's ``uuid``) or, where it has none, ids derived from the
  position and content, unique within the file.
- Malformed files raise ``InvalidMessageError`` naming the file and the line or
  record, compiler-style (``session.jsonl:3: not valid JSON: …``,
  ``chat.jsonl:2: content[0].type: unknown part type 'foo'``; a broken
  first line of JSON Lines is named as that line, a document over many
  lines where it broke); a JSON
  shape that matches no format names the formats tried. A file that cannot
  be read raises ``InvalidMessageError(path, "cannot read: …")`` from the
  ``OSError``. Text that is not UTF-8 (from a file or a stream alike) is
  refused naming its line and column (``chat.jsonl:600: not UTF-8 text:
  … (column 38)``); JSON nested deeper than ``contextwindow._json.MAX_DEPTH``,
  a number too long to read and a string holding a lone surrogate are
  refused the same way, naming the path inside the document (``chat.json:
  [3].content: …``).
- A last JSON Lines line with no line end that is not JSON (a transcript
  still being written, cut anywhere, inside a character too) is left out
  with a ``PartialLineWarning``; the lines before it are read.

Example:
    >>> import io, json
    >>> chat = [{"role": "user", "content": "hi"},
    ...         {"role": "assistant", "content": "hello"}]
    >>> t = read_transcript(io.StringIO(json.dumps(chat)))
    >>> t.format, len(t.messages), t.messages[1].text
    ('openai', 2, 'hello')
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, cast

from contextwindow._args import check_path, check_str, shown
from contextwindow._json import check_tree, decode, loads
from contextwindow._validate import expect_list, expect_mapping, type_name
from contextwindow.errors import (
    ArgumentTypeError,
    InvalidMessageError,
    PartialLineWarning,
)
from contextwindow.formats import from_anthropic, from_openai, from_responses
from contextwindow.formats._coerce import request_turn
from contextwindow.messages import Message, ToolSpec
from contextwindow.transcripts._base import FORMATS, Records, Transcript
from contextwindow.transcripts._claude_code import read_claude_code
from contextwindow.transcripts._datasets import read_locomo, read_tau_bench

__all__ = [
    "FORMATS",
    "Transcript",
    "detect_format",
    "read_transcript",
    "read_transcripts",
]

_ANTHROPIC_BLOCKS = frozenset(
    ("tool_use", "tool_result", "thinking", "redacted_thinking", "document")
)
_RESPONSES_PARTS = frozenset(("input_text", "output_text", "input_image"))
# Record types only Claude Code writes: a session file may hold nothing else
# (a session opened and left, a 1.x file's title record).
_CLAUDE_CODE_TYPES = frozenset(("file-history-snapshot", "queue-operation", "progress"))


def read_transcripts(
    source: str | os.PathLike[str] | IO[str] | IO[bytes], *, format: str | None = None
) -> list[Transcript]:
    """Read every conversation in a file.

    Args:
        source: A path, or an open text or binary file.
        format: One of ``FORMATS``; detected when ``None``.

    Returns:
        The transcripts, in file order.

    Raises:
        InvalidMessageError: The file is not valid JSON or JSONL, matches no
            format, or holds a malformed message, or cannot be read (the
            ``OSError`` is its ``__cause__``); the error names the place.

    Example:
        >>> import io
        >>> read_transcripts(io.StringIO('{"role": "user", "content": "hi"}'))[0].format
        'jsonl'
    """
    check_str(format, "format", none=True)
    name, text = _read_source(source)
    kind, value = _parse(text, name)
    fmt = format if format is not None else _detect(kind, value, name)
    reader = _READERS.get(fmt)
    if reader is None:
        raise InvalidMessageError(
            "format", f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})"
        )
    if fmt in ("claude_code", "jsonl") and kind == "json":
        kind, value = "jsonl", [(1, value)]
    elif fmt not in ("claude_code", "jsonl") and kind == "jsonl":
        raise InvalidMessageError(name, f"a {fmt} file is one JSON document, not JSONL")
    return [_with_ids(k, t) for k, t in enumerate(reader(value, name))]


def _with_ids(k: int, t: Transcript) -> Transcript:
    """Give each message an id the same read always gives it.

    A message keeps the id its file records (a Claude Code record's
    ``uuid``; ``uuid:N`` for the N-th further message made from one record);
    any other gets one derived from the transcript's place in the file, the
    message's position and its content, so that reading a file twice gives
    the same ids and two messages of one file never share one.
    """
    seen: dict[str, int] = {}
    out: list[Message] = []
    for i, m in enumerate(t.messages):
        given = m.meta.get("uuid")
        if isinstance(given, str) and given:
            n = seen.get(given, 0)
            seen[given] = n + 1
            mid = given if n == 0 else f"{given}:{n}"
        else:
            head = f"{k}\0{i}\0{m.role}\0{m.text}\0"
            calls = "\0".join(f"{c.name}\0{c.arguments}" for c in m.tool_calls)
            data = (head + calls).encode("utf-8", "surrogatepass")
            mid = hashlib.blake2b(data, digest_size=16).hexdigest()
        # The constructor, not dataclasses.replace: a third of the cost.
        out.append(Message(m.role, m.parts, m.name, m.agent, m.pinned, mid, m.meta))
    return replace(t, messages=tuple(out))


def read_transcript(
    source: str | os.PathLike[str] | IO[str] | IO[bytes], *, format: str | None = None
) -> Transcript:
    """Read a file holding exactly one conversation.

    Raises:
        InvalidMessageError: As ``read_transcripts``, or the file holds some
            other number of conversations.

    Example:
        >>> import io
        >>> read_transcript(io.StringIO("[]")).messages
        ()
    """
    found = read_transcripts(source, format=format)
    if len(found) != 1:
        raise InvalidMessageError(
            _name(source), f"expected one transcript, found {len(found)}"
        )
    return found[0]


def detect_format(source: str | os.PathLike[str] | IO[str] | IO[bytes]) -> str:
    """Name the format of a file, one of ``FORMATS``.

    Raises:
        InvalidMessageError: The file is not JSON or JSONL, or matches no
            format (the error lists those tried).

    Example:
        >>> import io
        >>> detect_format(io.StringIO('[{"traj": [], "task_id": 0}]'))
        'tau_bench'
    """
    name, text = _read_source(source)
    kind, value = _parse(text, name)
    return _detect(kind, value, name)


# -- reading and detecting -----------------------------------------------------------


def _name(source: object) -> str:
    if isinstance(source, (str, os.PathLike)):
        return Path(cast("str | os.PathLike[str]", source)).name
    return Path(str(getattr(source, "name", "<stream>"))).name


def _read_source(
    source: str | os.PathLike[str] | IO[str] | IO[bytes],
) -> tuple[str, str]:
    if not isinstance(source, (str, os.PathLike)) and not callable(
        getattr(source, "read", None)
    ):
        raise ArgumentTypeError(
            "source", shown(source), "a path or an open text or binary file"
        )
    data: str | bytes
    if isinstance(source, (str, os.PathLike)):
        path = check_path(source, "source", "a path or an open text or binary file")
        name = Path(path).name
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            reason = f"cannot read: {exc.strerror or exc}"
            raise InvalidMessageError(path, reason) from exc
    else:
        name = _name(source)
        # A text stream's bytes, when it has them: decoded as a file is, in
        # any locale (a C locale reads undecodable stdin as surrogates).
        raw = getattr(source, "buffer", None)
        try:
            data = raw.read() if isinstance(raw, io.BufferedIOBase) else source.read()
        except UnicodeDecodeError as exc:
            raise InvalidMessageError(name, f"not UTF-8 text: {exc}") from None
    return name, _text(data, name)


def _text(data: str | bytes, name: str) -> str:
    """``data`` as text (``decode``), with the bytes no UTF-8 holds placed.

    A file being written can be read between the bytes of one character:
    an incomplete character at the very end (no line end after it) is cut,
    and the unfinished last line is then left out as any other is
    (``_parse``). Any other undecodable byte is named by its line and
    column.
    """
    try:
        return decode(data, name)
    except InvalidMessageError:
        raw = _bytes(data)
        if raw is None:
            raise
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end == len(raw) and exc.reason == "unexpected end of data":
            return decode(raw[: exc.start], name)
        line = raw.count(b"\n", 0, exc.start) + 1
        start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[start : exc.start].decode("utf-8", "replace")) + 1
        raise InvalidMessageError(
            f"{name}:{line}", f"not UTF-8 text: {exc} (column {column})"
        ) from None
    raise AssertionError(  # pragma: no cover -- decode refused these bytes
        "UTF-8 bytes refused"
    )


def _bytes(data: str | bytes) -> bytes | None:
    """The bytes ``decode`` read, or ``None`` for text no bytes give."""
    if isinstance(data, bytes):
        return data
    try:  # a text stream's undecodable bytes, kept as surrogates
        return data.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no byte made
        return None


def _parse(text: str, name: str) -> tuple[str, Any]:
    """Parse JSON, else JSONL: ``("json", value)`` or ``("jsonl", records)``."""
    try:
        value = loads(text, name)
    except json.JSONDecodeError as exc:
        whole = exc
    else:
        check_tree(value, name, text)
        return "json", value
    records: Records = []
    # JSON Lines ends a record at "\n" only: str.splitlines() would also split
    # inside strings at U+2028, U+0085 and other characters JSON leaves as is.
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = loads(line, f"{name}:{n}")
        except json.JSONDecodeError as exc:
            if records and n == len(lines):
                # The last line, no line end after it, unfinished: a
                # transcript still being written.
                warnings.warn(
                    f"{name}:{n}: the last line is unfinished (not valid JSON, no "
                    "line end): left out, as a transcript still being written",
                    PartialLineWarning,
                    stacklevel=4,
                )
                break
            # Before any record, the whole document's error stands, unless
            # it ran from this line into a record of a JSON Lines file.
            own = bool(records) or _ran_into_a_record(lines, n, whole)
            bad = exc if own else whole
            line_no = n if own else whole.lineno
            raise InvalidMessageError(
                f"{name}:{line_no}",
                f"not valid JSON: {bad.msg} (column {bad.colno})",
            ) from None
        check_tree(record, f"{name}:{n}", line)
        records.append((n, record))
    if not records:
        raise InvalidMessageError(name, "empty file")
    return "jsonl", records


def _ran_into_a_record(
    lines: Sequence[str], n: int, whole: json.JSONDecodeError
) -> bool:
    """Whether line ``n``, the first, broke a JSON Lines file, not a document.

    Parsed as one document, line ``n`` ran on into the next line and the
    parse broke there. When it broke at the start of a line that is JSON on
    its own, that line is the file's next record: line ``n`` is the broken
    one. A line that only opens a document (``[``, ``{``) is not a record.
    """
    if whole.lineno <= n or whole.colno != 1 or lines[n - 1].strip() in ("[", "{"):
        return False
    try:
        json.loads(lines[whole.lineno - 1])
    except (ValueError, RecursionError):
        return False
    return True


def _claude_code_record(r: object) -> bool:
    if not isinstance(r, Mapping):
        return False
    rec = cast("Mapping[str, Any]", r)
    kind = rec.get("type")
    return (
        ("sessionId" in rec and "type" in rec)
        or kind in _CLAUDE_CODE_TYPES
        or (kind == "summary" and "leafUuid" in rec)
    )


def _detect(kind: str, value: Any, name: str) -> str:
    recs: list[Any] = []
    if kind == "jsonl" or (
        isinstance(value, Mapping)
        and (
            "role" in value
            or "sessionId" in value
            or _claude_code_record(cast("Mapping[str, Any]", value))
        )
    ):
        recs = [v for _, v in cast("Records", value)] if kind == "jsonl" else [value]
        if any(_claude_code_record(r) for r in recs):
            return "claude_code"
        if _shape(recs) is not None:
            return "jsonl"
    elif isinstance(value, Mapping):
        if "input" in value:
            return "responses"
        if "messages" in value:
            body = cast("Mapping[str, Any]", value)
            return "anthropic_request" if _anthropic_body(body) else "openai_request"
    elif isinstance(value, list):
        items = cast("Sequence[Any]", value)
        if not items:
            return "openai"
        first = items[0]
        if isinstance(first, Mapping) and "traj" in first:
            return "tau_bench"
        if isinstance(first, Mapping) and "conversation" in first and "qa" in first:
            return "locomo"
        shape = _shape(items)
        if shape is not None:
            return shape
        recs = list(items)
    # Most items are messages, some are not (a key misspelt, a stray line):
    # the messages' shape, whose reader names the item that is wrong.
    messages: list[Mapping[str, Any]] = [
        r for r in recs if isinstance(r, Mapping) and "role" in r
    ]
    if 2 * len(messages) > len(recs):
        shape = _shape(messages)
        if shape is not None:
            return "jsonl" if kind == "jsonl" else shape
    tried = ", ".join(FORMATS)
    raise InvalidMessageError(name, f"matches no known format (tried {tried})")


def _shape(items: Sequence[Any]) -> str | None:
    """Which message shape a list is in: ``openai``, ``anthropic``, ``responses``.

    An Anthropic response saved as the SDK dumps it is read as its turn
    (``request_turn``): its ``type: "message"`` is not a Responses item's.
    """
    if not all(isinstance(it, Mapping) for it in items):
        return None
    items = _turns(items)
    if any("type" in it for it in items):
        return "responses"
    if not all("role" in it for it in items):
        return None
    shape = "openai"
    for it in items:
        if (
            it.get("role") in ("system", "developer", "tool", "function")
            or "tool_calls" in it
        ):
            return "openai"
        content = it.get("content")
        if isinstance(content, list):
            for block in cast("Sequence[Any]", content):
                kind = (
                    cast("Mapping[str, Any]", block).get("type")
                    if isinstance(block, Mapping)
                    else None
                )
                if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in block):
                    shape = "anthropic"
                elif kind in _RESPONSES_PARTS:
                    return "responses"
    return shape


def _anthropic_body(body: Mapping[str, Any]) -> bool:
    if "system" in body:
        return True
    model = body.get("model")
    if isinstance(model, str) and "claude" in model.lower():
        return True  # messages of plain text read alike in both shapes
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        isinstance(t, Mapping) and "input_schema" in t
        for t in cast("Sequence[Any]", tools)
    ):
        return True
    messages = body.get("messages")
    return (
        isinstance(messages, list)
        and _shape(cast("Sequence[Any]", messages)) == "anthropic"
    )


# -- request bodies and message lists -------------------------------------------------


def _relocated(
    exc: InvalidMessageError, name: str, lines: Sequence[int]
) -> InvalidMessageError:
    """Turn ``name[k].x`` into ``name:N: x`` (N: the record's line) for JSONL."""
    m = re.match(re.escape(name) + r"\[(\d+)\]", exc.path)
    if m is None or int(m.group(1)) >= len(lines):
        return exc
    rest = exc.path[m.end() :].lstrip(".")
    path = f"{name}:{lines[int(m.group(1))]}" + (f": {rest}" if rest else "")
    return InvalidMessageError(path, exc.reason)


def _turns(items: Any) -> Any:
    """A list of messages with each saved Anthropic response as its turn."""
    if not isinstance(items, list):
        return items
    listed = cast("Sequence[Any]", items)
    return [
        request_turn(cast("Mapping[str, Any]", it)) if isinstance(it, Mapping) else it
        for it in listed
    ]


def _convert(shape: str, items: Any, path: str) -> list[Message]:
    items = _turns(items)
    if shape == "anthropic":
        return from_anthropic(items, path=path)
    if shape == "responses":
        return from_responses(items, path=path)
    return from_openai(items, path=path)


def _read_list(shape: str) -> Callable[[Any, str], list[Transcript]]:
    def read(value: Any, name: str) -> list[Transcript]:
        return [Transcript(tuple(_convert(shape, value, name)), shape, name)]

    return read


def _read_jsonl(records: Records, name: str) -> list[Transcript]:
    items = [v for _, v in records]
    shape = _shape(items) or "openai"
    try:
        messages = _convert(shape, items, name)
    except InvalidMessageError as exc:
        raise _relocated(exc, name, [n for n, _ in records]) from None
    return [Transcript(tuple(messages), "jsonl", name, meta={"shape": shape})]


def _read_request(shape: str) -> Callable[[Any, str], list[Transcript]]:
    def read(value: Any, name: str) -> list[Transcript]:
        if shape == "responses" and isinstance(value, list):
            return _read_list("responses")(value, name)
        body = expect_mapping(value, name)
        key = "input" if shape == "responses" else "messages"
        if key not in body:
            raise InvalidMessageError(f"{name}.{key}", "missing")
        if shape == "anthropic":
            msgs = from_anthropic(
                _turns(body[key]), system=body.get("system"), path=f"{name}.{key}"
            )
        elif shape == "responses":
            msgs = from_responses(
                body[key], instructions=body.get("instructions"), path=f"{name}.{key}"
            )
        else:
            msgs = from_openai(body[key], path=f"{name}.{key}")
        tools, other = _tools(body.get("tools"), f"{name}.tools")
        model = body.get("model")
        rest = {
            k: v
            for k, v in body.items()
            if k not in ("model", "tools", key, "system", "instructions")
        }
        meta: dict[str, Any] = {"request": rest} if rest else {}
        if other:
            meta["other_tools"] = other
        fmt = {"anthropic": "anthropic_request", "openai": "openai_request"}.get(
            shape, shape
        )
        return [
            Transcript(
                tuple(msgs),
                fmt,
                name,
                model if isinstance(model, str) else None,
                tools,
                meta,
            )
        ]

    return read


def _tools(raw: object, path: str) -> tuple[tuple[ToolSpec, ...], list[Any]]:
    """Function tools as specs; other tools (web search…) as they are."""
    if raw is None:
        return (), []
    specs: list[ToolSpec] = []
    other: list[Any] = []
    for k, item in enumerate(expect_list(raw, path)):
        tool = expect_mapping(item, f"{path}[{k}]")
        fn = tool.get("function") if tool.get("type") == "function" else None
        spec: Mapping[str, Any]
        if isinstance(fn, Mapping):  # Chat Completions
            spec = cast("Mapping[str, Any]", fn)
            schema = spec.get("parameters")
        elif "input_schema" in tool:  # Anthropic
            spec, schema = tool, tool.get("input_schema")
        elif tool.get("type") == "function":  # Responses
            spec, schema = tool, tool.get("parameters")
        else:
            other.append(tool)
            continue
        name = spec.get("name")
        if not isinstance(name, str):
            raise InvalidMessageError(
                f"{path}[{k}].name", f"expected a string, got {type_name(name)}"
            )
        desc = spec.get("description")
        specs.append(
            ToolSpec(
                name,
                desc if isinstance(desc, str) else "",
                cast("Mapping[str, Any]", schema)
                if isinstance(schema, Mapping)
                else {},
            )
        )
    return tuple(specs), other


_READERS: dict[str, Callable[[Any, str], list[Transcript]]] = {
    "openai": _read_list("openai"),
    "anthropic": _read_list("anthropic"),
    "responses": _read_request("responses"),
    "openai_request": _read_request("openai"),
    "anthropic_request": _read_request("anthropic"),
    "jsonl": _read_jsonl,
    "claude_code": read_claude_code,
    "tau_bench": read_tau_bench,
    "locomo": read_locomo,
}
