from __future__ import annotations

import json
import re
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwindow.errors import InvalidMessageError
from contextwindow.messages import (
    Image,
    Message,
    Provider,
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


# What contextwindow wrote before Opaque parts (575520e; 0b71215 inside tool
# results): blocks the neutral model did not read kept in meta as [index,
# block] pairs, which the writers put back. Written here as it stored them.
_DOC = {
    "type": "document",
    "source": {"type": "text", "media_type": "text/plain", "data": "Fee: 4,200 EUR."},
    "cache_control": {"type": "ephemeral"},
}
_B64 = "data:text/plain;base64,SGVsbG8="
_FILE = {
    "type": "file",
    "file": {"filename": "a.txt", "file_data": _B64},
}
_SEARCH = {
    "type": "search_result",
    "source": "s",
    "title": "T",
    "content": [{"type": "text", "text": "found it"}],
}
_EARLIER: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "anthropic": (
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "read",
                        "cache_control": {"type": "ephemeral"},
                    },
                    _DOC,
                    {"type": "text", "text": "thanks"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [
                            {
                                "type": "text",
                                "text": "out",
                                "cache_control": {"type": "ephemeral"},
                            },
                            _SEARCH,
                        ],
                    }
                ],
            },
        ],
        [
            {
                "role": "user",
                "parts": [
                    {"kind": "text", "text": "read"},
                    {"kind": "text", "text": "thanks"},
                ],
                "id": "u1",
                "meta": {
                    "anthropic": {
                        "parts": [
                            {"extra": {"cache_control": {"type": "ephemeral"}}},
                            None,
                        ],
                        "opaque": [[1, _DOC]],
                    }
                },
            },
            {
                "role": "assistant",
                "parts": [
                    {"kind": "tool_call", "id": "t1", "name": "ls", "arguments": "{}"}
                ],
                "id": "a1",
            },
            {
                "role": "tool",
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "t1",
                        "content": [{"kind": "text", "text": "out"}],
                    }
                ],
                "id": "t1",
                "meta": {
                    "anthropic": {
                        "parts": [
                            {
                                "inner": [
                                    {"extra": {"cache_control": {"type": "ephemeral"}}}
                                ],
                                "opaque": [[1, _SEARCH]],
                            }
                        ]
                    }
                },
            },
        ],
    ),
    "openai": (
        [
            {"role": "user", "content": [{"type": "text", "text": "see"}, _FILE]},
            {
                "role": "assistant",
                "reasoning_content": "think",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "refusal", "refusal": "no"},
                ],
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "ls", "arguments": "{}"},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c1",
                "content": [_FILE, {"type": "text", "text": "r"}],
            },
        ],
        [
            {
                "role": "user",
                "parts": [{"kind": "text", "text": "see"}],
                "id": "u1",
                "meta": {"openai": {"opaque": [[1, _FILE]]}},
            },
            {
                "role": "assistant",
                "parts": [
                    {"kind": "thinking", "text": "think"},
                    {"kind": "text", "text": "a"},
                    {"kind": "tool_call", "id": "c1", "name": "ls", "arguments": "{}"},
                ],
                "id": "a1",
                "meta": {
                    "openai": {
                        "reasoning_content": True,
                        "opaque": [[1, {"type": "refusal", "refusal": "no"}]],
                    }
                },
            },
            {
                "role": "tool",
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "c1",
                        "content": [{"kind": "text", "text": "r"}],
                    }
                ],
                "id": "t1",
                "meta": {"openai": {"opaque": [[0, _FILE]]}},
            },
        ],
    ),
    "responses": (
        [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "x"},
                    {"type": "input_file", "file_id": "file-1"},
                ],
            },
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {
                        "type": "input_file",
                        "filename": "b.txt",
                        "file_data": _B64,
                    },
                    {"type": "input_text", "text": "ok"},
                ],
            },
        ],
        [
            {
                "role": "user",
                "parts": [{"kind": "text", "text": "x"}],
                "id": "u1",
                "meta": {
                    "responses": {
                        "items": [
                            {
                                "type": "message",
                                "n": 1,
                                "content_form": "list",
                                "opaque": [
                                    [1, {"type": "input_file", "file_id": "file-1"}]
                                ],
                            }
                        ]
                    }
                },
            },
            {
                "role": "assistant",
                "parts": [
                    {"kind": "tool_call", "id": "c1", "name": "ls", "arguments": "{}"}
                ],
                "id": "a1",
                "meta": {"responses": {"items": [{"type": "function_call", "n": 1}]}},
            },
            {
                "role": "tool",
                "parts": [
                    {
                        "kind": "tool_result",
                        "call_id": "c1",
                        "content": [{"kind": "text", "text": "ok"}],
                    }
                ],
                "id": "t1",
                "meta": {
                    "responses": {
                        "items": [
                            {
                                "type": "function_call_output",
                                "n": 1,
                                "opaque": [
                                    [
                                        0,
                                        {
                                            "type": "input_file",
                                            "filename": "b.txt",
                                            "file_data": _B64,
                                        },
                                    ]
                                ],
                            }
                        ]
                    }
                },
            },
        ],
    ),
}


class TestEarlierLayouts:
    @pytest.mark.parametrize("provider", sorted(_EARLIER))
    def test_kept_blocks_become_parts(self, provider: str) -> None:
        """Blocks an earlier version kept in meta read as today's reader gives
        them: Opaque parts in place (meta and extras as today), written once."""
        from contextwindow.formats import from_provider, to_provider

        given, stored = _EARLIER[provider]
        read = [message_from_dict(via_json(d)) for d in stored]
        today = from_provider(given, cast("Provider", provider))
        assert read == today
        assert [dict(m.meta) for m in read] == [dict(m.meta) for m in today]
        written = to_provider(read, cast("Provider", provider))
        assert (written[1] if provider == "anthropic" else written) == given

    def test_a_kept_document_is_counted(self) -> None:
        """A 72,000-character document stored in meta counts, as it is sent."""
        from contextwindow.tokens import count_messages

        doc = {
            "type": "document",
            "source": {
                "type": "text",
                "media_type": "text/plain",
                "data": "quarterly numbers " * 4000,
            },
        }
        stored = {
            "role": "user",
            "parts": [{"kind": "text", "text": "read this doc"}],
            "id": "u1",
            "meta": {"anthropic": {"opaque": [[1, doc]]}},
        }
        m = message_from_dict(stored)
        assert "anthropic" not in m.meta
        assert [p.kind for p in m.parts] == ["text", "opaque"]
        assert count_messages([m], "claude-sonnet-4-5") > 8000
        assert stored["meta"] == {"anthropic": {"opaque": [[1, doc]]}}  # not mutated

    def test_a_chat_system_message_lifts_them_too(self) -> None:
        """A Chat system message's blocks become parts, as its reader gives them now."""
        from contextwindow.formats import from_openai, to_openai

        stored = msg(
            {"kind": "text", "text": "sys"},
            role="system",
            meta={"openai": {"opaque": [[1, _FILE]]}},
        )
        m = message_from_dict(stored)
        given = {"role": "system", "content": [{"type": "text", "text": "sys"}, _FILE]}
        assert m == from_openai([given])[0]
        assert "openai" not in m.meta
        assert to_openai([m]) == [given]

    def test_malformed_pairs_are_left_alone(self) -> None:
        """Pairs that are not [index, object] stay in meta, as the writers skip them."""
        meta = {"anthropic": {"opaque": [[1, "not a block"]]}}
        m = message_from_dict(msg({"kind": "text", "text": "x"}, meta=meta))
        assert len(m.parts) == 1
        assert m.meta == meta


def test_nan_arguments_are_bad_input_named() -> None:
    """Stored arguments holding NaN are refused as other non-JSON text, named."""
    part = {"kind": "tool_call", "id": "c", "name": "f", "arguments": '{"a": NaN}'}
    with pytest.raises(InvalidMessageError) as info:
        message_from_dict({"role": "assistant", "parts": [part]})
    assert info.value.path == "messages[0].parts[0].arguments"
