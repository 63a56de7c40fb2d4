"""Appends committed while the upstream answers: exactly-once, in any order."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.proxy._upstream import openai_turn
from tests.store._faults import FaultyStore

from contextwindow import Message
from contextwindow.errors import ConflictError, StoreError
from contextwindow.formats._coerce import coerce_messages
from contextwindow.proxy import FitterConfig
from contextwindow.proxy._behind import WriteBehind
from contextwindow.proxy._fitter import Fitter, Plan
from contextwindow.proxy._shapes import APIS
from contextwindow.store import open_store
from contextwindow.store.memory import MemoryStore

CHAT = APIS["/v1/chat/completions"]


def _chat(turns: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for i in range(turns):
        msgs += openai_turn(i, f"part {i}: " + "data " * 200)
        msgs.append({"role": "assistant", "content": f"read {i}"})
    return {"model": "gpt-4o", "max_tokens": 500, "messages": msgs}


def _plan(fitter: Fitter, turns: int, cid: str = "c") -> Plan:
    raw = json.dumps(_chat(turns)).encode()
    return fitter.plan(CHAT, raw, json.loads(raw), cid)


def _sent(turns: int) -> tuple[Message, ...]:
    return tuple(coerce_messages(_chat(turns)["messages"], provider="openai").messages)


class TestWriteBehind:
    def test_appends_wait_for_commit(self) -> None:
        store = MemoryStore()
        behind = WriteBehind(store)
        assert behind.append("c", [Message.user("a")], expected_version=0) == 1
        assert behind.append("c", [Message.user("b")], expected_version=1) == 2
        with pytest.raises(ConflictError):
            behind.append("c", [Message.user("x")], expected_version=1)
        assert store.version("c") == 0
        assert behind.pending("c") == 2
        # A read through it commits first.
        assert behind.version("c") == 2
        assert [m.text for m in store.load("c").messages] == ["a", "b"]
        assert behind.pending("c") == 0

    def test_a_failed_commit_drops_the_queue_and_says_so_once(self) -> None:
        store = MemoryStore()
        behind = WriteBehind(store)
        behind.append("c", [Message.user("mine")], expected_version=0)
        store.append("c", [Message.user("another writer's")], expected_version=0)
        with pytest.raises(ConflictError):
            behind.commit("c")
        assert behind.pending("c") == 0
        assert behind.failed("c")
        assert not behind.failed("c")
        assert [m.text for m in store.load("c").messages] == ["another writer's"]

    def test_later_writes_go_in_order_with_the_appends(self) -> None:
        store = MemoryStore()
        behind = WriteBehind(store)
        seen: list[int] = []
        behind.append("c", [Message.user("a")], expected_version=0)
        behind.later("c", lambda s: seen.append(s.version("c")))
        behind.append("c", [Message.user("b")], expected_version=1)
        behind.later("c", lambda s: s.update_meta("c", {"k": 1}))
        assert behind.queued("c")
        assert behind.pending("c") == 2
        assert seen == []
        assert store.info("c") is None
        behind.commit("c")
        assert seen == [1]  # after the first append, before the second
        assert store.version("c") == 2
        info = store.info("c")
        assert info is not None
        assert info.meta == {"k": 1}
        assert not behind.queued("c")

    def test_a_read_writes_what_is_queued_first(self) -> None:
        store = MemoryStore()
        behind = WriteBehind(store)
        behind.append("c", [Message.user("a")], expected_version=0)
        behind.later("c", lambda s: s.update_meta("c", {"k": 2}))
        info = behind.info("c")
        assert info is not None
        assert info.meta == {"k": 2}

    def test_a_later_write_that_fails_drops_the_queue(self) -> None:
        store = MemoryStore()
        behind = WriteBehind(store)

        def refused(_: object) -> None:
            raise StoreError("refused")

        behind.later("c", refused)
        behind.append("c", [Message.user("a")], expected_version=0)
        with pytest.raises(StoreError, match="refused"):
            behind.commit("c")
        assert not behind.queued("c")
        assert behind.failed("c")
        assert store.version("c") == 0
        # The queue starts afresh: a batch from version 0 is taken again.
        assert behind.append("c", [Message.user("a")], expected_version=0) == 1

    def test_committers_of_one_conversation_write_each_batch_once(self) -> None:
        """Threads that each append and commit (as the proxy's requests do),
        against a store slow enough for them to overlap: every batch goes in
        once, in order, and no commit fails."""
        for _ in range(3):
            texts, errors = _append_and_commit(workers=8, each=40)
            assert errors == []
            assert len(texts) == 320
            assert len(set(texts)) == 320
            for w in range(8):
                mine = [t for t in texts if t.startswith(f"{w}-")]
                assert mine == [f"{w}-{i}" for i in range(40)]


def _append_and_commit(workers: int, each: int) -> tuple[list[str], list[Exception]]:
    """``workers`` threads, each appending ``each`` messages and committing
    after each; the log's texts, and what the commits raised."""
    store = MemoryStore()
    # No fault: each append only waits a little first.
    behind = WriteBehind(FaultyStore(store, lambda name: time.sleep(0.0003)))
    lock = threading.Lock()
    version = [0]
    errors: list[Exception] = []

    def worker(w: int) -> None:
        for i in range(each):
            with lock:
                version[0] = behind.append(
                    "c", [Message.user(f"{w}-{i}")], expected_version=version[0]
                )
            try:
                behind.commit("c")
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    behind.commit("c")
    return [m.text for m in store.load("c").messages], errors


class TestFitterWriteBehind:
    def test_the_plan_carries_the_commit(self, tmp_path: Path) -> None:
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitter = Fitter(FitterConfig(window=3_000), store, write_behind=True)
            first = _plan(fitter, 2)
            if first.commit is not None:
                first.commit()
            assert store.load("c").messages == _sent(2)
            plan = _plan(fitter, 3)
            assert plan.commit is not None
            assert store.version("c") == len(_sent(2))  # nothing written yet
            plan.commit()
            assert store.load("c").messages == _sent(3)
            again = _plan(fitter, 3)  # the same request: nothing new to write
            assert again.commit is None
        finally:
            store.close()

    def test_a_compaction_is_saved_with_the_commit(self, tmp_path: Path) -> None:
        """The view and state a compacting turn saves wait for the commit too,
        and are in the store once it returns."""
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            fitter = Fitter(FitterConfig(window=3_000), store, write_behind=True)
            turn, plan = 1, _plan(fitter, 1)
            while not plan.compactions:
                if plan.commit is not None:
                    plan.commit()
                turn += 1
                plan = _plan(fitter, turn)
            before = store.load_view("c")
            assert plan.commit is not None
            plan.commit()
            view = store.load_view("c")
            assert view is not None
            assert view != before
            assert view.version == len(_sent(turn))
            assert plan.rewritten
            sent = json.loads(plan.body)["messages"]
            assert len(sent) == len(view.messages)
        finally:
            store.close()

    def test_a_commit_that_fails_says_so_and_the_next_turn_appends(self) -> None:
        failing = False
        store = FaultyStore(
            MemoryStore(), lambda name: "fail" if failing and name == "append" else None
        )
        fitter = Fitter(FitterConfig(window=3_000), store, write_behind=True)
        first = _plan(fitter, 2)
        if first.commit is not None:  # the first turn's state write committed it
            first.commit()
        failing = True
        plan = _plan(fitter, 3)
        assert plan.commit is not None
        with pytest.raises(StoreError, match="refused"):
            plan.commit()
        assert store.load("c").messages == _sent(2)
        failing = False
        # The client sends its history again: it goes in then.
        plan = _plan(fitter, 3)
        assert plan.commit is not None
        plan.commit()
        assert store.load("c").messages == _sent(3)

    def test_a_continued_turn_forwards_what_a_fresh_replica_forwards(
        self, tmp_path: Path
    ) -> None:
        """The body a replica forwards from its memory of the conversation is,
        byte for byte, the one a replica that reads it all from the store
        forwards for the same request."""
        store = open_store(f"sqlite:///{tmp_path / 'p.db'}")
        try:
            warm = Fitter(FitterConfig(window=3_000), store, write_behind=True)
            rewritten = 0
            for t in range(1, 20):
                plan = _plan(warm, t)
                if plan.commit is not None:
                    plan.commit()
                fresh = Fitter(FitterConfig(window=3_000), store)
                # The store holds this request already: the fresh replica
                # appends nothing and fits from what it read back.
                cold = _plan(fresh, t)
                assert cold.body == plan.body, f"turn {t}"
                rewritten += plan.rewritten
            assert rewritten > 5
        finally:
            store.close()

    @settings(max_examples=40, deadline=None)
    @given(
        st.lists(
            st.tuples(st.integers(0, 1), st.booleans(), st.booleans()),
            min_size=2,
            max_size=10,
        )
    )
    def test_two_replicas_commit_in_any_order(
        self, steps: list[tuple[int, bool, bool]]
    ) -> None:
        """Two replicas on one store, the client's turns going to either (a turn
        sometimes sent again, as a client retries), each commit run at once or
        only later (after other turns): the log ends up holding every message
        once, in order, and each replica's memory of it is the log itself (the
        same messages, by id)."""
        store = MemoryStore()
        fitters = [
            Fitter(FitterConfig(window=3_000), store, write_behind=True)
            for _ in range(2)
        ]
        late: list[Plan] = []

        def commit(plans: list[Plan]) -> None:
            for plan in plans:
                assert plan.commit is not None
                # A conflict: the replica reads the store again next time.
                with contextlib.suppress(ConflictError):
                    plan.commit()
            plans.clear()

        turn = 0
        for replica, now, again in steps:
            turn += not again or not turn
            plan = _plan(fitters[replica], turn)
            assert plan.tokens_forwarded <= 2_500
            if plan.commit is not None:
                late.append(plan)
            if now:
                commit(late)
        commit(late)
        # The client's next request, on each replica, settles the log.
        for fitter in fitters:
            plan = _plan(fitter, turn + 1)
            if plan.commit is not None:
                plan.commit()
            log = store.load("c").messages
            assert log == _sent(turn + 1)
            memory = fitter._entries["c"].manager.history
            assert [m.id for m in memory] == [m.id for m in log]
