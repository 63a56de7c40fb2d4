"""Token estimates of content kept opaque: documents, files, audio.

Contract: ``opaque_tokens`` never counts such a part as nothing. What the
model reads as text (a text document, a search result, a refusal, titles
and names) is counted by the tokenizer; base64 payloads by the estimates
below, each from what the providers document. No provider publishes exact
rules for these, so each estimate leans high: a budget that holds them is
an honest one (``fit`` never claims a fit it has not got). An image payload
(one inside an Anthropic document of ``content`` source, an ``image/*``
file) costs what an image costs, by the provider's rule and the size its
header gives. Content sent by reference (a file id, a URL) has no payload
here: a document or file so sent counts ``REFERENCE_TOKENS`` more than its
text, an image so sent the image cost of an image of unknown size at the
block's ``detail``; an Anthropic ``container_upload``,
which puts a file in the code-execution container and none in the context,
counts its JSON text. Encrypted content (a Responses ``compaction``) counts
by its size (``ENCRYPTED_BYTES_PER_TOKEN``). Reading a payload is bounded
work whatever it holds (``contextwindow._pdf``), and no cache here holds one.

Example:
    >>> from contextwindow.messages import Opaque
    >>> pdf = "JVBERi0xLjQKMSAwIG9iago8PC9UeXBlIC9QYWdlcyAvQ291bnQgMj4+CmVuZG9iag=="
    >>> payload_tokens("application/pdf", pdf)  # "/Type /Pages /Count 2"
    6000
"""

from __future__ import annotations

import hashlib
import math
import struct
import threading
from collections.abc import Callable

from contextwindow._images import decode_base64, image_size
from contextwindow._lru import LRU
from contextwindow._pdf import PDF_BYTES_PER_PAGE, pdf_pages
from contextwindow.formats._opaque import ENCRYPTED, read_opaque
from contextwindow.messages import Image, Opaque

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "ENCRYPTED_BYTES_PER_TOKEN",
    "PDF_BYTES_PER_PAGE",
    "PDF_PAGE_TOKENS",
    "REFERENCE_TOKENS",
    "opaque_tokens",
    "payload_size",
    "payload_tokens",
]

PDF_PAGE_TOKENS = 3_000
"""Tokens per PDF page. Anthropic ("PDF support", *Estimate your costs*):
"each page typically uses 1,500-3,000 tokens per page depending on content
density", and each page is also sent as an image; OpenAI ("File inputs"):
"we put into the model's context both the extracted text and an image of
each page". The top of Anthropic's range, for both."""

REFERENCE_TOKENS = PDF_PAGE_TOKENS
"""Tokens of a document or file sent by reference (a file id, a URL): its
size is not here to read, and "never nothing" asks for a floor. One PDF
page (``PDF_PAGE_TOKENS``), the least a document sent this way holds; what
a larger one adds shows only in the usage the provider reports
(``tokens.calibration``)."""

AUDIO_TOKENS_PER_SECOND = 10
"""Tokens per second of audio input. OpenAI priced GPT-4o audio input at
$100 per 1M tokens, "approximately $0.06 per minute" (the Realtime API
announcement): 600 tokens a minute."""

AUDIO_BYTES_PER_SECOND = 8_000
"""Bytes per second of compressed audio (MP3 at 64 kbit/s, speech quality)
when no WAV header gives the rate: a lower rate than most, so the duration
leans long."""

BYTES_PER_TOKEN = 2
"""Other binary files (``.docx``, ``.xlsx``...), whose text the provider
extracts: about 4 bytes of text per token, and a zipped office file holds
about twice its size in text."""

ENCRYPTED_BYTES_PER_TOKEN = 3
"""Encrypted content a provider decrypts into the model's context (a
Responses ``compaction`` item's ``encrypted_content``, the compacted
conversation): OpenAI does not say what it holds. Read as text encrypted,
about 4 bytes a token, and the cipher's overhead on top; 3 bytes a token
leans high."""

_BY_REFERENCE = frozenset(("document", "file", "input_file"))
# Blocks that put nothing in the model's context but themselves: an
# Anthropic ``container_upload`` only places a file in the code-execution
# container (the model reads it through a tool, whose result is counted).
_AS_JSON = frozenset(("container_upload",))
_IMAGES = frozenset(("image", "input_image"))
_UNKNOWN = "file:"  # the URL of an image whose size is unknown


def opaque_tokens(
    part: Opaque, text: Callable[[str], int], image: Callable[[Image], int]
) -> int:
    """Tokens of an opaque part: its text by ``text``, payloads by estimate.

    ``image`` gives the cost of an image (the provider's rule), for an image
    sent by file id and for an image payload.

    Example:
        >>> doc = Opaque("anthropic", {"type": "document", "source": {
        ...     "type": "text", "media_type": "text/plain", "data": "a b c"}})
        >>> opaque_tokens(doc, lambda s: len(s.split()), lambda img: 1600)
        3
        >>> by_id = Opaque("openai", {"type": "file", "file": {"file_id": "f1"}})
        >>> opaque_tokens(by_id, lambda s: len(s.split()), lambda img: 1600)
        3000
    """
    if part.type in _AS_JSON:
        return text(part.raw)
    found = read_opaque(part)
    n = text(found.text) if found.text else 0
    for payload in found.payloads:
        if payload.media_type.startswith("text/"):
            decoded = decode_base64(payload.data).decode("utf-8", "replace")
            n += text(decoded)
        elif payload.media_type.startswith("image/"):
            # An image, not a binary file: the provider's rule for its size.
            size = payload_size(payload.data)
            width, height = size if size else (None, None)
            n += image(Image(_UNKNOWN, width=width, height=height))
        else:
            n += payload_tokens(payload.media_type, payload.data)
    if found.linked and not found.payloads:  # sent by reference
        kind = part.type
        if kind in _IMAGES:
            # Its size is not here, its detail is (low: 85 on OpenAI).
            detail = part.block.get("detail")
            detail = detail if isinstance(detail, str) else None
            n += image(Image(_UNKNOWN, detail=detail))
        elif kind in _BY_REFERENCE:
            n += REFERENCE_TOKENS
    return n


_SIZES: LRU[bytes, tuple[int, int] | None] = LRU(1024)
_sizes_lock = threading.Lock()


def payload_size(data: str) -> tuple[int, int] | None:
    """The pixel size a base64 image payload's header gives, or ``None``.

    Example:
        >>> payload_size("R0lGODlhBQAHAA==")  # a GIF header: 5x7
        (5, 7)
    """
    # Cached by a digest, as payload_tokens: a JPEG's size may sit past
    # megabytes of metadata, and the same payload is counted again and again.
    key = hashlib.blake2b(data.encode(), digest_size=16).digest()
    with _sizes_lock:
        if key in _SIZES:
            return _SIZES.get(key)
    size = image_size(decode_base64(data, 64)) or image_size(decode_base64(data))
    if size is not None and min(size) < 1:  # a corrupt header: the size is unknown
        size = None
    with _sizes_lock:
        _SIZES.put(key, size)
    return size


_PAYLOADS: LRU[tuple[str, bytes], int] = LRU(1024)
_payloads_lock = threading.Lock()


def payload_tokens(media_type: str, data: str) -> int:
    """Estimated tokens of a base64 payload of ``media_type`` (see the constants).

    Example:
        >>> payload_tokens("audio/mp3", "A" * 106_668)  # 80,001 bytes
        101
    """
    # Cached by a digest of the data: a message is counted again and again,
    # and a payload can be megabytes that a cache must not keep.
    key = (media_type, hashlib.blake2b(data.encode(), digest_size=16).digest())
    with _payloads_lock:
        n = _PAYLOADS.get(key)
    if n is None:
        n = _estimate(media_type, data)
        with _payloads_lock:
            _PAYLOADS.put(key, n)
    return n


def _estimate(media_type: str, data: str) -> int:
    size = len(data) * 3 // 4 - data.count("=", len(data) - 2)  # padding
    if media_type == ENCRYPTED:
        return math.ceil(size / ENCRYPTED_BYTES_PER_TOKEN)
    if media_type == "application/pdf":
        return PDF_PAGE_TOKENS * pdf_pages(decode_base64(data))
    if media_type.startswith("audio/"):
        seconds = size / AUDIO_BYTES_PER_SECOND
        rate = _wav_rate(decode_base64(data, 64))
        if rate:
            seconds = max(0, size - 44) / rate
        return math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)
    return math.ceil(size / BYTES_PER_TOKEN)


def _wav_rate(head: bytes) -> int:
    """Bytes per second from a WAV header, or 0."""
    if len(head) >= 32 and head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        rate: int = struct.unpack_from("<I", head, 28)[0]
        return rate
    return 0
