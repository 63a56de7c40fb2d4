"""Private helpers shared by the format converters.

Contract:

- ``check_json`` and ``entry`` raise ``InvalidMessageError(path, reason)``
  naming the exact place (the generic ``expect_*`` checks live in
  ``contextwindow._validate``).
- JSON nested deeper than Python's stack (parsed, dumped or copied) is an
  ``InvalidMessageError(path, "nested too deeply")`` through ``too_deep``,
  never a raw ``RecursionError``: each reader and writer wraps every
  message in it, and the places that parse or dump a field name the field.
- Provider extras (keys a converter does not model) are copied, never mutated,
  and only JSON values go into ``Message.meta``, so stores can serialise it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

from contextwindow._images import decode_base64, image_size, parse_data_uri
from contextwindow.errors import ArgumentValueError, InvalidMessageError
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Provider,
    ToolCall,
    dump_json,
    parse_json,
)

__all__ = [
    "as_neutral",
    "check_json",
    "custom_calls",
    "entry",
    "extras",
    "image_from_url",
    "insert_opaque",
    "opaque_part",
    "part_extras",
    "provider_meta",
    "put_extras",
    "too_deep",
]


def as_neutral(messages: Any) -> Sequence[Message]:
    """``messages`` as neutral ones: a writer takes messages in any shape too.

    Example:
        >>> [m.role for m in as_neutral([{"role": "user", "content": "hi"}])]
        ['user']
    """
    if type(messages) is list or type(messages) is tuple:
        for m in cast("Sequence[Any]", messages):
            if m.__class__ is not Message:
                break
        else:
            return cast("Sequence[Message]", messages)
    # The edge reads with the converters, which import this module.
    from contextwindow.formats._coerce import neutral

    return neutral(cast("object", messages))  # not as narrowed above


def check_json(text: str, path: str) -> None:
    """Raise ``path: not valid JSON`` unless ``text`` is JSON (or empty).

    Empty arguments are accepted because several OpenAI-compatible servers send
    ``""`` for a call without arguments; ``ToolCall.input`` reads it as ``{}``.
    ``NaN`` and ``Infinity`` are not JSON, though Python's ``json`` reads
    them, and a number past a double's range (``1e400``) would be read as an
    infinity (``messages.parse_json``): no provider takes them.

    Example:
        >>> check_json('{"a": 1}', "x")
        >>> check_json("{a: 1}", "x")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: x: not valid JSON
        >>> check_json('{"a": NaN}', "x")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: x: not valid JSON: NaN is not JSON
        >>> check_json('{"a": 1e400}', "x")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: x: not valid JSON: 1e400 is past a double's range (it would read as Infinity)
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if not text:
        return
    with too_deep(path):
        try:
            parse_json(text)
        except json.JSONDecodeError:
            raise InvalidMessageError(path, "not valid JSON") from None
        except ValueError as exc:  # NaN; a number too long to read
            raise InvalidMessageError(path, f"not valid JSON: {exc}") from None


def opaque_part(provider: Provider, block: Mapping[str, Any], path: str) -> Opaque:
    """``Opaque.of(provider, block)``, or ``InvalidMessageError`` naming ``path``.

    A block a reader keeps as it is must be JSON: a ``NaN`` (which
    Python's ``json`` reads from a file), a value of no JSON type, or
    nesting past the stack is reported at the block, as other bad input is.

    Example:
        >>> opaque_part("openai", {"type": "refusal", "refusal": "No."}, "x").type
        'refusal'
        >>> try:
        ...     opaque_part("openai", {"type": "file", "n": float("nan")}, "m[0]")
        ... except InvalidMessageError as exc:
        ...     print(exc.path, exc.reason[:8])
        m[0] not JSON
    """
    try:
        return Opaque.of(provider, block)
    except ArgumentValueError:
        # Only on failure: the block's own error, found again for its reason.
        with too_deep(path):
            try:
                dump_json(block)
            except (TypeError, ValueError) as exc:
                raise InvalidMessageError(path, f"not JSON: {exc}") from None
        raise


@contextmanager
def too_deep(path: str) -> Generator[None, None, None]:
    """Map a ``RecursionError`` inside to ``InvalidMessageError(path, ...)``.

    JSON nested a thousand levels deep is valid JSON, but ``json`` and
    ``copy.deepcopy`` recurse once (or more) per level: past Python's stack
    they raise ``RecursionError``, which is no error of this library's.
    Readers and writers wrap each message in this (naming ``messages[i]``),
    and the places that parse, dump or copy a field wrap it again (naming
    the field), so the error says where.

    Example:
        >>> deep = "[" * 100_000 + "]" * 100_000
        >>> with too_deep("messages[1].arguments"):
        ...     json.loads(deep)
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: messages[1].arguments: nested too deeply
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    try:
        yield
    except RecursionError:
        raise InvalidMessageError(path, "nested too deeply") from None


def custom_calls(message: Message) -> frozenset[str]:
    """The ids of the message's tool calls read as custom (free-form) calls.

    A custom tool takes free text, not JSON arguments: a Chat
    ``{"type": "custom", "custom": {"name", "input"}}`` call or a Responses
    ``custom_tool_call`` item (their ``ToolCall.arguments`` are the text as
    a JSON string). Either OpenAI writer writes such a call in its own
    custom form, and its result as that form's output, wherever it was
    read: this reads both readers' records, the one notion both writers use.

    Example:
        >>> from contextwindow.formats.openai_chat import from_openai
        >>> msgs = from_openai([{"role": "assistant", "content": None,
        ...     "tool_calls": [{"id": "c1", "type": "custom",
        ...                     "custom": {"name": "patch", "input": "+x"}}]}])
        >>> sorted(custom_calls(msgs[0]))
        ['c1']
    """
    meta = message.meta
    if not meta or message.role != "assistant":
        return frozenset()
    found: set[str] = set()
    recorded = provider_meta(meta, "openai").get("tool_calls")
    calls = [p for p in message.parts if isinstance(p, ToolCall)]
    for k, call in enumerate(calls):
        if entry(recorded, k, len(calls)).get("custom"):
            found.add(call.id)
    items = provider_meta(meta, "responses").get("items")
    if isinstance(items, list):
        for raw in cast("Sequence[Any]", items):
            if not isinstance(raw, Mapping):
                continue
            fields = cast("Mapping[str, Any]", raw)
            if fields.get("type") == "custom_tool_call":
                item = fields.get("item")
                if isinstance(item, Mapping):
                    call_id = cast("Mapping[str, Any]", item).get("call_id")
                    if isinstance(call_id, str):
                        found.add(call_id)
    return frozenset(found)


def extras(
    obj: Mapping[str, Any], known: Iterable[str], optional: Iterable[str] = ()
) -> dict[str, Any]:
    """The entries of ``obj`` a converter does not model (a deep copy).

    Keys in ``known`` are modelled and left out, except those in ``optional``
    whose value is empty (``None``, ``False``, ``[]``): a neutral message cannot
    tell ``"is_error": false`` from no ``is_error``, so the empty value is kept
    here and the writer puts it back where it wrote nothing itself.

    Example:
        >>> extras({"type": "text", "text": "a", "cache_control": {}}, ("type", "text"))
        {'cache_control': {}}
        >>> extras({"id": "t", "is_error": False}, ("id", "is_error"), ("is_error",))
        {'is_error': False}
    """
    skip = frozenset(known)
    keep = frozenset(optional)
    return {
        k: copy.deepcopy(v)  # the caller's input may change later; meta must not
        for k, v in obj.items()
        if k not in skip or (k in keep and (v is None or v is False or v == []))
    }


def put_extras(out: dict[str, Any], extra: object) -> dict[str, Any]:
    """Add ``extra`` entries to ``out`` where ``out`` has no such key; return it.

    Extras never override what a writer built from the neutral message, so a
    strategy that edits a part still wins over the stale provider data.

    Example:
        >>> put_extras({"type": "text", "text": "new"}, {"text": "old", "x": 1})
        {'type': 'text', 'text': 'new', 'x': 1}
    """
    if isinstance(extra, Mapping):
        for k, v in cast("Mapping[str, Any]", extra).items():
            if k not in out:
                out[k] = copy.deepcopy(v)
    return out


def provider_meta(meta: Mapping[str, Any], provider: str) -> Mapping[str, Any]:
    """The ``meta[provider]`` mapping a reader stored, or an empty one."""
    value = meta.get(provider)
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def entry(entries: object, index: int, count: int) -> Mapping[str, Any]:
    """Entry ``index`` of a per-part list, if the list still fits ``count`` parts.

    A strategy may drop parts; a list of the wrong length is then ignored
    rather than applied to the wrong parts.
    """
    if isinstance(entries, list):
        items = cast("Sequence[Any]", entries)
        if len(items) == count:
            value: object = items[index]
            if isinstance(value, Mapping):
                return cast("Mapping[str, Any]", value)
    return {}


def part_extras(per_part: Sequence[Mapping[str, Any] | None]) -> list[Any] | None:
    """Trim a per-part extras list to ``None`` when no part has any extras."""
    if any(per_part):
        return [dict(e) if e else None for e in per_part]
    return None


# -- images --------------------------------------------------------------------


def image_from_url(url: str, detail: str | None = None) -> Image:
    """Build an ``Image``, reading its size from a ``data:`` URI when possible.

    A header that cannot be read, or says a side is 0 pixels, gives an image
    of unknown size (``image_size``), counted as such; never an error.

    Example:
        >>> png = ("iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAC0lEQVR4nGNgwAIA"
        ...        "ABUAAapll8QAAAAASUVORK5CYII=")
        >>> img = image_from_url("data:image/png;base64," + png)
        >>> (img.width, img.height)
        (2, 3)
    """
    parsed = parse_data_uri(url)
    size = None
    if parsed is not None:
        # PNG, GIF and WebP keep their size in the first 30 bytes; JPEG may not.
        size = image_size(decode_base64(parsed[1], 64))
        if size is None:
            size = image_size(decode_base64(parsed[1]))
    if size is None:
        return Image(url, detail)
    return Image(url, detail, size[0], size[1])


def insert_opaque(blocks: list[Any], opaque: object) -> list[Any]:
    """Put kept-as-is blocks back at their recorded positions; return ``blocks``.

    ``opaque`` is a list of ``[index, block]`` pairs in ascending index order,
    each index a position in the list as it was read.

    Example:
        >>> insert_opaque(["a", "c"], [[1, "b"], [9, "z"]])
        ['a', 'b', 'c', 'z']
    """
    if isinstance(opaque, list):
        for item in cast("Sequence[Any]", opaque):
            if not isinstance(item, list):
                continue
            pair = cast("Sequence[Any]", item)
            if len(pair) == 2 and isinstance(pair[0], int):
                blocks.insert(min(pair[0], len(blocks)), copy.deepcopy(pair[1]))
    return blocks
