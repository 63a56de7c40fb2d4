"""Items and messages as the installed SDKs give them: read, counted, written back."""

from __future__ import annotations

import base64
import json
import struct
import warnings
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_output_item import McpCall
from responses_kinds import PNG  # type: ignore[import-not-found]  # tests/formats is on sys.path, not a package

from contextwindow import (
    ContentDroppedWarning,
    InvalidMessageError,
    Message,
    count_messages,
    fit,
    from_anthropic,
    from_openai,
    from_responses,
    to_anthropic,
    to_openai,
    to_responses,
)
from contextwindow.messages import Opaque, Thinking, ToolResult
from contextwindow.tokens import BPETokenizer, TokenCounter

LOG = "line {k}: building module {k} ... ok, 14 warnings, 0 errors\n"


def _log(k: int, lines: int = 60) -> str:
    return "".join(LOG.format(k=k * 1000 + j) for j in range(lines))


def _shell(k: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "shell_call",
            "id": f"sh_{k}",
            "call_id": f"call_{k}",
            "status": "completed",
            "action": {"commands": [f"make t{k}"], "timeout_ms": 60000},
        },
        {
            "type": "shell_call_output",
            "call_id": f"call_{k}",
            "max_output_length": 100000,
            "output": [
                {
                    "stdout": _log(k),
                    "stderr": "warning: old\n",
                    "outcome": {"type": "exit", "exit_code": 0},
                }
            ],
        },
    ]


def _local_shell(k: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "local_shell_call",
            "id": f"ls_{k}",
            "call_id": f"call_{k}",
            "status": "completed",
            "action": {"type": "exec", "command": ["make"], "env": {}},
        },
        {"type": "local_shell_call_output", "id": f"call_{k}", "output": _log(k)},
    ]


def _patch(k: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "apply_patch_call",
            "id": f"ap_{k}",
            "call_id": f"call_{k}",
            "status": "completed",
            "operation": {"type": "update_file", "path": "a.py", "diff": "+x\n"},
        },
        {
            "type": "apply_patch_call_output",
            "call_id": f"call_{k}",
            "status": "completed",
            "output": _log(k),
        },
    ]


def _custom(k: int, parts: bool) -> list[dict[str, Any]]:
    output: Any = _log(k)
    if parts:
        output = [
            {"type": "input_text", "text": _log(k)},
            {"type": "input_image", "image_url": PNG},
        ]
    return [
        {
            "type": "custom_tool_call",
            "id": f"ct_{k}",
            "call_id": f"call_{k}",
            "name": "run",
            "input": f"run {k}",
        },
        {"type": "custom_tool_call_output", "call_id": f"call_{k}", "output": output},
    ]


def png(width: int, height: int) -> str:
    """A PNG data URI of that size (its header alone: what counting reads)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    crc = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + crc
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def _computer(k: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "computer_call",
            "id": f"cu_{k}",
            "call_id": f"call_{k}",
            "status": "completed",
            "action": {"type": "screenshot"},
            "pending_safety_checks": [],
        },
        {
            "type": "computer_call_output",
            "call_id": f"call_{k}",
            "output": {"type": "computer_screenshot", "image_url": png(1000 + k, 800)},
        },
    ]


def _approval(k: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "mcp_approval_request",
            "id": f"mcpr_{k}",
            "name": "ask",
            "server_label": "wiki",
            "arguments": "{}",
        },
        {
            "type": "mcp_approval_response",
            "approval_request_id": f"mcpr_{k}",
            "approve": False,
            "reason": _log(k, 20),
        },
    ]


KINDS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "shell_call_output": _shell,
    "local_shell_call_output": _local_shell,
    "apply_patch_call_output": _patch,
    "custom_tool_call_output": lambda k: _custom(k, parts=False),
    "custom_tool_call_output parts": lambda k: _custom(k, parts=True),
    "computer_call_output": _computer,
    "mcp_approval_response": _approval,
}


def _conversation(make: Callable[[int], list[dict[str, Any]]]) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": "Fix the build."}]
    for k in range(8):
        items.extend(make(k))
    items.append({"role": "user", "content": "continue"})
    return items


class TestCutOutputsAreWrittenCut:
    @pytest.mark.parametrize("kind", list(KINDS))
    @pytest.mark.parametrize("share", [0.5, 0.3])
    def test_what_is_written_is_what_was_counted(self, kind: str, share: float) -> None:
        """Fitted tight, the items written count within the limit, every kind."""
        items = _conversation(KINDS[kind])
        full = count_messages(items, "gpt-4o")
        limit = int(full * share)
        fitted = fit(items, limit=limit, tokenizer="gpt-4o")
        assert fitted.report.changes  # something was cut or dropped
        out = fitted.as_input()
        assert count_messages(out, "gpt-4o") <= limit
        assert count_messages(out, "gpt-4o") == fitted.report.tokens_after

    def test_a_shell_output_is_read_as_its_text(self) -> None:
        """A shell output counts its stdout and stderr; a cut is one chunk of it."""
        call, output = _shell(1)
        (_, tool) = from_responses([call, output])
        result = tool.parts[0]
        assert isinstance(result, ToolResult)
        assert result.content == _log(1) + "warning: old\n"
        cut = tool.with_parts((ToolResult(result.call_id, "head\n[cut]\ntail"),))
        (written,) = to_responses([cut])
        assert written["output"] == [
            {
                "stdout": "head\n[cut]\ntail",
                "stderr": "",
                "outcome": {"type": "exit", "exit_code": 0},
            }
        ]
        assert written["max_output_length"] == 100000
        assert from_responses([written])[0].parts == cut.parts

    def test_a_screenshot_takes_no_text(self) -> None:
        """A screenshot's result is not cut; a function output's is."""
        from contextwindow.formats.openai_responses import result_takes_text

        (_, shot) = from_responses(_computer(1))
        assert not result_takes_text(shot, shot.tool_results[0])
        (_, other) = from_responses(_shell(1))
        assert result_takes_text(other, other.tool_results[0])

    def test_a_screenshot_replaced_by_another_image_is_written(self) -> None:
        """Another image in a screenshot's result goes in its image_url."""
        call, output = _computer(1)
        (_, tool) = from_responses([call, output])
        smaller = from_responses(_computer(2))[1].parts[0]
        assert isinstance(smaller, ToolResult)
        new = ToolResult("call_1", smaller.content)
        (written,) = to_responses([tool.with_parts((new,))])
        assert written["output"] == {
            "type": "computer_screenshot",
            "image_url": smaller.images[0].url,
        }


class TestChatAudioReply:
    def test_an_sdk_audio_reply_is_kept_and_counted(self) -> None:
        """An audio reply goes back by its id and counts its transcript."""
        transcript = "Sure! The capital of France is Paris, about two million people."
        reply = ChatCompletionMessage.model_validate(
            {
                "role": "assistant",
                "content": None,
                "audio": {
                    "id": "audio_abc",
                    "data": "UklGRiQAAABXQVZF",
                    "expires_at": 1900000000,
                    "transcript": transcript,
                },
            }
        )
        msgs = [{"role": "user", "content": "Paris?"}, reply]
        dumped = [msgs[0], reply.model_dump(exclude_none=True)]
        assert count_messages(msgs, "gpt-4o") >= count_messages(
            [msgs[0], {"role": "assistant", "content": transcript}], "gpt-4o"
        )
        assert count_messages(msgs, "gpt-4o") <= count_messages(dumped, "gpt-4o")
        fitted = fit(msgs, limit=100_000, tokenizer="gpt-4o")
        assert fitted.report.changes == ()
        assert fitted.as_input()[1] == {
            "role": "assistant",
            "content": None,
            "audio": {"id": "audio_abc"},
        }
        (anthropic,) = [
            t
            for t in to_anthropic(fitted.messages).messages
            if t["role"] == "assistant"
        ]
        assert anthropic["content"] == transcript


class TestWholeResponses:
    @pytest.mark.parametrize("text", ["The answer is 42.", "the type is int", "Sunny"])
    def test_an_item_with_a_text_output_is_no_whole_response(self, text: str) -> None:
        """An MCP call's output text never makes it 'a whole response'."""
        call = McpCall(
            type="mcp_call",
            id="mcp_1",
            server_label="wiki",
            name="ask",
            arguments="{}",
            output=text,
            status="completed",
        )
        assert count_messages([{"role": "user", "content": "q"}, call], "gpt-4o") > 0

    def test_a_whole_response_is_still_refused(self) -> None:
        """A response object (a list of output items, no type) is named."""

        class Response:
            def model_dump(self, **_: Any) -> dict[str, Any]:
                return {"id": "resp_1", "object": "response", "output": []}

        with pytest.raises(InvalidMessageError, match="a whole Response"):
            count_messages([Response()], "gpt-4o")


class TestReasoningText:
    def test_reasoning_text_is_counted_and_round_trips(self) -> None:
        """A reasoning item's reasoning_text parts count, and go back byte for byte."""
        text = "Let me think about the tides. " * 60
        item = ResponseReasoningItem.model_validate(
            {
                "id": "rs_1",
                "type": "reasoning",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": text}],
                "encrypted_content": "gAAA",
            }
        ).model_dump(exclude_none=True)
        msgs = from_responses([{"role": "user", "content": "q"}, item])
        (thinking,) = msgs[1].parts
        assert isinstance(thinking, Thinking)
        assert thinking.text == text
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        assert counter.part(thinking) >= BPETokenizer("o200k_base").count(text)
        assert json.dumps(to_responses(msgs)[1]) == json.dumps(item)

    def test_summary_and_text_split_back(self) -> None:
        """Summary and reasoning text share the Thinking part and split back."""
        item = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Short."}],
            "content": [
                {"type": "reasoning_text", "text": "Long one."},
                {"type": "reasoning_text", "text": "Two."},
            ],
        }
        (msg,) = from_responses([item])
        assert msg.parts[0].text == "Short.\n\nLong one.\n\nTwo."  # type: ignore[union-attr]  # a Thinking
        assert to_responses([msg]) == [item]


NEW_ITEMS: list[dict[str, Any]] = [
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB" + "x" * 600},
    {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "tsc_1",
        "arguments": {"query": "weather"},
        "execution": "client",
        "status": "completed",
    },
    {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": "tsc_1",
        "execution": "client",
        "status": "completed",
        "tools": [{"type": "function", "name": "weather", "parameters": {}}],
    },
    {
        "type": "program",
        "id": "pg_1",
        "call_id": "pgc_1",
        "code": "await tools.weather({city: 'Oslo'})",
        "fingerprint": "fp_abc",
    },
    {
        "type": "program_output",
        "id": "pgo_1",
        "call_id": "pgc_1",
        "result": "4 C, rain",
        "status": "completed",
    },
    {
        "type": "additional_tools",
        "role": "developer",
        "tools": [{"type": "function", "name": "clock", "parameters": {}}],
    },
]


class TestNewItems:
    def test_new_item_types_round_trip_and_count(self) -> None:
        """compaction, tool_search_output, program(_output), additional_tools."""
        items = [{"role": "user", "content": "Weather?"}, *NEW_ITEMS]
        msgs = from_responses(items)
        assert json.dumps(to_responses(msgs)) == json.dumps(items)
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        for item in NEW_ITEMS:
            (m,) = [m for m in from_responses([item]) if m.parts]
            assert counter.message(m) > counter.message(m.with_parts(())), item
        # The program's result is read; its fingerprint and ids are not.
        texts = " ".join(m.text for m in msgs)
        assert "4 C, rain" in texts
        assert "fp_abc" not in texts

    def test_compaction_counts_an_estimate_of_its_content(self) -> None:
        """Encrypted compaction content counts by its size, not as text."""
        (msg,) = from_responses([NEW_ITEMS[0]])
        (part,) = msg.parts
        assert isinstance(part, Opaque)
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        assert counter.part(part) == -(-(606 * 3 // 4) // 3)
        with pytest.warns(ContentDroppedWarning, match="compaction"):
            to_anthropic(msgs := [Message.user("q"), msg])
        assert to_responses(msgs)[1] == NEW_ITEMS[0]

    def test_additional_tools_are_a_system_message(self) -> None:
        """A developer's tools stay in place, as a system message, pinned."""
        msgs = from_responses([{"role": "user", "content": "q"}, NEW_ITEMS[-1]])
        assert [m.role for m in msgs] == ["user", "system"]

    def test_anthropic_tool_search_result(self) -> None:
        """Anthropic's tool_search_tool_result and tool_reference are kept."""
        turns: list[dict[str, Any]] = [
            {"role": "user", "content": "Weather?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "tool_search_tool_regex",
                        "input": {"query": "weather"},
                    },
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [
                                {"type": "tool_reference", "tool_name": "weather"}
                            ],
                        },
                    },
                    {"type": "tool_use", "id": "t1", "name": "find", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "tool_reference", "tool_name": "weather"}],
                    }
                ],
            },
        ]
        msgs = from_anthropic(turns)
        assert to_anthropic(msgs).messages == turns
        assert count_messages(turns, "claude-sonnet-4-5") > 0


class TestFreeformCallsForAnthropic:
    def test_a_custom_tool_call_is_written_as_input(self) -> None:
        """A freeform call's text input becomes {"input": text} for Anthropic."""
        items = [
            {"role": "user", "content": "Run it."},
            {
                "type": "custom_tool_call",
                "id": "ct_1",
                "call_id": "c1",
                "name": "python",
                "input": "print('hi')",
            },
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "hi"},
        ]
        body = fit(items, limit=100_000, tokenizer="gpt-4o").to("anthropic")
        use = body["messages"][1]["content"][0]
        assert use["input"] == {"input": "print('hi')"}

    def test_a_chat_custom_call_is_written_as_input(self) -> None:
        """Chat's custom tool call too."""
        msgs = from_openai(
            [
                {"role": "user", "content": "Run it."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "custom",
                            "custom": {"name": "python", "input": "1 + 1"},
                        }
                    ],
                },
            ]
        )
        (_, turn) = to_anthropic(msgs).messages
        assert turn["content"][0]["input"] == {"input": "1 + 1"}

    @pytest.mark.parametrize(
        ("args", "value"), [("[1]", [1]), ("2", 2), ("null", None), ("true", True)]
    )
    def test_other_arguments_are_written_as_input_too(
        self, args: str, value: object
    ) -> None:
        """Any JSON value but an object is written as {"input": value}, as text is."""
        from contextwindow.messages import ToolCall

        msg = Message.assistant(tool_calls=[ToolCall("c1", "f", args)])
        turn = to_anthropic([Message.user("q"), msg]).messages[1]
        assert turn["content"][0]["input"] == {"input": value}


class TestImagesInChatToolMessages:
    def _anthropic(self) -> list[Message]:
        data = PNG.split(",", 1)[1]
        return from_anthropic(
            [
                {"role": "user", "content": "Look."},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "shot", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [
                                {"type": "text", "text": "the screen"},
                                {
                                    "type": "image",
                                    "source": {
                                        "type": "base64",
                                        "media_type": "image/png",
                                        "data": data,
                                    },
                                },
                            ],
                        }
                    ],
                },
            ]
        )

    def test_another_shapes_image_is_left_out_with_a_warning(self) -> None:
        """Chat's tool message takes text: the image is left out, named."""
        msgs = self._anthropic()
        with pytest.warns(
            ContentDroppedWarning, match=r"messages\[2\]\.parts\[0\]\.content\[1\]"
        ):
            out = to_openai(msgs)
        assert out[2] == {
            "role": "tool",
            "tool_call_id": "t1",
            "content": [{"type": "text", "text": "the screen"}],
        }

    def test_an_image_read_from_chat_round_trips(self) -> None:
        """A Chat tool message read with an image part is written back as it came."""
        tool = {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "the screen"},
                {"type": "image_url", "image_url": {"url": PNG}},
            ],
        }
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert to_openai(from_openai([tool])) == [tool]
