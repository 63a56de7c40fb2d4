"""Messages pushed one at a time make the conversation pushed as a list.

A Responses agent pushes each output item as it comes (reasoning, then its
function calls, then each output): the manager must group them as
``from_responses`` groups the list, or the reasoning is dropped as standing
alone and the provider refuses the calls that needed it.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from contextwindow import (
    AsyncContextManager,
    ContextManager,
    Message,
    SlidingWindow,
    ToolCall,
    fit,
)
from contextwindow.store import MemoryStore, SQLiteStore
from contextwindow.strategies import Budget, DropOldest, Fitted
from contextwindow.testing import FakeTokenizer

USER = {"role": "user", "content": "Weather in Oslo and Paris?"}
RS: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "encrypted_content": "gAAA",
}


def call(i: int, city: str) -> dict[str, Any]:
    """A function_call item, as a reasoning model's output holds it."""
    return {
        "type": "function_call",
        "id": f"fc_{i}",
        "call_id": f"c{i}",
        "name": "weather",
        "arguments": f'{{"city": "{city}"}}',
        "status": "completed",
    }


def output(i: int, text: str) -> dict[str, Any]:
    """The function_call_output item answering ``call(i, ...)``."""
    return {"type": "function_call_output", "call_id": f"c{i}", "output": text}


ONE_CALL: list[dict[str, Any]] = [USER, RS, call(1, "Oslo"), output(1, "Sunny, 21C")]
PARALLEL: list[dict[str, Any]] = [
    USER,
    RS,
    call(1, "Oslo"),
    call(2, "Paris"),
    output(1, "Sunny, 21C"),
    output(2, "Rain, 14C"),
]
LONG: list[dict[str, Any]] = [
    *PARALLEL,
    {"type": "reasoning", "id": "rs_2", "summary": []},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Oslo is sunny.", "annotations": []}
        ],
    },
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {}},
    {"role": "user", "content": "And tomorrow?"},
    {"type": "reasoning", "id": "rs_3", "summary": []},
    call(3, "Oslo"),
    output(3, "Cloudy"),
]
SEQUENCES = {"one-call": ONE_CALL, "parallel": PARALLEL, "long": LONG}


def responses(**kw: Any) -> ContextManager:
    return ContextManager(
        "gpt-4o", token_limit=100_000, provider="responses", reserve=0, **kw
    )


def one_at_a_time(m: ContextManager, items: list[dict[str, Any]]) -> None:
    for item in items:
        m.push(copy.deepcopy(item))


class TestResponsesItems:
    @pytest.mark.parametrize("items", SEQUENCES.values(), ids=SEQUENCES.keys())
    def test_one_at_a_time_is_the_list(self, items: list[dict[str, Any]]) -> None:
        """Items pushed one by one, pushed together and fitted give one conversation."""
        alone, together = responses(), responses()
        one_at_a_time(alone, items)
        together.push_many(copy.deepcopy(items))
        fitted = fit(copy.deepcopy(items), limit=100_000, provider="responses")
        assert alone.history == together.history == fitted.messages
        assert [m.meta for m in alone.history] == [m.meta for m in fitted.messages]
        sent = alone.prepare()
        assert sent.compactions == ()  # nothing repaired away
        assert sent.messages == together.prepare().messages == items

    def test_sdk_objects_keep_their_reasoning(self) -> None:
        """The reported case: SDK output items pushed as they come."""
        types = pytest.importorskip("openai.types.responses")
        m = responses()
        m.push(USER)
        m.push(types.ResponseReasoningItem(**RS))
        m.push(types.ResponseFunctionToolCall(**call(1, "Oslo")))
        m.push(types.ResponseFunctionToolCall(**call(2, "Paris")))
        m.push(output(1, "Sunny, 21C"))
        m.push(output(2, "Rain, 14C"))
        sent = m.prepare()
        assert [i.get("type", "message") for i in sent.messages] == [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
        ]
        assert sent.report is None

    def test_a_group_grows_after_a_request(self) -> None:
        """Reasoning prepared alone (left out) comes back with the call after it."""
        m = responses()
        m.push(USER)
        m.push(RS)
        m.prepare()  # reasoning alone is no turn: the view drops it
        for item in ONE_CALL[2:]:
            m.push(item)
        assert m.prepare().messages == ONE_CALL
        assert len(m.history) == 3

    @pytest.mark.parametrize("kind", ["memory", "sqlite"])
    def test_the_log_keeps_each_push_and_a_restart_groups_it(
        self, kind: str, tmp_path: Path
    ) -> None:
        """Each push is one log entry; a resumed manager sends the same request."""
        store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "c.db")
        m = responses(store=store, conversation_id="c1")
        m.push(USER)
        m.push(RS)
        m.prepare()  # a repair: the view saved without the lone reasoning
        one_at_a_time(m, PARALLEL[2:])
        live = m.prepare()
        log = store.load("c1").messages
        assert len(log) == len(PARALLEL)
        assert len({x.id for x in log}) == len(PARALLEL)
        again = responses(store=store, conversation_id="c1")
        assert again.history == m.history
        assert again.messages == m.messages
        assert again.prepare().messages == live.messages == PARALLEL

    def test_a_view_saved_inside_a_group(self) -> None:
        """A view saved before the group's last item resumes with it joined."""
        store = MemoryStore()
        m = responses(store=store, conversation_id="c1")
        one_at_a_time(m, [*PARALLEL, LONG[6], LONG[7]])  # reasoning, then a reply
        assert m.force_compress_with(SlidingWindow(1)).applied  # saved: the reply
        one_at_a_time(m, LONG[8:10])  # a hosted search joins it; a user turn
        assert [len(x.parts) for x in m.messages] == [3, 1]
        again = responses(store=store, conversation_id="c1")
        assert again.history == m.history
        assert again.messages == m.messages
        assert again.prepare().messages == m.prepare().messages == LONG[6:10]

    def test_async_push_while_a_strategy_runs(self) -> None:
        """An item joining the last message while a strategy runs is not lost."""
        started, go = threading.Event(), threading.Event()

        def slow(messages: Sequence[Message], budget: Budget) -> Fitted:
            started.set()
            assert go.wait(10)
            return DropOldest()(messages, budget)

        async def main() -> tuple[AsyncContextManager, Any]:
            m = AsyncContextManager(
                token_limit=60,
                provider="responses",
                tokenizer=FakeTokenizer(),
                strategy=slow,
            )
            await m.push({"role": "user", "content": " ".join(["old"] * 50)})
            await m.push_many([USER, LONG[7]])  # a question, the reply
            task = asyncio.create_task(m.prepare())
            assert await asyncio.to_thread(started.wait, 10)
            await m.push(LONG[8])  # a hosted search joins the reply meanwhile
            go.set()
            return m, await task

        m, sent = asyncio.run(main())
        assert [c.trigger for c in sent.compactions] == ["limit"]
        assert m.messages[-1] == m.history[-1]
        assert len(m.messages[-1].parts) == 2
        assert sent.messages == [USER, LONG[7], LONG[8]]


class TestOtherShapes:
    """The same pattern in the other shapes already came as whole messages."""

    def test_anthropic_tool_use_then_result(self) -> None:
        """An assistant tool_use turn, then the user turn with its tool_result."""
        turns: list[dict[str, Any]] = [
            {"role": "user", "content": "Weather in Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look it up.", "signature": "s"},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Sunny"}
                ],
            },
        ]
        alone = ContextManager("claude-sonnet-4-5", token_limit=100_000)
        together = ContextManager("claude-sonnet-4-5", token_limit=100_000)
        for t in turns:
            alone.push(copy.deepcopy(t))
        together.push_many(copy.deepcopy(turns))
        assert alone.history == together.history
        sent = alone.prepare()
        assert sent.report is None
        assert sent.messages == together.prepare().messages == turns

    def test_chat_tool_calls_then_tool_messages(self) -> None:
        """An assistant message with two calls, then a tool message for each."""
        calls = [ToolCall("c1", "weather", "{}"), ToolCall("c2", "weather", "{}")]
        conv = [
            Message.user("Weather?"),
            Message.assistant(tool_calls=calls),
            Message.tool("c1", "Sunny"),
            Message.tool("c2", "Rain"),
        ]
        alone = ContextManager("gpt-4o", token_limit=100_000)
        together = ContextManager("gpt-4o", token_limit=100_000)
        for msg in conv:
            alone.push(msg)
        together.push_many(conv)
        assert alone.history == together.history == tuple(conv)
        sent = alone.prepare()
        assert sent.report is None
        assert sent.messages == together.prepare().messages

    def test_neutral_messages_are_never_joined(self) -> None:
        """Two assistant Messages of the user's own stay two messages."""
        m = responses()
        m.push_many([Message.user("hi"), Message.assistant("a")])
        m.push(Message.assistant("b"))
        assert [x.text for x in m.history] == ["hi", "a", "b"]
