"""The official SDKs as clients, through the proxy, against a recording upstream."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
from tests.proxy._upstream import anthropic_turn, openai_turn
from tests.proxy.conftest import Rig

from contextwindow import TokenCounter, problems
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.models import get_tokenizer

KEY = "sk-test-0123456789abcdefSECRET"
BUDGET = 3_000 - 500  # the window less the reply's max_tokens

TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
            },
        },
    }
]
TOOLS_ANTHROPIC = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def _oai(rig: Rig) -> Any:  # the SDKs' TypedDict params are not the point here
    return openai.OpenAI(base_url=rig.url + "/v1", api_key=KEY, max_retries=0)


def _ant(rig: Rig) -> Any:
    return anthropic.Anthropic(base_url=rig.url, api_key=KEY, max_retries=0)


def _chat_history(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."}
    ]
    for i in range(turns):
        msgs += openai_turn(i, f"part {i}: " + "data " * 120)
    msgs.append({"role": "user", "content": "Summarise what you read."})
    return msgs


def _ant_history(turns: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = []
    for i in range(turns):
        msgs += anthropic_turn(i, 120)
    msgs.append({"role": "user", "content": "Summarise what you read."})
    return msgs


def _check(provider: Any, data: Any, tools: Any, model: str) -> int:
    """The forwarded request is valid for ``provider``; its token count."""
    read = coerce_messages(data, provider=provider)
    assert problems(read.messages, provider) == ()
    counter = TokenCounter(get_tokenizer(model), provider)
    return counter.messages(read.messages, tools=coerce_tools(tools or ()))


class TestChatCompletions:
    def test_fitting_request_forwarded_byte_for_byte(self, rig: Rig) -> None:
        msgs = _chat_history(2)
        raw = json.dumps(
            {
                "model": "gpt-4o",
                "messages": msgs,
                "max_tokens": 500,
                "tools": TOOLS_OPENAI,
            }
        ).encode()
        r = httpx.post(
            rig.url + "/v1/chat/completions",
            content=raw,
            headers={
                "authorization": f"Bearer {KEY}",
                "content-type": "application/json",
            },
        )
        assert r.status_code == 200
        (seen,) = rig.upstream.seen
        assert seen.body == raw
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        assert (
            r.headers["x-contextwindow-tokens-in"]
            == r.headers["x-contextwindow-tokens-forwarded"]
        )
        assert r.headers["x-contextwindow-compacted"] == "0"

    def test_sdk_over_window_is_fitted(self, rig: Rig) -> None:
        msgs = _chat_history(30)
        reply = _oai(rig).chat.completions.with_raw_response.create(
            model="gpt-4o",
            messages=msgs,
            tools=TOOLS_OPENAI,
            max_tokens=500,
            temperature=0.25,
            extra_body={"unknown_field": {"kept": True}},
        )
        done = reply.parse()
        assert done.choices[0].message.tool_calls
        (seen,) = rig.upstream.seen
        body = seen.json
        assert body["unknown_field"] == {"kept": True}
        assert body["temperature"] == 0.25
        assert body["tools"] == TOOLS_OPENAI
        assert body["messages"] != msgs
        tokens = _check("openai", body["messages"], body["tools"], "gpt-4o")
        assert tokens <= BUDGET
        assert int(reply.headers["x-contextwindow-tokens-forwarded"]) == tokens
        assert int(reply.headers["x-contextwindow-tokens-in"]) > 3_000

    def test_sdk_streamed_chunk_by_chunk(self, rig: Rig) -> None:
        rig.upstream.arm()
        stream = _oai(rig).chat.completions.create(
            model="gpt-4o",
            messages=_chat_history(30),
            tools=TOOLS_OPENAI,
            max_tokens=500,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = iter(stream)
        first = next(chunks)  # arrives while the upstream holds the rest back
        assert first.choices[0].delta.content == "Hel"
        rig.upstream.open_gate()
        rest = list(chunks)
        assert rest[-1].usage is not None
        assert rest[-1].usage.prompt_tokens == 1
        body = rig.upstream.seen[0].json
        assert _check("openai", body["messages"], body["tools"], "gpt-4o") <= BUDGET


class TestResponses:
    def test_sdk_plain_and_streamed(self, rig: Rig) -> None:
        client = _oai(rig)
        items: list[Any] = []
        for i in range(30):
            items += [
                {"role": "user", "content": f"read part {i}"},
                {
                    "type": "function_call",
                    "call_id": f"c{i}",
                    "name": "read_file",
                    "arguments": "{}",
                },
                {
                    "type": "function_call_output",
                    "call_id": f"c{i}",
                    "output": f"part {i}: " + "data " * 120,
                },
            ]
        items.append({"role": "user", "content": "Summarise."})
        tools = [
            {
                "type": "function",
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {}},
            }
        ]
        done = client.responses.create(
            model="gpt-4o",
            input=items,
            tools=tools,
            max_output_tokens=500,
        )
        assert done.output_text == "Hello"
        with client.responses.stream(
            model="gpt-4o",
            input=items,
            tools=tools,
            max_output_tokens=500,
        ) as stream:
            texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        assert texts == ["Hello"]
        for seen in rig.upstream.seen:
            body = seen.json
            assert body["input"] != items
            assert _check("responses", body["input"], body["tools"], "gpt-4o") <= BUDGET

    def test_string_input_passes(self, rig: Rig) -> None:
        done = _oai(rig).responses.create(model="gpt-4o", input="hi")
        assert done.output_text == "Hello"
        assert rig.upstream.seen[0].json["input"] == "hi"


class TestMessages:
    @pytest.mark.parametrize("stream", [False, True])
    def test_sdk_over_window_is_fitted(self, rig: Rig, stream: bool) -> None:
        msgs = _ant_history(30)
        client = _ant(rig)
        if stream:
            rig.upstream.arm()
            with client.messages.stream(
                model="claude-sonnet-4-6",
                system="Be brief.",
                messages=msgs,
                tools=TOOLS_ANTHROPIC,
                max_tokens=500,
                metadata={"user_id": "u1"},
            ) as s:
                events = iter(s)
                assert next(events).type == "message_start"
                rig.upstream.open_gate()
                text = s.get_final_text()
            assert text == "Hello"
        else:
            done = client.messages.create(
                model="claude-sonnet-4-6",
                system="Be brief.",
                messages=msgs,
                tools=TOOLS_ANTHROPIC,
                max_tokens=500,
                metadata={"user_id": "u1"},
            )
            assert done.content[0].text == "Hello"
        (seen,) = rig.upstream.seen
        body = seen.json
        assert KEY in (
            seen.headers.get("x-api-key"),
            seen.headers.get("authorization", "")[7:],
        )
        assert body["metadata"] == {"user_id": "u1"}
        assert body["system"] == "Be brief."
        data = {"system": body["system"], "messages": body["messages"]}
        assert _check("anthropic", data, body["tools"], "claude-sonnet-4-6") <= BUDGET
        assert body["messages"] != msgs

    def test_count_tokens(self, rig: Rig) -> None:
        """Counted as it is, over the window too: the SDK wants its count."""
        msgs = _ant_history(30)
        got = _ant(rig).messages.count_tokens(model="claude-sonnet-4-6", messages=msgs)
        assert got.input_tokens > 0
        body = rig.upstream.seen[0].json
        assert body["messages"] == msgs
        assert (
            _check("anthropic", {"messages": msgs}, None, "claude-sonnet-4-6") > 3_000
        )
