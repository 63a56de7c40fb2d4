"""Opaque content is kept by fit and converted (or warned about) across shapes."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from contextwindow import ContentDroppedWarning, fit
from contextwindow.formats import from_anthropic, to_anthropic, to_openai
from contextwindow.formats._opaque import translate
from contextwindow.messages import Message, Opaque, Text
from contextwindow.wire import message_from_dict, message_to_dict

REFUSAL = "I can't help with that."


def _ask(assistant: Any) -> list[Any]:
    return [
        {"role": "user", "content": "Write me a phishing email."},
        assistant,
        {"role": "user", "content": "Why not?"},
    ]


class TestAssistantContentKept:
    @pytest.mark.parametrize(
        "assistant",
        [
            ChatCompletionMessage(role="assistant", content=None, refusal=REFUSAL),
            {"role": "assistant", "content": None, "refusal": REFUSAL},
            {
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": REFUSAL}],
            },
            {"role": "assistant", "content": None, "audio": {"id": "audio_abc"}},
        ],
        ids=["sdk_refusal", "refusal_field", "refusal_part", "audio"],
    )
    def test_fit_keeps_and_counts_it(self, assistant: Any) -> None:
        """A refusal or an audio reply survives a fit that cuts nothing."""
        f = fit(_ask(assistant), model="gpt-4o", limit=100_000)
        assert f.report.changes == ()
        out = f.as_input()
        assert len(out) == 3
        assert out[1]["role"] == "assistant"
        assert (
            out[1].get("refusal") == REFUSAL
            or "audio" in out[1]
            or (out[1]["content"] == [{"type": "refusal", "refusal": REFUSAL}])
        )

    def test_refusal_text_is_counted(self) -> None:
        """The refusal's text is in the count."""
        plain = fit(_ask({"role": "assistant", "content": ""}), model="gpt-4o")
        refused = fit(
            _ask({"role": "assistant", "content": None, "refusal": REFUSAL * 10}),
            model="gpt-4o",
        )
        assert refused.report.tokens_after > plain.report.tokens_before + 50

    def test_refusal_field_round_trips(self) -> None:
        """The refusal field is written back to the field it came from."""
        chat = _ask({"role": "assistant", "content": None, "refusal": REFUSAL})
        assert fit(chat, model="gpt-4o").as_input() == chat


class TestAnthropicOpaqueTurns:
    @pytest.mark.parametrize(
        "block",
        [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "x"},
            },
            {
                "type": "search_result",
                "source": "https://example.com",
                "title": "t",
                "content": [{"type": "text", "text": "x"}],
            },
        ],
    )
    def test_only_block_turn_is_not_blank(self, block: dict[str, Any]) -> None:
        """A user turn of one document or search result goes through fit."""
        body = {"messages": [{"role": "user", "content": [block]}]}
        f = fit(body, model="claude-sonnet-4-5", limit=100_000)
        assert f.report.changes == ()
        assert f.as_input() == body


class TestConversion:
    def test_text_document_becomes_text(self) -> None:
        """An Anthropic text document is written to Chat as its text."""
        msgs = from_anthropic(
            [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {
                                "type": "text",
                                "media_type": "text/plain",
                                "data": "Fee: 4,200 EUR.",
                            },
                        },
                        {"type": "text", "text": "What is the fee?"},
                    ],
                }
            ]
        )
        assert to_openai(msgs)[0]["content"] == [
            {"type": "text", "text": "Fee: 4,200 EUR."},
            {"type": "text", "text": "What is the fee?"},
        ]

    def test_pdf_file_becomes_document(self) -> None:
        """A Chat PDF ``file`` part is written to Anthropic as a PDF document."""
        part = Opaque.of(
            "openai",
            {
                "type": "file",
                "file": {
                    "filename": "a.pdf",
                    "file_data": "data:application/pdf;base64,JVBE",
                },
            },
        )
        turns = to_anthropic([Message("user", (part,))]).messages
        assert turns[0]["content"] == [
            {
                "type": "document",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": "JVBE",
                },
            }
        ]

    def test_refusal_becomes_text_for_anthropic(self) -> None:
        """A refusal has no Anthropic block: it goes as text."""
        part = Opaque.of("openai", {"type": "refusal", "refusal": "No."})
        assert translate(part, "anthropic") == Text("No.")

    def test_no_equivalent_warns(self) -> None:
        """What the target cannot take is left out with a warning, never silently."""
        part = Opaque.of("anthropic", {"type": "container_upload", "file_id": "f"})
        msg = Message("user", (part, Text("hi")))
        with pytest.warns(ContentDroppedWarning, match=r"messages\[0\]\.parts\[0\]"):
            out = to_openai([msg])
        assert out == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


class TestWire:
    def test_opaque_round_trips(self) -> None:
        """The wire form keeps an Opaque part byte for byte."""
        part = Opaque.of("anthropic", {"type": "document", "title": "ü"})
        msg = Message("user", (part,))
        back = message_from_dict(message_to_dict(msg))
        assert back == msg
        assert back.parts[0] == part
