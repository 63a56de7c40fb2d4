from __future__ import annotations

import copy
from typing import Any

import pytest

from contextwindow.errors import InvalidMessageError
from contextwindow.formats import (
    from_anthropic,
    from_provider,
    from_responses,
    to_provider,
    to_responses,
)
from contextwindow.messages import (
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    units,
)

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAC0lEQVR4"
    "nGNgwAIAABUAAapll8QAAAAASUVORK5CYII="
)

ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": "Be terse."},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": PNG, "detail": "low"},
            {"type": "input_file", "file_id": "file_1"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "ENC",
        "summary": [
            {"type": "summary_text", "text": "First."},
            {"type": "summary_text", "text": "Second."},
        ],
    },
    {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Zooming.", "annotations": []}],
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "c1",
        "name": "zoom",
        "arguments": '{"x": 1}',
        "status": "completed",
    },
    {
        "type": "function_call",
        "id": "fc_2",
        "call_id": "c2",
        "name": "zoom",
        "arguments": "{}",
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "c1", "output": "big"},
    {
        "type": "function_call_output",
        "call_id": "c2",
        "id": "fco_2",
        "output": [{"type": "input_text", "text": "small"}],
    },
    {"type": "reasoning", "id": "rs_2", "summary": []},
    {"type": "message", "role": "assistant", "content": "done"},
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "output_text", "text": "odd but allowed"}],
    },
]


class TestFromResponses:
    def test_grouping(self) -> None:
        """Reasoning, assistant text and calls merge; consecutive outputs merge."""
        msgs = from_responses(ITEMS)
        assert [(m.role, len(m.parts)) for m in msgs] == [
            ("system", 1),
            ("user", 3),
            ("assistant", 4),
            ("tool", 2),
            ("assistant", 2),
            ("user", 1),
        ]
        assert msgs[2].parts == (
            Thinking("First.\n\nSecond.", "ENC"),
            Text("Zooming."),
            ToolCall("c1", "zoom", '{"x": 1}'),
            ToolCall("c2", "zoom", "{}"),
        )
        assert msgs[3].parts == (
            ToolResult("c1", "big"),
            ToolResult("c2", (Text("small"),)),
        )
        assert all(u.complete for u in units(msgs))

    def test_image(self) -> None:
        """input_image with a data URI gives an Image with its size."""
        assert from_responses(ITEMS)[1].parts[1] == Image(PNG, "low", 2, 3)

    def test_instructions_and_string_input(self) -> None:
        """instructions lead as a system message; a string input is a user message."""
        msgs = from_responses("hi", instructions="Be brief.")
        assert msgs == [Message.system("Be brief."), Message.user("hi")]

    def test_ids_in_meta(self) -> None:
        """Item ids are kept in meta so they round-trip."""
        layout = from_responses(ITEMS)[2].meta["responses"]["items"]
        assert [e.get("extra", {}).get("id") for e in layout] == [
            "rs_1",
            "msg_1",
            "fc_1",
            "fc_2",
        ]


class TestToResponses:
    def test_roundtrip_identity(self) -> None:
        """Reading then writing gives the same items back."""
        before = copy.deepcopy(ITEMS)
        assert to_responses(from_responses(ITEMS)) == ITEMS
        assert before == ITEMS

    def test_neutral_defaults(self) -> None:
        """Hand-built messages get default item shapes; foreign thinking is dropped."""
        conv = [
            Message.system("S"),
            Message.user([Text("a"), Image("https://x/y.png", detail="high")]),
            Message.assistant(
                [Thinking("secret", "sig"), Text("t")],
                tool_calls=[ToolCall("c", "f", "{}")],
            ),
            Message("tool", (ToolResult("c", "r"), ToolResult("d", (Text("x"),)))),
        ]
        assert to_responses(conv) == [
            {"type": "message", "role": "system", "content": "S"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "a"},
                    {
                        "type": "input_image",
                        "image_url": "https://x/y.png",
                        "detail": "high",
                    },
                ],
            },
            {"type": "message", "role": "assistant", "content": "t"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "r"},
            {
                "type": "function_call_output",
                "call_id": "d",
                "output": [{"type": "input_text", "text": "x"}],
            },
        ]

    def test_edited_parts_fall_back(self) -> None:
        """When a strategy drops parts, the stale layout is not applied."""
        msg = from_responses(ITEMS)[2]
        edited = msg.with_parts(msg.parts[1:2])
        assert to_responses([edited]) == [
            {"type": "message", "role": "assistant", "content": "Zooming."}
        ]

    def test_edited_summary(self) -> None:
        """An edited reasoning text is written as one summary."""
        msg = from_responses(ITEMS[2:3])[0]
        edited = msg.with_parts([Thinking("short", "ENC")])
        assert to_responses([edited])[0]["summary"] == [
            {"type": "summary_text", "text": "short"}
        ]

    def test_anthropic_thinking_dropped(self) -> None:
        """Anthropic thinking is not written as a reasoning item."""
        conv = from_anthropic(
            [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "x", "signature": "s"},
                        {"type": "text", "text": "y"},
                    ],
                }
            ]
        )
        assert to_responses(conv) == [
            {"type": "message", "role": "assistant", "content": "y"}
        ]

    def test_misplaced(self) -> None:
        """A tool call in a user message cannot be written."""
        with pytest.raises(InvalidMessageError) as info:
            to_responses([Message.user([ToolCall("c", "f")])])
        assert info.value.path == "messages[0].parts[0]"


class TestResponsesLayouts:
    def test_minimal_items_round_trip(self) -> None:
        """Items without ids, summary or extras come back without them."""
        items: list[dict[str, Any]] = [
            {"type": "reasoning"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
            {"type": "function_call_output", "call_id": "c", "output": "ok"},
        ]
        msgs = from_responses(items)
        assert msgs[0].parts == (Thinking(""), ToolCall("c", "f", ""))
        assert to_responses(msgs) == items

    @pytest.mark.parametrize(
        "recorded",
        [
            ["junk"],
            [{"type": "message", "n": "1"}],
            [{"type": "message", "n": 2}],
            [{"type": "message", "n": 1}, {"type": "message", "n": 1}],
            [{"type": "function_call", "n": 1}],
        ],
    )
    def test_layout_that_does_not_fit_is_ignored(self, recorded: list[Any]) -> None:
        """A malformed or stale recorded layout gives way to the default one."""
        msg = Message.user("hi", meta={"responses": {"items": recorded}})
        assert to_responses([msg]) == [
            {"type": "message", "role": "user", "content": "hi"}
        ]

    def test_empty_message(self) -> None:
        """A message without parts is still written, with empty content."""
        assert to_responses([Message("user", ())]) == [
            {"type": "message", "role": "user", "content": []}
        ]
        assert to_responses([Message("tool", ())]) == []

    def test_image_without_detail(self) -> None:
        """An image without detail is written with "auto" (the API requires one)."""
        out = to_responses([Message.user([Image("https://x/y.png")])])
        assert out[0]["content"] == [
            {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"}
        ]

    @pytest.mark.parametrize("lens", [["6"], [-1], [1, 2]])
    def test_bad_summary_split_gives_one_summary(self, lens: list[Any]) -> None:
        """Recorded summary lengths that do not split the text are not used."""
        layout = [{"type": "reasoning", "n": 1, "summary": lens}]
        msg = Message.assistant(
            [Thinking("First.")], meta={"responses": {"items": layout}}
        )
        assert to_responses([msg]) == [
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "First."}],
            }
        ]


class TestResponsesErrors:
    @pytest.mark.parametrize(
        ("items", "where", "reason"),
        [
            ({"type": "message"}, "input", "expected an array, got object"),
            ([1], "input[0]", "expected an object, got number"),
            ([{"content": "x"}], "input[0].type", "missing"),
            ([{"type": 1}], "input[0].type", "expected a string, got number"),
            (
                [{"type": "telepathy_call"}],
                "input[0].type",
                "unknown item type 'telepathy_call' (supported: message, "
                "function_call, function_call_output, reasoning, computer_call,",
            ),
            ([{"type": "computer_call"}], "input[0].call_id", "missing"),
            (
                [{"type": "message", "role": "robot", "content": "x"}],
                "input[0].role",
                "unknown role 'robot'",
            ),
            ([{"type": "message", "role": "user"}], "input[0].content", "missing"),
            (
                [{"role": "user", "content": [{"type": "foo"}]}],
                "input[0].content[0].type",
                "unknown part type 'foo'",
            ),
            (
                [
                    {
                        "type": "function_call",
                        "call_id": "c",
                        "name": "f",
                        "arguments": "{x",
                    }
                ],
                "input[0].arguments",
                "not valid JSON",
            ),
            (
                [{"type": "function_call", "name": "f", "arguments": "{}"}],
                "input[0].call_id",
                "missing",
            ),
            (
                [{"type": "function_call_output", "call_id": "c"}],
                "input[0].output",
                "missing",
            ),
            (
                [{"type": "function_call_output", "call_id": "c", "output": 3}],
                "input[0].output",
                "expected a string or a list, got number",
            ),
            (
                [
                    {
                        "type": "reasoning",
                        "summary": [{"type": "reasoning_text", "text": "x"}],
                    }
                ],
                "input[0].summary[0].type",
                "unknown summary type 'reasoning_text'",
            ),
            (
                [{"type": "reasoning", "summary": "x"}],
                "input[0].summary",
                "expected an array, got string",
            ),
        ],
    )
    def test_malformed(self, items: Any, where: str, reason: str) -> None:
        """Malformed input names the exact place and what is wrong there."""
        with pytest.raises(InvalidMessageError) as info:
            from_responses(items)
        assert info.value.path == where
        assert info.value.reason.startswith(reason)

    def test_instructions_type(self) -> None:
        """Instructions must be a string."""
        with pytest.raises(InvalidMessageError, match=r"^instructions: "):
            from_responses([], instructions=[])  # type: ignore[arg-type]  # wrong on purpose


class TestDispatch:
    def test_from_provider_bodies(self) -> None:
        """Request bodies and plain lists are read for each provider."""
        user = {"role": "user", "content": "hi"}
        assert from_provider({"model": "m", "messages": [user]}, "openai") == [
            Message.user("hi")
        ]
        assert from_provider({"system": "S", "messages": [user]}, "anthropic") == [
            Message.system("S"),
            Message.user("hi"),
        ]
        assert from_provider({"instructions": "S", "input": "hi"}, "responses") == [
            Message.system("S"),
            Message.user("hi"),
        ]
        assert from_provider([user], "anthropic") == [Message.user("hi")]
        assert from_provider([user], "openai") == [Message.user("hi")]
        assert from_provider([user], "responses") == [Message.user("hi")]

    def test_to_provider(self) -> None:
        """Each provider's writer is used; the Anthropic request reads back."""
        conv = [Message.system("S"), Message.user("hi")]
        assert to_provider(conv, "openai")[0] == {"role": "system", "content": "S"}
        req = to_provider(conv, "anthropic")
        assert from_provider(req, "anthropic") == conv
        assert to_provider(conv, "responses")[1]["role"] == "user"

    def test_unknown_provider(self) -> None:
        """An unknown provider is an InvalidMessageError naming the choices."""
        with pytest.raises(InvalidMessageError, match="openai, anthropic, responses"):
            to_provider([], "gemini")  # type: ignore[call-overload]  # wrong on purpose
        with pytest.raises(InvalidMessageError, match="unknown provider"):
            from_provider([], "gemini")  # type: ignore[arg-type]  # wrong on purpose

    def test_missing_body_field(self) -> None:
        """A body without its message list names the missing field."""
        with pytest.raises(InvalidMessageError, match=r"^messages: missing"):
            from_provider({"model": "m"}, "openai")


PATCH = "*** Begin Patch\n+x\n*** End Patch"
CHAT_CUSTOM: list[dict[str, Any]] = [
    {"role": "user", "content": "fix it"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "custom",
                "custom": {"name": "apply_patch", "input": PATCH},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "ls", "arguments": "{}"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    {"role": "tool", "tool_call_id": "c2", "content": "a.py"},
]
RESPONSES_CUSTOM: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "fix it"},
    {
        "type": "custom_tool_call",
        "call_id": "c1",
        "name": "apply_patch",
        "input": PATCH,
    },
    {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
]


class TestCustomCallsAcrossShapes:
    def test_chat_custom_call_is_a_custom_tool_call(self) -> None:
        """A Chat custom call and its result become Responses' custom items."""
        from contextwindow.formats import from_openai

        items = to_responses(from_openai(CHAT_CUSTOM))
        assert items[1] == {
            "type": "custom_tool_call",
            "call_id": "c1",
            "name": "apply_patch",
            "input": PATCH,
        }
        assert items[2]["type"] == "function_call"  # a function call stays one
        assert items[3] == {
            "type": "custom_tool_call_output",
            "call_id": "c1",
            "output": "ok",
        }
        assert items[4]["type"] == "function_call_output"

    def test_responses_custom_call_is_a_chat_custom_call(self) -> None:
        """A Responses custom_tool_call becomes a Chat custom call, not a function."""
        from contextwindow.formats import from_openai, to_openai

        chat = to_openai(from_responses(RESPONSES_CUSTOM))
        assert chat[1]["tool_calls"] == [
            {
                "id": "c1",
                "type": "custom",
                "custom": {"name": "apply_patch", "input": PATCH},
            }
        ]
        assert to_responses(from_openai(chat)) == RESPONSES_CUSTOM

    def test_round_trip_through_the_other_shape(self) -> None:
        """Chat -> Responses -> Chat gives the Chat messages back."""
        from contextwindow.formats import from_openai, to_openai

        items = to_responses(from_openai(CHAT_CUSTOM))
        assert to_openai(from_responses(items)) == CHAT_CUSTOM

    def test_the_sdk_takes_the_items(self) -> None:
        """The items written validate against the SDK's input type."""
        pydantic = pytest.importorskip("pydantic")
        responses = pytest.importorskip("openai.types.responses")
        from contextwindow.formats import from_openai

        adapter = pydantic.TypeAdapter(responses.ResponseInputParam)
        adapter.validate_python(to_responses(from_openai(CHAT_CUSTOM)))


class TestImageDetail:
    def test_another_shapes_image_gets_a_detail(self) -> None:
        """An image with no detail is written with "auto" (the SDK requires one)."""
        for image in (Image(PNG), Image("https://example.com/a.png")):
            (item,) = to_responses([Message.user([Text("what?"), image])])
            assert item["content"][1] == {
                "type": "input_image",
                "image_url": image.url,
                "detail": "auto",
            }

    def test_a_detail_given_is_kept(self) -> None:
        """An image's own detail is written as it is."""
        (item,) = to_responses([Message.user([Image(PNG, detail="low")])])
        assert item["content"][0]["detail"] == "low"

    def test_an_item_without_detail_round_trips(self) -> None:
        """An input_image read without a detail (or with null) is written back so."""
        for part in (
            {"type": "input_image", "image_url": PNG},
            {"type": "input_image", "image_url": PNG, "detail": None},
        ):
            items = [{"type": "message", "role": "user", "content": [part]}]
            assert to_responses(from_responses(copy.deepcopy(items))) == items

    def test_anthropic_image_validates(self) -> None:
        """An Anthropic image written to Responses passes the SDK's input type."""
        pydantic = pytest.importorskip("pydantic")
        responses = pytest.importorskip("openai.types.responses")
        data = PNG.split(",", 1)[1]
        source = {"type": "base64", "media_type": "image/png", "data": data}
        conv = from_anthropic(
            [{"role": "user", "content": [{"type": "image", "source": source}]}]
        )
        adapter = pydantic.TypeAdapter(responses.ResponseInputParam)
        adapter.validate_python(to_responses(conv))


def test_nan_arguments_are_refused_naming_the_field() -> None:
    """A function_call's NaN arguments are not JSON: refused, the field named."""
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": "[NaN]"}
    with pytest.raises(InvalidMessageError) as info:
        from_responses([item])
    assert (info.value.path, info.value.reason) == (
        "input[0].arguments",
        "not valid JSON: NaN is not JSON",
    )
