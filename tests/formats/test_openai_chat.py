from __future__ import annotations

import base64
import copy
import enum
import json
from dataclasses import replace
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.errors import InvalidMessageError
from contextwindow.formats import from_openai, image_size, to_openai
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    units,
)
from contextwindow.tokens import count_messages

PNG_2X3 = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAC0lEQVR4"
    "nGNgwAIAABUAAapll8QAAAAASUVORK5CYII="
)


def call(cid: str, name: str = "f", args: str = "{}") -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


RICH: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be terse."},
    {"role": "system", "content": [{"type": "text", "text": "Policy A"}]},
    {"role": "user", "name": "ada", "content": "hi"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": PNG_2X3, "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("c1", "zoom", '{"x": 1}')],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "zoom", "content": "big"},
    {
        "role": "assistant",
        "content": "Two calls.",
        "tool_calls": [call("c2"), call("c2", "g", "")],
        "refusal": None,
    },
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "1"}]},
    {"role": "tool", "tool_call_id": "c2", "content": ""},
    {"role": "assistant", "content": "", "reasoning_content": "hmm"},
    {"role": "user", "content": []},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
    {"role": "assistant", "tool_calls": [call("c3")]},
    {"role": "tool", "tool_call_id": "c3", "content": None},
    {"role": "assistant", "content": "ok", "tool_calls": []},
    {"role": "user", "content": None},
]


class TestFromOpenAI:
    def test_roles(self) -> None:
        """Developer becomes system; user, assistant and tool keep their role."""
        msgs = from_openai(RICH)
        assert [m.role for m in msgs[:7]] == [
            "system",
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]

    def test_name_is_kept(self) -> None:
        """A message's name goes to Message.name."""
        assert from_openai(RICH)[2].name == "ada"

    def test_tool_calls_become_parts(self) -> None:
        """Each tool call becomes a ToolCall with its arguments byte for byte."""
        msg = from_openai(RICH)[6]
        assert msg.parts == (
            Text("Two calls."),
            ToolCall("c2", "f", "{}"),
            ToolCall("c2", "g", ""),
        )
        assert from_openai(RICH)[4].tool_calls[0].arguments == '{"x": 1}'

    def test_custom_tool_calls(self) -> None:
        """A custom tool's call (free-text input, gpt-5's custom tools) is a
        ToolCall whose arguments are its input as a JSON string, answered by a
        tool message, and written back as the custom call it was; a rewrite of
        its input is written as the new text."""
        data: list[dict[str, Any]] = [
            {"role": "user", "content": "patch it"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "custom",
                        "custom": {"name": "apply_patch", "input": "*** Begin Patch"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ]
        conv = from_openai(data)
        (call,) = conv[1].tool_calls
        assert (call.name, call.input) == ("apply_patch", "*** Begin Patch")
        assert [u.kind for u in units(conv)] == ["message", "tool_exchange"]
        assert to_openai(conv) == data
        cut = conv[1].with_parts([replace(call, arguments='"*** Begin [cut]"')])
        written = to_openai([conv[0], cut, conv[2]])[1]["tool_calls"][0]
        assert written["custom"] == {"name": "apply_patch", "input": "*** Begin [cut]"}

    def test_tool_message(self) -> None:
        """A tool message holds one ToolResult with call id, content and name."""
        msgs = from_openai(RICH)
        assert msgs[5].parts == (ToolResult("c1", "big", name="zoom"),)
        assert msgs[7].parts == (ToolResult("c2", (Text("1"),)),)
        assert msgs[13].parts == (ToolResult("c3", ""),)

    def test_image_size_from_data_uri(self) -> None:
        """An image_url data URI becomes an Image with its pixel size and detail."""
        msg = from_openai(RICH)[3]
        assert msg.parts[1] == Image(PNG_2X3, "low", 2, 3)

    def test_unmodelled_part_is_opaque_in_place(self) -> None:
        """An input_audio part becomes an Opaque part in its place."""
        msg = from_openai(RICH)[3]
        assert len(msg.parts) == 3
        assert isinstance(msg.parts[2], Opaque)
        assert msg.parts[2].type == "input_audio"
        assert "opaque" not in msg.meta.get("openai", {})

    def test_reasoning_content(self) -> None:
        """reasoning_content becomes a leading Thinking part."""
        msg = from_openai(RICH)[9]
        assert msg.parts == (Thinking("hmm"),)

    def test_units_pair_repeated_ids(self) -> None:
        """Repeated call ids still form complete units."""
        assert all(u.complete for u in units(from_openai(RICH)))

    def test_legacy_function_call(self) -> None:
        """The legacy function_call/function pair becomes a paired call and result."""
        legacy: list[dict[str, Any]] = [
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "f", "arguments": "{}"},
            },
            {"role": "function", "name": "f", "content": "42"},
        ]
        msgs = from_openai(legacy)
        assert msgs[0].tool_calls == (ToolCall("legacy_0", "f", "{}"),)
        assert msgs[1].parts == (ToolResult("legacy_0", "42", name="f"),)
        assert all(u.complete for u in units(msgs))
        assert to_openai(msgs) == legacy

    def test_input_not_mutated(self) -> None:
        """Reading and writing leave the input untouched."""
        before = copy.deepcopy(RICH)
        to_openai(from_openai(RICH))
        assert before == RICH


class TestOpenAIErrors:
    @pytest.mark.parametrize(
        ("messages", "where", "reason"),
        [
            ({"role": "user"}, "messages", "expected an array, got object"),
            ([[]], "messages[0]", "expected an object, got array"),
            ([{"content": "x"}], "messages[0].role", "missing"),
            (
                [{"role": "robot", "content": "x"}],
                "messages[0].role",
                "unknown role 'robot'",
            ),
            ([{"role": 3}], "messages[0].role", "expected a string, got number"),
            (
                [{"role": "user", "content": 5}],
                "messages[0].content",
                "expected a string, a list or null, got number",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "a"}, {"type": "foo"}],
                    }
                ],
                "messages[0].content[1].type",
                "unknown part type 'foo'",
            ),
            (
                [{"role": "user", "content": [{"text": "a"}]}],
                "messages[0].content[0].type",
                "missing",
            ),
            (
                [{"role": "user", "content": [{"type": "text"}]}],
                "messages[0].content[0].text",
                "missing",
            ),
            (
                [{"role": "user", "content": [{"type": "image_url"}]}],
                "messages[0].content[0].image_url",
                "missing",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": "u"}],
                    }
                ],
                "messages[0].content[0].image_url",
                "expected an object, got string",
            ),
            (
                [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
                "messages[0].content[0].image_url.url",
                "missing",
            ),
            (
                [
                    {"role": "user", "content": "a"},
                    {"role": "user", "content": "b"},
                    {"role": "user", "content": "c"},
                    {"role": "assistant", "tool_calls": [call("c", "f", "{nope")]},
                ],
                "messages[3].tool_calls[0].function.arguments",
                "not valid JSON",
            ),
            (
                [{"role": "assistant", "tool_calls": {"id": "c"}}],
                "messages[0].tool_calls",
                "expected an array, got object",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    }
                ],
                "messages[0].tool_calls[0].id",
                "missing",
            ),
            (
                [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom"}]}],
                "messages[0].tool_calls[0].custom",
                "missing",
            ),
            (
                [{"role": "assistant", "tool_calls": [{"id": "c", "type": "mcp"}]}],
                "messages[0].tool_calls[0].type",
                "unknown tool call type 'mcp' (function or custom)",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "type": "function"}],
                    }
                ],
                "messages[0].tool_calls[0].function",
                "missing",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"arguments": "{}"},
                            }
                        ],
                    }
                ],
                "messages[0].tool_calls[0].function.name",
                "missing",
            ),
            ([{"role": "tool", "content": "x"}], "messages[0].tool_call_id", "missing"),
            (
                [{"role": "tool", "tool_call_id": "c", "content": "x", "name": 1}],
                "messages[0].name",
                "expected a string, got number",
            ),
            (
                [{"role": "assistant", "content": "x", "reasoning_content": []}],
                "messages[0].reasoning_content",
                "expected a string, got array",
            ),
            ([{"role": "function", "content": "x"}], "messages[0].name", "missing"),
            (
                [
                    {
                        "role": "assistant",
                        "tool_calls": [call("c")],
                        "function_call": {"name": "f", "arguments": "{}"},
                    }
                ],
                "messages[0].function_call",
                "cannot be combined with tool_calls",
            ),
        ],
    )
    def test_malformed(self, messages: Any, where: str, reason: str) -> None:
        """Malformed input names the exact place and what is wrong there."""
        with pytest.raises(InvalidMessageError) as info:
            from_openai(messages)
        assert (info.value.path, info.value.reason) == (where, reason)

    def test_custom_path(self) -> None:
        """The path argument prefixes every error."""
        with pytest.raises(InvalidMessageError, match=r"^body\.messages\[0\]: "):
            from_openai([1], path="body.messages")  # type: ignore[list-item]  # on purpose


class TestToOpenAI:
    def test_roundtrip_identity(self) -> None:
        """Reading then writing gives the same dicts back."""
        assert to_openai(from_openai(RICH)) == RICH

    def test_several_results_give_several_messages(self) -> None:
        """A tool message with several results becomes several tool messages."""
        msg = Message(
            "tool", (ToolResult("a", "1"), ToolResult("b", "2", is_error=True))
        )
        assert to_openai([msg]) == [
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
        ]

    def test_tool_result_parts(self) -> None:
        """A ToolResult with parts is written as a content list."""
        msg = Message.tool("a", (Text("x"), Text("y")))
        assert to_openai([msg])[0]["content"] == [
            {"type": "text", "text": "x"},
            {"type": "text", "text": "y"},
        ]

    def test_assistant_defaults(self) -> None:
        """Calls without text give content null; text without calls a string."""
        out = to_openai(
            [
                Message.assistant(tool_calls=[ToolCall("c", "f", '{"a":1}')]),
                Message.assistant("hi"),
                Message.user([Text("a"), Image("https://x/y.png")]),
            ]
        )
        assert out[0] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a":1}'},
                }
            ],
        }
        assert out[1] == {"role": "assistant", "content": "hi"}
        assert out[2]["content"][1] == {
            "type": "image_url",
            "image_url": {"url": "https://x/y.png"},
        }

    def test_edits_win_over_stale_meta(self) -> None:
        """A strategy's edit of a part is written, not the recorded original."""
        msg = from_openai(
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "long", "x-extra": 1}],
                }
            ]
        )[0]
        edited = msg.with_parts([Text("short")])
        assert to_openai([edited]) == [
            {
                "role": "user",
                "content": [{"type": "text", "text": "short", "x-extra": 1}],
            }
        ]
        # a dropped part makes the per-part record unusable: it is ignored
        dropped = msg.with_parts([])
        assert to_openai([dropped]) == [{"role": "user", "content": ""}]

    def test_foreign_thinking_dropped(self) -> None:
        """Thinking not read from reasoning_content is not written."""
        msg = Message.assistant([Thinking("secret", signature="sig"), Text("hi")])
        assert to_openai([msg]) == [{"role": "assistant", "content": "hi"}]

    @pytest.mark.parametrize(
        ("msg", "kind"),
        [
            (Message.user([ToolCall("c", "f")]), "tool_call"),
            (Message("system", (Thinking("x"),)), "thinking"),
            (Message("assistant", (ToolResult("c", "x"),)), "tool_result"),
            (Message("tool", (Text("x"),)), "text"),
        ],
    )
    def test_misplaced_part(self, msg: Message, kind: str) -> None:
        """A part the role cannot carry raises naming messages[i].parts[j]."""
        with pytest.raises(InvalidMessageError) as info:
            to_openai([Message.user("ok"), msg])
        assert info.value.path == "messages[1].parts[0]"
        assert kind in info.value.reason

    def test_output_is_json(self) -> None:
        """The output serialises to JSON."""
        json.dumps(to_openai(from_openai(RICH)))


def jpeg(width: int, height: int, sof: int = 0xC0) -> bytes:
    app0 = b"\xff\xe0" + (16).to_bytes(2, "big") + b"JFIF\x00" + bytes(9)
    dht = b"\xff\xc4" + (5).to_bytes(2, "big") + bytes(3)
    frame = (
        bytes([0xFF, sof])
        + (11).to_bytes(2, "big")
        + b"\x08"
        + height.to_bytes(2, "big")
        + width.to_bytes(2, "big")
        + bytes(4)
    )
    return b"\xff\xd8" + app0 + dht + frame + b"\xff\xd9"


def webp(chunk: bytes, payload: bytes) -> bytes:
    body = b"WEBP" + chunk + len(payload).to_bytes(4, "little") + payload
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def png(width: int, height: int) -> bytes:
    """A PNG's signature and IHDR chunk (what a header read sees)."""
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + (13).to_bytes(4, "big") + b"IHDR" + ihdr + bytes(4)


class TestImageSize:
    @pytest.mark.parametrize(
        ("data", "size"),
        [
            (base64.b64decode(PNG_2X3.split(",")[1]), (2, 3)),
            (
                b"GIF89a" + (300).to_bytes(2, "little") + (7).to_bytes(2, "little"),
                (300, 7),
            ),
            (b"GIF87a" + (1).to_bytes(2, "little") + (2).to_bytes(2, "little"), (1, 2)),
            (jpeg(640, 480), (640, 480)),
            (jpeg(17, 4000, sof=0xC2), (17, 4000)),
            (
                webp(
                    b"VP8 ",
                    b"\x00\x00\x00\x9d\x01\x2a"
                    + (33).to_bytes(2, "little")
                    + (44).to_bytes(2, "little"),
                ),
                (33, 44),
            ),
            (
                webp(
                    b"VP8L",
                    b"\x2f" + ((37 - 1) | ((21 - 1) << 14)).to_bytes(4, "little"),
                ),
                (37, 21),
            ),
            (
                webp(
                    b"VP8X",
                    bytes(4)
                    + (999).to_bytes(3, "little")
                    + (1499).to_bytes(3, "little"),
                ),
                (1000, 1500),
            ),
        ],
    )
    def test_known_formats(self, data: bytes, size: tuple[int, int]) -> None:
        """PNG, GIF, JPEG (baseline and progressive) and WebP headers give the size."""
        assert image_size(data) == size

    @pytest.mark.parametrize(
        "data",
        [
            b"",
            b"hello world",
            b"\x89PNG\r\n\x1a\n",
            jpeg(1, 1)[:30],
            b"\xff\xd8\x00\x00",
            webp(b"VP8 ", b"\x00"),
        ],
    )
    def test_unknown_or_truncated(self, data: bytes) -> None:
        """Unknown or truncated data gives None, never an exception."""
        assert image_size(data) is None

    @pytest.mark.parametrize(
        "data",
        [
            png(0, 5),
            png(5, 0),
            b"GIF89a" + (0).to_bytes(2, "little") + (7).to_bytes(2, "little"),
            jpeg(640, 0),
            webp(
                b"VP8 ",
                b"\x00\x00\x00\x9d\x01\x2a" + bytes(2) + (9).to_bytes(2, "little"),
            ),
        ],
    )
    def test_a_side_of_zero_is_unknown(self, data: bytes) -> None:
        """A header that says 0 pixels wide or high gives None: the size is unknown."""
        assert image_size(data) is None

    def test_a_zero_size_header_is_an_image_of_unknown_size(self) -> None:
        """Read, counted and fitted as an image of unknown size, not an error."""
        zero = "data:image/png;base64," + base64.b64encode(png(0, 5)).decode()
        unreadable = "data:image/png;base64,@@@@"

        def body(url: str) -> list[dict[str, Any]]:
            return [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is this?"},
                        {"type": "image_url", "image_url": {"url": url}},
                    ],
                },
            ]

        assert from_openai(body(zero))[2].parts[1] == Image(zero)
        for model in ("gpt-4o", "claude-sonnet-4-5"):
            assert count_messages(body(zero), model) == count_messages(
                body(unreadable), model
            )
        assert fit(body(zero), model="gpt-4o").messages[2].parts[1] == Image(zero)

    def test_base64_is_matched_in_any_case(self) -> None:
        """``;BASE64`` is base64 too (RFC 2397 parameters ignore case)."""
        url = PNG_2X3.replace(";base64,", ";BASE64,")
        msg = from_openai(
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": url}}],
                }
            ]
        )[0]
        assert msg.parts[0] == Image(url, None, 2, 3)

    def test_jpeg_data_uri(self) -> None:
        """A JPEG data URI gets its size even when the frame is far from the start."""
        big = jpeg(12, 34)
        padded = (
            big[:2] + b"\xff\xe1" + (2002).to_bytes(2, "big") + bytes(2000) + big[2:]
        )
        url = "data:image/jpeg;base64," + base64.b64encode(padded).decode()
        msg = from_openai(
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": url}}],
                }
            ]
        )[0]
        assert msg.parts[0] == Image(url, None, 12, 34)

    def test_undecodable_data_uri(self) -> None:
        """A data URI that is not base64 image data gives an Image without size."""
        url = "data:image/png;base64,@@@@"
        msg = from_openai(
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": url}}],
                }
            ]
        )[0]
        assert msg.parts[0] == Image(url)


class TestOpenAIExtras:
    def test_unmodelled_keys_round_trip(self) -> None:
        """Keys no neutral part models, at every level, are written back."""
        fn_call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "f", "arguments": "{}", "strict": True},
            "index": 0,
        }
        data: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {"url": "https://x/y.png", "x-size": "2k"},
                    }
                ],
                "x-trace": "t1",
            },
            {"role": "assistant", "content": None, "tool_calls": [fn_call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok", "x-ms": 5},
        ]
        before = copy.deepcopy(data)
        msgs = from_openai(data)
        assert [m.parts for m in msgs] == [
            (Image("https://x/y.png"),),
            (ToolCall("c1", "f", "{}"),),
            (ToolResult("c1", "ok"),),
        ]
        assert msgs[0].meta["openai"]["extra"] == {"x-trace": "t1"}
        assert to_openai(msgs) == before

    def test_legacy_results_pair_by_name(self) -> None:
        """Legacy function results take the oldest pending call of their name."""
        data: list[dict[str, Any]] = [
            {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}},
            {"role": "assistant", "function_call": {"name": "g", "arguments": "{}"}},
            {"role": "function", "name": "g", "content": "G"},
            {"role": "function", "name": "f", "content": "F"},
            {"role": "function", "name": "h", "content": "H", "x-late": True},
        ]
        msgs = from_openai(data)
        assert [m.tool_results[0].call_id for m in msgs[2:]] == [
            "legacy_1",
            "legacy_0",
            "legacy_4",  # no pending call named h: an id of its own
        ]
        assert msgs[4].meta["openai"]["extra"] == {"x-late": True}
        assert to_openai(msgs)[2:] == data[2:]

    def test_redacted_thinking_is_not_sent(self) -> None:
        """reasoning_content joins visible thinking; redacted thinking is left out."""
        msg = Message.assistant(
            [Thinking("a"), Thinking("", "opaque", redacted=True), Thinking("b")],
            meta={"openai": {"reasoning_content": True}},
        )
        assert to_openai([msg]) == [
            {"role": "assistant", "content": "", "reasoning_content": "ab"}
        ]


PDF_PART: dict[str, Any] = {
    "type": "file",
    "file": {
        "filename": "terms.pdf",
        "file_data": "data:application/pdf;base64,JVBERi0xLjQK",
    },
}


class TestNotJSONArguments:
    @pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
    def test_nan_arguments_are_refused_naming_the_field(self, constant: str) -> None:
        """NaN is not JSON: refused as other non-JSON text is, the field named."""
        msg = {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c1", "f", f'{{"a": {constant}}}')],
        }
        with pytest.raises(InvalidMessageError) as info:
            from_openai([{"role": "user", "content": "q"}, msg])
        assert info.value.path == "messages[1].tool_calls[0].function.arguments"
        assert info.value.reason == f"not valid JSON: {constant} is not JSON"

    def test_a_number_past_a_double_is_refused_naming_the_field(self) -> None:
        """1e400 reads as an infinity: refused as Infinity is, the field named."""
        msg = {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c1", "f", '{\n  "n": 1e400,\n  "ok": true\n}')],
        }
        with pytest.raises(InvalidMessageError) as info:
            from_openai([{"role": "user", "content": "q"}, msg])
        assert info.value.path == "messages[1].tool_calls[0].function.arguments"
        assert info.value.reason.startswith("not valid JSON: 1e400 is past")

    def test_fit_refuses_a_number_past_a_double_at_the_edge(self) -> None:
        """fit names the field, not an ``arguments`` argument inside a strategy."""
        body: list[dict[str, Any]] = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("c1", "run", '{\n  "n": 1e400,\n  "ok": true\n}')],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "word " * 2000},
            {"role": "user", "content": "and now?"},
        ]
        with pytest.raises(InvalidMessageError) as info:
            fit(body, model="gpt-4o", limit=500, reserve=0)
        assert info.value.path == "messages[1].tool_calls[0].function.arguments"

    def test_nan_in_legacy_arguments(self) -> None:
        """The legacy function_call's arguments too."""
        msg = {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "f", "arguments": "[NaN]"},
        }
        with pytest.raises(InvalidMessageError) as info:
            from_openai([msg])
        assert info.value.path == "messages[0].function_call.arguments"


class TestRoleSubclasses:
    def test_str_enum_roles_read_as_roles(self) -> None:
        """A str Enum's members name roles in every role, read as plain strs."""

        class Role(str, enum.Enum):
            SYSTEM = "system"
            DEVELOPER = "developer"
            USER = "user"
            ASSISTANT = "assistant"
            TOOL = "tool"

        msgs = from_openai(
            [
                {"role": Role.SYSTEM, "content": "S"},
                {"role": Role.DEVELOPER, "content": "D"},
                {"role": Role.USER, "content": "q"},
                {"role": Role.ASSISTANT, "content": None, "tool_calls": [call("c1")]},
                {"role": Role.TOOL, "tool_call_id": "c1", "content": "r"},
            ]
        )
        assert [m.role for m in msgs] == [
            "system",
            "system",
            "user",
            "assistant",
            "tool",
        ]
        assert all(type(m.role) is str for m in msgs)
        assert type(msgs[1].meta["openai"]["role"]) is str
        assert to_openai(msgs)[1]["role"] == "developer"

    def test_a_mixed_list_counts(self) -> None:
        """A list mixing plain and subclassed roles counts as the plain one does."""

        class Named(str):
            pass

        plain = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}]
        mixed = [
            {"role": Named("system"), "content": "S"},
            {"role": Named("user"), "content": "q"},
        ]
        assert count_messages(mixed, "gpt-4o") == count_messages(plain, "gpt-4o")


class TestSystemOpaqueParts:
    def test_a_system_file_part_is_an_opaque_part_in_place(self) -> None:
        """A system message's file part is an Opaque part in place, as a user's is."""
        system = {
            "role": "system",
            "content": [{"type": "text", "text": "Rules:"}, PDF_PART],
        }
        msgs = from_openai([system, {"role": "user", "content": "hi"}])
        assert msgs[0].parts[0] == Text("Rules:")
        assert isinstance(msgs[0].parts[1], Opaque)
        assert msgs[0].parts[1].block == PDF_PART
        assert "opaque" not in msgs[0].meta.get("openai", {})
        assert to_openai(msgs)[0] == system

    def test_a_developer_file_part_round_trips(self) -> None:
        """A developer message's too, written back as it came."""
        dev = {
            "role": "developer",
            "content": [PDF_PART, {"type": "text", "text": "Use it."}],
        }
        msgs = from_openai([dev])
        assert isinstance(msgs[0].parts[0], Opaque)
        assert to_openai(msgs) == [dev]

    def test_a_stored_meta_part_is_still_written(self) -> None:
        """A message stored by an earlier version (the part in meta) is written."""
        stored = Message(
            "system",
            (Text("Rules:"),),
            meta={"openai": {"opaque": [[1, PDF_PART]]}},
        )
        assert to_openai([stored])[0]["content"] == [
            {"type": "text", "text": "Rules:"},
            PDF_PART,
        ]
