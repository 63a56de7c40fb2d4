"""The OpenAI Agents SDK adapter: a real run loop, handoffs, sessions, a real server."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    HandoffInputData,
    ModelSettings,
    RunConfig,
    Runner,
    function_tool,
    handoff,
)
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from hypothesis import given, settings
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from tests.llama import LlamaServer

from contextwindow import Message, ToolSpec, count_messages, problems
from contextwindow.integrations.openai_agents import (
    ContextWindow,
    ContextWindowSession,
    from_agents,
    handoff_filter,
    to_agents,
)
from contextwindow.models import get_tokenizer
from contextwindow.testing import conversations
from contextwindow.tokens import TokenCounter

TURNS = 200
_ids = itertools.count()


def text_output(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{next(_ids)}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Calls ``read`` and ``grep`` in turn for ``turns`` steps, then answers."""

    def __init__(
        self, turns: int, bill: float = 1.0, hand_to: str | None = None
    ) -> None:
        self.turns = turns
        self.bill = bill
        self.hand_to = hand_to
        self.seen: list[tuple[str | None, list[Any]]] = []
        self.window: ContextWindow | None = None

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        *,
        previous_response_id: Any = None,
        conversation_id: Any = None,
        prompt: Any = None,
    ) -> ModelResponse:
        items = [input] if isinstance(input, str) else list(input)
        self.seen.append((system_instructions, items))
        n = len(self.seen) - 1
        output: list[Any]
        if self.hand_to is not None and n == self.turns:
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"h{n}",
                    name=self.hand_to,
                    arguments="{}",
                )
            ]
        elif n >= self.turns:
            output = [text_output("All done.")]
        else:
            tool = "read" if n % 2 == 0 else "grep"
            output = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call{n}_{next(_ids)}",
                    name=tool,
                    arguments=f'{{"arg": "file{n}.py"}}',
                )
            ]
        counted = self.window.last_tokens if self.window is not None else None
        billed = round((counted or 0) * self.bill)
        return ModelResponse(
            output=output,
            usage=Usage(
                requests=1,
                input_tokens=billed,
                output_tokens=5,
                total_tokens=billed + 5,
            ),
            response_id=None,
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


@function_tool
def read(arg: str) -> str:
    """Read a file."""
    return f"{arg}:\n" + "def handler(request):\n    return 42\n" * 15


@function_tool
def grep(arg: str) -> str:
    """Search the code."""
    return f"{arg}: 3 matches\n" + "match line\n" * 20


def config(window: ContextWindow) -> RunConfig:
    return RunConfig(call_model_input_filter=window, tracing_disabled=True)


class TestConverters:
    @settings(max_examples=60, deadline=None)
    @given(conversations(max_turns=4))
    def test_round_trip_over_generated_conversations(self, conv: list[Message]) -> None:
        """SDK items -> neutral -> SDK items is equal."""
        items = to_agents(conv)
        assert to_agents(from_agents(items)) == items


class TestRunLoop:
    def test_two_tools_for_200_turns(self) -> None:
        """Every model call fits and is valid; the run's items are all kept."""
        model = ScriptedModel(TURNS, bill=1.2)
        window = ContextWindow("claude-sonnet-4-5", limit=3_000, reserve=500)
        model.window = window
        agent = Agent(
            name="searcher",
            instructions="You are a code search agent.",
            tools=[read, grep],
            model=model,
        )
        result = asyncio.run(
            Runner.run(
                agent,
                "Find the handler.",
                max_turns=TURNS + 5,
                run_config=config(window),
                hooks=window,
            )
        )
        assert result.final_output == "All done."
        tok = get_tokenizer("claude-sonnet-4-5")
        specs = [
            ToolSpec(t.name, t.description, t.params_json_schema) for t in (read, grep)
        ]
        ratio = window.calibration.ratio
        assert ratio == pytest.approx(1.2, rel=0.02)
        for n, (instructions, items) in enumerate(model.seen):
            neutral = [Message.system(instructions or ""), *from_agents(items)]
            assert not problems(neutral, "responses")
            counted = count_messages(neutral, tok, provider="responses", tools=specs)
            assert counted <= 2_500 or n == 0
            if n > 1:  # calibrated: what the provider bills fits too
                assert counted * ratio <= 2_500 * 1.02
        history = result.to_input_list()
        calls = [
            i
            for i in history
            if isinstance(i, dict) and i.get("type") == "function_call"
        ]
        assert len(calls) == TURNS
        assert len(model.seen[-1][1]) < len(history)

    def test_handoff_gets_a_budgeted_slice(self) -> None:
        """The receiving agent starts from a slice within the handoff's limit."""
        receiver_model = ScriptedModel(0)
        receiver = Agent(
            name="writer", instructions="Write it up.", model=receiver_model
        )
        sender_model = ScriptedModel(30, hand_to="transfer_to_writer")
        sender = Agent(
            name="searcher",
            tools=[read, grep],
            model=sender_model,
            handoffs=[
                handoff(
                    receiver, input_filter=handoff_filter(limit=800, model="gpt-4o")
                )
            ],
        )
        result = asyncio.run(
            Runner.run(
                sender,
                "Find the handler, then write it up.",
                max_turns=50,
                run_config=RunConfig(tracing_disabled=True),
            )
        )
        assert result.final_output == "All done."
        _, first = receiver_model.seen[0]
        neutral = from_agents(first)
        assert not problems(neutral, "responses")
        assert count_messages(neutral, get_tokenizer("gpt-4o")) <= 800
        assert neutral[-1].text == "Find the handler, then write it up."
        assert len(result.to_input_list()) > len(first)

    def test_handoff_filter_without_a_user_turn(self) -> None:
        """A history with no user text is handed over as it is."""
        data = HandoffInputData(input_history=(), pre_handoff_items=(), new_items=())
        assert handoff_filter(limit=100, model="gpt-4o")(data) is data


def session_urls(tmp_path: Path, request: pytest.FixtureRequest, kind: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    if kind == "postgres":
        return str(request.getfixturevalue("postgres_server"))
    return str(request.getfixturevalue("redis_server"))


class BillingModel(Model):
    """Bills 1.2 times what its input really holds, after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.counter = TokenCounter(get_tokenizer("claude-sonnet-4-5"), "responses")

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = (
            [{"role": "user", "content": input}] if isinstance(input, str) else input
        )
        billed = int(self.counter.messages(from_agents(items)) * 1.2)
        await asyncio.sleep(self.delay)
        return ModelResponse(
            output=[text_output("ok")],
            usage=Usage(
                requests=1,
                input_tokens=billed,
                output_tokens=1,
                total_tokens=billed + 1,
            ),
            response_id=None,
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class TestCalibration:
    def test_concurrent_runs_pair_their_own_usage(self) -> None:
        """Runs sharing one window each pair their usage with their own request."""
        window = ContextWindow("claude-sonnet-4-5", limit=200_000)
        small = Agent(name="small", model=BillingModel(0.01))
        big = Agent(name="big", model=BillingModel(0.03))  # answers last

        async def main() -> None:
            for _ in range(3):
                await asyncio.gather(
                    Runner.run(small, "hi", run_config=config(window), hooks=window),
                    Runner.run(
                        big,
                        "long document line\n" * 2_000,
                        run_config=config(window),
                        hooks=window,
                    ),
                )

        asyncio.run(main())
        ratios = window.calibration.ratios
        assert len(ratios) == 6
        assert ratios == pytest.approx([1.2] * 6, rel=0.02)


class TestSession:
    @pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])
    def test_full_log_kept_compacted_view_returned(
        self, kind: str, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        """Runs append to the stored log; each run starts from the fitted view."""
        url = session_urls(tmp_path, request, kind)
        sid = f"chat-{kind}-{next(_ids)}"
        session = ContextWindowSession(
            sid, store=url, model="gpt-4o", limit=1_200, reserve=200
        )
        model = ScriptedModel(2)
        agent = Agent(name="a", tools=[read, grep], model=model)
        for i in range(6):
            model.seen.clear()
            asyncio.run(
                Runner.run(
                    agent,
                    f"Question {i}: where is the handler?",
                    session=session,
                    run_config=RunConfig(tracing_disabled=True),
                )
            )
            first = from_agents(model.seen[0][1])
            assert not problems(first, "responses")
            assert count_messages(first, get_tokenizer("gpt-4o")) <= 1_000 + 60
        history = asyncio.run(session.history())
        assert sum(1 for i in history if i.get("role") == "user") == 6
        assert sum(1 for i in history if i.get("type") == "function_call") == 12
        # another process (a new session object) reads the same stored log
        again = ContextWindowSession(
            sid, store=url, model="gpt-4o", limit=1_200, reserve=200
        )
        assert asyncio.run(again.history()) == history
        view = asyncio.run(again.get_items())
        assert len(view) < len(history)
        assert asyncio.run(again.get_items(limit=2)) == view[-2:]

    def test_pop_and_clear(self, tmp_path: Path) -> None:
        """pop_item removes the last item; clear_session forgets the session."""
        session = ContextWindowSession(
            "s", store=f"sqlite:///{tmp_path / 'x.db'}", model="gpt-4o"
        )

        async def main() -> None:
            await session.add_items(
                [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                ]
            )
            popped = await session.pop_item()
            assert popped is not None
            assert popped["content"] == "b"  # type: ignore[typeddict-item]  # a message item
            assert [i["content"] for i in await session.history()] == ["a"]  # type: ignore[typeddict-item]  # message items
            await session.clear_session()
            assert await session.get_items() == []
            assert await session.pop_item() is None

        asyncio.run(main())


class TestLlamaServer:
    def test_agent_against_llama_cpp(self, llama_server: LlamaServer) -> None:
        """A few turns against a real OpenAI-compatible server."""
        from agents import OpenAIChatCompletionsModel
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=llama_server.base_url,
            api_key=os.environ[llama_server.key_env],
            timeout=60,
            max_retries=0,
        )
        model = OpenAIChatCompletionsModel(
            model=llama_server.model, openai_client=client
        )
        window = ContextWindow("llama-3-8b", limit=700, reserve=100)
        agent = Agent(
            name="a",
            instructions="Answer in one word.",
            model=model,
            model_settings=ModelSettings(max_tokens=16, temperature=0),
        )

        async def turns() -> list[Any]:
            # One event loop for every turn: the client's connections belong to it.
            items: list[Any] = []
            for i in range(3):
                ask: Any = {
                    "role": "user",
                    "content": f"Number {i}? " + "Context. " * 80,
                }
                result = await Runner.run(
                    agent, [*items, ask], run_config=config(window), hooks=window
                )
                items = result.to_input_list()
            await client.close()
            return items

        items = asyncio.run(turns())
        assert len([i for i in items if i.get("role") == "user"]) == 3
        assert window.calibration.observed == 3
        assert window.last_tokens is not None
        assert window.last_tokens <= 600
