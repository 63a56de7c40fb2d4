"""Opaque content (documents, files, audio, refusals) is counted, never as 0."""

from __future__ import annotations

import base64
import gc
import os
import struct
import tracemalloc
import zlib
from typing import Any

import pytest

from contextwindow import count_messages, fit
from contextwindow._pdf import INFLATE_CAP
from contextwindow.errors import BudgetError, ContentDroppedWarning
from contextwindow.formats import (
    from_anthropic,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)
from contextwindow.messages import Image, Message, Opaque, Provider, Text
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens._opaque import (
    AUDIO_TOKENS_PER_SECOND,
    PDF_BYTES_PER_PAGE,
    PDF_PAGE_TOKENS,
    payload_tokens,
)
from contextwindow.wire import from_dicts, to_dicts

DOC = "".join(f"Clause {i}: the fee is 4,200 EUR. " for i in range(3000))


def _document_body(doc: str = DOC) -> dict[str, object]:
    return {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "document",
                        "source": {
                            "type": "text",
                            "media_type": "text/plain",
                            "data": doc,
                        },
                    },
                    {"type": "text", "text": "What is the fee?"},
                ],
            }
        ]
    }


def _wav(seconds: float, rate: int = 24_000) -> str:
    data = b"\x00\x00" * int(rate * seconds)  # 16-bit mono
    head = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
    head += struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    head += b"data" + struct.pack("<I", len(data))
    return base64.b64encode(head + data).decode()


def _pdf(pages: int) -> str:
    body = b"%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n"
    body += f"2 0 obj <</Type /Pages /Count {pages}>> endobj\n".encode()
    body += b"".join(b"<</Type /Page>>\n" for _ in range(pages))
    return base64.b64encode(body).decode()


class TestOpaqueCounting:
    def test_anthropic_text_document_counts_its_text(self) -> None:
        """A text document counts about as much as its text does."""
        text = count_messages(
            [Message.user(DOC)], "claude-sonnet-4-5", provider="anthropic"
        )
        doc = count_messages(
            _document_body(), "claude-sonnet-4-5", provider="anthropic"
        )
        assert doc >= text

    def test_fit_never_claims_a_fit_over_budget(self) -> None:
        """fit raises BudgetError rather than report fits=True far over budget."""
        with pytest.raises(BudgetError):
            fit(_document_body(), model="claude-sonnet-4-5", limit=1_000)

    def test_chat_input_audio_counts_its_seconds(self) -> None:
        """400 KB of WAV audio counts its seconds, not 10 tokens."""
        audio = _wav(8.0)
        chat = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "input_audio",
                        "input_audio": {"data": audio, "format": "wav"},
                    }
                ],
            }
        ]
        assert count_messages(chat, "gpt-4o") >= 8 * AUDIO_TOKENS_PER_SECOND

    def test_chat_file_pdf_counts_its_pages(self) -> None:
        """A Chat ``file`` part holding a 5-page PDF counts 5 pages."""
        uri = "data:application/pdf;base64," + _pdf(5)
        chat = [
            {
                "role": "user",
                "content": [
                    {"type": "file", "file": {"filename": "a.pdf", "file_data": uri}}
                ],
            }
        ]
        assert count_messages(chat, "gpt-4o") >= 5 * PDF_PAGE_TOKENS

    def test_responses_input_file_counts(self) -> None:
        """A Responses ``input_file`` holding a PDF counts its pages."""
        items = [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_file",
                        "filename": "a.pdf",
                        "file_data": "data:application/pdf;base64," + _pdf(3),
                    }
                ],
            }
        ]
        n = count_messages(items, "gpt-4o", provider="responses")
        assert n >= 3 * PDF_PAGE_TOKENS

    def test_anthropic_base64_pdf_counts_its_pages(self) -> None:
        """An Anthropic base64 PDF document counts PDF_PAGE_TOKENS a page."""
        block = {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": _pdf(7),
            },
        }
        body = {"messages": [{"role": "user", "content": [block]}]}
        n = count_messages(body, "claude-sonnet-4-5", provider="anthropic")
        assert n >= 7 * PDF_PAGE_TOKENS

    def test_refusal_text_is_counted(self) -> None:
        """A refusal counts as its text."""
        counter = TokenCounter(BPETokenizer("o200k_base"))
        text = "I can't help with that, and here is a long reason why. " * 20
        refusal = Opaque.of("openai", {"type": "refusal", "refusal": text})
        assert counter.part(refusal) >= counter.part(Text(text))

    def test_equal_text_different_documents_count_differently(self) -> None:
        """Counts are cached by content: two documents never share one."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "anthropic")
        small = _document_body("short")
        big = _document_body(DOC)
        assert counter.messages(big) > counter.messages(small) + 10_000


class TestPayloadEstimates:
    def test_pdf_pages_inside_object_streams(self) -> None:
        """A PDF whose page tree is compressed still gives its page count."""
        import zlib

        inner = zlib.compress(b"<</Type /Pages /Count 4>>")
        pdf = b"%PDF-1.5\n1 0 obj <</Type /ObjStm>> stream\n" + inner + b"\nendstream"
        n = payload_tokens("application/pdf", base64.b64encode(pdf).decode())
        assert n == 4 * PDF_PAGE_TOKENS

    def test_unreadable_pdf_leans_to_pages_by_size(self) -> None:
        """A PDF with no readable page count is taken as 10 KB a page."""
        data = base64.b64encode(b"%PDF" + bytes(40_000)).decode()
        assert payload_tokens("application/pdf", data) == 5 * PDF_PAGE_TOKENS

    def test_compressed_audio_by_size(self) -> None:
        """MP3 without a header rate counts 8,000 bytes a second."""
        data = base64.b64encode(bytes(80_000)).decode()
        assert payload_tokens("audio/mp3", data) == 10 * AUDIO_TOKENS_PER_SECOND


class _Inflation:
    """Records what ``zlib.decompressobj`` objects are given and give back."""

    def __init__(self) -> None:
        self.given = 0  # bytes handed to decompress
        self.inflated = 0  # bytes it returned

    def __call__(self, *args: Any) -> _CountingInflater:
        return _CountingInflater(self, _DECOMPRESSOBJ(*args))


class _CountingInflater:
    def __init__(self, log: _Inflation, inner: Any) -> None:
        self._log = log
        self._inner = inner

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        self._log.given += len(data)
        out: bytes = self._inner.decompress(data, max_length)
        self._log.inflated += len(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_DECOMPRESSOBJ = zlib.decompressobj


def _object_streams(bodies: list[bytes]) -> str:
    """A base64 PDF of object streams (``/Type /ObjStm``) holding ``bodies``."""
    pdf = b"%PDF-1.5\n" + b"".join(
        b"%d 0 obj <</Type /ObjStm /Filter /FlateDecode>> stream\n" % i
        + body
        + b"\nendstream endobj\n"
        for i, body in enumerate(bodies)
    )
    return base64.b64encode(pdf).decode()


class TestPdfReadingIsBounded:
    @pytest.fixture
    def inflation(self, monkeypatch: pytest.MonkeyPatch) -> _Inflation:
        log = _Inflation()
        monkeypatch.setattr(zlib, "decompressobj", log)
        return log

    def test_each_byte_is_handed_to_zlib_once(self, inflation: _Inflation) -> None:
        """Of many small streams, zlib reads the PDF once, not its rest per stream."""
        bodies = [os.urandom(100) for _ in range(2_000)]  # none inflates
        data = _object_streams(bodies)
        payload_tokens("application/pdf", data)
        assert inflation.given <= len(data) * 3 // 4  # quadratic: ~250 MB

    def test_inflated_bytes_are_capped(self, inflation: _Inflation) -> None:
        """Object streams that inflate a thousandfold stop at INFLATE_CAP in all."""
        bomb = zlib.compress(bytes(4 << 20) + os.urandom(8), 9)  # 4 KB -> 4 MiB
        data = _object_streams([bomb] * 8)
        n = payload_tokens("application/pdf", data)
        assert inflation.inflated <= INFLATE_CAP < 8 * (4 << 20)
        pages_by_size = -(-len(base64.b64decode(data)) // PDF_BYTES_PER_PAGE)
        assert n >= PDF_PAGE_TOKENS * pages_by_size  # past the cap: leans high

    def test_streams_that_hold_no_pages_are_not_inflated(
        self, inflation: _Inflation
    ) -> None:
        """A page's content stream is not inflated: only object streams hold pages."""
        content = zlib.compress(os.urandom(8) + bytes(1 << 20))
        pdf = b"%PDF-1.5\n1 0 obj <</Filter /FlateDecode>> stream\n" + content
        data = base64.b64encode(pdf + b"\nendstream endobj\n").decode()
        assert payload_tokens("application/pdf", data) == PDF_PAGE_TOKENS
        assert inflation.inflated == 0


class TestCachesHoldNoPayload:
    def test_distinct_documents_are_not_kept(self) -> None:
        """Counting many large documents keeps a bounded amount of them, not all."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "anthropic")
        size = 4_000_000  # characters of base64 per document
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(16):
                data = base64.b64encode(b"%d" % i + bytes(size * 3 // 4)).decode()
                source = {"type": "base64", "media_type": "application/pdf"}
                doc = {"type": "document", "source": {**source, "data": data}}
                counter.part(Opaque.of("anthropic", doc))
                del data, doc
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert held < 48 * 1_000_000  # all 16 would be 128 MB (key and payload)


class TestByReference:
    @pytest.mark.parametrize(
        ("provider", "block"),
        [
            ("anthropic", {"type": "document", "source": {"type": "url", "url": "u"}}),
            (
                "anthropic",
                {"type": "document", "source": {"type": "file", "file_id": "f1"}},
            ),
            ("openai", {"type": "file", "file": {"file_id": "file-abc"}}),
            ("responses", {"type": "input_file", "file_id": "file-abc"}),
            ("responses", {"type": "input_file", "file_url": "https://x/a.pdf"}),
        ],
    )
    def test_document_by_reference_counts_a_page(
        self, provider: Provider, block: dict[str, Any]
    ) -> None:
        """A document or file sent by id or URL counts one PDF page, never 0."""
        counter = TokenCounter(BPETokenizer("o200k_base"), provider)
        assert counter.part(Opaque.of(provider, block)) == PDF_PAGE_TOKENS

    @pytest.mark.parametrize("provider", ["openai", "anthropic"])
    def test_image_by_file_id_counts_an_image(self, provider: Provider) -> None:
        """An image sent by file id costs what an image of unknown size does."""
        counter = TokenCounter(BPETokenizer("o200k_base"), provider)
        part = Opaque.of("responses", {"type": "input_image", "file_id": "f1"})
        assert counter.part(part) == counter.image(Image("file:")) > 0

    @pytest.mark.parametrize(
        ("provider", "detail", "tokens"),
        [
            ("responses", "low", 85),
            ("openai", "low", 85),
            ("responses", "high", 765),
            ("responses", None, 765),
            ("anthropic", "low", 1600),
        ],
    )
    def test_image_by_file_id_keeps_its_detail(
        self, provider: Provider, detail: str | None, tokens: int
    ) -> None:
        """An image sent by file id at low detail costs 85 on OpenAI, as by URL."""
        counter = TokenCounter(BPETokenizer("o200k_base"), provider)
        block: dict[str, Any] = {"type": "input_image", "file_id": "f1"}
        if detail is not None:
            block["detail"] = detail
        assert counter.part(Opaque.of("responses", block)) == tokens
        by_url = Image("https://example.com/a.png", detail=detail)
        assert counter.image(by_url) == tokens

    def test_an_odd_detail_is_read_as_none(self) -> None:
        """A ``detail`` that is no string counts as unset, and does not raise."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        block = {"type": "input_image", "file_id": "f1", "detail": 3}
        assert counter.part(Opaque.of("responses", block)) == 765


def _png(width: int, height: int, pad: int = 0) -> str:
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR"
    head += struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0) + b"\0" * 4
    return base64.b64encode(head + bytes(pad)).decode()


def _jpeg_late_size(width: int, height: int) -> str:
    """A JPEG whose frame header follows 200 bytes of APP1 metadata."""
    app1 = b"\xff\xe1" + struct.pack(">H", 202) + bytes(200)
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    return base64.b64encode(b"\xff\xd8" + app1 + sof + bytes(100)).decode()


def _in_document(media_type: str, data: str) -> Opaque:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": data},
    }
    return Opaque.of(
        "anthropic",
        {"type": "document", "source": {"type": "content", "content": [image]}},
    )


class TestImagePayloads:
    """An image inside an opaque block costs an image, not its bytes / 2."""

    @pytest.mark.parametrize("provider", ["anthropic", "openai"])
    def test_image_in_a_content_document_counts_as_an_image(
        self, provider: Provider
    ) -> None:
        """A 300 KB 800x600 PNG in an Anthropic content document costs what the
        image block does (643 tokens on Anthropic), not 150,000."""
        counter = TokenCounter(BPETokenizer("o200k_base"), provider)
        data = _png(800, 600, pad=300_000)
        image = counter.image(Image("file:", width=800, height=600))
        assert counter.part(_in_document("image/png", data)) == image
        assert image < 1000
        block = from_anthropic(
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": data,
                            },
                        }
                    ],
                }
            ]
        )[0].parts[0]
        assert counter.part(block) == image

    def test_size_read_past_the_first_bytes(self) -> None:
        """A JPEG whose size follows its metadata is still read: 1000x1000."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "anthropic")
        part = _in_document("image/jpeg", _jpeg_late_size(1000, 1000))
        assert counter.part(part) == 1334

    @pytest.mark.parametrize(
        "data",
        [_png(0, 5), base64.b64encode(b"junk").decode()],
        ids=["zero-wide", "no-header"],
    )
    def test_unreadable_size_is_an_image_of_unknown_size(self, data: str) -> None:
        """A header that gives no size (corrupt, zero-wide) counts the unknown
        size's cost, and does not raise."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "anthropic")
        assert counter.part(_in_document("image/png", data)) == 1600

    def test_responses_image_file_counts_as_an_image(self) -> None:
        """An ``input_file`` holding a PNG costs its name and an image."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        uri = "data:image/png;base64," + _png(512, 512, pad=100_000)
        block = {"type": "input_file", "filename": "a.png", "file_data": uri}
        part = Opaque.of("responses", block)
        assert counter.part(part) == counter.text("a.png") + 255


class TestLangChainBlocks:
    @pytest.mark.parametrize(
        "block",
        [
            {"type": "file", "base64": _pdf(2), "mime_type": "application/pdf"},
            {
                "type": "file",
                "source_type": "base64",
                "data": _pdf(2),
                "mime_type": "application/pdf",
            },
        ],
    )
    def test_base64_with_mime_type_is_a_payload(self, block: dict[str, Any]) -> None:
        """LangChain's base64 PDF counts its 2 pages, not its base64 as text."""
        counter = TokenCounter(BPETokenizer("o200k_base"), "openai")
        assert counter.part(Opaque.of("openai", block)) == 2 * PDF_PAGE_TOKENS


def _text_document(doc: str = DOC) -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": doc},
    }


def _fetched(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic conversation whose one tool returned ``blocks``."""
    return [
        {"role": "user", "content": "Read the contract."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "fetch", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": list(blocks)},
                {"type": "text", "text": "What is the fee?"},
            ],
        },
    ]


def _pdf_document(pages: int) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "application/pdf", "data": _pdf(pages)}
    return {"type": "document", "source": source}


SEARCH_HIT = {
    "type": "search_result",
    "source": "https://kb.example/fees",
    "title": "Fees",
    "content": [{"type": "text", "text": "The fee is 4,200 EUR a year."}],
}


class TestInsideToolResults:
    """Documents and search results a tool returns are content like its text."""

    def test_a_document_in_a_tool_result_is_counted(self) -> None:
        """A 36,000-token document a tool returned counts, not 0."""
        body = _fetched({"type": "text", "text": "here"}, _text_document())
        text = count_messages(
            [Message.user(DOC)], "claude-sonnet-4-5", provider="anthropic"
        )
        assert count_messages(body, "claude-sonnet-4-5", provider="anthropic") > text

    def test_fit_cuts_the_document_and_what_is_sent_fits(self) -> None:
        """The document is truncated like text; what goes out fits the budget."""
        body = _fetched({"type": "text", "text": "here"}, _text_document())
        fitted = fit(body, model="claude-sonnet-4-5", limit=8_000, reserve=0)
        sent = fitted.as_input()
        assert fitted.report.fits
        assert count_messages(sent, "claude-sonnet-4-5", provider="anthropic") <= 8_000
        (result,) = fitted.messages[2].tool_results
        assert isinstance(result.content, str)  # truncated to text: head and tail
        assert result.content.startswith("here\nClause 0: the fee is 4,200 EUR.")

    def test_round_trip_is_identical(self) -> None:
        """Blocks of a tool result come back where they were."""
        body = _fetched({"type": "text", "text": "see"}, SEARCH_HIT)
        msgs = from_anthropic(body)
        (result,) = msgs[2].tool_results
        assert result.content == (Text("see"), Opaque.of("anthropic", SEARCH_HIT))
        assert to_anthropic(msgs).messages == body

    def test_search_result_text_is_what_summaries_read(self) -> None:
        """A result's text holds the search result's content (cuts see it)."""
        (result,) = from_anthropic(_fetched(SEARCH_HIT))[2].tool_results
        assert "4,200 EUR" in result.text

    def test_written_for_chat_as_text(self) -> None:
        """Chat's tool message takes text: a search result goes as its text."""
        msgs = from_anthropic(_fetched(SEARCH_HIT))
        tool = [m for m in to_openai(msgs) if m["role"] == "tool"]
        assert tool[0]["content"] == [
            {
                "type": "text",
                "text": "https://kb.example/fees\nFees\nThe fee is 4,200 EUR a year.",
            }
        ]

    def test_pdf_goes_to_responses_as_input_file(self) -> None:
        """A PDF document becomes an input_file in a function_call_output."""
        pdf = _pdf_document(2)
        items = to_responses(from_anthropic(_fetched(pdf)))
        (output,) = [i for i in items if i.get("type") == "function_call_output"]
        assert output["output"][0]["type"] == "input_file"

    def test_pdf_left_out_of_chat_with_a_warning_naming_it(self) -> None:
        """Chat's tool message cannot carry a PDF: a warning names the block."""
        pdf = _pdf_document(2)
        msgs = from_anthropic(_fetched({"type": "text", "text": "a"}, pdf))
        with pytest.warns(
            ContentDroppedWarning, match=r"messages\[2\]\.parts\[0\]\.content\[1\]"
        ):
            tool = [m for m in to_openai(msgs) if m["role"] == "tool"]
        assert tool[0]["content"] == [{"type": "text", "text": "a"}]

    def test_a_named_pdf_is_not_passed_off_as_its_name(self) -> None:
        """A PDF with a filename left out of Chat warns; its name is no content."""
        items: list[dict[str, Any]] = [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "Here is the file."},
                    {
                        "type": "input_file",
                        "filename": "contract.pdf",
                        "file_data": "data:application/pdf;base64," + _pdf(3),
                    },
                ],
            },
        ]
        with pytest.warns(ContentDroppedWarning, match="input_file"):
            tool = [m for m in to_openai(from_responses(items)) if m["role"] == "tool"]
        assert tool[0]["content"] == [{"type": "text", "text": "Here is the file."}]

    def test_responses_input_file_in_an_output_is_counted(self) -> None:
        """A Responses function_call_output holding a PDF counts its pages."""
        items: list[dict[str, Any]] = [
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get",
                "arguments": "{}",
            },
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {
                        "type": "input_file",
                        "filename": "a.pdf",
                        "file_data": "data:application/pdf;base64," + _pdf(4),
                    }
                ],
            },
        ]
        assert (
            count_messages(items, "gpt-4o", provider="responses") >= 4 * PDF_PAGE_TOKENS
        )
        assert to_responses(from_responses(items)) == items

    def test_wire_form_keeps_them(self) -> None:
        """The library's own JSON form writes and reads them back."""
        msgs = from_anthropic(_fetched({"type": "text", "text": "see"}, SEARCH_HIT))
        assert from_dicts(to_dicts(msgs)) == msgs

    def test_langchain_tool_message_document_is_counted(self) -> None:
        """A LangChain ToolMessage holding a document is counted as one."""
        lc = pytest.importorskip("langchain_core.messages")
        from contextwindow.integrations.langchain import from_langchain

        (msg,) = from_langchain(
            [lc.ToolMessage(content=[_text_document()], tool_call_id="t1")]
        )
        (result,) = msg.tool_results
        assert result.content == (Opaque.of("anthropic", _text_document()),)
        counter = TokenCounter(BPETokenizer("o200k_base"))
        assert counter.part(result) > counter.text(DOC) // 2


class TestContainerUpload:
    def test_counts_its_json_not_a_page(self) -> None:
        """A container_upload puts a file in the container, not the context."""
        block = {"type": "container_upload", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}
        counter = TokenCounter(BPETokenizer("o200k_base"), "anthropic")
        part = Opaque.of("anthropic", block)
        assert counter.part(part) == BPETokenizer("o200k_base").count(part.raw)
        assert counter.part(part) < PDF_PAGE_TOKENS


class TestSystemDocuments:
    def test_a_chat_system_document_counts_as_a_user_one(self) -> None:
        """A file part in a Chat system message adds what it adds to a user message."""
        pdf = {
            "type": "file",
            "file": {
                "filename": "terms.pdf",
                "file_data": "data:application/pdf;base64," + _pdf(3),
            },
        }
        text = [{"type": "text", "text": "Rules:"}]

        def added(role: str) -> int:
            def conv(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
                return [
                    {"role": role, "content": content},
                    {"role": "user", "content": "q"},
                ]

            return count_messages(conv([*text, pdf]), "gpt-4o") - count_messages(
                conv(text), "gpt-4o"
            )

        assert added("system") == added("user") > 0
