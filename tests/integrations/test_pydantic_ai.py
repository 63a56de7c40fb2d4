"""The pydantic-ai adapter: a real agent loop, converters, a real server."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
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

from contextwindow import Message, ToolSpec, count_messages, problems
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
