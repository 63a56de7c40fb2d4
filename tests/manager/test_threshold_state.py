"""Threshold state kept right whatever handlers and other calls do meanwhile.

Where a crossing is, which thresholds are armed, what ``budget`` says, which
handlers may be registered, and what ``prepare`` refuses to send.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from contextwindow import (
    AsyncContextManager,
    Compaction,
    ContextManager,
    ContextWindowError,
    Event,
    Message,
    SlidingWindow,
)
from contextwindow.errors import ArgumentTypeError
from contextwindow.store import MemoryStore
from contextwindow.strategies.base import Budget, Fitted
from contextwindow.testing import FakeTokenizer

from ._support import manager, words

WAIT = 10
"""Seconds an async test waits before calling it a hang."""


def _runaway(calls: list[int]) -> None:
    """Stop a test whose handler runs again and again (the old endless loop)."""
    calls.append(1)
    if len(calls) > 20:
        raise RuntimeError("the handler ran 20 times in one prepare")


class TestCrossingUnderWay:
    @pytest.mark.parametrize("how", ["set_messages", "clear"])
    def test_a_handler_restoring_the_conversation_does_not_restart_it(
        self, how: str
    ) -> None:
        """The second handler restores (or clears): each runs once, prepare returns."""
        m = manager(strategy=None)
        first: list[int] = []
        second: list[int] = []
        m.on_threshold(60)(lambda ctx: _runaway(first))

        @m.on_threshold(60)
        def restart(ctx: Any) -> None:
            _runaway(second)
            if how == "clear":
                m.clear()
                m.push(Message.user("fresh start"))
            else:
                m.set_messages([Message.user("fresh start")])

        m.push(Message.user(words(700)))
        p = m.prepare()
        assert (len(first), len(second)) == (1, 1)
        assert p.thresholds == (60,)
        assert [x.text for x in p.conversation] == ["fresh start"]

    def test_thresholds_fired_before_a_restore_stay_fired(self) -> None:
        """A restore in a handler re-arms only what usage fell below."""
        m = manager(strategy=None)
        m.push(Message.user(words(850)))
        big = list(m.messages)

        @m.on_threshold(80)
        def restore(ctx: Any) -> None:
            m.set_messages(big)  # the same size: 60 and 80 stay crossed

        assert m.prepare().thresholds == (60, 80)
        m.push(Message.assistant("ok"))
        assert m.prepare().thresholds == ()

    def test_an_async_handler_restoring_the_conversation(self) -> None:
        """The same in the async manager: each handler runs once."""
        m = AsyncContextManager(
            token_limit=1000, tokenizer=FakeTokenizer(), strategy=None
        )
        calls: list[int] = []
        m.on_threshold(60)(lambda ctx: None)

        @m.on_threshold(60)
        async def restart(ctx: Any) -> None:
            _runaway(calls)
            await m.set_messages([Message.user("fresh start")])

        async def main() -> Any:
            await m.push(Message.user(words(700)))
            return await asyncio.wait_for(m.prepare(), WAIT)

        assert asyncio.run(main()).thresholds == (60,)
        assert len(calls) == 1

    def test_a_handler_removed_mid_crossing_does_not_run(self) -> None:
        """remove_handler from a handler: the crossing runs the handlers still there."""
        m = manager(strategy=None)
        ran: list[str] = []

        def later(ctx: Any) -> None:
            ran.append("later")

        @m.on_threshold(60)
        def first(ctx: Any) -> None:
            ran.append("first")
            m.remove_handler(later)

        m.on_threshold(60)(later)
        m.push(Message.user(words(700)))
        m.prepare()
        assert ran == ["first"]


class TestRearming:
    def _crossed(self, n: int = 9, **kw: Any) -> tuple[ContextManager, list[float]]:
        """A manager whose 90 % threshold has fired (its handler noted it)."""
        m = manager(strategy=None, **kw)
        fired: list[float] = []
        m.on_threshold(90)(lambda ctx: fired.append(ctx.threshold))
        for _ in range(n):
            m.push(Message.user(words(100)))
        m.prepare()
        assert fired == [90]
        return m, fired

    def test_force_compress_rearms_what_usage_fell_below(self) -> None:
        """After a forced compaction the next crossing of 90 % fires again."""
        m, fired = self._crossed()
        m.force_compress_with(SlidingWindow(1), target=0)
        for _ in range(8):
            m.push(Message.user(words(100)))
        assert m.prepare().thresholds == (60, 80, 90)
        assert fired == [90, 90]

    def test_a_shorter_system_prompt_rearms(self) -> None:
        """update_system lowering usage below 90 % re-arms it."""
        m, fired = self._crossed(8, system=words(100, "s"))
        m.update_system("Be brief.")
        m.push(Message.user(words(100)))
        m.prepare()
        assert fired == [90, 90]

    def test_the_rearmed_state_is_stored(self) -> None:
        """A manager resumed from the store after force_compress fires again."""
        store = MemoryStore()
        m, _ = self._crossed(store=store, conversation_id="c")
        m.force_compress_with(SlidingWindow(1), target=0)
        again = manager(strategy=None, store=store, conversation_id="c")
        fired: list[float] = []
        again.on_threshold(90)(lambda ctx: fired.append(ctx.threshold))
        for _ in range(8):
            again.push(Message.user(words(100)))
        again.prepare()
        assert fired == [90]


class TestAsyncTasksOfHandlers:
    def test_a_task_left_running_waits_for_the_prepare(self) -> None:
        """A compaction a handler starts and does not await runs after prepare."""

        async def main() -> tuple[Any, Compaction, int]:
            m = AsyncContextManager(token_limit=1000, tokenizer=FakeTokenizer())
            tasks: list[asyncio.Task[Compaction]] = []

            @m.on_threshold(60)
            async def later(ctx: Any) -> None:
                loop = asyncio.get_running_loop()
                tasks.append(loop.create_task(m.force_compress_with(SlidingWindow(2))))

            for i in range(19):
                await m.push(Message.user(f"m{i} " + words(55)))
            p = await asyncio.wait_for(m.prepare(), WAIT)
            done = await asyncio.wait_for(tasks[0], WAIT)
            return p, done, len(m.messages)

        p, done, left = asyncio.run(main())
        assert p.tokens <= p.budget
        assert done.applied
        assert left == 2

    def test_a_compaction_running_beside_prepare_is_not_kept(self) -> None:
        """Its input was replaced meanwhile: it keeps the view, and says so."""

        compacted = threading.Event()

        def slow(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            compacted.wait(WAIT)  # still running when prepare compacts
            return SlidingWindow(2)(messages, budget)

        async def main() -> tuple[Any, Compaction]:
            m = AsyncContextManager(token_limit=1000, tokenizer=FakeTokenizer())
            tasks: list[asyncio.Task[Compaction]] = []

            def on_event(e: Event) -> None:
                if e.kind == "compaction" and e.data["trigger"] == "limit":
                    compacted.set()

            m.subscribe(on_event)

            @m.on_threshold(60)
            async def later(ctx: Any) -> None:
                loop = asyncio.get_running_loop()
                tasks.append(loop.create_task(m.force_compress_with(slow)))
                await asyncio.sleep(0)  # it starts inside, and outlives the handler

            for i in range(19):
                await m.push(Message.user(f"m{i} " + words(55)))
            p = await asyncio.wait_for(m.prepare(), WAIT)
            return p, await asyncio.wait_for(tasks[0], WAIT)

        p, done = asyncio.run(main())
        assert p.tokens <= p.budget
        assert not done.applied
        assert "changed while the strategy ran" in done.reason


class TestBudget:
    def test_a_reserve_for_one_prepare_leaves_the_budget(self) -> None:
        """prepare(reserve=0) budgets that request; manager.budget stays."""
        m = ContextManager("gpt-4o", token_limit=1000)
        m.push(Message.user("hi"))
        seen: list[int] = []
        m.on_threshold(0.1)(lambda ctx: seen.append(ctx.budget))
        assert m.prepare(reserve=0).budget == 1000
        assert seen == [1000]  # the handler sees this request's budget
        assert (m.reserve, m.budget) == (250, 750)

    def test_observed_usage_moves_the_budget_at_once(self) -> None:
        """budget follows the calibration, before the next prepare."""
        m = ContextManager("claude-sonnet-4-5", token_limit=10_000, reserve=0)
        m.push(Message.user("What does this project do? " * 50))
        m.prepare()
        m.observe_usage({"input_tokens": 445})
        assert m.budget == m.calibration.limit(10_000) == m.prepare().budget


class TestHandlerRegistration:
    def test_a_coroutine_handler_is_refused_by_the_sync_manager(self) -> None:
        """At registration, naming the handler; prepare works meanwhile."""
        m = manager(limit=100, strategy=None)

        async def note(ctx: Any) -> None:  # pragma: no cover  # never called
            pass

        with pytest.raises(ArgumentTypeError, match=r"^handler: .*'.*note'.*Async"):
            m.on_threshold(10)(note)
        m.push(Message.user(words(70)))
        assert m.prepare().thresholds == (60,)

    def test_the_async_manager_takes_coroutine_handlers(self) -> None:
        """AsyncContextManager awaits them: registration accepts them."""
        m = AsyncContextManager(token_limit=100)

        async def note(ctx: Any) -> None:  # pragma: no cover  # never called
            pass

        assert m.on_threshold(10)(note) is note

    def test_remove_handler(self) -> None:
        """A removed handler no longer runs; its threshold stays watched."""
        m = manager(limit=100, strategy=None)
        ran: list[float] = []

        def note(ctx: Any) -> None:
            ran.append(ctx.threshold)

        m.on_threshold(10)(note)
        m.on_threshold(20)(note)
        assert m.remove_handler(note)
        assert not m.remove_handler(note)
        m.push(Message.user(words(50)))
        assert m.prepare().thresholds == (10, 20)
        assert ran == []


class TestNothingToSend:
    @pytest.mark.parametrize("provider", ["openai", "anthropic", "responses"])
    @pytest.mark.parametrize("keep", [0, 1], ids=["nothing", "system only"])
    def test_a_handler_leaving_no_turn_is_refused(
        self, provider: str, keep: int
    ) -> None:
        """Handlers leaving no turn: ContextWindowError naming them."""
        m = ContextManager(
            token_limit=1000,
            tokenizer=FakeTokenizer(),
            strategy=None,
            provider=provider,  # type: ignore[arg-type]
        )
        m.on_threshold(60)(lambda ctx: ctx.replace_messages(ctx.messages[:keep]))
        m.push(Message.system("sys"))
        for i in range(7):
            m.push_many([Message.user(f"m{i} " + words(90)), Message.assistant("ok")])
        with pytest.raises(
            ContextWindowError, match=r"system prompt: the threshold handlers at 60%"
        ):
            m.prepare()
        m.push(Message.user("and now?"))  # a turn to send again
        assert [x.text for x in m.prepare().conversation][-1] == "and now?"

    def test_an_empty_manager_still_prepares(self) -> None:
        """No history at all (new or cleared): the empty request, as before."""
        m = manager(system="Be brief.")
        assert [x.role for x in m.prepare().conversation] == ["system"]
        m.clear()
        assert m.prepare().conversation == ()
