"""Opaque content is kept by fit and converted (or warned about) across shapes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from contextwindow import ContentDroppedWarning, fit
from contextwindow.formats import (
    from_anthropic,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)
from contextwindow.formats._opaque import opaque_text, translate
from contextwindow.messages import Message, Opaque, Text, ToolCall
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


PDF_3 = base64.b64encode(b"%PDF-1.4\n<</Type /Pages /Count 3>>\n").decode()


class TestFileIds:
    def test_responses_file_id_goes_to_chat(self) -> None:
        """Chat's file part takes an OpenAI file id: a Responses one is kept."""
        part = Opaque.of("responses", {"type": "input_file", "file_id": "file-1"})
        assert to_openai([Message("user", (part,))]) == [
            {
                "role": "user",
                "content": [{"type": "file", "file": {"file_id": "file-1"}}],
            }
        ]

    @pytest.mark.parametrize("write", [to_openai, to_anthropic])
    def test_system_file_is_left_out_with_a_warning(self, write: Any) -> None:
        """A file in a system message: Chat and Anthropic both warn and drop it."""
        system = from_responses(
            [
                {
                    "role": "system",
                    "content": [
                        {"type": "input_text", "text": "Be brief."},
                        {"type": "input_file", "file_id": "file-1"},
                    ],
                },
                {"role": "user", "content": "hi"},
            ]
        )
        with pytest.warns(ContentDroppedWarning, match=r"messages\[0\]\.parts\[1\]"):
            out = write(system)
        assert "file-1" not in json.dumps(out if write is to_openai else out.body())


class TestDroppedWarning:
    @pytest.mark.parametrize("write", [to_openai, to_responses, to_anthropic])
    def test_names_the_part_and_the_caller(self, write: Any) -> None:
        """The warning names messages[i].parts[j] and points at the caller's line."""
        block = {"type": "server_tool_use", "id": "s1", "name": "web", "input": {}}
        conv = [
            Message.user("q"),
            Message("assistant", (Text("x"), Opaque.of("anthropic", block))),
        ]
        if write is to_anthropic:
            conv[1] = Message("assistant", (Text("x"), _AUDIO_REPLY))
        with pytest.warns(ContentDroppedWarning) as caught:
            write(conv)
        (w,) = caught
        assert str(w.message).startswith("messages[1].parts[1]: an ")
        assert w.filename == __file__

    def test_chat_counts_parts_diverted_to_fields(self) -> None:
        """Chat's index is the part's in the message, past a tool call before it."""
        part = Opaque.of("responses", {"type": "input_image", "file_id": "f"})
        conv = [
            Message.user("q"),
            Message("assistant", (ToolCall("c1", "f", "{}"), Text("x"), part)),
            Message.tool("c1", "r"),
        ]
        with pytest.warns(ContentDroppedWarning, match=r"^messages\[1\]\.parts\[2\]"):
            to_openai(conv)

    def test_blank_text_is_no_equivalent(self) -> None:
        """A blank refusal is not written as a blank Anthropic text block."""
        part = Opaque.of("openai", {"type": "refusal", "refusal": "  "})
        assert translate(part, "anthropic") is None


_AUDIO_REPLY = Opaque.of("openai", {"type": "audio", "audio": {"id": "a1"}})


class TestOpaqueValue:
    def test_json_text_is_canonical(self) -> None:
        """Equal blocks are equal parts, however their JSON text was spaced."""
        spaced = Opaque("openai", '{ "type": "refusal",\n  "refusal": "No." }')
        assert spaced == Opaque.of("openai", {"type": "refusal", "refusal": "No."})
        assert spaced.raw == '{"type":"refusal","refusal":"No."}'

    def test_type_is_read_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Asking a part its type does not parse its JSON again."""
        part = Opaque.of("anthropic", {"type": "document", "title": "t"})
        calls: list[str] = []
        real = json.loads

        def loads(text: str, *args: Any, **kwargs: Any) -> Any:
            calls.append(text)
            return real(text, *args, **kwargs)

        monkeypatch.setattr(json, "loads", loads)
        assert [part.type for _ in range(10)] == ["document"] * 10
        assert calls == []


class TestOpaqueText:
    def test_pdf_is_labelled(self) -> None:
        """A PDF reads as a label: type, title, pages."""
        doc = Opaque.of(
            "anthropic",
            {
                "type": "document",
                "title": "Terms",
                "source": {
                    "type": "base64",
                    "media_type": "application/pdf",
                    "data": PDF_3,
                },
            },
        )
        assert opaque_text(doc) == "[document 'Terms', PDF, 3 pages]"

    def test_text_document_reads_as_its_text(self) -> None:
        """A text document reads as its text."""
        source = {"type": "text", "media_type": "text/plain", "data": "Fee: 42."}
        doc = Opaque.of("anthropic", {"type": "document", "source": source})
        assert opaque_text(doc) == "Fee: 42."

    def test_file_by_id_is_labelled(self) -> None:
        """A file sent by id reads as a reference."""
        part = Opaque.of("openai", {"type": "file", "file": {"file_id": "f"}})
        assert opaque_text(part) == "[file, by reference]"
