"""ContextManager with a store: every push and compaction kept, resumed exactly.

Runs on memory, SQLite, PostgreSQL and Redis (the resuming and sharing tests
on the three a second process could reach).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contextwindow import (
    ContextManager,
    Message,
    StoreError,
    ThresholdContext,
    ToolCall,
    problems,
)
from contextwindow.manager import CompactionPolicy
from contextwindow.store._backend import RowStore
from contextwindow.testing import FakeTokenizer

from .conftest import Backend

KEY = "fake/openai"
"""How a manager counting with ``FakeTokenizer`` for OpenAI names its counts."""


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def managed(store: RowStore, cid: str = "c1", **kw: Any) -> ContextManager:
    kw.setdefault("token_limit", 600)
    kw.setdefault("tokenizer", FakeTokenizer())
    kw.setdefault("policy", CompactionPolicy(min_saving=0))
    return ContextManager(store=store, conversation_id=cid, **kw)


def agent_turns(m: ContextManager, start: int, n: int) -> None:
    """``n`` tool exchanges of 40 words each, a request prepared before each."""
    for i in range(start, start + n):
        m.prepare()
        m.push(Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]))
        m.push(Message.tool(f"c{i}", words(40, f"r{i}_")))


def test_every_push_is_in_the_log_with_its_count(store: RowStore) -> None:
    m = managed(store, system="s")
    m.push(Message.user("task"))
    agent_turns(m, 0, 3)
    conv = store.load("c1")
    assert conv.messages == m.history
    assert [e.tokens[KEY] for e in conv.entries] == [
        m._counter.message(x) for x in m.history
    ]
    assert conv.meta["provider"] == "openai"


def test_a_compaction_saves_the_view(store: RowStore) -> None:
    m = managed(store, system="s")
    m.push(Message.user("task"))
    agent_turns(m, 0, 20)
    view = store.load_view("c1")
    assert view is not None
    # the view as compacted, then what came after it
    assert view.messages + m.history[view.version :] == m.messages
    assert len(m.messages) < len(m.history) or any(
        e.kind == "rewritten" for e in view.entries
    )
    assert view.report is not None
    assert view.report["trigger"] in ("watermark", "limit")


def test_a_new_manager_resumes_exactly(durable: Backend) -> None:
    a = managed(durable.open(), system="s")
    fired: dict[str, list[float]] = {"a": [], "b": []}
    a.on_threshold(60)(lambda ctx: fired["a"].append(ctx.threshold))
    a.push(Message.user("task"))
    agent_turns(a, 0, 17)
    a.push(Message.user("next?"))
    tokenizer = FakeTokenizer()
    b = managed(durable.open(), tokenizer=tokenizer)
    b.on_threshold(60)(lambda ctx: fired["b"].append(ctx.threshold))
    assert (b.history, b.messages) == (a.history, a.messages)
    # the log's counts are stored: only view messages the log lacks (cleared
    # results) are counted again
    logged = {x.text for x in a.history if x.role == "tool"}
    assert tokenizer.calls
    assert not logged & set(tokenizer.calls)
    seen = len(fired["a"])
    pa, pb = a.prepare(), b.prepare()
    assert pb.messages == pa.messages
    assert (pb.tokens, pb.thresholds) == (pa.tokens, pa.thresholds)
    assert fired["b"] == fired["a"][seen:]


def test_resumed_thresholds_do_not_fire_again(durable: Backend) -> None:
    a = managed(durable.open(), token_limit=1000, strategy=None)
    seen: list[str] = []

    def note(ctx: ThresholdContext) -> None:
        seen.append(ctx.agent_name or "")

    a.on_threshold(50)(note)
    a.push(Message.user(words(600, "w")))
    a.prepare()
    b = managed(durable.open(), token_limit=1000, strategy=None, agent_name="b")
    b.on_threshold(50)(note)
    b.prepare()
    assert seen == [""]  # fired in a, remembered by b


def test_two_workers_share_one_log(durable: Backend) -> None:
    a = managed(durable.open(), token_limit=10_000)
    b = managed(durable.open(), token_limit=10_000)
    a.push(Message.user("from a", id="a1"))
    b.push(Message.user("from b", id="b1"))  # conflicts, catches up, appends
    a.push(Message.user("a again", id="a2"))
    log = [m.id for m in durable.open().load("c1").messages]
    assert log == ["a1", "b1", "a2"]
    assert [m.id for m in a.history] == log
    assert [m.id for m in b.history] == ["a1", "b1"]
    p = a.prepare()
    assert problems(p.conversation, "openai") == ()


def test_the_log_is_append_only(store: RowStore) -> None:
    m = managed(store)
    m.push(Message.user("hi"))
    with pytest.raises(StoreError, match="append-only"):
        m.set_messages([])
    with pytest.raises(StoreError, match=r"store\.delete"):
        m.clear()


def test_update_system_changes_the_saved_view_not_the_log(store: RowStore) -> None:
    m = managed(store, system="old")
    m.push(Message.user("hi"))
    m.update_system("new")
    assert [x.text for x in m.history] == ["old", "hi"]
    assert [x.text for x in m.messages] == ["new", "hi"]
    view = store.load_view("c1")
    assert view is not None
    assert view.messages[0].text == "new"
    resumed = managed(store)
    assert [x.text for x in resumed.messages] == ["new", "hi"]


def test_a_store_url_and_a_fresh_id(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    m = ContextManager(token_limit=1000, store=f"sqlite:///{path}#chat-7")
    m.push(Message.user("hi"))
    assert m.conversation_id == "chat-7"
    again = ContextManager(token_limit=1000, store=f"sqlite:///{path}#chat-7")
    assert [x.text for x in again.history] == ["hi"]
    fresh = ContextManager(token_limit=1000, store=f"sqlite:///{path}")
    assert fresh.conversation_id is not None
    assert fresh.conversation_id != "chat-7"


def test_conversation_id_needs_a_store() -> None:
    with pytest.raises(Exception, match="needs a store"):
        ContextManager(token_limit=1000, conversation_id="c1")
