r"""What an ``Opaque`` part holds, and its equivalent in another provider's shape.

Contract:

- ``read_opaque(part)`` is the one reading of an opaque block, used by token
  counting and by the writers: the text a model reads from it (a text
  document's text, a search result's content, a refusal, a transcript,
  titles; never ids, types or base64) and its binary payloads (base64 data
  with a media type: a PDF, audio, a file). Nothing here raises on an odd
  block: what cannot be read is neither text nor payload.
- ``translate(part, target)`` is the part to write for ``target``: the part
  itself for its own provider; the target's equivalent where one exists
  (a PDF document <-> a ``file`` / ``input_file``, a refusal, audio input);
  the text of a text document, a search result, a refusal or a transcript
  as a ``Text`` part; else ``None``, and the writer warns
  (``ContentDroppedWarning``) that it dropped it.

Example:
    >>> doc = Opaque("anthropic", {"type": "document", "title": "Terms", "source":
    ...     {"type": "text", "media_type": "text/plain", "data": "Fee: 4,200 EUR."}})
    >>> read_opaque(doc).text
    'Terms\nFee: 4,200 EUR.'
    >>> translate(doc, "openai")
    Text(text='Terms\nFee: 4,200 EUR.')
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from contextwindow._images import data_uri, parse_data_uri
from contextwindow.errors import ContentDroppedWarning
from contextwindow.messages import Opaque, Provider, Text

__all__ = ["OpaqueContent", "Payload", "dropped", "read_opaque", "translate"]


@dataclass(frozen=True, slots=True)
class Payload:
    """Binary content inside a block: base64 data and what it is."""

    media_type: str
    """``application/pdf``, ``audio/wav``...; ``application/octet-stream`` when
    the block does not say."""
    data: str
    """The base64 text (not decoded: counting decodes what it needs)."""


@dataclass(frozen=True, slots=True)
class OpaqueContent:
    """What ``read_opaque`` finds in a block."""

    text: str
    """The text a model reads from it, pieces joined by newlines."""
    payloads: tuple[Payload, ...]
    """Its binary payloads, in order."""


# Keys whose string values are structure, not content the model reads.
_NOT_TEXT = frozenset(
    (
        "type",
        "media_type",
        "format",
        "detail",
        "id",
        "file_id",
        "tool_use_id",
        "url",
        "file_url",
        "expires_at",
        "cache_control",
        "citations",
        "mode",
        "ttl",
    )
)
_AUDIO_KEYS = frozenset(("input_audio", "audio"))


def read_opaque(part: Opaque) -> OpaqueContent:
    """The text and the binary payloads of an opaque part (see the module).

    Example:
        >>> pdf = Opaque("openai", {"type": "file", "file": {
        ...     "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBER"}})
        >>> found = read_opaque(pdf)
        >>> found.text, [(p.media_type, p.data) for p in found.payloads]
        ('a.pdf', [('application/pdf', 'JVBER')])
    """
    return _read(part.raw)


@lru_cache(maxsize=64)
def _read(raw: str) -> OpaqueContent:
    # Cached by the JSON text: a message is counted, checked and written
    # again and again, and a document's JSON can be megabytes.
    texts: list[str] = []
    payloads: list[Payload] = []
    _walk(json.loads(raw), None, texts, payloads)
    return OpaqueContent("\n".join(texts), tuple(payloads))


def _walk(
    value: Any, parent: str | None, texts: list[str], payloads: list[Payload]
) -> None:
    if isinstance(value, list):
        for item in cast("Sequence[Any]", value):
            _walk(item, parent, texts, payloads)
        return
    if not isinstance(value, Mapping):
        return
    obj = cast("Mapping[str, Any]", value)
    textual = obj.get("type") in ("text", "content")  # a text document's source
    for key, item in obj.items():
        if key in _NOT_TEXT:
            continue
        if isinstance(item, str):
            parsed = parse_data_uri(item)
            if parsed is not None:
                payloads.append(Payload(parsed[0] or _OCTETS, parsed[1]))
            elif key == "file_data" or (key == "data" and not textual):
                payloads.append(Payload(_media_type(obj, parent), item))
            elif item:
                texts.append(item)
        else:
            _walk(item, key, texts, payloads)


_OCTETS = "application/octet-stream"


def _media_type(obj: Mapping[str, Any], parent: str | None) -> str:
    media = obj.get("media_type")
    if isinstance(media, str) and media:
        return media
    fmt = obj.get("format")
    if parent in _AUDIO_KEYS:
        return f"audio/{fmt}" if isinstance(fmt, str) and fmt else "audio/wav"
    return _OCTETS


def translate(part: Opaque, target: Provider) -> Opaque | Text | None:
    """``part`` as ``target`` takes it, or ``None`` where it has no equivalent.

    Example:
        >>> refusal = Opaque("openai", {"type": "refusal", "refusal": "No."})
        >>> translate(refusal, "responses").raw
        '{"type":"refusal","refusal":"No."}'
        >>> translate(refusal, "anthropic")
        Text(text='No.')
        >>> translate(Opaque("anthropic", {"type": "container_upload",
        ...     "file_id": "f1"}), "openai") is None
        True
    """
    if part.provider == target:
        return part
    block = part.block
    kind = block.get("type")
    found = _equivalent(part.provider, block, target)
    if found is not None:
        return Opaque.of(target, found)
    if kind in _TEXTUAL or (kind == "document" and _text_source(block)):
        text = read_opaque(part).text
        return Text(text) if text else None
    if kind == "audio":  # a Chat audio reply: its transcript, when kept
        transcript = _mapping(block.get("audio")).get("transcript")
        return Text(transcript) if isinstance(transcript, str) and transcript else None
    return None


_TEXTUAL = frozenset(("refusal", "search_result"))


def _mapping(value: object) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _text_source(block: Mapping[str, Any]) -> bool:
    return _mapping(block.get("source")).get("type") in ("text", "content")


def _equivalent(
    source: Provider, block: Mapping[str, Any], target: Provider
) -> dict[str, Any] | None:
    """The target's own block for ``block``, where both shapes have one."""
    kind = block.get("type")
    if kind == "refusal" and target != "anthropic":
        return dict(block)  # one shape in Chat and Responses
    if kind == "input_audio" and target != "anthropic":
        return dict(block)  # likewise
    file: dict[str, Any] | None = None  # filename, file_data, file_id, file_url
    if kind == "file":
        file = dict(_mapping(block.get("file")))
    elif kind == "input_file":
        file = {k: v for k, v in block.items() if k != "type"}
    elif kind == "document":
        src = _mapping(block.get("source"))
        title = block.get("title")
        name = title if isinstance(title, str) and title else "document.pdf"
        if src.get("type") == "base64" and src.get("media_type") == "application/pdf":
            data = src.get("data")
            if isinstance(data, str):
                file = {
                    "filename": name,
                    "file_data": data_uri("application/pdf", data),
                }
        elif src.get("type") == "url" and isinstance(src.get("url"), str):
            file = {"filename": name, "file_url": src["url"]}
    if file is None:
        return None
    if target == "responses":
        return {"type": "input_file", **file}
    if target == "openai":
        kept = {k: v for k, v in file.items() if k in ("filename", "file_data")}
        return {"type": "file", "file": kept} if "file_data" in kept else None
    # Anthropic reads a PDF document; its file ids are not OpenAI's.
    data = file.get("file_data")
    parsed = parse_data_uri(data) if isinstance(data, str) else None
    if parsed is not None and parsed[0] == "application/pdf":
        src = {"type": "base64", "media_type": parsed[0], "data": parsed[1]}
        return {"type": "document", "source": src}
    url = file.get("file_url")
    if isinstance(url, str) and source == "responses":
        return {"type": "document", "source": {"type": "url", "url": url}}
    return None


def dropped(part: Opaque, target: Provider, where: str) -> None:
    """Warn that ``part`` (at ``where``) has no equivalent in ``target``'s shape."""
    warnings.warn(
        f"{where}: a {part.provider} {part.type or 'opaque'} block has no "
        f"equivalent in the {target} shape and was left out",
        ContentDroppedWarning,
        stacklevel=4,
    )
