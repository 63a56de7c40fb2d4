"""The edge: messages and tools in the shapes users hold, read once, written back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from anthropic.types import TextBlock, ToolUseBlock, Usage
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import ResponseFunctionToolCall, ResponseReasoningItem
from responses_kinds import PNG, every_kind  # type: ignore[import-not-found]  # tests/formats is on sys.path, not a package

from contextwindow import (
    ContentDroppedWarning,
    ContextManager,
    InvalidMessageError,
    Message,
    TokenCounter,
    ToolSpec,
    count_messages,
    ensure_valid,
    fit,
    from_responses,
    problems,
    to_openai,
    to_responses,
    units,
)
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer


def openai_loop() -> list[Any]:
    call: Any = {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
    }
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[call]),
        {"role": "tool", "tool_call_id": "c1", "content": "4 C, rain"},
        ChatCompletionMessage(role="assistant", content="4 C and rain."),
    ]


def anthropic_loop() -> list[Any]:
    use = ToolUseBlock(type="tool_use", id="t1", name="weather", input={"city": "Oslo"})
    reply = AnthropicMessage(
        id="msg_1",
        type="message",
        role="assistant",
        content=[TextBlock(type="text", text="4 C and rain.")],
        model="claude-sonnet-4-5",
        stop_reason="end_turn",
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=5),
    )
    return [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "4 C"}],
        },
        reply,
    ]


class TestDetection:
    def test_a_list_of_messages_comes_back_as_it_is(self) -> None:
        """Message objects cost one check each: the same list object comes back."""
        conv = [Message.user("hi")]
        read = coerce_messages(conv)
        assert read.messages is conv
        assert read.shape.kind == "neutral"

    def test_openai_sdk_objects_among_dicts(self) -> None:
        """ChatCompletionMessage objects among OpenAI dicts read as OpenAI."""
        read = coerce_messages(openai_loop())
        assert read.shape.kind == "openai"
        assert [m.role for m in read.messages] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert read.messages[2].tool_calls[0].input == {"city": "Oslo"}

    def test_anthropic_blocks_and_a_whole_response(self) -> None:
        """Content blocks in a dict and a whole Message response read as Anthropic."""
        read = coerce_messages(anthropic_loop())
        assert read.shape.kind == "anthropic"
        assert [m.role for m in read.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        body = read.shape.write(read.messages)
        # The response's id, model, usage are the response's, not the next turn's.
        assert body["messages"][-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "4 C and rain."}],
        }

    def test_an_sdk_object_names_its_shape(self) -> None:
        """An Anthropic response among dicts any shape could hold says: Anthropic."""
        reply = anthropic_loop()[-1]
        read = coerce_messages([{"role": "user", "content": "Weather?"}, reply])
        assert read.shape.kind == "anthropic"
        one = coerce_messages(reply)  # alone, as ``push(response)`` passes it
        assert (one.shape.kind, one.messages[0].text) == ("anthropic", "4 C and rain.")

    def test_a_whole_completion_is_refused_naming_the_message(self) -> None:
        """A whole ChatCompletion is no message: the error says where it is."""
        from openai.types.chat import ChatCompletion

        done = ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "hi"},
                    }
                ],
            }
        )
        with pytest.raises(InvalidMessageError, match=r"choices\[0\]\.message"):
            coerce_messages([done])

    def test_responses_output_items(self) -> None:
        """Responses SDK output items among input dicts read as Responses."""
        items = [
            {"role": "user", "content": "Time?"},
            ResponseReasoningItem(type="reasoning", id="rs_1", summary=[]),
            ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id="c1",
                name="clock",
                arguments="{}",
            ),
            {"type": "function_call_output", "call_id": "c1", "output": "09:00"},
        ]
        read = coerce_messages(items)
        assert read.shape.kind == "responses"
        assert [m.role for m in read.messages] == ["user", "assistant", "tool"]

    def test_bodies(self) -> None:
        """Request bodies: Anthropic's with system, OpenAI's, Responses' with input."""
        anthropic = coerce_messages(
            {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
        )
        assert anthropic.shape.kind == "anthropic"
        assert [m.role for m in anthropic.messages] == ["system", "user"]
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        assert coerce_messages(body).shape.write(coerce_messages(body).messages) == body
        responses = {"instructions": "Be brief.", "input": "hi", "model": "gpt-5"}
        read = coerce_messages(responses)
        assert [m.role for m in read.messages] == ["system", "user"]
        assert read.shape.write(read.messages) == {
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": "hi"}],
            "model": "gpt-5",
        }

    def test_generators_and_one_message(self) -> None:
        """A generator is read once; one message alone is a list of one."""
        gen = ({"role": "user", "content": str(i)} for i in range(3))
        assert [m.text for m in coerce_messages(gen).messages] == ["0", "1", "2"]
        assert coerce_messages({"role": "user", "content": "x"}).messages[0].text == "x"

    def test_ambiguous_dicts_follow_the_hint(self) -> None:
        """Dicts every shape could hold take the caller's provider."""
        plain = [{"role": "user", "content": "hi"}]
        assert coerce_messages(plain).shape.kind == "openai"
        assert coerce_messages(plain, hint="anthropic").shape.kind == "anthropic"
        system = [{"role": "system", "content": "x"}]  # Anthropic has no system turn
        assert coerce_messages(system, hint="anthropic").shape.kind == "openai"

    def test_a_mixed_list_is_read_run_by_run(self) -> None:
        """OpenAI and Anthropic messages in one list: each read in its own shape."""
        mixed = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]},
            {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function",
                "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c2", "content": "b.txt"},
        ]  # fmt: skip
        read = coerce_messages(mixed)
        assert [m.role for m in read.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
        ]
        assert read.shape.kind == "openai"  # the last shape that said which
        assert [u.kind for u in units(mixed)] == [
            "message",
            "tool_exchange",
            "tool_exchange",
        ]


class TestErrors:
    @pytest.mark.parametrize(
        ("data", "message"),
        [
            ("hello", "messages: expected a list of messages, got a string"),
            (b"hi", "messages: expected a list of messages, got bytes"),
            (
                [{"type": "telepathy_call"}],
                "messages[0].type: unknown item type 'telepathy_call'",
            ),
            (5, "messages: expected a list of messages, got number"),
            ([Message.user("a"), 3], "messages[1]: expected a message"),
            (
                [Message.user("a"), {"role": "robot", "content": "x"}],
                "messages[1].role",
            ),
            (
                [Message.user("a"), {"role": "tool", "content": "x"}],
                "messages[1].tool_call_id: missing",
            ),
            ({"system": 3, "messages": []}, "system"),
            ({"nothing": 1}, "messages: expected a list of messages or a request body"),
            (
                [{"type": "function_call", "call_id": "c"}],
                "messages[0].arguments: missing",
            ),
        ],
    )
    def test_bad_input_is_named(self, data: Any, message: str) -> None:
        """Bad input raises InvalidMessageError naming the place, at every entry."""
        tok = FakeTokenizer()
        calls: list[Callable[[], object]] = [
            lambda: coerce_messages(data),
            lambda: fit(data, limit=100, tokenizer=tok),
            lambda: units(data),
            lambda: problems(data, "openai"),
            lambda: ensure_valid(data, "openai"),
            lambda: count_messages(data, tok),
            lambda: TokenCounter(tok).messages(data),
            lambda: to_openai(data),
            lambda: ContextManager(token_limit=100, tokenizer=tok).push_many(data),
        ]
        for call in calls:
            with pytest.raises(InvalidMessageError) as info:
                call()
            assert str(info.value).startswith(message) or message in str(info.value)

    def test_a_failing_generator_is_reported(self) -> None:
        """A generator of the user's that fails is reported, not let through."""

        def broken() -> Any:
            yield {"role": "user", "content": "a"}
            raise RuntimeError("disk gone")

        with pytest.raises(InvalidMessageError, match="disk gone"):
            coerce_messages(broken())


class TestRoundTrip:
    def test_openai_in_openai_out(self) -> None:
        """fit on OpenAI dicts and SDK objects gives OpenAI dicts back in one call."""
        fitted = fit(openai_loop(), model="gpt-4o", limit=1000)
        out = fitted.as_input()
        assert out[0] == {"role": "system", "content": "Be brief."}
        assert out[2]["tool_calls"][0]["function"]["name"] == "weather"
        assert all(isinstance(m, dict) for m in out)

    def test_anthropic_in_anthropic_body_out(self) -> None:
        """Anthropic turns give a body ready for messages.create(**body)."""
        body = fit(anthropic_loop(), model="claude-sonnet-4-5", limit=5000).as_input()
        assert set(body) == {"messages"}
        assert body["messages"][1]["content"][0]["type"] == "tool_use"

    def test_manager_gives_back_the_pushed_shape(self) -> None:
        """A manager fed Responses items prepares Responses items."""
        m = ContextManager("gpt-4o", token_limit=10_000)
        m.push_many(every_kind())
        # Its Chat messages (gpt-4o's shape) cannot hold the screenshot in a
        # tool message: said, and the Responses items keep it.
        with pytest.warns(ContentDroppedWarning, match=r"content\[0\]: an image"):
            prepared = m.prepare()
        assert prepared.as_input() == every_kind()


class TestResponsesKinds:
    def test_every_kind_round_trips_byte_equal(self) -> None:
        """Every item kind agents send is read and written back byte for byte."""
        items = every_kind()
        out = to_responses(from_responses(items))
        assert json.dumps(out) == json.dumps(items)

    def test_calls_and_outputs_pair_as_units(self) -> None:
        """Each client-answered call and its output are one unit; hosted items none."""
        msgs = from_responses(every_kind())
        exchanges = [u for u in units(msgs) if u.kind == "tool_exchange"]
        calls = [c.name for u in exchanges for c in msgs[u.start].tool_calls]
        assert calls == ["computer", "local_shell", "apply_diff", "ask", "clock"]
        assert all(u.complete for u in units(msgs))
        assert problems(msgs, "responses") == ()

    def test_every_kind_fits_validly(self) -> None:
        """Fitted small, the transcript stays valid and its kept items unchanged."""
        items = every_kind()
        tok = BPETokenizer("o200k_base")
        whole = fit(items, limit=100_000, tokenizer=tok, provider="responses")
        assert whole.as_input() == items
        total = whole.report.tokens_after
        small = fit(items, limit=total // 2, tokenizer=tok, provider="responses")
        assert small.report.tokens_after <= total // 2
        out = small.as_input()
        assert problems(from_responses(out), "responses") == ()
        kept = {json.dumps(i) for i in items}
        changed = [i for i in out if json.dumps(i) not in kept]
        # A screenshot cannot be cut: its exchange may go into a summary.
        changed = [
            i
            for i in changed
            if not (i["type"] == "message" and i["content"].startswith("[Summary"))
        ]
        # Only cut outputs (a shell listing) may differ from what came in, and
        # call arguments re-serialised compactly (the same JSON value).
        assert {i["type"] for i in changed} <= {
            "local_shell_call_output",
            "mcp_approval_request",
        }
        by_id = {i.get("id"): i for i in items}
        for item in changed:
            if item["type"] == "mcp_approval_request":
                original = by_id[item["id"]]
                assert json.loads(item["arguments"]) == json.loads(
                    original["arguments"]
                )
                assert {**item, "arguments": original["arguments"]} == original

    def test_a_screenshot_is_counted_as_an_image(self) -> None:
        """computer_call_output's screenshot counts as an image, not as base64."""
        item = every_kind()[7]
        assert item["type"] == "computer_call_output"
        (msg,) = from_responses([item])
        result = msg.tool_results[0]
        assert result.images[0].url == PNG
        counter = TokenCounter(BPETokenizer("o200k_base"), "responses")
        assert counter.part(result) == counter.image(result.images[0])


class TestTools:
    SCHEMA = {  # noqa: RUF012 -- a constant read by the tests
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City"}},
        "required": ["city"],
    }

    def test_every_sdk_shape_reads_to_the_same_spec(self) -> None:
        """OpenAI, Responses, Anthropic and MCP tool definitions give one ToolSpec."""
        spec = ToolSpec("weather", "Weather now", self.SCHEMA)
        shapes = [
            spec,
            {"type": "function", "function": {
                "name": "weather", "description": "Weather now",
                "parameters": self.SCHEMA}},
            {"type": "function", "name": "weather", "description": "Weather now",
             "parameters": self.SCHEMA, "strict": True},
            {"name": "weather", "description": "Weather now",
             "input_schema": self.SCHEMA},
            {"name": "weather", "description": "Weather now",
             "inputSchema": self.SCHEMA, "annotations": {"readOnlyHint": True}},
        ]  # fmt: skip
        assert [coerce_tools([t]) for t in shapes] == [(spec,)] * len(shapes)
        tok = BPETokenizer("o200k_base")
        conv = [Message.user("Weather in Oslo?")]
        for provider in ("openai", "anthropic"):
            counter = TokenCounter(tok, provider)
            want = counter.messages(conv, tools=[spec])
            assert want > counter.messages(conv)
            for tool in shapes:
                assert counter.messages(conv, tools=[tool]) == want
                assert (
                    fit(
                        conv, limit=10_000, tokenizer=counter, tools=[tool]
                    ).report.tokens_after
                    == want
                )

    def test_hosted_tools_count_by_name(self) -> None:
        """Hosted tools (web search) are taken and counted by name."""
        specs = coerce_tools(
            [{"type": "web_search"}, {"type": "custom", "name": "sql"}]
        )
        assert [s.name for s in specs] == ["web_search", "sql"]

    @pytest.mark.parametrize(
        ("schema", "where"),
        [
            ({"properties": ["a", "b"]}, "tools[0].function.parameters.properties"),
            (
                {"properties": {}, "required": 5},
                "tools[0].function.parameters.required",
            ),
            (
                {"properties": {"a": {"type": "string", "enum": 5}}},
                "tools[0].function.parameters.properties.a.enum",
            ),
            ({"type": 7}, "tools[0].function.parameters.type"),
            ({"x": float("nan")}, "tools[0].function.parameters"),
        ],
    )
    def test_odd_schemas_are_refused_by_name(self, schema: Any, where: str) -> None:
        """Schemas counting cannot read are refused naming the place, no traceback."""
        tool = {"type": "function", "function": {"name": "f", "parameters": schema}}
        for call in (
            lambda: coerce_tools([tool]),
            lambda: fit(
                [Message.user("hi")], limit=100, tokenizer=FakeTokenizer(), tools=[tool]
            ),
            lambda: TokenCounter(FakeTokenizer()).messages([], tools=[tool]),
        ):
            with pytest.raises(InvalidMessageError) as info:
                call()
            assert info.value.path == where

    def test_an_odd_toolspec_is_still_counted(self) -> None:
        """A ToolSpec built with an odd schema is counted as far as it goes."""
        odd = ToolSpec("f", "", {"properties": {"a": {"type": "string", "enum": 5}},
                                 "required": 5})  # fmt: skip
        for provider in ("openai", "anthropic"):
            assert TokenCounter(FakeTokenizer(), provider).tools((odd,)) > 0
        with pytest.raises(
            InvalidMessageError, match=r"tools\[0\]\.parameters\.required"
        ):
            fit([Message.user("hi")], limit=100, tokenizer=FakeTokenizer(), tools=[odd])
