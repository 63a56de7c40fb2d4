"""Threads sharing a ``ContextManager``: every method waits for a prepare under way.

``set_tokenizer`` from one thread during another's ``prepare`` changed the
counts under it (a raw ``IndexError`` from the running totals): each method
that reads or changes the state holds the manager's lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from contextwindow import ContextManager, HeuristicTokenizer, Message, SlidingWindow

from ._support import manager, words

CALLS: dict[str, Callable[[ContextManager], object]] = {
    "set_tokenizer": lambda m: m.set_tokenizer(HeuristicTokenizer()),
    "set_strategy": lambda m: m.set_strategy(SlidingWindow(5)),
    "remove_strategy": lambda m: m.remove_strategy(),
    "add_protected_marker": lambda m: m.add_protected_marker("<keep>"),
    "observe_usage": lambda m: m.observe_usage(100, counted=100),
    "on_threshold": lambda m: m.on_threshold(70)(print),
    "subscribe": lambda m: m.subscribe(print),
    "token_estimate": lambda m: m.token_estimate(),
    "recall": lambda m: m.recall(["x"]),
}

WAIT = 0.3
"""How long the handler gives the other thread's call to finish (it must not)."""


class TestSharedByThreads:
    @pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
    def test_a_call_waits_for_prepare(
        self, call: Callable[[ContextManager], object]
    ) -> None:
        """A call from another thread runs after the prepare under way, not in it."""
        m = manager(100, strategy=None)
        inside, finished = threading.Event(), threading.Event()
        seen: list[bool] = []

        @m.on_threshold(50)
        def hold(ctx: Any) -> None:
            inside.set()
            seen.append(finished.wait(WAIT))  # True: it ran inside this prepare

        def other() -> None:
            assert inside.wait(10)
            call(m)
            finished.set()

        worker = threading.Thread(target=other)
        worker.start()
        m.push(Message.user(words(60)))
        m.prepare()
        worker.join(10)
        assert finished.is_set()
        assert seen == [False]
