"""A turn that changes under ``prepare``, and operations that fail halfway.

Every prepared request is valid for its provider whatever happened during
the turn (a handler pushing, messages landing while a strategy runs), and
an operation that raises leaves the manager as it was, or says what did
happen.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from contextwindow import AsyncContextManager, Message, ToolCall
from contextwindow.messages import Provider
from contextwindow.strategies import Budget, DropOldest, Fitted
from contextwindow.testing import FakeTokenizer
from contextwindow.validity import problems

from ._support import manager, words

PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "responses")


def _fill(turns: int, size: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out += [Message.user(words(size, f"u{i}-")), Message.assistant(f"a{i}")]
    return out


class TestViewChangedDuringPrepare:
    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_handler_pushing_a_stray_result_never_breaks_a_request(
        self, provider: Provider
    ) -> None:
        """A handler that pushes an orphan tool result: every later request is valid."""
        m = manager(1000, strategy=None, provider=provider)

        @m.on_threshold(50)
        def push_stray(ctx: object) -> None:
            m.push(Message.tool("stray", "output of nothing"))
            m.push(Message.user("and next?"))

        m.push(Message.user(words(600)))
        for i in range(4):
            p = m.prepare()
            assert problems(p.conversation, provider) == ()
            m.push_many([Message.assistant(f"ok {i}"), Message.user(f"q {i}")])
        assert [x.role for x in m.history].count("tool") == 1  # the log keeps it
        assert all(x.role != "tool" for x in m.messages)  # the view does not

    def test_the_repair_is_reported(self) -> None:
        """The stray result's removal is a ``repair`` compaction of that turn."""
        m = manager(1000, strategy=None)

        @m.on_threshold(50)
        def push_stray(ctx: object) -> None:
            m.push(Message.tool("stray", "output"))

        m.push(Message.user(words(600)))
        p = m.prepare()
        repairs = [c for c in p.compactions if c.trigger == "repair" and c.applied]
        assert repairs
        assert any(
            ch.kind == "repaired" and "no pending tool call" in ch.what
            for c in repairs
            for ch in c.report.changes
        )
        assert all(x.role != "tool" for x in m.messages)

    def test_async_pushes_while_a_strategy_runs(self) -> None:
        """Two pushes land while the strategy runs on a thread: requests stay valid."""
        started, pushed = threading.Event(), threading.Event()

        def slow(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            started.set()
            assert pushed.wait(10)
            return DropOldest()(messages, budget)

        async def main() -> list[tuple[object, ...]]:
            m = AsyncContextManager(
                token_limit=1000, tokenizer=FakeTokenizer(), strategy=slow
            )
            await m.push_many(_fill(10, 85))

            async def land() -> None:
                await asyncio.to_thread(started.wait, 10)
                await m.push(Message.tool("stray", "a result for no call"))
                await m.push(Message.user("next"))
                pushed.set()

            first, _ = await asyncio.gather(m.prepare(), land())
            assert any(c.applied for c in first.compactions)
            found: list[tuple[object, ...]] = [problems(first.conversation, "openai")]
            for i in range(3):
                await m.push_many([Message.assistant(f"ok {i}"), Message.user("q")])
                found.append(problems((await m.prepare()).conversation, "openai"))
            assert [x.text for x in m.history[-8:-6]] == [
                "a result for no call",
                "next",
            ]
            return found

        assert asyncio.run(main()) == [(), (), (), ()]

    def test_async_results_of_a_pending_call_land_while_a_strategy_runs(
        self,
    ) -> None:
        """A call awaiting results keeps its call while compaction runs: its results
        answer it, and reach the next request."""
        started, pushed = threading.Event(), threading.Event()

        def slow(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            started.set()
            assert pushed.wait(10)
            return DropOldest()(messages, budget)

        async def main() -> tuple[tuple[object, ...], list[str]]:
            m = AsyncContextManager(
                token_limit=1000, tokenizer=FakeTokenizer(), strategy=slow
            )
            await m.push_many(_fill(10, 85))
            await m.push(Message.assistant(tool_calls=[ToolCall("c1", "ls")]))

            async def land() -> None:
                await asyncio.to_thread(started.wait, 10)
                await m.push(Message.tool("c1", "a.txt b.txt"))
                await m.push(Message.user("next"))
                pushed.set()

            first, _ = await asyncio.gather(m.prepare(), land())
            assert any(c.applied for c in first.compactions)
            p = await m.prepare()
            return problems(p.conversation, "openai"), [x.text for x in p.conversation]

        found, texts = asyncio.run(main())
        assert found == ()
        assert texts[-2:] == ["a.txt b.txt", "next"]

    def test_a_pending_call_survives_compaction(self) -> None:
        """Compaction with a call awaiting results keeps the call for its results."""
        m = manager(1000)
        m.push_many(_fill(10, 85))
        m.push(Message.assistant(tool_calls=[ToolCall("c1", "ls")]))
        p = m.prepare()
        assert any(c.applied for c in p.compactions)
        assert m.messages[-1].tool_calls  # still there, left out of the request
        assert not p.conversation[-1].tool_calls
        m.push(Message.tool("c1", "a.txt"))
        p = m.prepare()
        assert problems(p.conversation, "openai") == ()
        assert p.conversation[-1].text == "a.txt"
