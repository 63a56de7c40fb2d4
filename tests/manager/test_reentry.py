"""A handler (or a subscriber) calling back into its manager: never a recursion
nor a deadlock; ``prepare`` refuses, every other method runs inside it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from contextwindow import (
    AsyncContextManager,
    ContextManager,
    ContextWindowError,
    Event,
    Message,
    SlidingWindow,
)
from contextwindow.testing import FakeTokenizer

from ._support import words

WAIT = 10
"""Seconds an async test waits before calling it a deadlock."""


def _conversation() -> list[Message]:
    """About 70 % of a 1,000-token window: 60 is crossed on the first prepare."""
    return [
        Message.user(words(200, "a")),
        Message.assistant(words(200, "b")),
        Message.user(words(300, "c")),
    ]


def _sync(**kw: Any) -> ContextManager:
    m = ContextManager(token_limit=1000, tokenizer=FakeTokenizer(), **kw)
    m.push_many(_conversation())
    return m


def _async(**kw: Any) -> AsyncContextManager:
    return AsyncContextManager(token_limit=1000, tokenizer=FakeTokenizer(), **kw)


async def _prepared(m: AsyncContextManager) -> Any:
    await m.push_many(_conversation())
    return await asyncio.wait_for(m.prepare(), WAIT)


class TestSyncHandler:
    def test_prepare_from_a_handler_is_refused(self) -> None:
        """prepare() in a handler raises ContextWindowError, not RecursionError."""
        m = _sync()

        @m.on_threshold(60)
        def again(ctx: Any) -> None:
            m.prepare()

        with pytest.raises(ContextWindowError, match="from inside this manager's"):
            m.prepare()

    def test_the_handler_runs_again_once_fixed(self) -> None:
        """The refused handler is not counted as run; the manager still works."""
        m = _sync()
        calls: list[int] = []

        @m.on_threshold(60)
        def again(ctx: Any) -> None:
            calls.append(1)
            if len(calls) == 1:
                m.prepare()

        with pytest.raises(ContextWindowError):
            m.prepare()
        assert m.prepare().thresholds == (60,)
        assert len(calls) == 2

    def test_other_methods_run_inside_prepare(self) -> None:
        """update_system and force_compress_with work; the forced one is reported."""
        m = _sync()

        @m.on_threshold(60)
        def shrink(ctx: Any) -> None:
            m.update_system("Be brief.")
            m.force_compress_with(SlidingWindow(1), target=0)

        p = m.prepare()
        assert [c.trigger for c in p.compactions] == ["forced"]
        assert [x.role for x in m.messages] == ["system", "user"]
        assert p.report is not None
        assert p.tokens == m.token_estimate()

    def test_a_subscriber_calling_prepare_is_logged_not_recursed(self) -> None:
        """A subscriber's prepare during prepare is refused (and only logged)."""
        m = _sync()
        errors: list[BaseException] = []

        def on_event(event: Event) -> None:
            if event.kind == "threshold":
                try:
                    m.prepare()
                except ContextWindowError as exc:
                    errors.append(exc)

        m.subscribe(on_event)
        assert m.prepare().thresholds == (60,)
        assert len(errors) == 1

    def test_another_thread_waits_for_the_lock(self) -> None:
        """A prepare from another thread is not refused: it waits its turn."""
        m = _sync()
        done: list[int] = []
        worker = threading.Thread(target=lambda: done.append(m.prepare().tokens))

        @m.on_threshold(60)
        def slow(ctx: Any) -> None:
            worker.start()
            worker.join(0.2)  # blocked on the lock meanwhile
            assert not done

        m.prepare()
        worker.join(WAIT)
        assert len(done) == 1


class TestAsyncHandler:
    @pytest.mark.parametrize(
        "call",
        [
            lambda m: m.update_system("Be brief."),
            lambda m: m.force_compress(),
            lambda m: m.force_compress_with(SlidingWindow(1), target=0),
            lambda m: m.set_messages(list(m.messages)),
        ],
        ids=["update_system", "force_compress", "force_compress_with", "set_messages"],
    )
    def test_awaited_methods_do_not_deadlock(self, call: Any) -> None:
        """A handler awaiting the manager's own methods completes."""
        m = _async()

        @m.on_threshold(60)
        async def handler(ctx: Any) -> None:
            await call(m)

        p = asyncio.run(_prepared(m))
        assert p.thresholds == (60,)

    def test_awaited_prepare_is_refused(self) -> None:
        """await m.prepare() in a handler raises ContextWindowError at once."""
        m = _async()

        @m.on_threshold(60)
        async def again(ctx: Any) -> None:
            await m.prepare()

        with pytest.raises(ContextWindowError, match="from inside this manager's"):
            asyncio.run(_prepared(m))

    def test_tasks_the_handler_starts_share_its_lock(self) -> None:
        """Calls gathered in a handler (new tasks) run inside its prepare."""
        m = _async()

        @m.on_threshold(60)
        async def handler(ctx: Any) -> None:
            await asyncio.gather(
                m.update_system("Be brief."), m.force_compress_with("drop-oldest")
            )

        p = asyncio.run(_prepared(m))
        assert [c.trigger for c in p.compactions] == ["forced"]
        assert m.messages[0].text == "Be brief."

    def test_another_task_waits_for_the_lock(self) -> None:
        """A prepare from an unrelated task waits; it is not taken as re-entry."""
        m = _async()
        started = asyncio.Event()

        @m.on_threshold(60)
        async def handler(ctx: Any) -> None:
            started.set()
            await asyncio.sleep(0.05)

        async def main() -> tuple[Any, Any]:
            await m.push_many(_conversation())
            first = asyncio.ensure_future(m.prepare())
            await started.wait()
            second = await asyncio.wait_for(m.prepare(), WAIT)
            return await first, second

        first, second = asyncio.run(main())
        assert first.thresholds == (60,)
        assert second.thresholds == ()
