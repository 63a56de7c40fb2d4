"""The pydantic-ai adapter: a real agent loop, converters, a real server."""

from __future__ import annotations

import asyncio
import base64
import os
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import pytest
from hypothesis import given, settings
from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    BinaryContent,
    DataCapabilityPart,
    FilePart,
    ImageUrl,
    InstructionBaselinePart,
    InstructionCapabilityPart,
    InstructionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    OperatorSource,
    RetryFeedbackPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits
from tests.llama import LlamaServer

from contextwindow import (
    Message,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    count_messages,
    problems,
)
from contextwindow.integrations.pydantic_ai import (
    ContextWindow,
    fit_history,
    from_pydantic_ai,
    to_pydantic_ai,
)
from contextwindow.models import get_tokenizer
from contextwindow.testing import conversations
from contextwindow.tokens import Calibration, TokenCounter

TURNS = 200


def dumped(messages: list[ModelMessage]) -> Any:
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


def every_kind() -> list[ModelMessage]:
    """A history holding every part kind the adapter maps."""
    return [
        ModelRequest(
            parts=[SystemPromptPart("Be brief."), UserPromptPart("Look it up.")],
            instructions="Answer in French.",
        ),
        ModelResponse(
            parts=[
                ThinkingPart("I should search.", signature="sig"),
                NativeToolCallPart("web_search", {"q": "weather"}, "b1"),
                NativeToolReturnPart("web_search", {"hits": 3}, "b1"),
                TextPart("Searching."),
                ToolCallPart("read", {"path": "a.txt"}, "c1"),
                ToolCallPart("grep", '{"pattern": "x"}', "c2"),
            ],
            model_name="m",
            usage=RequestUsage(input_tokens=120, output_tokens=9),
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("read", "contents", "c1"),
                ToolReturnPart("grep", {"error": "bad"}, "c2", outcome="retried"),
                UserPromptPart(["and this", "too"]),
            ]
        ),
        ModelResponse(parts=[TextPart("done")]),
        ModelRequest(
            parts=[RetryFeedbackPart("Please answer with JSON.", retry=_retry())]
        ),
    ]


def _retry() -> Any:
    from pydantic_ai.messages import RetryInfo

    return RetryInfo(cause="validation_error")


class TestConverters:
    def test_every_part_kind_round_trips(self) -> None:
        """Every part kind comes back as it was, and is counted."""
        history = every_kind()
        neutral = from_pydantic_ai(history)
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)
        roles = [m.role for m in neutral]
        assert roles == [
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
            "assistant",
            "user",
        ]
        assert neutral[3].tool_results[0].call_id == "c1"
        assert neutral[4].tool_results[0].is_error
        assert "web_search" in neutral[2].text  # builtin parts are counted text
        assert not problems(neutral, "openai")

    def test_a_changed_part_keeps_its_other_fields(self) -> None:
        """A truncated tool return is written from its neutral form, names kept."""
        from contextwindow import ToolResult

        neutral = from_pydantic_ai(every_kind())
        m = neutral[3]
        cut = Message(
            "tool", (ToolResult("c1", "cont[...]", name="read"),), meta=m.meta
        )
        back = to_pydantic_ai([*neutral[:3], cut, *neutral[4:]])
        part = back[2].parts[0]
        assert isinstance(part, ToolReturnPart)
        assert (part.content, part.tool_name, part.tool_call_id) == (
            "cont[...]",
            "read",
            "c1",
        )

    @settings(max_examples=60, deadline=None)
    @given(conversations(max_turns=4))
    def test_round_trip_over_generated_conversations(self, conv: list[Message]) -> None:
        """pydantic-ai -> neutral -> pydantic-ai is equal."""
        history = to_pydantic_ai(conv)
        again = to_pydantic_ai(from_pydantic_ai(history))
        assert dumped(again) == dumped(history)


def scripted(received: list[list[ModelMessage]], info_seen: list[AgentInfo]) -> Any:
    """A model calling ``read`` and ``grep`` in turn for TURNS steps, then done."""
    step = {"n": 0}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        info_seen.append(info)
        n = step["n"]
        step["n"] += 1
        if n >= TURNS:
            return ModelResponse(parts=[TextPart("All done.")])
        tool = "read" if n % 2 == 0 else "grep"
        parts: list[Any] = [ToolCallPart(tool, {"arg": f"file{n}.py"}, f"call{n}")]
        if n % 7 == 0:
            parts.insert(0, ThinkingPart(f"step {n}: " + "think " * 30))
        counted = 0
        return ModelResponse(
            parts=parts, usage=RequestUsage(input_tokens=counted, output_tokens=5)
        )

    return respond


def run_turns(agent: Agent[Any, Any], prompts: Iterable[str]) -> list[ModelMessage]:
    """Run ``agent`` once per prompt, each run given the history so far."""
    history: list[ModelMessage] = []
    for prompt in prompts:
        history = asyncio.run(agent.run(prompt, message_history=history)).all_messages()
    return history


class TestAgentLoop:
    def test_two_tools_for_200_turns(self) -> None:
        """Every request fits and is valid; the run's history stays whole."""
        received: list[list[ModelMessage]] = []
        infos: list[AgentInfo] = []
        window = ContextWindow("claude-sonnet-4-5", limit=3_000, reserve=500)
        agent = Agent(
            FunctionModel(scripted(received, infos)),
            capabilities=[window],
            instructions="You are a code search agent.",
        )
        retried: set[int] = set()

        @agent.tool_plain
        def read(arg: str) -> str:
            return f"{arg}:\n" + "def handler(request):\n    return 42\n" * 15

        @agent.tool_plain
        def grep(arg: str) -> str:
            n = int(arg[4:-3])
            if n % 11 == 1 and n not in retried:
                retried.add(n)
                raise ModelRetry(f"no pattern given for {arg}")
            return f"{arg}: 3 matches\n" + "match line\n" * 20

        result = asyncio.run(
            agent.run("Find the handler.", usage_limits=UsageLimits(request_limit=None))
        )
        assert result.output == "All done."
        tok = get_tokenizer("claude-sonnet-4-5")
        tools = [
            ToolSpec(t.name, t.description or "", t.parameters_json_schema)
            for t in infos[0].function_tools
        ]
        for messages in received:
            neutral = [
                Message.system("You are a code search agent."),
                *from_pydantic_ai(messages),
            ]
            assert not problems(neutral, "anthropic")
            assert (
                count_messages(neutral, tok, provider="anthropic", tools=tools) <= 2_500
            )
        # the run's history holds every call and every return
        history = result.all_messages()
        calls = [p for m in history for p in m.parts if isinstance(p, ToolCallPart)]
        assert len(calls) >= TURNS
        assert len(received[-1]) < len(history)  # the model saw a compacted view

    def test_usage_feeds_the_calibration(self) -> None:
        """Each response's reported input tokens teach the calibration."""
        sent: list[int] = []
        window = ContextWindow("claude-sonnet-4-5", limit=2_000, reserve=0)

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            report = window.last_report
            assert report is not None
            sent.append(report.tokens_after)
            billed = int(report.tokens_after * 1.5)
            assert billed <= 2_000 or len(sent) == 1
            return ModelResponse(
                parts=[TextPart("ok " * 40)], usage=RequestUsage(input_tokens=billed)
            )

        agent = Agent(FunctionModel(respond), capabilities=[window])
        history = run_turns(agent, (f"question {i} " + "word " * 60 for i in range(30)))
        assert window.calibration is not None
        assert window.calibration.ratio == pytest.approx(1.5, rel=0.01)
        assert len(history) == 60

    def test_history_processor(self) -> None:
        """The processor form fits what is sent (pydantic-ai keeps what it returns)."""
        received: list[list[ModelMessage]] = []

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            received.append(messages)
            return ModelResponse(parts=[TextPart("ok " * 30)])

        agent = Agent(
            FunctionModel(respond),
            capabilities=[ProcessHistory(fit_history("gpt-4o", limit=400, reserve=0))],
        )
        run_turns(agent, (f"q{i} " * 30 for i in range(15)))
        tok = get_tokenizer("gpt-4o")
        for messages in received:
            neutral = from_pydantic_ai(messages)
            assert not problems(neutral, "openai")
            assert count_messages(neutral, tok) <= 400

    def test_history_processor_counts_the_tools_it_is_given(self) -> None:
        """A processor is not shown the agent's tools: given them, it counts
        their schemas, and the request sent (messages and tools) fits."""
        received: list[tuple[list[ModelMessage], list[Any]]] = []
        tok = get_tokenizer("gpt-4o")

        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            received.append((messages, info.function_tools))
            specs = [
                ToolSpec(d.name, d.description or "", d.parameters_json_schema)
                for d in info.function_tools
            ]
            # billed as a provider would: the tools' schemas too (FunctionModel's
            # own estimate leaves them out, a ratio the calibration refuses)
            billed = count_messages(from_pydantic_ai(messages), tok, tools=specs)
            return ModelResponse(
                parts=[TextPart("ok " * 30)], usage=RequestUsage(input_tokens=billed)
            )

        def lookup(city: str, country: str, year: int) -> str:
            """Look up a city's population in a year, from the census tables."""
            return "1"

        tools = [Tool(lookup, name=f"lookup_{i}") for i in range(8)]
        agent = Agent(
            FunctionModel(respond),
            tools=tools,
            capabilities=[
                ProcessHistory(fit_history("gpt-4o", limit=900, reserve=0, tools=tools))
            ],
        )
        run_turns(agent, (f"q{i} " * 30 for i in range(15)))
        for messages, defs in received:
            specs = [
                ToolSpec(d.name, d.description or "", d.parameters_json_schema)
                for d in defs
            ]
            assert count_messages(from_pydantic_ai(messages), tok, tools=specs) <= 900


class TestProcessorCalibration:
    def test_concurrent_runs_pair_their_own_usage(self) -> None:
        """Runs sharing one processor each pair their usage with their own request."""
        counter = TokenCounter(get_tokenizer("claude-sonnet-4-5"), "anthropic")
        calibration = Calibration()
        trim = fit_history("claude-sonnet-4-5", limit=200_000, calibration=calibration)

        async def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            ours = counter.messages(from_pydantic_ai(messages))
            await asyncio.sleep(0.01 if ours < 1_000 else 0.03)  # the long run lags
            done = any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
            part = TextPart("ok") if done else ToolCallPart("lookup", {"q": "x"}, "c1")
            billed = int(ours * 1.2)
            return ModelResponse(
                parts=[part], usage=RequestUsage(input_tokens=billed, output_tokens=1)
            )

        agent = Agent(FunctionModel(reply), capabilities=[ProcessHistory(trim)])

        @agent.tool_plain
        def lookup(q: str) -> str:
            return "found"

        async def main() -> None:
            for _ in range(2):
                await asyncio.gather(
                    agent.run("hi"), agent.run("long document line\n" * 2_000)
                )

        asyncio.run(main())
        # each run's second request carries the answer to its first
        assert len(calibration.ratios) == 4
        assert calibration.ratios == pytest.approx([1.2] * 4, rel=0.02)


class TestLlamaServer:
    def test_agent_against_llama_cpp(self, llama_server: LlamaServer) -> None:
        """A few turns against a real OpenAI-compatible server."""
        from openai import AsyncOpenAI
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        client = AsyncOpenAI(
            base_url=llama_server.base_url,
            api_key=os.environ[llama_server.key_env],
            timeout=60,
            max_retries=0,
        )
        provider = OpenAIProvider(openai_client=client)
        model = OpenAIChatModel(llama_server.model, provider=provider)
        window = ContextWindow("llama-3-8b", limit=700, reserve=100)
        agent = Agent(
            model,
            capabilities=[window],
            # The client sends max_completion_tokens, which llama.cpp's server
            # ignores: max_tokens in the body too, or a reply runs to n_ctx.
            model_settings={
                "max_tokens": 24,
                "temperature": 0,
                "extra_body": {"max_tokens": 24},
            },
        )

        async def turns() -> list[ModelMessage]:
            # One event loop for every turn: the client's connections belong to it.
            history: list[ModelMessage] = []
            for i in range(3):
                result = await agent.run(
                    f"Say one word about the number {i}. " + "Context. " * 80,
                    message_history=history,
                )
                history = result.all_messages()
            await client.close()
            return history

        history = asyncio.run(turns())
        assert len(history) == 6
        assert window.calibration is not None
        assert window.calibration.observed == 3
        assert window.last_report is not None
        assert window.last_report.tokens_after <= 600


# -- what is carried is counted, and written back as it was ----------------------


@dataclass(kw_only=True)
class MemoryPart(DataCapabilityPart[str], namespace="cwtest", tag="memory"):
    """A data capability part, as an application enqueues one."""


@dataclass(kw_only=True)
class RulePart(InstructionCapabilityPart, namespace="cwtest"):
    """An instruction capability part."""


def png(width: int, height: int) -> bytes:
    """A real PNG of ``width`` x ``height`` (its header gives the size)."""
    raw = b"".join(b"\x00" + b"\x7f" * width * 3 for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def answered(messages: list[ModelMessage]) -> bool:
    """Whether every tool return answers a call of the response before it."""
    calls: set[str] = set()
    for m in messages:
        if isinstance(m, ModelResponse):
            calls = {p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart)}
        else:
            for p in m.parts:
                if isinstance(p, ToolReturnPart) and p.tool_call_id not in calls:
                    return False
    return True


COUNTER = TokenCounter(get_tokenizer("gpt-4o"), "openai")


class TestCarriedParts:
    def test_capability_parts_are_counted_as_rendered(self) -> None:
        """A data capability part counts its framed content; an instruction: system."""
        body = "fact " * 400
        history: list[ModelMessage] = [
            ModelRequest(
                parts=[
                    MemoryPart(content=body, source=OperatorSource()),
                    RulePart(content="Use metric units.", source=OperatorSource()),
                    UserPromptPart("q"),
                ]
            )
        ]
        neutral = from_pydantic_ai(history)
        assert [m.role for m in neutral] == ["user", "system", "user"]
        assert body in neutral[0].text
        assert "<memory>" in neutral[0].text
        assert COUNTER.messages(neutral[:1]) > COUNTER.text(body)
        assert neutral[1].text == "Use metric units."
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)

    def test_capability_parts_are_fitted(self) -> None:
        """Ten 400-word memory snapshots do not pass for nothing (sent fits)."""
        history: list[ModelMessage] = []
        for i in range(10):
            memory = MemoryPart(
                content=f"snapshot {i}: " + "fact " * 400, source=OperatorSource()
            )
            history += [
                ModelRequest(parts=[memory, UserPromptPart(f"q{i}")]),
                ModelResponse(parts=[TextPart(f"a{i}")]),
            ]
        seen: list[list[ModelMessage]] = []

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(messages)
            return ModelResponse(parts=[TextPart("fine")])

        window = ContextWindow("gpt-4o", limit=2_000, reserve=0)
        agent = Agent(FunctionModel(reply), capabilities=[window])
        asyncio.run(agent.run("next", message_history=history))
        report = window.last_report
        assert report is not None
        assert report.tokens_before > 4_000
        sent = seen[-1]
        assert len(sent) < len(history)
        assert COUNTER.messages(from_pydantic_ai(sent)) <= 2_000

    def test_speech_counts_its_transcript(self) -> None:
        """User and assistant speech count their transcripts, and round-trip."""
        history: list[ModelMessage] = [
            ModelRequest(
                parts=[SpeechPart(speaker="user", transcript="book a table " * 20)]
            ),
            ModelResponse(
                parts=[
                    SpeechPart(
                        speaker="assistant",
                        transcript="done " * 20,
                        interrupted_at_ms=900,
                    )
                ]
            ),
        ]
        neutral = from_pydantic_ai(history)
        assert [m.role for m in neutral] == ["user", "assistant"]
        assert neutral[0].text == "book a table " * 20
        assert neutral[1].text.endswith("[Interrupted after 900 ms]")
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)

    def test_a_part_kind_without_neutral_form_is_counted(self) -> None:
        """A record the neutral model has no part for counts its text, in place."""
        rules = "Always answer in French. " * 50
        baseline = InstructionBaselinePart(
            instructions=[InstructionPart(content=rules)]
        )
        history: list[ModelMessage] = [
            ModelRequest(parts=[baseline, UserPromptPart("hi")]),
            ModelResponse(parts=[TextPart("salut")]),
        ]
        neutral = from_pydantic_ai(history)
        assert COUNTER.messages(neutral) > COUNTER.text(rules)
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)
        record = neutral[0].parts[-1]  # what the baseline is counted as
        changed = Message("user", (Text("hello"), record), meta=neutral[0].meta)
        back: list[Any] = to_pydantic_ai([changed, neutral[1]])
        assert [type(p).__name__ for p in back[0].parts] == [
            "InstructionBaselinePart",
            "UserPromptPart",
        ]
        assert back[0].parts[1].content == "hello"


class TestFiles:
    def test_an_image_a_tool_returns_counts_as_an_image(self) -> None:
        """A 200x150 PNG a tool returned is an image, not 80k tokens of base64."""
        image = BinaryContent(png(200, 150), media_type="image/png")
        history: list[ModelMessage] = [
            ModelResponse(parts=[ToolCallPart("shot", {}, "c1")]),
            ModelRequest(parts=[ToolReturnPart("shot", image, "c1")]),
            ModelResponse(parts=[ToolCallPart("shot", {}, "c2")]),
            ModelRequest(
                parts=[
                    ToolReturnPart("shot", ["see:", ImageUrl("https://x/a.png")], "c2")
                ]
            ),
        ]
        neutral = from_pydantic_ai(history)
        first: Any = neutral[1].tool_results[0].content
        second: Any = neutral[3].tool_results[0].content
        assert [p.kind for p in first] == ["image"]
        assert [p.kind for p in second] == ["text", "image"]
        assert COUNTER.messages(neutral[:2]) < 1_000
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)
        # cut: the text changed, the image written back as it came
        cut = ToolResult("c2", (Text("s[...]"), second[1]))
        back: list[Any] = to_pydantic_ai(
            [*neutral[:3], Message("tool", (cut,), meta=neutral[3].meta)]
        )
        content = back[3].parts[0].content
        assert content[0] == "s[...]"
        assert isinstance(content[1], ImageUrl)
        was: Any = history[3].parts[0]
        assert content[1].identifier == was.content[1].identifier

    def test_documents_are_counted_by_pages_not_base64(self) -> None:
        """A PDF in a prompt or a tool return is a document, never its base64 text."""
        noise = bytes((i * 7919) % 251 for i in range(40_000))  # as compressed streams
        pdf = b"%PDF-1.4\n1 0 obj <</Type /Pages /Count 1>> endobj\n" + noise
        doc = BinaryContent(pdf, media_type="application/pdf")
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart(["Summarise:", doc])]),
            ModelResponse(parts=[ToolCallPart("fetch", {}, "c1")]),
            ModelRequest(parts=[ToolReturnPart("fetch", doc, "c1")]),
        ]
        neutral = from_pydantic_ai(history)
        assert [p.kind for p in neutral[0].parts] == ["text", "opaque"]
        returned: Any = neutral[2].tool_results[0].content
        assert [p.kind for p in returned] == ["opaque"]
        base64_tokens = COUNTER.text(base64.b64encode(pdf).decode())
        assert COUNTER.messages(neutral) < base64_tokens // 2
        assert COUNTER.messages(neutral) >= 2 * 3_000  # a page each, never nothing
        assert dumped(to_pydantic_ai(neutral)) == dumped(history)


class TestRetries:
    def history(self) -> list[ModelMessage]:
        with pytest.warns(Warning, match="RetryPromptPart"):
            retry = RetryPromptPart(
                "bad args " * 30, tool_name="flaky", tool_call_id="c1"
            )
        return [
            ModelRequest(parts=[UserPromptPart("start " * 50)]),
            ModelResponse(
                parts=[
                    ToolCallPart("flaky", {"x": 1}, "c1"),
                    ToolCallPart("read", {"p": 1}, "c2"),
                ]
            ),
            ModelRequest(parts=[retry, ToolReturnPart("read", "data " * 30, "c2")]),
            ModelResponse(parts=[TextPart("ok")]),
            ModelRequest(parts=[UserPromptPart("next question")]),
        ]

    def test_a_retry_answering_a_call_is_its_result(self) -> None:
        """The retry is the call's (failed) result: the exchange is whole."""
        neutral = from_pydantic_ai(self.history())
        assert [m.role for m in neutral] == [
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user",
        ]
        result = neutral[2].tool_results[0]
        assert (result.call_id, result.is_error, result.name) == ("c1", True, "flaky")
        assert not problems(neutral, "openai")

    def test_fitting_keeps_or_drops_the_exchange_whole(self) -> None:
        """No fit leaves the exchange unanswered or a tool return orphaned."""
        history = self.history()
        whole = fit_history("gpt-4o", limit=100_000, reserve=0)(history)
        assert whole == history
        for limit in range(40, 400, 20):
            out = fit_history("gpt-4o", limit=limit, reserve=0, strategy="drop-oldest")(
                history
            )
            assert answered(out), limit

    def test_a_changed_retry_is_written_as_pydantic_ai_reads_it(self) -> None:
        """A cut retry goes back as the call's ``retried`` tool return."""
        neutral = from_pydantic_ai(self.history())
        cut = ToolResult("c1", "bad[...]", is_error=True, name="flaky")
        back = to_pydantic_ai(
            [*neutral[:2], Message("tool", (cut,), meta=neutral[2].meta), *neutral[3:]]
        )
        part = back[2].parts[0]
        assert isinstance(part, ToolReturnPart)
        assert (part.tool_call_id, part.content, part.outcome) == (
            "c1",
            "bad[...]",
            "retried",
        )
        assert answered(back)


class TestResponseParts:
    def test_a_changed_response_keeps_every_other_part(self) -> None:
        """Cutting a tool call rewrites it alone: thinking, builtin, file parts kept."""
        response = ModelResponse(
            parts=[
                ThinkingPart(
                    "search first", id="th1", signature="SIG", provider_name="anthropic"
                ),
                NativeToolCallPart(
                    "web_search", {"q": "docs"}, "srv1", provider_name="anthropic"
                ),
                NativeToolReturnPart(
                    "web_search", [{"title": "doc"}], "srv1", provider_name="anthropic"
                ),
                TextPart("Writing now.", id="t1", provider_name="anthropic"),
                FilePart(BinaryContent(png(8, 8), media_type="image/png")),
                ToolCallPart("write", {"path": "a.txt", "body": "x " * 500}, "c1"),
            ],
            provider_name="anthropic",
        )
        history: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart("write it")]),
            response,
            ModelRequest(parts=[ToolReturnPart("write", "written", "c1")]),
        ]
        neutral = from_pydantic_ai(history)
        calls = neutral[1].parts
        cut = Message(
            "assistant",
            (*calls[:-1], ToolCall("c1", "write", '{"path":"a.txt","body":"x [...]"}')),
            meta=neutral[1].meta,
        )
        back = to_pydantic_ai([neutral[0], cut, neutral[2]])
        kept, after = response.parts, cast("list[Any]", back[1].parts)
        assert [type(p) for p in after] == [type(p) for p in kept]
        assert dumped([back[1]])[0]["parts"][:-1] == dumped([response])[0]["parts"][:-1]
        assert after[-1].args_as_dict() == {"path": "a.txt", "body": "x [...]"}

    def test_a_dropped_part_leaves_the_others_as_they_were(self) -> None:
        """A response with a part removed keeps each other part's fields."""
        response = ModelResponse(
            parts=[
                ThinkingPart("", signature="REDACTED", provider_name="anthropic"),
                TextPart("Hello.", id="t1", provider_name="anthropic"),
            ]
        )
        neutral = from_pydantic_ai([response])
        only = Message("assistant", neutral[0].parts[1:], meta=neutral[0].meta)
        (back,) = to_pydantic_ai([only])
        assert dumped([back])[0]["parts"] == dumped([response])[0]["parts"][1:]
