"""Image bytes: sizes read from file headers, and ``data:`` URIs.

Contract: nothing here raises on bad input. ``image_size`` reads only the header
of PNG, JPEG, GIF and WebP data and returns ``(width, height)`` (each at
least 1) or ``None``; ``image_type`` names those formats by their first
bytes; the ``data:`` URI helpers return ``None`` (or what could be decoded)
for anything they cannot read. Formats use this to fill
``Image.width``/``height``; token counting uses it for images whose size was
not given.
"""

from __future__ import annotations

import base64
import binascii
import struct
from urllib.parse import unquote_to_bytes

from contextwindow._args import shown
from contextwindow.errors import ArgumentTypeError

__all__ = [
    "data_uri",
    "data_uri_bytes",
    "decode_base64",
    "image_size",
    "image_type",
    "parse_data_uri",
]


def parse_data_uri(url: str) -> tuple[str, str] | None:
    """Split a base64 ``data:`` URI into (media type, base64 data).

    The media type is as written (``IMAGE/PNG`` stays so); ``;base64`` is
    matched in any case, as RFC 2397 reads a parameter.

    Example:
        >>> parse_data_uri("data:image/png;base64,iVBORw0KGgo=")
        ('image/png', 'iVBORw0KGgo=')
        >>> parse_data_uri("data:image/png;BASE64,iVBORw0KGgo=")
        ('image/png', 'iVBORw0KGgo=')
        >>> parse_data_uri("https://example.com/a.png") is None
        True
    """
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not _is_base64(head):
        return None
    return head[: -len(";base64")].split(";", 1)[0], data


def _is_base64(head: str) -> bool:
    """Whether a ``data:`` URI's head ends in ``;base64`` (in any case: RFC 2397)."""
    return head[-7:].lower() == ";base64"


def data_uri(media_type: str, data: str) -> str:
    """Build a base64 ``data:`` URI.

    Example:
        >>> data_uri("image/gif", "R0lGOD")
        'data:image/gif;base64,R0lGOD'
    """
    return f"data:{media_type};base64,{data}"


def decode_base64(data: str, chars: int | None = None) -> bytes:
    """Decode (a prefix of) base64 text; bad input gives what could be decoded."""
    text = data if chars is None else data[:chars]
    text = text[: len(text) // 4 * 4]
    try:
        return base64.b64decode(text)
    except (binascii.Error, ValueError):
        return b""


def data_uri_bytes(url: str) -> bytes | None:
    """Decode the payload of a ``data:`` URI; ``None`` for other URLs or bad data.

    Example:
        >>> data_uri_bytes("data:text/plain;base64,aGk=")
        b'hi'
        >>> data_uri_bytes("https://example.com/a.png") is None
        True
    """
    if not url.startswith("data:") or "," not in url:
        return None
    head, payload = url[5:].split(",", 1)
    if _is_base64(head):
        try:
            return base64.b64decode(payload)
        except (binascii.Error, ValueError):
            return None
    return unquote_to_bytes(payload)


def image_size(data: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """Read (width, height) from the header of PNG, JPEG, GIF or WebP bytes.

    Args:
        data: The start of the image file (the whole file for JPEG, whose size
            marker may follow other segments).

    Returns:
        The pixel size, or ``None`` when the format is unknown, the data is
        truncated, or the header says a side is 0 pixels (a corrupt or
        truncated file: its size is unknown, not an image of no pixels).

    Raises:
        ArgumentTypeError: ``data`` is not ``bytes`` (nor a ``bytearray`` or
            a ``memoryview``).

    Example:
        >>> image_size(b"GIF89a" + bytes([5, 0, 7, 0]))
        (5, 7)
        >>> image_size(b"not an image") is None
        True
        >>> image_size(b"GIF89a" + bytes([0, 0, 7, 0])) is None  # 0 wide
        True
    """
    size = _header_size(data)
    if size is None or not size[0] or not size[1]:
        return None
    return size


def image_type(data: bytes) -> str | None:
    """The media type the first bytes of an image say: PNG, JPEG, GIF or WebP.

    Example:
        >>> image_type(b"GIF89a" + bytes([5, 0, 7, 0]))
        'image/gif'
        >>> image_type(b"%PDF-1.7") is None
        True
    """
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "image/png"
    if data[:3] == b"\xff\xd8\xff":
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _header_size(data: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    if not isinstance(data, bytes | bytearray | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("data", shown(data), "bytes (an image's header)")
    if not isinstance(data, bytes):  # the readers below search it as bytes
        data = bytes(data)
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return int(w), int(h)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp_size(data)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", data[26:30])
        return int(w) & 0x3FFF, int(h) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    return None


# Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    n = len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            if i + 9 > n:
                return None
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return None
