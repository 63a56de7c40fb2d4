"""Token estimates of content kept opaque: documents, files, audio.

Contract: ``opaque_tokens`` never counts such a part as nothing. What the
model reads as text (a text document, a search result, a refusal, titles
and names) is counted by the tokenizer; base64 payloads by the estimates
below, each from what the providers document. No provider publishes exact
rules for these, so each estimate leans high: a budget that holds them is
an honest one (``fit`` never claims a fit it has not got). A file sent by id
or URL has no payload here: only its text is counted.

Example:
    >>> from contextwindow.messages import Opaque
    >>> pdf = "JVBERi0xLjQKMSAwIG9iago8PC9UeXBlIC9QYWdlcyAvQ291bnQgMj4+CmVuZG9iag=="
    >>> payload_tokens("application/pdf", pdf)  # "/Type /Pages /Count 2"
    6000
"""

from __future__ import annotations

import math
import re
import struct
import zlib
from collections.abc import Callable
from functools import lru_cache

from contextwindow._images import decode_base64
from contextwindow.formats._opaque import read_opaque
from contextwindow.messages import Opaque

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "PDF_PAGE_TOKENS",
    "opaque_tokens",
    "payload_tokens",
]

PDF_PAGE_TOKENS = 3_000
"""Tokens per PDF page. Anthropic ("PDF support", *Estimate your costs*):
"each page typically uses 1,500-3,000 tokens per page depending on content
density", and each page is also sent as an image; OpenAI ("File inputs"):
"we put into the model's context both the extracted text and an image of
each page". The top of Anthropic's range, for both."""

PDF_BYTES_PER_PAGE = 10_000
"""Bytes taken as one page of a PDF whose page count cannot be read (an
encrypted or damaged file): a text page compresses to a few KB, a scanned
one to more, so this leans towards more pages."""

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

_COUNT = re.compile(rb"/Count\s+(\d+)")
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_STREAM = re.compile(rb"stream\r?\n")


def opaque_tokens(part: Opaque, text: Callable[[str], int]) -> int:
    """Tokens of an opaque part: its text by ``text``, payloads by estimate.

    Example:
        >>> doc = Opaque("anthropic", {"type": "document", "source": {
        ...     "type": "text", "media_type": "text/plain", "data": "a b c"}})
        >>> opaque_tokens(doc, lambda s: len(s.split()))
        3
    """
    found = read_opaque(part)
    n = text(found.text) if found.text else 0
    for payload in found.payloads:
        if payload.media_type.startswith("text/"):
            decoded = decode_base64(payload.data).decode("utf-8", "replace")
            n += text(decoded)
        else:
            n += payload_tokens(payload.media_type, payload.data)
    return n


@lru_cache(maxsize=64)
def payload_tokens(media_type: str, data: str) -> int:
    """Estimated tokens of a base64 payload of ``media_type`` (see the constants).

    Example:
        >>> payload_tokens("audio/mp3", "A" * 106_668)  # 80,001 bytes
        101
    """
    size = len(data) * 3 // 4 - data.count("=", len(data) - 2)  # padding
    if media_type == "application/pdf":
        return PDF_PAGE_TOKENS * _pdf_pages(decode_base64(data))
    if media_type.startswith("audio/"):
        seconds = size / AUDIO_BYTES_PER_SECOND
        rate = _wav_rate(decode_base64(data, 64))
        if rate:
            seconds = max(0, size - 44) / rate
        return math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)
    return math.ceil(size / BYTES_PER_TOKEN)


def _pdf_pages(pdf: bytes) -> int:
    """The page count of a PDF: its page tree's ``/Count``, else its pages.

    Object streams (PDF 1.5) are compressed: they are inflated to look.
    """
    pages = _pages_in(pdf)
    if not pages:
        inflated = bytearray()
        for m in _STREAM.finditer(pdf):
            try:
                inflated += zlib.decompressobj().decompress(pdf[m.end() :], 1 << 22)
            except zlib.error:
                continue
        pages = _pages_in(bytes(inflated))
    return pages or max(1, math.ceil(len(pdf) / PDF_BYTES_PER_PAGE))


def _pages_in(data: bytes) -> int:
    counts = [int(c) for c in _COUNT.findall(data)]
    return max(max(counts, default=0), len(_PAGE.findall(data)))


def _wav_rate(head: bytes) -> int:
    """Bytes per second from a WAV header, or 0."""
    if len(head) >= 32 and head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        rate: int = struct.unpack_from("<I", head, 28)[0]
        return rate
    return 0
