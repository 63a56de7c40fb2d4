r"""What an ``Opaque`` part holds, and its equivalent in another provider's shape.

Contract:

- ``read_opaque(part)`` is the one reading of an opaque block, used by token
  counting and by the writers: the text a model reads from it (a text
  document's text, a search result's content, a refusal, a transcript,
  titles; never ids, types or base64) and its binary payloads (base64 data
  with a media type: a PDF, audio, a file; LangChain's ``base64`` with its
  ``mime_type`` too). Nothing here raises on an odd block: what cannot be
  read is neither text nor payload. Its cache is keyed by the part's digest
  (``Opaque.key``) and bounded by what its entries hold, never by count
  alone: a document can be megabytes.
- ``translate(part, target)`` is the part to write for ``target``: the part
  itself for its own provider; the target's equivalent where one exists
  (a PDF document <-> a ``file`` / ``input_file``, a refusal, audio input);
  the text of a text document, a search result, a refusal or a transcript
  as a ``Text`` part; else ``None``. ``kept(part, target)`` says whether
  it is not ``None`` (what ``validity`` counts as content), and
  ``to_target`` is the writers' one use of it: the block or ``Text`` to
  write, or ``None`` after warning (``ContentDroppedWarning``, naming the
  part and pointing at the caller's line) that it was left out.
- ``opaque_text(part)`` is how a person or a model reads the part as text
  (recalled originals, previews): its text, or a label for a payload or a
  reference (``[document 'Terms', PDF, 12 pages]``).

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
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, cast

from contextwindow._images import data_uri, decode_base64, parse_data_uri
from contextwindow._lru import LRU
from contextwindow._pdf import pdf_pages
from contextwindow.errors import ContentDroppedWarning
from contextwindow.messages import Opaque, Provider, Text

__all__ = [
    "ENCRYPTED",
    "OpaqueContent",
    "Payload",
    "dropped",
    "kept",
    "left_out",
    "opaque_text",
    "read_opaque",
    "result_target",
    "to_target",
    "translate",
]


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
    linked: bool = False
    """It names content by reference (a file id, a URL) that is not here."""


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
        "mime_type",  # LangChain's content blocks
        "source_type",
    )
)
_LINKS = frozenset(("file_id", "url", "file_url"))
ENCRYPTED = "application/vnd.openai.encrypted"
"""The media type ``read_opaque`` gives an item's ``encrypted_content`` (a
Responses ``compaction``): no text a reader can see, counted by estimate."""
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
    key = part.key
    found = _READ.get(key)
    if found is None:
        found = _read(part.raw)
        _READ.put(key, found)
    return found


READ_CACHE_CHARS = 1 << 25
"""The most characters (text and base64) the blocks ``read_opaque`` keeps hold."""


class _Read:
    """What ``read_opaque`` read, by part digest, bounded by what it holds.

    A message is counted, checked and written again and again, and a
    document's JSON can be megabytes: 64 entries of 5 MB PDFs held 400 MB.
    An entry over a quarter of the bound is not kept (it would push out the
    rest).
    """

    __slots__ = ("_data", "_lock", "_weight")

    def __init__(self) -> None:
        self._data: OrderedDict[str, OpaqueContent] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> OpaqueContent | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: str, found: OpaqueContent) -> None:
        weight = _weight(found)
        if weight > READ_CACHE_CHARS // 4:
            return
        with self._lock:
            if key in self._data:
                return
            self._data[key] = found
            self._weight += weight
            while self._weight > READ_CACHE_CHARS:
                _, old = self._data.popitem(last=False)
                self._weight -= _weight(old)


_READ = _Read()


def _weight(found: OpaqueContent) -> int:
    return len(found.text) + sum(len(p.data) for p in found.payloads) + 64


def _read(raw: str) -> OpaqueContent:
    texts: list[str] = []
    payloads: list[Payload] = []
    linked = _walk(json.loads(raw), None, texts, payloads)
    return OpaqueContent("\n".join(texts), tuple(payloads), linked)


def _walk(
    value: Any, parent: str | None, texts: list[str], payloads: list[Payload]
) -> bool:
    """Gather texts and payloads; whether a reference (file id, URL) was seen."""
    linked = False
    if isinstance(value, list):
        for item in cast("Sequence[Any]", value):
            linked = _walk(item, parent, texts, payloads) or linked
        return linked
    if not isinstance(value, Mapping):
        return False
    obj = cast("Mapping[str, Any]", value)
    textual = obj.get("type") in ("text", "content")  # a text document's source
    for key, item in obj.items():
        if key in _NOT_TEXT:
            if key in _LINKS and isinstance(item, str) and item:
                linked = True
            continue
        if isinstance(item, str):
            parsed = parse_data_uri(item)
            if parsed is not None:
                payloads.append(Payload(parsed[0] or _OCTETS, parsed[1]))
            elif key == "encrypted_content":
                payloads.append(Payload(ENCRYPTED, item))
            elif key in ("file_data", "base64") or (key == "data" and not textual):
                payloads.append(Payload(_media_type(obj, parent), item))
            elif item:
                texts.append(item)
        else:
            linked = _walk(item, key, texts, payloads) or linked
    return linked


_OCTETS = "application/octet-stream"


def _media_type(obj: Mapping[str, Any], parent: str | None) -> str:
    for key in ("media_type", "mime_type"):  # mime_type: LangChain's blocks
        media = obj.get(key)
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
    text: object = None
    if kind in _TEXTUAL or (kind == "document" and _text_source(block)):
        text = read_opaque(part).text
    elif kind == "audio":  # a Chat audio reply: its transcript, when kept
        text = block.get("transcript") or _mapping(block.get("audio")).get("transcript")
    # Blank text is no content (Anthropic rejects a blank text block).
    return Text(text) if isinstance(text, str) and text.strip() else None


def kept(part: Opaque, target: Provider) -> bool:
    """Whether ``part`` is written for ``target`` (``translate`` gives a part).

    Example:
        >>> audio = Opaque("openai", {"type": "input_audio",
        ...     "input_audio": {"data": "AAAA", "format": "wav"}})
        >>> kept(audio, "openai"), kept(audio, "responses"), kept(audio, "anthropic")
        (True, True, False)
    """
    if part.provider == target:
        return True
    key = (part.key, target)
    with _kept_lock:
        found = _KEPT.get(key)
    if found is None:
        found = translate(part, target) is not None
        with _kept_lock:
            _KEPT.put(key, found)
    return found


_KEPT: LRU[tuple[str, Provider], bool] = LRU(4096)
_kept_lock = threading.Lock()


def to_target(
    part: Opaque, target: Provider, where: str
) -> dict[str, Any] | Text | None:
    """What a writer for ``target`` writes for ``part`` (at ``where``).

    The block itself or its equivalent, as a new dict; its text as a
    ``Text`` part; or ``None``, after warning that it was left out.

    Example:
        >>> refusal = Opaque("openai", {"type": "refusal", "refusal": "No."})
        >>> to_target(refusal, "responses", "messages[1].parts[0]")
        {'type': 'refusal', 'refusal': 'No.'}
        >>> to_target(refusal, "anthropic", "messages[1].parts[0]")
        Text(text='No.')
    """
    found = translate(part, target)
    if found is None:
        dropped(part, target, where)
        return None
    return found.block if isinstance(found, Opaque) else found


def result_target(
    part: Opaque, target: Provider, where: str
) -> dict[str, Any] | Text | None:
    r"""What a writer for ``target`` writes for ``part`` inside a tool result.

    As ``to_target``, within what a tool's output takes there: Anthropic's
    ``tool_result`` a ``document`` or ``search_result``, Responses'
    ``function_call_output`` an ``input_file``, Chat's tool message text
    alone (its writer leaves another shape's images out, ``left_out``). A
    block of the target's own shape is written as it came.

    Example:
        >>> hit = Opaque("anthropic", {"type": "search_result", "source": "kb",
        ...     "title": "Fees", "content": [{"type": "text", "text": "4,200 EUR"}]})
        >>> result_target(hit, "anthropic", "messages[2].parts[0].content[0]")["type"]
        'search_result'
        >>> result_target(hit, "responses", "messages[2].parts[0].content[0]")
        Text(text='kb\nFees\n4,200 EUR')
    """
    if part.provider == target:
        return part.block
    found = translate(part, target)
    if isinstance(found, Opaque) and found.type not in _IN_RESULTS[target]:
        # Its text, where that is what it holds: a PDF is not its file name.
        held = read_opaque(part)
        found = None if held.payloads or not held.text.strip() else Text(held.text)
    if found is None:
        dropped(part, target, where, place="tool result")
        return None
    return found.block if isinstance(found, Opaque) else found


_IN_RESULTS: Mapping[Provider, frozenset[str]] = {
    "anthropic": frozenset(("document", "search_result")),
    "responses": frozenset(("input_file",)),
    "openai": frozenset(),
}
"""The opaque blocks each provider takes in a tool's output."""

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
    if target == "openai":  # Chat's file part takes data or an OpenAI file id
        chat = {k: v for k, v in file.items() if k in _CHAT_FILE}
        return {"type": "file", "file": chat} if _CHAT_FILE & chat.keys() else None
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


_CHAT_FILE = frozenset(("filename", "file_data", "file_id"))


def dropped(
    part: Opaque, target: Provider, where: str, *, place: str = "shape"
) -> None:
    """Warn that ``part`` (at ``where``) has no equivalent in ``target``'s ``place``.

    The warning points at the first caller outside this package, however
    deep the writer that left the part out.
    """
    left_out(f"{part.provider} {part.type or 'opaque'} block", target, where, place)


def left_out(what: str, target: Provider, where: str, place: str = "shape") -> None:
    """Warn that ``what`` (at ``where``) was left out of ``target``'s ``place``.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     left_out("image", "openai", "messages[2].parts[0].content[1]",
        ...              "tool result")
        >>> print(seen[0].message)
        messages[2].parts[0].content[1]: an image has no equivalent in the openai tool result and was left out
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    article = "an" if what[0] in "aeiou" else "a"
    warnings.warn(
        f"{where}: {article} {what} has no equivalent in the {target} "
        f"{place} and was left out",
        ContentDroppedWarning,
        stacklevel=_outside(),
    )


def _outside() -> int:
    """The ``stacklevel`` of the first frame outside ``contextwindow``.

    For a warning raised by this function's caller.
    """
    level = 2  # the caller of the function that warns
    frame: FrameType | None = sys._getframe(level)  # pyright: ignore[reportPrivateUsage]  # the cheap, documented way to walk the stack
    while frame is not None and frame.f_globals.get("__name__", "").startswith(
        "contextwindow."
    ):
        frame = frame.f_back
        level += 1
    return level


def opaque_text(part: Opaque) -> str:
    """The part as text for a reader: its text, or a label of what it holds.

    A block whose content is text (a text document, a search result, a
    refusal, a transcript) gives that text; one holding a payload or a
    reference gives a label: its type, its name, and what it is.

    Example:
        >>> pdf = "JVBERi0xLjQgPDwvVHlwZSAvUGFnZXMgL0NvdW50IDEyPj4="
        >>> print(opaque_text(Opaque("anthropic", {"type": "document", "title":
        ...     "Terms", "source": {"type": "base64", "media_type":
        ...     "application/pdf", "data": pdf}})))
        [document 'Terms', PDF, 12 pages]
        >>> print(opaque_text(Opaque("openai", {"type": "refusal", "refusal": "No."})))
        No.
    """
    found = read_opaque(part)
    if found.text and not found.payloads and not found.linked:
        return found.text
    block = part.block
    name = block.get("title") or block.get("filename")
    name = name or _mapping(block.get("file")).get("filename")
    head = f"{part.type or 'opaque'} {name!r}" if isinstance(name, str) else part.type
    what = [head or "opaque"]
    for payload in found.payloads:
        if payload.media_type == "application/pdf":
            pages = pdf_pages(decode_base64(payload.data))
            what.append(f"PDF, {pages} page{'s' if pages != 1 else ''}")
        else:
            what.append(payload.media_type)
    if found.linked and not found.payloads:
        what.append("by reference")
    return f"[{', '.join(what)}]"
