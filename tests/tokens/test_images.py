from __future__ import annotations

import base64
import struct

import pytest

from contextwindow._images import (
    data_uri,
    data_uri_bytes,
    decode_base64,
    image_size,
    parse_data_uri,
)
from contextwindow.errors import ArgumentTypeError
from contextwindow.tokens._images import anthropic_image_tokens, openai_image_tokens


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + struct.pack(">II", w, h) + b"\0" * 5


def gif(w: int, h: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", w, h) + b"\0" * 3


def jpeg(w: int, h: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\0" + b"\0" * 9
    fill = b"\xff"  # a fill byte before the next marker is legal
    sof2 = b"\xff\xc2" + struct.pack(">HBHH", 17, 8, h, w) + b"\0" * 10
    return b"\xff\xd8" + app0 + fill + sof2


def webp(chunk: bytes, body: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + chunk + body


class TestImageSize:
    def test_png(self) -> None:
        """PNG size comes from the IHDR chunk."""
        assert image_size(png(800, 600)) == (800, 600)

    def test_gif(self) -> None:
        """GIF size comes from the logical screen descriptor."""
        assert image_size(gif(320, 200)) == (320, 200)

    def test_jpeg_skips_segments_to_sof(self) -> None:
        """JPEG size is read from the first start-of-frame, after other segments."""
        assert image_size(jpeg(1920, 1080)) == (1920, 1080)

    def test_jpeg_markers_without_length(self) -> None:
        """Standalone markers (SOI, TEM, RSTn) carry no length and are stepped over."""
        sof0 = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 30, 40) + b"\0" * 10
        data = b"\xff\xd8" + b"\xff\xd8" + b"\xff\x01" + b"\xff\xd3" + sof0
        assert image_size(data) == (40, 30)

    def test_jpeg_garbage_between_segments(self) -> None:
        """A byte that starts no marker where one must be ends the scan with None."""
        app0 = b"\xff\xe0" + struct.pack(">H", 4) + b"\0\0"
        assert image_size(b"\xff\xd8" + app0 + b"\x00\xc0" + b"\0" * 20) is None

    def test_jpeg_truncated_frame_header(self) -> None:
        """A start-of-frame cut before its size gives None, not a short read."""
        assert image_size(b"\xff\xd8\xff\xc0\x00\x11\x08\x00") is None

    def test_webp_variants(self) -> None:
        """Lossy, lossless and extended WebP headers are all read."""
        lossy = b"\0" * 7 + b"\x9d\x01\x2a" + struct.pack("<HH", 640, 480)
        assert image_size(webp(b"VP8 ", lossy)) == (640, 480)
        bits = (640 - 1) | ((480 - 1) << 14)
        lossless = b"\0" * 4 + b"\x2f" + struct.pack("<I", bits)
        assert image_size(webp(b"VP8L", lossless)) == (640, 480)
        size = (640 - 1).to_bytes(3, "little") + (480 - 1).to_bytes(3, "little")
        ext = b"\0" * 8 + size
        assert image_size(webp(b"VP8X", ext)) == (640, 480)

    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b"hello",
            b"\xff\xd8\x00",
            b"\xff\xd8\xff\xc0\x00",
            png(1, 1)[:20],
            webp(b"VP8 ", b"\0" * 6),
            webp(b"ALPH", b"\0" * 20),
        ],
    )
    def test_unreadable_is_none(self, data: bytes) -> None:
        """Truncated or unknown data gives None, never an exception."""
        assert image_size(data) is None


class TestDataUri:
    def test_base64_and_percent(self) -> None:
        """Both base64 and percent-encoded payloads decode."""
        raw = png(2, 3)
        uri = "data:image/png;base64," + base64.b64encode(raw).decode()
        assert data_uri_bytes(uri) == raw
        assert data_uri_bytes("data:text/plain,a%20b") == b"a b"

    def test_not_data(self) -> None:
        """Plain URLs and broken base64 give None."""
        assert data_uri_bytes("https://example.com/a.png") is None
        assert data_uri_bytes("data:image/png;base64,abc") is None  # bad padding


class TestParseDataUri:
    def test_media_type_drops_parameters(self) -> None:
        """Parameters after the media type are not part of it."""
        assert parse_data_uri("data:image/png;name=a.png;base64,AAAA") == (
            "image/png",
            "AAAA",
        )

    @pytest.mark.parametrize(
        "url",
        ["data:image/png,plain", "data:image/png;base64", "http://x/data:a;base64,b"],
    )
    def test_not_base64_data_uri(self, url: str) -> None:
        """Percent-encoded, comma-less and non-data URLs give None."""
        assert parse_data_uri(url) is None


class TestDataUriBuild:
    def test_round_trip(self) -> None:
        """A built URI parses back into its media type and data."""
        uri = data_uri("image/webp", "UklGRg==")
        assert uri == "data:image/webp;base64,UklGRg=="
        assert parse_data_uri(uri) == ("image/webp", "UklGRg==")


class TestDecodeBase64:
    def test_prefix(self) -> None:
        """A prefix is cut to whole 4-character groups before decoding."""
        text = base64.b64encode(b"abcdefghi").decode()  # 12 characters
        assert decode_base64(text) == b"abcdefghi"
        assert decode_base64(text, 10) == b"abcdef"

    @pytest.mark.parametrize("text", ["a===", "\u00e9" * 4])
    def test_bad_input_gives_empty(self, text: str) -> None:
        """Bad padding or non-ASCII text decodes to nothing rather than raising."""
        assert decode_base64(text) == b""


class TestImageTokens:
    def test_openai_values(self) -> None:
        """OpenAI's published examples: 255, 765, 1105, and 85 at low detail."""
        assert openai_image_tokens(512, 512, "high") == 255
        assert openai_image_tokens(1024, 1024, "high") == 765
        assert openai_image_tokens(2048, 4096, "high") == 1105
        assert openai_image_tokens(2048, 4096, "low") == 85

    def test_openai_small_images_not_upscaled(self) -> None:
        """An image below 768 px is not enlarged: 100x100 is one tile."""
        assert openai_image_tokens(100, 100, None) == 255

    def test_anthropic_values(self) -> None:
        """Anthropic: ceil(w*h/750), long edge cut to 1568, at most 1600."""
        assert anthropic_image_tokens(200, 200) == 54
        assert anthropic_image_tokens(1092, 1092) == 1590
        assert anthropic_image_tokens(8000, 100) == 41  # 1568 x 19.6
        assert anthropic_image_tokens(None, 10) == 1600


class TestImageSizeArguments:
    @pytest.mark.parametrize("bad", [None, 5, "GIF89a", [0x89, 0x50]])
    def test_takes_bytes(self, bad: object) -> None:
        """What is not bytes is named, not a TypeError or IndexError from slicing."""
        with pytest.raises(ArgumentTypeError, match=r"^data: expected bytes"):
            image_size(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    def test_bytes_like(self) -> None:
        """A bytearray or a memoryview is read as its bytes."""
        assert image_size(bytearray(png(3, 4))) == image_size(memoryview(png(3, 4)))
        assert image_size(memoryview(png(3, 4))) == (3, 4)
