from __future__ import annotations

import base64
import copy
import json
import urllib.parse
from typing import Any

import pytest

from contextwindow import fit, problems
from contextwindow.errors import InvalidMessageError
from contextwindow.formats import (
    AnthropicRequest,
    from_anthropic,
    from_openai,
    to_anthropic,
)
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

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAC0lEQVR4nGNgwAIAABUAAapll8QAAAAASUVO"
    "RK5CYII="
)
CACHE = {"type": "ephemeral"}

SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are terse.", "cache_control": CACHE},
    {"type": "text", "text": "Policy."},
]
RICH: list[dict[str, Any]] = [
    {"role": "user", "content": "List files."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Use ls.", "signature": "SIG"},
            {"type": "redacted_thinking", "data": "OPAQUE"},
            {"type": "text", "text": "Listing."},
            {
                "type": "tool_use",
                "id": "t1",
                "name": "ls",
                "input": {"dir": "é", "n": 1.5},
                "caller": {"type": "direct"},
            },
            {"type": "tool_use", "id": "t2", "name": "ls", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "a.txt",
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "is_error": True,
                "content": [
                    {"type": "text", "text": "denied"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": PNG_B64,
                        },
                    },
                ],
            },
            {"type": "text", "text": "Why denied?", "cache_control": CACHE},
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "doc"},
            },
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Permissions."}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9"}]},
    {"role": "assistant", "content": ""},
    {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "file", "file_id": "f1"}}],
    },
]


class TestFromAnthropic:
    def test_user_turn_split(self) -> None:
        """A user turn's results become one tool message, the rest a user message."""
        msgs = from_anthropic(RICH)
        assert [m.role for m in msgs] == [
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert [r.call_id for r in msgs[2].tool_results] == ["t1", "t2"]
        assert msgs[3].parts == (
            Text("Why denied?"),
            Opaque.of(
                "anthropic",
                {
                    "type": "document",
                    "source": {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": "doc",
                    },
                },
            ),
            Image("https://x/y.png"),
        )

    def test_blocks(self) -> None:
        """Thinking, redacted thinking, text and tool_use map to neutral parts."""
        parts = from_anthropic(RICH)[1].parts
        assert parts == (
            Thinking("Use ls.", "SIG"),
            Thinking("", "OPAQUE", redacted=True),
            Text("Listing."),
            ToolCall("t1", "ls", '{"dir":"é","n":1.5}'),
            ToolCall("t2", "ls", "{}"),
        )

    def test_tool_result_content(self) -> None:
        """Results keep string or block content and is_error."""
        results = from_anthropic(RICH)[2].tool_results
        assert results[0] == ToolResult("t1", "a.txt")
        assert results[1].is_error
        assert results[1].content[0] == Text("denied")
        image = results[1].content[1]
        assert isinstance(image, Image)
        assert (image.media_type, image.width, image.height) == ("image/png", 2, 3)

    def test_system(self) -> None:
        """The top-level system becomes a leading system message."""
        msgs = from_anthropic([], system=SYSTEM)
        assert msgs == [Message("system", (Text("You are terse."), Text("Policy.")))]
        assert from_anthropic([], system="Hi")[0] == Message.system("Hi")

    def test_units_complete(self) -> None:
        """The exchange of the rich example is one complete unit."""
        assert units(from_anthropic(RICH))[1].kind == "tool_exchange"
        assert units(from_anthropic(RICH))[1].complete


class TestToAnthropic:
    def test_roundtrip_identity(self) -> None:
        """Reading then writing gives back system and messages."""
        before = copy.deepcopy(RICH)
        req = to_anthropic(from_anthropic(RICH, system=SYSTEM))
        assert req == AnthropicRequest(SYSTEM, RICH)
        assert before == RICH

    def test_merges_tool_messages_and_user(self) -> None:
        """Consecutive tool messages and a following user message form one turn."""
        conv = [
            Message.assistant(tool_calls=[ToolCall("a", "f"), ToolCall("b", "g")]),
            Message.tool("a", "1"),
            Message.tool("b", "2", is_error=True),
            Message.user("next"),
            Message.user("again"),
        ]
        assert to_anthropic(conv).messages[1:] == [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "1"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "b",
                        "content": "2",
                        "is_error": True,
                    },
                    {"type": "text", "text": "next"},
                ],
            },
            {"role": "user", "content": "again"},
        ]

    def test_system_forms(self) -> None:
        """One plain system message is a string; several are a block list."""
        assert to_anthropic([Message.system("a")]).system == "a"
        assert to_anthropic([Message.user("x")]).system is None
        two = to_anthropic(
            [Message.system("a"), Message.user("x"), Message.system("b")]
        )
        assert two.system == [
            {"type": "text", "text": "a"},
            {"type": "text", "text": "b"},
        ]
        assert two.body() == {"system": two.system, "messages": two.messages}

    def test_images(self) -> None:
        """Data URIs become base64 sources, other URLs url sources."""
        msg = Message.user(
            [Image("data:image/png;base64," + PNG_B64), Image("https://a/b")]
        )
        assert to_anthropic([msg]).messages[0]["content"] == [
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": PNG_B64,
                },
            },
            {"type": "image", "source": {"type": "url", "url": "https://a/b"}},
        ]

    def test_from_openai_conversion(self) -> None:
        """OpenAI arguments are parsed into input; foreign reasoning is dropped."""
        conv = from_openai(
            [
                {"role": "system", "content": "S"},
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "r",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": [1]}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c", "content": "ok", "name": "f"},
            ]
        )
        req = to_anthropic(conv)
        assert req.system == "S"
        assert req.messages == [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c", "name": "f", "input": {"a": [1]}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c", "content": "ok"}
                ],
            },
        ]

    def test_thinking_without_signature(self) -> None:
        """Neutral thinking is written as a thinking block."""
        msg = Message.assistant([Thinking("t"), Text("x")])
        assert to_anthropic([msg]).messages[0]["content"][0] == {
            "type": "thinking",
            "thinking": "t",
        }

    @pytest.mark.parametrize(
        ("msg", "where", "reason"),
        [
            (
                Message("system", (Image("https://a/b"),)),
                "messages[1].parts[0]",
                "a image part cannot be sent in a system message",
            ),
            (
                Message.user([ToolCall("c", "f")]),
                "messages[1].parts[0]",
                "a tool_call part cannot be sent in a user message",
            ),
            (
                Message("tool", (Text("x"),)),
                "messages[1].parts[0]",
                "a text part cannot be sent in a tool message",
            ),
        ],
    )
    def test_unwritable(self, msg: Message, where: str, reason: str) -> None:
        """A part that cannot be written raises naming messages[i].parts[j]."""
        with pytest.raises(InvalidMessageError) as info:
            to_anthropic([Message.user("hi"), msg])
        assert (info.value.path, info.value.reason) == (where, reason)


class TestAnthropicErrors:
    @pytest.mark.parametrize(
        ("messages", "where", "reason"),
        [
            ("hi", "messages", "expected an array, got string"),
            ([None], "messages[0]", "expected an object, got null"),
            (
                [{"role": "system", "content": "x"}],
                "messages[0].role",
                "unknown role 'system' (the system prompt is a separate field)",
            ),
            ([{"role": "user"}], "messages[0].content", "missing"),
            (
                [{"role": "user", "content": 1}],
                "messages[0].content",
                "expected a string or a list, got number",
            ),
            (
                [{"role": "user", "content": [{"type": "foo"}]}],
                "messages[0].content[0].type",
                "unknown block type 'foo'",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_use", "id": "t", "name": "f", "input": {}}
                        ],
                    }
                ],
                "messages[0].content[0].type",
                "a tool_use block belongs in an assistant message",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_result", "tool_use_id": "t"}],
                    }
                ],
                "messages[0].content[0].type",
                "a tool_result block belongs in a user message",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f"}],
                    }
                ],
                "messages[0].content[0].input",
                "missing",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "t", "name": "f", "input": "{}"}
                        ],
                    }
                ],
                "messages[0].content[0].input",
                "expected an object, got string",
            ),
            (
                [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "name": "f", "input": {}}],
                    }
                ],
                "messages[0].content[0].id",
                "missing",
            ),
            (
                [{"role": "user", "content": [{"type": "tool_result"}]}],
                "messages[0].content[0].tool_use_id",
                "missing",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "is_error": "yes",
                            }
                        ],
                    }
                ],
                "messages[0].content[0].is_error",
                "expected a bool, got string",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "content": {"a": 1},
                            }
                        ],
                    }
                ],
                "messages[0].content[0].content",
                "expected a string or a list, got object",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "content": [{"type": "tool_use"}],
                            }
                        ],
                    }
                ],
                "messages[0].content[0].content[0].type",
                "unknown block type 'tool_use' in a tool result",
            ),
            (
                [{"role": "user", "content": [{"type": "image"}]}],
                "messages[0].content[0].source",
                "missing",
            ),
            (
                [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image", "source": {"type": "base64", "data": "x"}}
                        ],
                    }
                ],
                "messages[0].content[0].source.media_type",
                "missing",
            ),
            (
                [{"role": "assistant", "content": [{"type": "thinking"}]}],
                "messages[0].content[0].thinking",
                "missing",
            ),
            (
                [{"role": "assistant", "content": [{"type": "redacted_thinking"}]}],
                "messages[0].content[0].data",
                "missing",
            ),
        ],
    )
    def test_malformed(self, messages: Any, where: str, reason: str) -> None:
        """Malformed input names the exact place and what is wrong there."""
        with pytest.raises(InvalidMessageError) as info:
            from_anthropic(messages)
        assert (info.value.path, info.value.reason) == (where, reason)

    @pytest.mark.parametrize(
        ("system", "where", "reason"),
        [
            (3, "system", "expected an array, got number"),
            (
                [{"type": "image"}],
                "system[0].type",
                "expected a text block in system, got 'image'",
            ),
            (["x"], "system[0]", "expected an object, got string"),
        ],
    )
    def test_malformed_system(self, system: Any, where: str, reason: str) -> None:
        """A malformed system prompt names its place."""
        with pytest.raises(InvalidMessageError) as info:
            from_anthropic([], system=system)
        assert (info.value.path, info.value.reason) == (where, reason)

    def test_input_that_is_not_json(self) -> None:
        """A tool_use input holding non-JSON values (from Python) names its place."""
        block = {"type": "tool_use", "id": "t", "name": "f", "input": {"at": {1, 2}}}
        with pytest.raises(InvalidMessageError) as info:
            from_anthropic([{"role": "assistant", "content": [block]}])
        assert info.value.path == "messages[0].content[0].input"
        assert info.value.reason.startswith("not JSON: ")


class TestAnthropicRoundTrips:
    def test_tool_result_blocks(self) -> None:
        """Result blocks with extras, documents and file images come back in place."""
        doc = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "d"},
        }
        file_image = {"type": "image", "source": {"type": "file", "file_id": "f1"}}
        turn = {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "see", "cache_control": CACHE},
                        doc,
                        {"type": "text", "text": "and"},
                        file_image,
                    ],
                }
            ],
        }
        before = copy.deepcopy(turn)
        (msg,) = from_anthropic([turn])
        held = (
            Text("see"),
            Opaque.of("anthropic", doc),
            Text("and"),
            Opaque.of("anthropic", file_image),
        )
        assert msg.tool_results == (ToolResult("t1", held),)
        assert to_anthropic([msg]).messages == [before]

    def test_image_source_extras(self) -> None:
        """Keys of an image source that are not modelled are written back."""
        block = {
            "type": "image",
            "source": {"type": "url", "url": "https://a/b.png", "note": "x"},
        }
        (msg,) = from_anthropic([{"role": "user", "content": [block]}])
        assert msg.parts == (Image("https://a/b.png"),)
        assert to_anthropic([msg]).messages[0]["content"] == [block]

    def test_system_list_forms(self) -> None:
        """A one-block system list stays a list; an empty list stays empty."""
        one = [{"type": "text", "text": "Be brief."}]
        msgs = from_anthropic([], system=one)
        assert msgs == [Message.system("Be brief.")]
        assert to_anthropic(msgs).system == one
        empty = from_anthropic([], system=[])
        assert empty == [Message("system", ())]
        assert to_anthropic(empty).system == []

    def test_body_without_system(self) -> None:
        """body() leaves system out when there is none."""
        turns = [{"role": "user", "content": "hi"}]
        req = to_anthropic([Message.user("hi")])
        assert req.system is None
        assert req.body() == {"messages": turns}

    def test_empty_arguments(self) -> None:
        """A call with empty arguments (some servers send "") has input {}."""
        msg = Message.assistant(tool_calls=[ToolCall("c", "f", "")])
        (turn,) = to_anthropic([msg]).messages
        assert turn["content"] == [
            {"type": "tool_use", "id": "c", "name": "f", "input": {}}
        ]


class TestCallIds:
    """Anthropic takes unique ``tool_use`` ids of ``[A-Za-z0-9_-]`` alone."""

    @staticmethod
    def _ids(messages: list[Message]) -> list[tuple[str, str]]:
        return [
            (b["type"], b.get("id") or b["tool_use_id"])
            for t in to_anthropic(messages).messages
            if isinstance(t["content"], list)
            for b in t["content"]
            if b["type"] in ("tool_use", "tool_result")
        ]

    def test_reused_and_foreign_ids_are_renamed_with_their_results(self) -> None:
        """A reused id gets a suffix; a dotted one underscores; results follow."""
        msgs = [Message.user("go")]
        for cid in ("functions.read_file:0", "call_0", "call_0"):
            msgs += [
                Message.assistant(tool_calls=[ToolCall(cid, "read_file", "{}")]),
                Message.tool(cid, "ok"),
            ]
        assert self._ids(msgs) == [
            ("tool_use", "functions_read_file_0"),
            ("tool_result", "functions_read_file_0"),
            ("tool_use", "call_0"),
            ("tool_result", "call_0"),
            ("tool_use", "call_0_2"),
            ("tool_result", "call_0_2"),
        ]

    def test_a_new_name_never_takes_an_id_in_use(self) -> None:
        """``a.b`` becomes ``a_b_2`` when the conversation also calls ``a_b``."""
        msgs = [
            Message.user("go"),
            Message.assistant(
                tool_calls=[ToolCall("a.b", "f", "{}"), ToolCall("a_b", "f", "{}")]
            ),
            Message.tool("a.b", "1"),
            Message.tool("a_b", "2"),
        ]
        assert [i for _, i in self._ids(msgs)] == ["a_b_2", "a_b", "a_b_2", "a_b"]

    def test_valid_unique_ids_are_kept(self) -> None:
        """The common case writes the ids as they are."""
        msgs = [
            Message.user("go"),
            Message.assistant(tool_calls=[ToolCall("toolu_01A", "f", "{}")]),
            Message.tool("toolu_01A", "1"),
        ]
        assert [i for _, i in self._ids(msgs)] == ["toolu_01A", "toolu_01A"]


class TestToolInput:
    @pytest.mark.parametrize(
        ("args", "value"),
        [("[1,2]", [1, 2]), ("5", 5), ("null", None), ('"str"', "str")],
    )
    def test_any_json_value_is_written_after_a_fit(
        self, args: str, value: object
    ) -> None:
        """No problem found; the writer sends {"input": value}: no error after a fit."""
        conv = [
            Message.user("q"),
            Message.assistant(tool_calls=[ToolCall("c1", "f", args)]),
            Message.tool("c1", "r"),
            Message.user("z"),
        ]
        assert problems(conv, "anthropic") == ()
        fitted = fit(conv, model="claude-sonnet-4", limit=100_000)
        turn = to_anthropic(fitted.messages).messages[1]
        assert turn["content"][0]["input"] == {"input": value}

    def test_an_object_is_written_as_it_is(self) -> None:
        """Arguments that are a JSON object are the input itself."""
        msg = Message.assistant(tool_calls=[ToolCall("c1", "f", '{"a": [1]}')])
        turn = to_anthropic([Message.user("q"), msg]).messages[1]
        assert turn["content"][0]["input"] == {"a": [1]}

    @pytest.mark.parametrize("number", [float("nan"), float("inf")])
    def test_nan_input_is_refused_naming_it(self, number: float) -> None:
        """A tool_use input holding NaN or an infinity is bad input, named."""
        turn = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t", "name": "f", "input": {"a": number}}
            ],
        }
        with pytest.raises(InvalidMessageError) as info:
            from_anthropic([turn])
        assert info.value.path == "messages[0].content[0].input"
        assert info.value.reason.startswith("not JSON")

    def test_nan_in_a_kept_block_is_refused_naming_it(self) -> None:
        """A document block holding NaN is bad input named at the block."""
        doc = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "x"},
            "n": float("nan"),
        }
        with pytest.raises(InvalidMessageError) as info:
            from_anthropic([{"role": "user", "content": [doc]}])
        assert info.value.path == "messages[0].content[0]"


class TestLoneSurrogateInput:
    def test_an_escape_is_written_as_the_replacement_character(self) -> None:
        """A ``\\ud83d`` escape in arguments is sent as U+FFFD: the body stays UTF-8."""
        body: list[dict[str, Any]] = [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {
                            "name": "say",
                            "arguments": '{"text": "cut emoji \\ud83d"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
        req = to_anthropic(from_openai(body))
        assert req.messages[1]["content"][0]["input"] == {"text": "cut emoji \ufffd"}
        json.dumps(req.messages, ensure_ascii=False).encode("utf-8")  # no error

    def test_an_escaped_pair_is_the_character(self) -> None:
        """Both halves of a pair, escaped, are the one character they make."""
        call = ToolCall("c1", "say", '{"t": "\\ud83d\\ude00", "\\udc00k": 1}')
        turn = to_anthropic([Message.user("q"), Message.assistant(tool_calls=[call])])
        assert turn.messages[1]["content"][0]["input"] == {
            "t": "\U0001f600",
            "\ufffdk": 1,
        }

    def test_a_raw_one_goes_as_it_came(self) -> None:
        """A lone surrogate the caller's input held raw is written back as it came."""
        turn = {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t", "name": "f", "input": {"t": "a\ud83d"}}
            ],
        }
        assert to_anthropic(from_anthropic([turn])).messages == [turn]

    def test_a_number_past_a_double_is_never_written(self) -> None:
        """Arguments holding 1e400 (a part that skipped the constructor) are refused."""
        call = ToolCall("c1", "f")
        object.__setattr__(call, "arguments", '{"n": 1e400}')  # as unpickled
        msgs = [Message.user("q"), Message.assistant(tool_calls=[call])]
        with pytest.raises(InvalidMessageError) as info:
            to_anthropic(msgs)
        assert info.value.path == "messages[1].parts[0].arguments"


def _user_image(url: str) -> Message:
    return Message.user([Text("what is it?"), Image(url)])


class TestImageMediaTypes:
    @pytest.mark.parametrize(
        "head",
        [
            "image/png;base64",
            "image/jpg;base64",
            "IMAGE/PNG;base64",
            ";base64",
            "application/octet-stream;base64",
            "image/png;BASE64",
            "image/png;name=a.png;base64",
        ],
    )
    def test_a_data_uri_is_a_base64_source_of_a_type_anthropic_takes(
        self, head: str
    ) -> None:
        """The type the PNG bytes say, whatever the URI said, and never a url source."""
        msg = _user_image(f"data:{head},{PNG_B64}")
        assert to_anthropic([msg]).messages[0]["content"][1]["source"] == {
            "type": "base64",
            "media_type": "image/png",
            "data": PNG_B64,
        }

    @pytest.mark.parametrize(
        ("head", "media_type"),
        [
            ("image/JPG", "image/jpeg"),
            ("image/jpeg", "image/jpeg"),
            ("Image/WebP", "image/webp"),
            (" image/gif ", "image/gif"),
        ],
    )
    def test_bytes_of_no_known_format_keep_the_type_in_lower_case(
        self, head: str, media_type: str
    ) -> None:
        """Unrecognised bytes: the URI's type in lower case, image/jpg as image/jpeg."""
        msg = _user_image(f"data:{head};base64,AAAA")
        source = to_anthropic([msg]).messages[0]["content"][1]["source"]
        assert source == {"type": "base64", "media_type": media_type, "data": "AAAA"}

    def test_a_type_anthropic_does_not_take_is_refused_naming_the_part(self) -> None:
        """image/bmp bytes: an error naming the part's url, in a turn and a result."""
        url = "data:image/bmp;base64,Qk0AAAAA"
        with pytest.raises(InvalidMessageError, match="image/bmp") as info:
            to_anthropic([Message.user("hi"), _user_image(url)])
        assert info.value.path == "messages[1].parts[1].url"
        conv = [
            Message.user("q"),
            Message.assistant(tool_calls=[ToolCall("c1", "shot")]),
            Message.tool("c1", (Image(url),)),
        ]
        with pytest.raises(InvalidMessageError) as info:
            to_anthropic(conv)
        assert info.value.path == "messages[2].parts[0].content[0].url"

    def test_a_percent_encoded_data_uri_is_encoded_as_base64(self) -> None:
        """A data: URI that is not base64 is sent as its bytes in base64."""
        gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00,"
        msg = _user_image("data:image/gif," + urllib.parse.quote_from_bytes(gif))
        assert to_anthropic([msg]).messages[0]["content"][1]["source"] == {
            "type": "base64",
            "media_type": "image/gif",
            "data": base64.b64encode(gif).decode(),
        }
