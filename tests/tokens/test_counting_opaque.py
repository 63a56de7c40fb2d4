"""Opaque content (documents, files, audio, refusals) is counted, never as 0."""

from __future__ import annotations

import base64
import struct

import pytest

from contextwindow import count_messages, fit
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, Opaque, Text
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.tokens._opaque import (
    AUDIO_TOKENS_PER_SECOND,
    PDF_PAGE_TOKENS,
    payload_tokens,
)

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
