"""AsyncContextManager: the same methods, awaited; coroutine handlers; threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from contextwindow import (
    AsyncContextManager,
    AsyncThresholdContext,
    ContextManager,
    Message,
    SlidingWindow,
    ToolCall,
    problems,
)
from contextwindow.strategies import Budget, Fitted
from contextwindow.testing import FakeTokenizer

from ._support import words


def amanager(limit: int = 1000, **kw: Any) -> AsyncContextManager:
    kw.setdefault("tokenizer", FakeTokenizer())
    return AsyncContextManager(token_limit=limit, **kw)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_same_public_names_as_the_sync_manager() -> None:
    public = {n for n in dir(ContextManager) if not n.startswith("_")}
    assert public == {n for n in dir(AsyncContextManager) if not n.startswith("_")}


def test_methods_that_may_wait_are_coroutines() -> None:
    for name in (
        "push",
        "push_many",
        "set_messages",
        "clear",
        "update_system",
        "prepare",
        "force_compress",
        "force_compress_with",
    ):
        assert asyncio.iscoroutinefunction(getattr(AsyncContextManager, name)), name


def test_push_prepare_and_restore() -> None:
    async def main() -> tuple[Any, ...]:
        m = amanager(system="s")
        await m.push(Message.user("hi"))
        await m.push_many([Message.assistant("hello"), Message.user("more")])
        p = await m.prepare()
        await m.update_system("new")
        first = m.messages[0].text
        await m.set_messages([Message.user("x")], history=[Message.user("y")])
        restored = ([x.text for x in m.messages], [x.text for x in m.history])
        await m.clear()
        return p, first, restored, m.history

    p, first, restored, history = run(main())
    assert [x["role"] for x in p.messages] == ["system", "user", "assistant", "user"]
    assert first == "new"
    assert restored == (["x"], ["y"])
    assert history == ()


def test_coroutine_and_plain_handlers_both_run() -> None:
    async def main() -> tuple[list[str], Any]:
        m = amanager(limit=100, strategy=None)
        seen: list[str] = []

        @m.on_threshold(60)
        async def shrink(ctx: AsyncThresholdContext) -> None:
            await asyncio.sleep(0)
            seen.append(f"async {ctx.threshold}")
            ctx.replace_messages(ctx.messages[-1:])

        @m.on_threshold(60)
        def note(ctx: AsyncThresholdContext) -> None:
            seen.append(f"plain {ctx.threshold}")

        await m.push_many([Message.user(words(70)), Message.user("q")])
        return seen, await m.prepare()

    seen, p = run(main())
    assert seen == ["async 60", "plain 60"]
    assert [x.text for x in p.conversation] == ["q"]


def test_strategies_run_on_a_worker_thread() -> None:
    threads: list[str] = []

    def slide(messages: Sequence[Message], budget: Budget, /) -> Fitted:
        threads.append(threading.current_thread().name)
        return SlidingWindow(2)(messages, budget)

    async def main() -> Any:
        m = amanager(limit=100, strategy=slide)
        for i in range(6):
            await m.push(Message.user(words(20, f"u{i}_")))
        return await m.prepare()

    p = run(main())
    assert p.tokens <= 100
    assert threads
    assert all(t != threading.main_thread().name for t in threads)


def test_messages_pushed_during_a_compaction_are_kept() -> None:
    started = threading.Event()
    release = threading.Event()

    def slow(messages: Sequence[Message], budget: Budget, /) -> Fitted:
        started.set()
        release.wait(5)
        return SlidingWindow(1)(messages, budget)

    async def main() -> AsyncContextManager:
        m = amanager(limit=100, strategy=slow)
        for i in range(6):
            await m.push(Message.user(words(20, f"u{i}_")))
        task = asyncio.create_task(m.prepare())
        await asyncio.to_thread(started.wait, 5)
        await m.push(Message.user("arrived meanwhile"))
        release.set()
        await task
        return m

    m = run(main())
    assert m.messages[-1].text == "arrived meanwhile"
    assert len(m.history) == 7


def test_force_compress_and_with() -> None:
    async def main() -> tuple[Any, ...]:
        m = amanager(strategy=None)
        await m.push_many([Message.user(str(i)) for i in range(5)])
        a = await m.force_compress(3)
        after_a = [x.text for x in m.messages]
        b = await m.force_compress_with(SlidingWindow(1))
        return a, after_a, b, [x.text for x in m.messages]

    a, after_a, b, after_b = run(main())
    assert a.applied
    assert after_a == ["2", "3", "4"]
    assert b.applied
    assert after_b == ["4"]


def test_summarize_old_exchanges_is_awaited() -> None:
    pytest.importorskip("contextwindow.strategies.summarize")

    async def main() -> tuple[int, Any]:
        m = amanager(limit=1000, strategy=None)
        got: list[int] = []

        @m.on_threshold(60)
        async def summarize(ctx: AsyncThresholdContext) -> None:
            got.append(await ctx.summarize_old_exchanges(older_than=2))

        await m.push(Message.user("Fix the bug in src/app.py"))
        for i in range(8):
            await m.push_many(
                [
                    Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                    Message.tool(f"c{i}", words(80, f"r{i}_")),
                ]
            )
        p = await m.prepare()
        return got[0], p

    n, p = run(main())
    assert n > 0
    assert problems(p.conversation, "openai") == ()


def test_one_manager_across_event_loops() -> None:
    m = amanager()
    for i in range(3):  # each asyncio.run is a new loop; the lock follows it
        asyncio.run(m.push(Message.user(str(i))))
        asyncio.run(m.prepare())
    assert len(m.history) == 3
