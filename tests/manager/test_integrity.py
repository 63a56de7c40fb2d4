"""A turn that changes under ``prepare``, and operations that fail halfway.

Every prepared request is valid for its provider whatever happened during
the turn (a handler pushing, messages landing while a strategy runs), and
an operation that raises leaves the manager as it was, or says what did
happen.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from contextwindow import (
    AsyncContextManager,
    ContextManager,
    Message,
    StoreError,
    ThresholdContext,
    ToolCall,
)
from contextwindow.manager import CompactionPolicy, Event
from contextwindow.messages import Provider
from contextwindow.store import SQLiteStore
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


class Failing:
    """A real store whose named calls fail while armed (a store outage)."""

    def __init__(self, inner: SQLiteStore) -> None:
        self._inner = inner
        self.failing: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in self.failing:
                raise StoreError(f"injected: the store is down ({name})")
            return attr(*args, **kwargs)

        return call


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[Failing]:
    inner = SQLiteStore(tmp_path / "chats.db")
    yield Failing(inner)
    inner.close()


def stored(store: Failing, **kw: Any) -> ContextManager:
    kw.setdefault("tokenizer", FakeTokenizer())
    kw.setdefault("token_limit", 1000)
    return ContextManager(store=cast("Any", store), conversation_id="c1", **kw)


class TestFailedOperations:
    def test_update_system_that_cannot_be_stored_changes_nothing(
        self, failing: Failing
    ) -> None:
        """A store failure in update_system leaves the view and the store unchanged."""
        m = stored(failing, system="old")
        m.push(Message.user("hi"))
        failing.failing.add("save_view")
        with pytest.raises(StoreError, match="injected"):
            m.update_system("new")
        assert [x.text for x in m.messages] == ["old", "hi"]
        assert m.prepare().conversation[0].text == "old"
        failing.failing.clear()
        m.update_system("new")
        assert [x.text for x in m.messages] == ["new", "hi"]
        assert failing.load("c1").current_view[0].text == "new"

    def test_update_system_adding_a_prompt_that_cannot_be_stored(
        self, failing: Failing
    ) -> None:
        """No prompt yet, and the store fails: none is added."""
        m = stored(failing)
        m.push(Message.user("hi"))
        failing.failing.add("save_view")
        with pytest.raises(StoreError):
            m.update_system("new")
        assert [x.role for x in m.messages] == ["user"]

    def test_a_compaction_that_cannot_be_stored_leaves_the_view(
        self, failing: Failing
    ) -> None:
        """prepare fails on saving the compacted view: the view is kept as it was."""
        m = stored(failing)
        m.push_many(_fill(12, 85))
        before = m.messages
        failing.failing.add("save_view")
        with pytest.raises(StoreError):
            m.prepare()
        assert m.messages == before
        assert m.token_estimate() > 900
        failing.failing.clear()
        p = m.prepare()
        assert p.tokens <= 1000
        assert any(c.applied for c in p.compactions)

    def test_a_subscriber_that_raises_does_not_fail_a_push(
        self, failing: Failing, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The push is stored once and succeeds; the subscriber's error is logged."""
        m = stored(failing)

        def broken(event: Event) -> None:
            raise RuntimeError("subscriber bug")

        m.subscribe(broken)
        with caplog.at_level(logging.ERROR, logger="contextwindow.manager"):
            m.push(Message.user("once"))
        assert [x.text for x in m.history] == ["once"]
        assert [x.text for x in failing.load("c1").messages] == ["once"]
        [record] = [r for r in caplog.records if "subscriber" in r.getMessage()]
        assert "broken" in record.getMessage()
        assert "push happened" in record.getMessage()
        assert record.exc_info is not None
        assert "subscriber bug" in str(record.exc_info[1])

    def test_a_subscriber_that_raises_does_not_fail_prepare(self) -> None:
        """Compaction events reach a broken subscriber; prepare still returns."""
        m = manager(1000)
        seen: list[str] = []

        def broken(event: Event) -> None:
            seen.append(event.kind)
            raise ValueError("no")

        m.subscribe(broken)
        m.push_many(_fill(12, 85))
        p = m.prepare()
        assert p.tokens <= 1000
        assert "compaction" in seen

    def test_a_handler_that_raised_runs_again(self) -> None:
        """A handler that raised is not counted as run: the next prepare runs it,
        and the handler that returned before it does not run twice."""
        m = manager(1000, strategy=None)
        calls: list[str] = []

        @m.on_threshold(50)
        def first(ctx: ThresholdContext) -> None:
            calls.append("first")

        @m.on_threshold(50)
        def flaky(ctx: ThresholdContext) -> None:
            calls.append("flaky")
            if calls.count("flaky") == 1:
                raise RuntimeError("handler bug")

        m.push(Message.user(words(600)))
        with pytest.raises(RuntimeError, match="handler bug") as caught:
            m.prepare()
        if sys.version_info >= (3, 11):
            assert "next prepare runs it again" in " ".join(
                getattr(caught.value, "__notes__", [])
            )
        p = m.prepare()
        assert calls == ["first", "flaky", "flaky"]
        assert p.thresholds == (50, 60)
        m.prepare()
        assert calls == ["first", "flaky", "flaky"]  # fired now: once per crossing

    def test_an_async_handler_that_raised_runs_again(self) -> None:
        """The same for a coroutine handler of an AsyncContextManager."""
        calls: list[int] = []

        async def main() -> None:
            m = AsyncContextManager(
                token_limit=1000, tokenizer=FakeTokenizer(), strategy=None
            )

            @m.on_threshold(50)
            async def flaky(ctx: object) -> None:
                calls.append(1)
                if len(calls) == 1:
                    raise RuntimeError("handler bug")

            await m.push(Message.user(words(600)))
            with pytest.raises(RuntimeError):
                await m.prepare()
            await m.prepare()
            await m.prepare()

        asyncio.run(main())
        assert calls == [1, 1]

    def test_a_failed_strategy_does_not_use_up_the_turn(self) -> None:
        """A strategy that raised is not counted among the turn's compactions."""
        broken = [True]

        def flaky(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            if broken[0]:
                raise RuntimeError("strategy bug")
            return DropOldest()(messages, budget)

        m = manager(1000, strategy=flaky, policy=CompactionPolicy(max_per_turn=1))
        m.push_many(_fill(10, 85))
        with pytest.raises(RuntimeError):
            m.prepare()
        broken[0] = False
        p = m.prepare()
        assert [c.trigger for c in p.compactions if c.applied] == ["watermark"]

    def test_a_request_whose_state_cannot_be_stored_is_not_the_last_one_sent(
        self, failing: Failing
    ) -> None:
        """prepare fails storing its state: the next request's prefix is counted
        against the request before, the one that was returned."""
        m = stored(failing, strategy=None)
        m.push(Message.user(words(100)))
        first = m.prepare()
        m.push_many([Message.assistant("a"), Message.user(words(500, "x"))])
        failing.failing.add("update_meta")  # the 60% threshold fires: state changes
        with pytest.raises(StoreError):
            m.prepare()
        failing.failing.clear()
        m.push_many([Message.assistant("b"), Message.user("c")])
        p = m.prepare()
        counter = m._counter  # the manager's own counts
        assert p.prefix_tokens == counter.running(list(first.conversation))[-1]
