from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    InvalidMessageError,
    PartialLineWarning,
)
from contextwindow.messages import Message, Text, ToolCall, ToolResult, ToolSpec, units
from contextwindow.transcripts import (
    FORMATS,
    Transcript,
    detect_format,
    read_transcript,
    read_transcripts,
)

OPENAI_CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "3 C"},
    {"role": "assistant", "content": "3 C."},
]
ANTHROPIC_CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "t1",
                "name": "weather",
                "input": {"city": "Oslo"},
            }
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "3 C"}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "3 C."}]},
]
RESPONSES_ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": "Weather in Oslo?"},
    {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "3 C"},
    {"type": "message", "role": "assistant", "content": "3 C."},
]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def jsonl(records: list[Any]) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def record(kind: str, n: int, **fields: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": f"u{n}",
        "sessionId": "s-1",
        "timestamp": f"2026-01-01T00:00:{n:02d}Z",
        **fields,
    }


CLAUDE_CODE = [
    {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
    record("user", 1, message={"role": "user", "content": "List files."}),
    record("progress", 2, data={"type": "hook_progress"}),
    record(
        "assistant",
        3,
        message={
            "id": "m1",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "Listing."}],
        },
    ),
    record(
        "assistant",
        4,
        message={
            "id": "m1",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
        },
    ),
    record(
        "user",
        5,
        message={
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}
            ],
        },
    ),
    record(
        "assistant",
        6,
        message={
            "id": "m1",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "tool_use", "id": "t2", "name": "ls", "input": {"d": 1}}
            ],
            "usage": {"input_tokens": 7},
        },
    ),
    record(
        "user",
        7,
        message={
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "b",
                    "is_error": True,
                }
            ],
        },
    ),
    record("system", 8, subtype="turn_duration"),
    record(
        "system",
        9,
        subtype="compact_boundary",
        compactMetadata={"trigger": "auto", "preTokens": 1234},
    ),
    record("user", 10, isMeta=True, message={"role": "user", "content": "<caveat>"}),
    record(
        "assistant",
        11,
        message={
            "id": "m2",
            "role": "assistant",
            "model": "<synthetic>",
            "content": [{"type": "text", "text": "Done."}],
        },
    ),
    {"type": "queue-operation", "operation": "enqueue"},
]


class TestReadFormats:
    def test_jsonl_keeps_unicode_line_separators(self, tmp_path: Path) -> None:
        """Only "\\n" ends a JSONL record; U+2028 inside a string does not."""
        texts = ["a\u2028b", "c\x1cd\u0085e", "f\r"]
        lines = [
            json.dumps({"role": "user", "content": t}, ensure_ascii=False)
            for t in texts
        ]
        t = read_transcript(write(tmp_path, "m.jsonl", "\r\n".join(lines) + "\r\n"))
        assert [m.text for m in t.messages] == texts

    def test_openai_list(self, tmp_path: Path) -> None:
        """A JSON list of Chat Completions messages is read as openai."""
        t = read_transcript(write(tmp_path, "chat.json", OPENAI_CHAT))
        assert (t.format, t.title, len(t.messages)) == ("openai", "chat.json", 5)
        assert all(u.complete for u in units(t.messages))

    def test_openai_request(self, tmp_path: Path) -> None:
        """An OpenAI request body gives messages, model and tool specs."""
        body = {
            "model": "gpt-4o",
            "messages": OPENAI_CHAT,
            "temperature": 0,
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "description": "Weather.",
                        "parameters": SCHEMA,
                    },
                }
            ],
        }
        t = read_transcript(write(tmp_path, "req.json", body))
        assert (t.format, t.model, len(t.messages)) == ("openai_request", "gpt-4o", 5)
        assert t.tools == (ToolSpec("weather", "Weather.", SCHEMA),)
        assert t.meta["request"] == {"temperature": 0}

    def test_anthropic_list(self, tmp_path: Path) -> None:
        """A JSON list of Anthropic turns is read as anthropic."""
        t = read_transcript(write(tmp_path, "a.json", ANTHROPIC_CHAT))
        assert t.format == "anthropic"
        assert [m.role for m in t.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]

    def test_anthropic_request(self, tmp_path: Path) -> None:
        """An Anthropic body is told apart by system and input_schema."""
        body = {
            "model": "claude-x",
            "system": "Be brief.",
            "messages": ANTHROPIC_CHAT,
            "tools": [
                {"name": "weather", "input_schema": SCHEMA},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
        }
        t = read_transcript(write(tmp_path, "a.json", body))
        assert (t.format, t.model) == ("anthropic_request", "claude-x")
        assert t.messages[0] == Message.system("Be brief.")
        assert t.tools == (ToolSpec("weather", "", SCHEMA),)
        assert t.meta["other_tools"][0]["name"] == "web_search"
        del body["system"]
        assert detect_format(write(tmp_path, "b.json", body)) == "anthropic_request"

    def test_responses(self, tmp_path: Path) -> None:
        """A Responses body or item list is read as responses."""
        body = {
            "model": "o3",
            "instructions": "Be brief.",
            "input": RESPONSES_ITEMS,
            "tools": [{"type": "function", "name": "weather", "parameters": SCHEMA}],
        }
        t = read_transcript(write(tmp_path, "r.json", body))
        assert (t.format, t.model, len(t.messages)) == ("responses", "o3", 5)
        assert t.tools == (ToolSpec("weather", "", SCHEMA),)
        t2 = read_transcript(write(tmp_path, "r2.json", RESPONSES_ITEMS))
        assert t2.format == "responses"
        assert t2.messages == t.messages[1:]

    @pytest.mark.parametrize(
        ("records", "shape"),
        [
            (OPENAI_CHAT, "openai"),
            (ANTHROPIC_CHAT, "anthropic"),
            (RESPONSES_ITEMS, "responses"),
        ],
    )
    def test_jsonl(self, tmp_path: Path, records: list[Any], shape: str) -> None:
        """One message per line is read in the shape the lines have."""
        t = read_transcript(write(tmp_path, "c.jsonl", jsonl(records)))
        assert (t.format, t.meta["shape"]) == ("jsonl", shape)
        assert all(u.complete for u in units(t.messages))
        assert t.messages[-1].text == "3 C."

    def test_claude_code(self, tmp_path: Path) -> None:
        """Claude Code records are grouped by message id; only messages are kept."""
        t = read_transcript(write(tmp_path, "s.jsonl", jsonl(CLAUDE_CODE)))
        assert t.format == "claude_code"
        assert [m.role for m in t.messages] == [
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
        ]
        assert t.messages[1].parts == (
            Text("Listing."),
            ToolCall("t1", "ls", "{}"),
            ToolCall("t2", "ls", '{"d":1}'),
        )
        assert t.messages[2].parts == (
            ToolResult("t1", "a.txt"),
            ToolResult("t2", "b", is_error=True),
        )
        assert all(u.complete for u in units(t.messages))
        assert t.messages[1].meta["uuids"] == ["u3", "u4", "u6"]
        assert t.messages[1].meta["usage"] == {"input_tokens": 7}
        assert t.messages[0].meta["timestamp"] == "2026-01-01T00:00:01Z"
        assert t.messages[3].meta["is_meta"] is True
        assert t.meta["compactions"] == [
            {
                "index": 3,
                "trigger": "auto",
                "pre_tokens": 1234,
                "uuid": "u9",
                "timestamp": "2026-01-01T00:00:09Z",
            }
        ]
        assert (t.model, t.title) == ("claude-x", "s-1")

    def test_tau_bench_and_locomo(self, tmp_path: Path) -> None:
        """tau-bench runs and LoCoMo conversations give one transcript each."""
        runs = [
            {"task_id": 3, "trial": 1, "reward": 1.0, "traj": OPENAI_CHAT},
            {"task_id": 4, "trial": 0, "reward": 0.0, "traj": OPENAI_CHAT[:2]},
        ]
        ts = read_transcripts(write(tmp_path, "tau.json", runs))
        assert [t.title for t in ts] == [
            "trajectory 0 (task 3, trial 1)",
            "trajectory 1 (task 4, trial 0)",
        ]
        assert ts[0].meta["reward"] == 1.0
        conv = {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later."}],
            "session_1_date_time": "1 May",
            "session_2_date_time": "2 May",
            "session_1": [
                {
                    "speaker": "Ann",
                    "dia_id": "D1:1",
                    "text": "Hi.",
                    "blip_caption": "a dog",
                    "img_url": ["u"],
                }
            ],
        }
        lt = read_transcript(
            write(
                tmp_path,
                "lo.json",
                [{"sample_id": "c-1", "conversation": conv, "qa": []}],
            )
        )
        assert (lt.format, lt.title) == ("locomo", "c-1")
        first, second = lt.messages
        assert (first.role, first.name, first.parts) == (
            "user",
            "Ann",
            (Text("Hi."), Text("[shared an image: a dog]")),
        )
        assert (second.role, second.meta["dia_id"], second.meta["date_time"]) == (
            "assistant",
            "D2:1",
            "2 May",
        )

    def test_streams(self) -> None:
        """Open text and binary files are read like paths."""
        text = io.StringIO(json.dumps(OPENAI_CHAT))
        binary = io.BytesIO(jsonl(OPENAI_CHAT).encode("utf-8-sig"))
        assert read_transcript(text).messages == read_transcript(binary).messages

    def test_explicit_format(self, tmp_path: Path) -> None:
        """A named format skips detection; a one-line file can be jsonl."""
        path = write(tmp_path, "one.jsonl", jsonl(OPENAI_CHAT[:1]))
        assert read_transcript(path, format="jsonl").messages == (
            Message.system("Be brief."),
        )
        assert read_transcript(path).format == "jsonl"
        assert set(FORMATS) >= {"openai", "claude_code", "tau_bench", "locomo"}

    def test_transcript_defaults(self) -> None:
        """A Transcript needs only messages, format and title."""
        t = Transcript((), "openai", "x")
        assert (t.model, t.tools, dict(t.meta)) == (None, (), {})


class TestReadErrors:
    def test_invalid_json(self, tmp_path: Path) -> None:
        """Invalid JSON names the file and the line."""
        path = write(tmp_path, "bad.json", '[\n  {"role": "user",\n  "content": }\n]')
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(path)
        assert info.value.path == "bad.json:3"
        assert info.value.reason.startswith("not valid JSON")

    def test_invalid_jsonl_line(self, tmp_path: Path) -> None:
        """A bad JSONL line is named by its number."""
        text = jsonl(OPENAI_CHAT[:2]) + "\n{oops\n"
        with pytest.raises(InvalidMessageError, match=r"^c\.jsonl:4: not valid JSON"):
            read_transcripts(write(tmp_path, "c.jsonl", text))

    def test_an_unfinished_last_line_is_left_out(self, tmp_path: Path) -> None:
        """A last line with no line end that is not JSON (a transcript still being
        written) is left out with a warning naming it; with a line end after
        it, or before other lines, it is an error."""
        whole = jsonl(OPENAI_CHAT[:2])
        text = whole + "\n" + jsonl(OPENAI_CHAT[2:3])[:20]
        with pytest.warns(PartialLineWarning, match=r"^c\.jsonl:4: the last line is"):
            (t,) = read_transcripts(write(tmp_path, "c.jsonl", text))
        assert [m.role for m in t.messages] == ["system", "user"]
        with pytest.raises(InvalidMessageError, match=r"^d\.jsonl:4: not valid JSON"):
            read_transcripts(write(tmp_path, "d.jsonl", text + "\n"))

    def test_a_last_line_cut_inside_a_character(self, tmp_path: Path) -> None:
        """A file being written, read between the bytes of one character: the
        unfinished last line is left out as any other, not "not UTF-8"."""
        first = json.dumps(OPENAI_CHAT[1]) + "\n"
        last = json.dumps({"role": "assistant", "content": "café"}, ensure_ascii=False)
        data = (first + last).encode()
        path = tmp_path / "c.jsonl"
        path.write_bytes(data[: data.index("é".encode()) + 1])
        with pytest.warns(PartialLineWarning, match=r"^c\.jsonl:2: the last line is"):
            (t,) = read_transcripts(path)
        assert [m.text for m in t.messages] == ["Weather in Oslo?"]

    def test_a_byte_not_utf8_is_named_by_line(self, tmp_path: Path) -> None:
        """A stray Latin-1 byte names the file's line and column."""
        lines = [json.dumps(m).encode() for m in OPENAI_CHAT[1:]]
        lines[2] = b'{"role": "tool", "tool_call_id": "c1", "content": "3 \xb0C"}'
        path = tmp_path / "c.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(path)
        assert info.value.path == "c.jsonl:3"
        assert info.value.reason.startswith("not UTF-8 text: ")
        assert info.value.reason.endswith("invalid start byte (column 54)")
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(io.BytesIO(b"\n\n[\xff]"))
        assert info.value.path == "<stream>:3"

    @pytest.mark.parametrize(
        ("first", "column", "why"),
        [
            ('{"role": "user", "content": "hi"', 33, "Expecting ',' delimiter"),
            ('{"role": "user",', 17, "Expecting property name"),
        ],
    )
    def test_a_broken_first_line_is_named(
        self, tmp_path: Path, first: str, column: int, why: str
    ) -> None:
        """A broken first JSONL line is named as line 1, with its own column,
        blank lines before it counted; a document over many lines is still
        named where it broke."""
        rest = jsonl(OPENAI_CHAT[2:])
        for blank, line in (("", 1), ("\n\n", 3)):
            with pytest.raises(InvalidMessageError) as info:
                read_transcripts(
                    write(tmp_path, "c.jsonl", blank + first + "\n" + rest)
                )
            assert info.value.path == f"c.jsonl:{line}"
            assert info.value.reason.startswith(f"not valid JSON: {why}")
            assert info.value.reason.endswith(f"(column {column})")
        items = [json.dumps(m) for m in OPENAI_CHAT[:2]]
        text = "[\n" + items[0] + "\n" + items[1] + "\n]"  # a comma missing
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "c.json", text))
        assert info.value.path == "c.json:3"

    def test_no_format(self, tmp_path: Path) -> None:
        """A shape that matches no format lists the formats tried."""
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "x.json", {"hello": 1}))
        assert info.value.path == "x.json"
        assert "tried openai, openai_request" in info.value.reason
        with pytest.raises(InvalidMessageError, match="matches no known format"):
            read_transcripts(write(tmp_path, "y.json", [1, 2]))

    def test_a_message_not_in_shape_is_named(self, tmp_path: Path) -> None:
        """Most items are messages, one is not (a key misspelt, a stray JSONL
        line): the error names that item and field, not 'no known format'."""
        bad = [*OPENAI_CHAT[:2], {"rol": "user", "content": "x"}, *OPENAI_CHAT[2:]]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "c.json", bad))
        assert str(info.value) == "c.json[2].role: missing"
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "c.jsonl", jsonl(bad)))
        assert str(info.value) == "c.jsonl:3: role: missing"

    def test_a_path_no_file_system_takes(self) -> None:
        """A NUL in a path, or a path of bytes, is a bad argument named ``source``."""

        class BytesPath:
            def __fspath__(self) -> bytes:
                return b"chat.json"

        with pytest.raises(ArgumentValueError, match=r"^source: .*without NUL"):
            read_transcripts("chat\0.json")
        with pytest.raises(ArgumentValueError, match=r"^source: .*without NUL"):
            read_transcripts(Path("a\0b"))
        with pytest.raises(ArgumentTypeError, match=r"^source: expected a path"):
            read_transcripts(BytesPath())  # type: ignore[arg-type]  # what the test gives
        with pytest.raises(InvalidMessageError, match=r"no-such\.json: cannot read"):
            read_transcripts("no-such.json")

    def test_bad_message_in_jsonl(self, tmp_path: Path) -> None:
        """A malformed message in JSONL is named by line and field."""
        lines = jsonl([OPENAI_CHAT[1], {"role": "user", "content": [{"type": "foo"}]}])
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "c.jsonl", "\n" + lines))
        assert info.value.path == "c.jsonl:3: content[0].type"

    def test_bad_block_in_claude_code(self, tmp_path: Path) -> None:
        """A malformed block of a grouped Claude Code message names its own record."""
        records = [
            *CLAUDE_CODE[:5],
            record(
                "assistant",
                12,
                message={
                    "id": "m1",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t3"}],
                },
            ),
        ]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "s.jsonl", jsonl(records)))
        assert info.value.path == "s.jsonl:6: message.content[0].name"

    def test_claude_code_record_without_message(self, tmp_path: Path) -> None:
        """A user record without a message names the line."""
        records = [record("user", 1)]
        with pytest.raises(InvalidMessageError, match=r"^s\.jsonl:1: message: missing"):
            read_transcripts(write(tmp_path, "s.jsonl", jsonl(records)))

    def test_bad_trajectory(self, tmp_path: Path) -> None:
        """A malformed tau-bench message names the run and message."""
        runs = [{"traj": OPENAI_CHAT}, {"traj": [{"role": "tool", "content": "x"}]}]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "t.json", runs))
        assert info.value.path == "t.json[1].traj[0].tool_call_id"

    def test_count_and_format_checks(self, tmp_path: Path) -> None:
        """read_transcript wants one transcript; unknown formats are refused."""
        runs = [{"traj": OPENAI_CHAT}, {"traj": OPENAI_CHAT}]
        path = write(tmp_path, "t.json", runs)
        with pytest.raises(
            InvalidMessageError, match="expected one transcript, found 2"
        ):
            read_transcript(path)
        with pytest.raises(InvalidMessageError, match="unknown format 'csv'"):
            read_transcripts(path, format="csv")
        with pytest.raises(InvalidMessageError, match="not JSONL"):
            read_transcripts(
                write(tmp_path, "c.jsonl", jsonl(OPENAI_CHAT)), format="openai"
            )

    def test_empty_and_binary(self, tmp_path: Path) -> None:
        """Empty, non-UTF-8 and missing files are clear errors."""
        with pytest.raises(InvalidMessageError, match="empty file"):
            read_transcripts(write(tmp_path, "e.json", "\n\n"))
        with pytest.raises(InvalidMessageError, match="not UTF-8"):
            read_transcripts(io.BytesIO(b"\xff\xfe\x00"))
        with pytest.raises(
            InvalidMessageError, match=r"missing\.json: cannot read"
        ) as info:
            read_transcripts(tmp_path / "missing.json")
        assert isinstance(info.value.__cause__, FileNotFoundError)


class TestDetection:
    @pytest.mark.parametrize(
        "text",
        [
            "3",
            '"hello"',
            "null",
            "1\n2\n",
            '[{"role": "user", "content": "x"}, {"a": 1}]',
        ],
    )
    def test_no_format(self, text: str) -> None:
        """Scalars, JSONL of non-objects and lists missing roles match no format."""
        with pytest.raises(InvalidMessageError, match="matches no known format"):
            detect_format(io.StringIO(text))

    def test_empty_list_is_openai(self) -> None:
        """An empty JSON list is an empty OpenAI conversation."""
        assert detect_format(io.StringIO("[]")) == "openai"
        assert read_transcript(io.StringIO("[]")).messages == ()

    @pytest.mark.parametrize(
        "record",
        [
            {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
            {"type": "summary", "summary": "Fixing login", "leafUuid": "u9"},
            {"type": "queue-operation", "operation": "enqueue", "content": "hi"},
        ],
    )
    def test_a_claude_code_session_with_no_messages(
        self, record: dict[str, Any]
    ) -> None:
        """A session file holding only records without messages is a Claude
        Code session of no messages, as a line or as a document."""
        for text in (json.dumps(record) + "\n", json.dumps(record)):
            assert detect_format(io.StringIO(text)) == "claude_code"
            t = read_transcript(io.StringIO(text))
            assert (t.format, t.messages) == ("claude_code", ())

    def test_a_saved_anthropic_response_is_anthropic(self, tmp_path: Path) -> None:
        """A reply saved as the SDK dumps it (``type: "message"``, ``usage``)
        is an Anthropic turn, as ``fit`` reads it, and its response-only keys
        are not written back."""
        reply = {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "abc"},
                {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        chat = [ANTHROPIC_CHAT[0], reply, ANTHROPIC_CHAT[2]]
        t = read_transcript(write(tmp_path, "c.json", chat))
        assert t.format == "anthropic"
        assert [m.role for m in t.messages] == ["user", "assistant", "tool"]
        assert "anthropic" not in t.messages[1].meta
        (t,) = read_transcripts(write(tmp_path, "c.jsonl", jsonl(chat)))
        assert (t.format, t.meta["shape"]) == ("jsonl", "anthropic")
        text_only = {**reply, "content": [{"type": "text", "text": "3 C."}]}
        t = read_transcript(write(tmp_path, "d.json", [ANTHROPIC_CHAT[0], text_only]))
        assert t.messages[1].text == "3 C."
        body = {"model": "claude-x", "system": "Be brief.", "messages": chat}
        t = read_transcript(write(tmp_path, "b.json", body))
        assert t.format == "anthropic_request"
        assert "anthropic" not in t.messages[1].meta

    def test_role_items_with_responses_parts(self) -> None:
        """Role-only items whose content uses input_text parts are Responses items."""
        items = [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
        t = read_transcript(io.StringIO(json.dumps(items)))
        assert (t.format, t.messages) == ("responses", (Message.user("hi"),))


class TestRequestBodies:
    def test_body_without_tools(self, tmp_path: Path) -> None:
        """A body without tools gives no tool specs and no other_tools."""
        body = {"model": "gpt-4o", "messages": OPENAI_CHAT[:2]}
        t = read_transcript(write(tmp_path, "req.json", body))
        assert (t.format, t.tools, dict(t.meta)) == ("openai_request", (), {})

    @pytest.mark.parametrize(
        ("fmt", "body", "where"),
        [
            ("anthropic_request", {"input": []}, "b.json.messages"),
            ("responses", {"model": "o3", "messages": []}, "b.json.input"),
        ],
    )
    def test_named_format_missing_key(
        self, tmp_path: Path, fmt: str, body: dict[str, Any], where: str
    ) -> None:
        """A body read as a named format must hold that format's message key."""
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "b.json", body), format=fmt)
        assert (info.value.path, info.value.reason) == (where, "missing")

    def test_tool_name_must_be_a_string(self, tmp_path: Path) -> None:
        """A function tool whose name is not a string is named by its index."""
        body = {
            "messages": OPENAI_CHAT[:2],
            "tools": [{"type": "function", "function": {"name": 3}}],
        }
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "req.json", body))
        assert (info.value.path, info.value.reason) == (
            "req.json.tools[0].name",
            "expected a string, got number",
        )


class TestClaudeCodeRecords:
    @pytest.mark.parametrize(("kind", "found"), [(5, "number"), (["x"], "array")])
    def test_type_must_be_a_string(
        self, tmp_path: Path, kind: object, found: str
    ) -> None:
        """A record whose type is not a string is an error naming the line."""
        records = [record("user", 1, message={"role": "user", "content": "hi"})]
        records.append({"sessionId": "s-1", "type": kind})
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "s.jsonl", jsonl(records)))
        assert (info.value.path, info.value.reason) == (
            "s.jsonl:2: type",
            f"expected a string, got {found}",
        )

    def test_assistant_records_without_id_stay_apart(self, tmp_path: Path) -> None:
        """Assistant records without a message id are not grouped together."""
        records = [
            record("user", 1, message={"role": "user", "content": "hi"}),
            record("assistant", 2, message={"role": "assistant", "content": "a"}),
            record("assistant", 3, message={"role": "assistant", "content": "b"}),
        ]
        t = read_transcript(write(tmp_path, "s.jsonl", jsonl(records)))
        assert [(m.role, m.text) for m in t.messages] == [
            ("user", "hi"),
            ("assistant", "a"),
            ("assistant", "b"),
        ]
        assert [m.meta["uuid"] for m in t.messages] == ["u1", "u2", "u3"]

    def test_bad_block_in_first_record_of_group(self, tmp_path: Path) -> None:
        """A bad block in the first record of a grouped message names that record."""
        bad = {"type": "tool_use", "id": "t1", "input": {}}  # no name
        records = [
            record("user", 1, message={"role": "user", "content": "go"}),
            record("assistant", 2, message={"id": "m1", "content": [bad]}),
            record(
                "assistant",
                3,
                message={"id": "m1", "content": [{"type": "text", "text": "ok"}]},
            ),
        ]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "s.jsonl", jsonl(records)))
        assert info.value.path == "s.jsonl:2: message.content[0].name"

    def test_bad_content_names_the_message(self, tmp_path: Path) -> None:
        """Content that is neither text nor blocks is named on its record's line."""
        records = [record("user", 1, message={"role": "user", "content": 5})]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "s.jsonl", jsonl(records)))
        assert info.value.path == "s.jsonl:1: message.content"
        assert info.value.reason == "expected a string or a list, got number"


class TestDatasets:
    def test_run_without_traj(self, tmp_path: Path) -> None:
        """A tau-bench run after the first that lacks traj is named."""
        runs = [{"traj": OPENAI_CHAT}, {"task_id": 1}]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "t.json", runs))
        assert (info.value.path, info.value.reason) == ("t.json[1].traj", "missing")

    def test_sample_without_conversation(self, tmp_path: Path) -> None:
        """A LoCoMo sample after the first that lacks its conversation is named."""
        samples = [{"conversation": {}, "qa": []}, {"qa": []}]
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(write(tmp_path, "lo.json", samples))
        assert (info.value.path, info.value.reason) == (
            "lo.json[1].conversation",
            "missing",
        )

    @pytest.mark.parametrize(
        ("turn", "where", "found"),
        [
            ({"speaker": 3, "text": "x"}, "speaker", "number"),
            ({"speaker": "Bo"}, "text", "null"),
        ],
    )
    def test_bad_turn(
        self, tmp_path: Path, turn: dict[str, Any], where: str, found: str
    ) -> None:
        """A LoCoMo turn without a string speaker or text is named by its place."""
        conv = {
            "speaker_a": "Ann",
            "session_1": [{"speaker": "Ann", "text": "hi"}, turn],
        }
        with pytest.raises(InvalidMessageError) as info:
            read_transcripts(
                write(tmp_path, "lo.json", [{"conversation": conv, "qa": []}])
            )
        assert (info.value.path, info.value.reason) == (
            f"lo.json[0].conversation.session_1[1].{where}",
            f"expected a string, got {found}",
        )


class TestSharedData:
    def test_tau_bench(self, shared_data: Path) -> None:
        """200 trajectories; the first has one neutral message per traj entry."""
        path = shared_data / "tau-bench_gpt-4o-airline.json"
        ts = read_transcripts(path)
        raw = json.loads(path.read_text())
        assert len(ts) == 200
        assert {t.format for t in ts} == {"tau_bench"}
        assert len(ts[0].messages) == len(raw[0]["traj"])
        assert sum(len(t.messages) for t in ts) == 5308
        assert sum(len(m.tool_calls) for t in ts for m in t.messages) == 1164
        assert all(u.complete for t in ts for u in units(t.messages))

    def test_locomo(self, shared_data: Path) -> None:
        """10 conversations, 5,882 turns, each a named user or assistant message."""
        ts = read_transcripts(shared_data / "locomo10.json")
        assert len(ts) == 10
        assert sum(len(t.messages) for t in ts) == 5882
        # 910 turns have an image; 316 more carry a caption without img_url
        assert sum(len(m.parts) == 2 for t in ts for m in t.messages) == 1226
        assert sum("img_url" in m.meta for t in ts for m in t.messages) == 910
        first = ts[0]
        assert first.title == "conv-26"
        assert (first.messages[0].role, first.messages[0].name) == ("user", "Caroline")
        assert first.messages[0].meta["dia_id"] == "D1:1"
        assert {m.role for m in first.messages} == {"user", "assistant"}

    def test_claude_code(self, shared_data: Path) -> None:
        """Each file is one transcript, all units complete, 1,064 calls and results."""
        files = sorted((shared_data / "claude_code_sessions").rglob("*.jsonl"))
        assert len(files) == 16
        calls = results = 0
        triggers: list[str] = []
        for path in files:
            ts = read_transcripts(path)
            assert len(ts) == 1, path.name
            t = ts[0]
            assert t.format == "claude_code"
            assert all(u.complete for u in units(t.messages)), path.name
            calls += sum(isinstance(p, ToolCall) for m in t.messages for p in m.parts)
            results += sum(
                isinstance(p, ToolResult) for m in t.messages for p in m.parts
            )
            triggers += [c["trigger"] for c in t.meta["compactions"]]
            assert str(t.model).startswith("claude-"), path.name
            for c in t.meta["compactions"]:
                follow = t.messages[c["index"]]
                assert follow.meta.get("is_compact_summary") is True, path.name
        assert (calls, results) == (1064, 1064)
        assert sorted(triggers) == ["auto", "auto", "auto", "auto", "manual"]
