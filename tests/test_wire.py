from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwindow.errors import InvalidMessageError
from contextwindow.messages import (
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from contextwindow.testing import conversations, messages_strategy
from contextwindow.wire import (
    WIRE_VERSION,
    from_dicts,
    from_document,
    message_from_dict,
    message_to_dict,
    to_dicts,
    to_document,
)


def same(a: Message, b: Message) -> bool:
    """Equal in every field, including the ones equality ignores."""
    return a == b and a.id == b.id and dict(a.meta) == dict(b.meta)


def via_json(d: object) -> Any:
    return json.loads(json.dumps(d, ensure_ascii=False))


EVERYTHING = Message(
    "assistant",
    (
        Thinking("plan", signature="sig=="),
        Thinking("", signature="opaque", redacted=True),
        Text("Looking."),
        ToolCall("c1", "read", '{"path": "a.py"}'),
        Image("data:image/png;base64,AAAA", detail="high", width=3, height=4),
    ),
    name="bot",
    agent="coder",
    pinned=True,
    id="m-1",
    meta={"cache_control": {"type": "ephemeral"}},
)
RESULTS = Message(
    "tool",
    (
        ToolResult("c1", "text out", is_error=True, name="read"),
        ToolResult("c1", (Text("a"), Image("https://x/y.png"))),
    ),
    id="m-2",
)


class TestMessageToDict:
    def test_every_field(self) -> None:
        """Every field and part is written, with a kind per part."""
        d = message_to_dict(EVERYTHING)
        assert d == {
            "role": "assistant",
            "parts": [
                {"kind": "thinking", "text": "plan", "signature": "sig=="},
                {
                    "kind": "thinking",
                    "text": "",
                    "signature": "opaque",
                    "redacted": True,
                },
                {"kind": "text", "text": "Looking."},
                {
                    "kind": "tool_call",
                    "id": "c1",
                    "name": "read",
                    "arguments": '{"path": "a.py"}',
                },
                {
                    "kind": "image",
                    "url": "data:image/png;base64,AAAA",
                    "detail": "high",
                    "width": 3,
                    "height": 4,
                },
            ],
            "id": "m-1",
            "name": "bot",
            "agent": "coder",
            "pinned": True,
            "meta": {"cache_control": {"type": "ephemeral"}},
        }

    def test_tool_results(self) -> None:
        """Tool results keep string or part content, is_error and name."""
        parts = message_to_dict(RESULTS)["parts"]
        assert parts == [
            {
                "kind": "tool_result",
                "call_id": "c1",
                "content": "text out",
                "is_error": True,
                "name": "read",
            },
            {
                "kind": "tool_result",
                "call_id": "c1",
                "content": [
                    {"kind": "text", "text": "a"},
                    {"kind": "image", "url": "https://x/y.png"},
                ],
            },
        ]

    def test_defaults_left_out(self) -> None:
        """Fields at their default are not written; id and parts always are."""
        d = message_to_dict(Message.user("", id="u"))
        assert dict(d) == {"role": "user", "parts": [], "id": "u"}

    def test_meta_is_a_copy(self) -> None:
        """Changing the written meta does not change the message."""
        meta = {"k": 1}
        m = Message.user("x", meta=meta)
        d = message_to_dict(m)
        d["meta"]["k"] = 2
        assert m.meta["k"] == 1

    def test_document_has_version(self) -> None:
        """to_document records WIRE_VERSION once for the conversation."""
        doc = to_document([EVERYTHING, RESULTS])
        assert doc["v"] == WIRE_VERSION == 1
        assert [d["id"] for d in doc["messages"]] == ["m-1", "m-2"]


class TestRoundTrip:
    def test_examples(self) -> None:
        """Every field survives to_dict, JSON and from_dict."""
        for m in (EVERYTHING, RESULTS, Message.system("s", id="s")):
            assert same(message_from_dict(via_json(message_to_dict(m))), m)

    @given(messages_strategy())
    def test_any_message(self, msg: Message) -> None:
        """Any message survives a round trip through JSON text."""
        back = message_from_dict(via_json(message_to_dict(msg)))
        assert same(back, msg)

    @given(conversations())
    def test_any_conversation(self, conv: list[Message]) -> None:
        """Any conversation survives to_document / from_document."""
        back = from_document(via_json(to_document(conv)))
        assert len(back) == len(conv)
        assert all(same(a, b) for a, b in zip(back, conv, strict=True))
        assert from_dicts(to_dicts(conv)) == conv

    @given(st.text())
    def test_any_text(self, text: str) -> None:
        """Any text, including control characters and CJK, survives JSON."""
        m = Message.user(text, id="x")
        assert same(message_from_dict(via_json(message_to_dict(m))), m)


class TestReading:
    def test_nulls_mean_defaults(self) -> None:
        """An explicit null is the same as a left-out field."""
        m = message_from_dict(
            {
                "role": "user",
                "parts": [{"kind": "image", "url": "u", "detail": None}],
                "id": "i",
                "name": None,
                "agent": None,
                "pinned": None,
                "meta": None,
            }
        )
        assert same(m, Message("user", (Image("u"),), id="i"))

    def test_missing_id_gets_fresh_one(self) -> None:
        """A message without an id gets a new one."""
        m = message_from_dict({"role": "user", "parts": []})
        assert re.fullmatch(r"[0-9a-f]{32}", m.id)

    def test_empty_id_kept(self) -> None:
        """An empty-string id is kept as it is."""
        assert message_from_dict({"role": "user", "parts": [], "id": ""}).id == ""

    def test_arguments_default(self) -> None:
        """A tool call without arguments gets "{}"."""
        d = {
            "role": "assistant",
            "parts": [{"kind": "tool_call", "id": "a", "name": "f"}],
        }
        assert message_from_dict(d).tool_calls[0].arguments == "{}"


def msg(*parts: Any, **kw: Any) -> dict[str, Any]:
    return {"role": "assistant", "parts": list(parts), **kw}


BAD: list[tuple[object, str, str]] = [
    ([], "messages[0]", "expected an object, got array"),
    ({"parts": []}, "messages[0].role", "missing"),
    ({"role": 3, "parts": []}, "messages[0].role", "expected a string, got number"),
    ({"role": "bot", "parts": []}, "messages[0].role", "expected one of"),
    ({"role": "user"}, "messages[0].parts", "missing"),
    ({"role": "user", "parts": "hi"}, "messages[0].parts", "expected an array"),
    ({"role": "user", "parts": [], "content": "hi"}, "messages[0].content", "unknown"),
    (msg("hi"), "messages[0].parts[0]", "expected an object, got string"),
    (msg({"text": "x"}), "messages[0].parts[0].kind", "missing"),
    (msg({"kind": "audio"}), "messages[0].parts[0].kind", "unknown kind 'audio'"),
    (msg({"kind": "text"}), "messages[0].parts[0].text", "missing"),
    (msg({"kind": "text", "text": "x", "x": 1}), "messages[0].parts[0].x", "unknown"),
    (
        msg({"kind": "tool_call", "name": "f"}),
        "messages[0].parts[0].id",
        "missing",
    ),
    (
        msg({"kind": "tool_call", "id": "a", "name": "f", "arguments": {"q": 1}}),
        "messages[0].parts[0].arguments",
        "expected a string, got object",
    ),
    (
        msg({"kind": "tool_result", "content": "x"}),
        "messages[0].parts[0].call_id",
        "missing",
    ),
    (
        msg({"kind": "tool_result", "call_id": "a"}),
        "messages[0].parts[0].content",
        "missing",
    ),
    (
        msg({"kind": "tool_result", "call_id": "a", "content": 5}),
        "messages[0].parts[0].content",
        "expected a string or an array of parts",
    ),
    (
        msg({"kind": "tool_result", "call_id": "a", "content": [{"kind": "image"}]}),
        "messages[0].parts[0].content[0].url",
        "missing",
    ),
    (
        msg(
            {
                "kind": "tool_result",
                "call_id": "a",
                "content": [{"kind": "tool_call", "id": "x", "name": "f"}],
            }
        ),
        "messages[0].parts[0].content[0].kind",
        "unknown kind 'tool_call' (expected text, image, opaque)",
    ),
    (
        msg({"kind": "tool_result", "call_id": "a", "content": "", "is_error": 1}),
        "messages[0].parts[0].is_error",
        "expected a boolean",
    ),
    (
        msg({"kind": "image", "url": "u", "width": -1}),
        "messages[0].parts[0].width",
        "non-negative integer",
    ),
    (
        msg({"kind": "image", "url": "u", "height": True}),
        "messages[0].parts[0].height",
        "non-negative integer",
    ),
    (
        msg({"kind": "thinking", "text": "t", "redacted": "yes"}),
        "messages[0].parts[0].redacted",
        "expected a boolean, got string",
    ),
    (msg(id=7), "messages[0].id", "expected a string"),
    (msg(meta=[1]), "messages[0].meta", "expected an object, got array"),
    (msg(pinned="true"), "messages[0].pinned", "expected a boolean"),
]


class TestValidation:
    @pytest.mark.parametrize(("data", "path", "reason"), BAD)
    def test_names_the_field(self, data: object, path: str, reason: str) -> None:
        """Malformed input raises InvalidMessageError at the exact field."""
        with pytest.raises(InvalidMessageError) as exc:
            message_from_dict(data)
        assert exc.value.path == path
        assert reason in exc.value.reason

    def test_index_in_a_list(self) -> None:
        """from_dicts names the message and part index: messages[3].parts[1]."""
        good = {"role": "user", "parts": []}
        bad = msg({"kind": "text", "text": "ok"}, {"kind": "tool_result"})
        with pytest.raises(InvalidMessageError) as exc:
            from_dicts([good, good, good, bad])
        assert str(exc.value) == "messages[3].parts[1].call_id: missing"
        assert isinstance(exc.value, ValueError)

    def test_custom_path(self) -> None:
        """message_from_dict uses the path it is given."""
        with pytest.raises(InvalidMessageError, match=r"^log\[9\]\.role: missing$"):
            message_from_dict({"parts": []}, path="log[9]")

    @pytest.mark.parametrize("data", [{"role": "user"}, "abc", None, 5])
    def test_from_dicts_needs_an_array(self, data: object) -> None:
        """from_dicts rejects anything that is not a list of objects."""
        with pytest.raises(InvalidMessageError) as exc:
            from_dicts(data)
        assert exc.value.path == "messages"

    @pytest.mark.parametrize(
        ("doc", "path", "reason"),
        [
            ([], "document", "expected an object"),
            ({"messages": []}, "v", "missing"),
            ({"v": 2, "messages": []}, "v", "unsupported version 2"),
            ({"v": True, "messages": []}, "v", "unsupported version True"),
            ({"v": 1}, "messages", "missing"),
            ({"v": 1, "messages": [], "x": 0}, "document.x", "unknown field"),
            ({"v": 1, "messages": [{}]}, "messages[0].role", "missing"),
        ],
    )
    def test_document_errors(self, doc: object, path: str, reason: str) -> None:
        """from_document checks the version and the messages."""
        with pytest.raises(InvalidMessageError) as exc:
            from_document(doc)
        assert exc.value.path == path
        assert reason in exc.value.reason
