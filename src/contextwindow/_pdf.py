"""PDF page counts, read from the bytes with bounded work.

Contract: ``pdf_pages`` never raises and never fails to answer: the page
count a PDF declares (its page tree's ``/Count``, else its ``/Page``
objects), else one page per ``PDF_BYTES_PER_PAGE`` bytes. Its work is
linear in the size of the PDF and bounded whatever the PDF holds: a PDF
comes from users (and through the proxy, from anyone), and a compressed
stream can inflate a thousandfold. So only object streams (``/ObjStm``,
PDF 1.5), the one compressed place page objects live, are inflated, each
to at most ``STREAM_CAP`` bytes and all of them to ``INFLATE_CAP``; past
that the count leans high (the larger of what was found and the estimate
by size).

Example:
    >>> pdf_pages(b"%PDF-1.4 <</Type /Pages /Count 12>>")
    12
    >>> pdf_pages(b"%PDF-1.4 unreadable" + bytes(25_000))  # 25,019 bytes
    3
"""

from __future__ import annotations

import math
import re
import zlib

__all__ = ["INFLATE_CAP", "PDF_BYTES_PER_PAGE", "STREAM_CAP", "pdf_pages"]

PDF_BYTES_PER_PAGE = 10_000
"""Bytes taken as one page of a PDF whose page count cannot be read (an
encrypted or damaged file): a text page compresses to a few KB, a scanned
one to more, so this leans towards more pages."""

STREAM_CAP = 1 << 22
"""The most bytes one object stream is inflated to (4 MiB: an object stream
holds at most a few hundred small objects)."""

INFLATE_CAP = 1 << 24
"""The most bytes all object streams of one PDF are inflated to (16 MiB)."""

_COUNT = re.compile(rb"/Count\s+(\d+)")
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
# The ``stream`` keyword right after an object's dictionary (``endstream``
# never follows ``>>``).
_STREAM = re.compile(rb">>\s*stream\r?\n")
_OBJSTM = re.compile(rb"/Type\s*/ObjStm(?![a-zA-Z])")
_DICT_CHARS = 1024
"""How far before ``stream`` an object stream's dictionary is looked for."""


def pdf_pages(pdf: bytes) -> int:
    """The page count of a PDF: declared, else estimated by size (see the module).

    Example:
        >>> pdf_pages(b"<</Type /Page>> <</Type /Page>>")
        2
    """
    pages = _pages_in(pdf)
    if pages:
        return pages
    inflated, complete = inflate_object_streams(pdf)
    pages = _pages_in(inflated)
    by_size = max(1, math.ceil(len(pdf) / PDF_BYTES_PER_PAGE))
    if not complete:
        return max(pages, by_size)
    return pages or by_size


def inflate_object_streams(pdf: bytes) -> tuple[bytes, bool]:
    r"""The object streams of ``pdf`` inflated, and whether all of each was.

    At most ``STREAM_CAP`` bytes of one stream and ``INFLATE_CAP`` bytes in
    all; a stream that does not inflate is skipped.

    Example:
        >>> body = zlib.compress(b"<</Type /Pages /Count 3>>")
        >>> pdf = b"1 0 obj <</Type /ObjStm>> stream\n" + body + b"\nendstream"
        >>> inflate_object_streams(pdf)
        (b'<</Type /Pages /Count 3>>', True)
    """
    view = memoryview(pdf)  # slices of a view copy nothing
    out = bytearray()
    complete = True
    for m in _STREAM.finditer(pdf):
        head = pdf.rfind(b"obj", max(0, m.start() - _DICT_CHARS), m.start())
        if not _OBJSTM.search(pdf, max(0, head, m.start() - _DICT_CHARS), m.start()):
            continue
        left = INFLATE_CAP - len(out)
        if left <= 0:
            return bytes(out), False
        end = pdf.find(b"endstream", m.end())
        body = view[m.end() : end if end >= 0 else len(pdf)]
        inflater = zlib.decompressobj()
        try:
            chunk = inflater.decompress(body, min(STREAM_CAP, left))
        except zlib.error:
            continue
        out += chunk
        if inflater.unconsumed_tail:  # stopped at a cap, not at its end
            complete = False
    return bytes(out), complete


def _pages_in(data: bytes) -> int:
    counts = [int(c) for c in _COUNT.findall(data)]
    return max(max(counts, default=0), len(_PAGE.findall(data)))
