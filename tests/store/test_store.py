"""The one store suite: every test runs on memory, SQLite, PostgreSQL and Redis."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, cast

import pytest

from contextwindow import (
    ArgumentTypeError,
    BudgetError,
    ConflictError,
    Message,
    StoreError,
    TokenCounter,
    ToolCall,
    fit,
)
from contextwindow.messages import ToolResult
from contextwindow.store._backend import RowStore
from contextwindow.testing import FakeTokenizer
from contextwindow.wire import message_to_dict

from .conftest import Backend


def chat(n: int, prefix: str = "m") -> list[Message]:
    """``n`` messages in turns of four: ask, tool call, tool result, reply."""
    out: list[Message] = []
    for i in range(n):
        ident, step = f"{prefix}{i}", i % 4
        if step == 0:
            out.append(Message.user(f"ask {i}", id=ident, meta={"n": i}))
        elif step == 1:
            call = ToolCall(f"c{i}", "read", '{"path": "a.py"}')
            out.append(Message.assistant(tool_calls=[call], id=ident))
        elif step == 2:
            out.append(Message.tool(f"c{i - 1}", f"out {i} " * 20, id=ident))
        else:
            out.append(Message.assistant(f"reply {i}", id=ident, agent="coder"))
    return out


def same(
    a: list[Message] | tuple[Message, ...], b: list[Message] | tuple[Message, ...]
) -> None:
    """Equal messages with equal ids and meta (which equality ignores)."""
    assert [message_to_dict(m) for m in a] == [message_to_dict(m) for m in b]


class TestAppend:
    def test_pool_round_trips(self, store: RowStore, pool: list[list[Message]]) -> None:
        """Every pooled conversation, appended in random batches, loads back whole."""
        for k, conv in enumerate(pool):
            rng = random.Random(k)
            cid, version = f"conv-{k}", 0
            while True:  # at least one append: an empty conversation is one too
                batch = conv[version : version + rng.randint(1, 4)]
                tokens = (
                    [{"fake": len(m.text)} for m in batch]
                    if rng.random() < 0.5
                    else None
                )
                version = store.append(
                    cid, batch, expected_version=version, tokens=tokens
                )
                if version == len(conv):
                    break
            loaded = store.load(cid)
            assert loaded.version == len(conv) == store.version(cid)
            same(loaded.messages, conv)
            assert [e.position for e in loaded.entries] == list(range(len(conv)))
            since = rng.randint(0, len(conv))
            same(store.load(cid, since=since).messages, conv[since:])

    def test_returns_the_new_version(self, store: RowStore) -> None:
        """The version is the number of messages; an empty batch keeps it."""
        msgs = chat(5)
        assert store.append("c", msgs[:2], expected_version=0) == 2
        assert store.append("c", msgs[2:], expected_version=2) == 5
        assert store.append("c", [], expected_version=5) == 5
        assert store.version("c") == 5

    def test_stale_version_conflicts_and_writes_nothing(self, store: RowStore) -> None:
        """A stale version raises ConflictError(expected, actual); nothing lands."""
        store.append("c", chat(3), expected_version=0)
        with pytest.raises(ConflictError) as info:
            store.append("c", [Message.user("late")], expected_version=2)
        assert (info.value.expected_version, info.value.actual_version) == (2, 3)
        with pytest.raises(ConflictError):
            store.append("c", [Message.user("early")], expected_version=4)
        assert [m.text for m in store.load("c").messages][-1] != "late"
        assert store.version("c") == 3

    def test_a_missing_conversation_is_at_version_zero(self, store: RowStore) -> None:
        """Appending to a missing conversation needs version 0, which creates it."""
        with pytest.raises(ConflictError) as info:
            store.append("new", chat(1), expected_version=3)
        assert info.value.actual_version == 0
        assert store.info("new") is None
        assert store.append("new", [], expected_version=0) == 0
        info_new = store.info("new")
        assert info_new is not None
        assert info_new.version == 0

    def test_a_batch_is_all_or_nothing(self, store: RowStore) -> None:
        """A batch holding one unstorable message writes none of it."""
        store.append("c", chat(2), expected_version=0)
        bad = Message.user("x", meta={"when": object()})
        with pytest.raises(StoreError, match=r"messages\[1\] is not JSON"):
            store.append("c", [Message.user("fine"), bad], expected_version=2)
        assert store.version("c") == 2

    def test_refuses_bad_arguments(self, store: RowStore) -> None:
        """Bad ids, versions, counts and non-messages are StoreErrors naming them."""
        bad_counts: Any = [{"a": "3"}]
        not_messages: Any = ["hi"]
        cases: list[tuple[Callable[[], object], str]] = [
            (lambda: store.append("", chat(1), expected_version=0), "conversation id"),
            (
                lambda: store.append("c\0d", chat(1), expected_version=0),
                "conversation id",
            ),
            (
                lambda: store.append("c", chat(1), expected_version=-1),
                "expected_version",
            ),
            (
                lambda: store.append("c", chat(2), expected_version=0, tokens=[{}]),
                "1 token counts for 2",
            ),
            (
                lambda: store.append(
                    "c", chat(1), expected_version=0, tokens=bad_counts
                ),
                r"tokens\[0\]",
            ),
            (
                lambda: store.append("c", not_messages, expected_version=0),
                r"messages\[0\]: expected a Message",
            ),
            (
                lambda: store.append(
                    "c", [Message.user("x", id="a\0")], expected_version=0
                ),
                r"messages\[0\]\.id: holds a NUL",
            ),
            (lambda: store.load("c", since=-2), "since"),
        ]
        for call, pattern in cases:
            with pytest.raises(StoreError, match=pattern):
                call()
        assert store.info("c") is None

    def test_refuses_arguments_of_the_wrong_type(self, store: RowStore) -> None:
        """One Message for a list, or counts that are no list of mappings: an
        ArgumentTypeError naming the argument, and nothing written."""
        lone: Any = Message.user("hi")
        cases: list[tuple[Callable[[], object], str]] = [
            (
                lambda: store.append("c", lone, expected_version=0),
                r"^messages: expected a list of Messages, .*pass \[message\]",
            ),
            (
                lambda: store.append("c", chat(1), expected_version=0, tokens="1"),  # type: ignore[arg-type]  # on purpose
                r"^tokens: expected a list of mappings",
            ),
            (
                lambda: store.append("c", chat(1), expected_version=0, tokens=[1]),  # type: ignore[list-item]  # on purpose
                r"^tokens\[0\]: expected a mapping",
            ),
            (
                lambda: store.update_meta("c", [1, 2]),  # type: ignore[arg-type]  # on purpose
                r"^meta: expected a mapping",
            ),
            (
                lambda: store.create("c", meta="x"),  # type: ignore[arg-type]  # on purpose
                r"^meta: expected a mapping",
            ),
        ]
        for call, pattern in cases:
            with pytest.raises(ArgumentTypeError, match=pattern):
                call()
        assert store.info("c") is None
        store.append("c", chat(1), expected_version=0)
        with pytest.raises(ArgumentTypeError, match=r"^messages: "):
            store.save_view("c", lone, version=1)
        assert store.load_view("c") is None

    def test_keeps_time_agent_and_tokens(self, store: RowStore) -> None:
        """Each entry carries its append time, its agent and the caller's counts."""
        before = time.time()
        msgs = [
            Message.user("hi", agent="planner"),
            Message.assistant("yo", agent="coder"),
        ]
        store.append("c", msgs, expected_version=0, tokens=[{"o200k_base": 4}, {}])
        entries = store.load("c").entries
        assert [e.message.agent for e in entries] == ["planner", "coder"]
        assert [dict(e.tokens) for e in entries] == [{"o200k_base": 4}, {}]
        assert all(before - 1 <= e.time <= time.time() + 1 for e in entries)


class TestLoad:
    def test_blocks_an_earlier_version_kept_aside_are_parts(
        self, store: RowStore
    ) -> None:
        """A row in the layout before Opaque parts (a document in
        ``meta["anthropic"]["opaque"]``) loads with the document as a part, in
        place, so it is counted; it is sent once."""
        from contextwindow.formats import to_provider
        from contextwindow.tokens import count_messages

        doc = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "x " * 9000},
        }
        old = Message.user("read this", meta={"anthropic": {"opaque": [[1, doc]]}})
        store.append("c", [old], expected_version=0)
        got = store.load("c").messages[0]
        assert [p.kind for p in got.parts] == ["text", "opaque"]
        assert "anthropic" not in got.meta
        assert count_messages([got], "claude-sonnet-4-5") > 4000
        sent = to_provider([got], "anthropic")[1][0]["content"]
        assert [b["type"] for b in sent] == ["text", "document"]

    def test_a_missing_conversation_is_an_error(self, store: RowStore) -> None:
        """Loading an unknown id raises StoreError, never an empty conversation."""
        with pytest.raises(StoreError, match="no conversation 'nope'"):
            store.load("nope")
        assert store.info("nope") is None
        assert store.version("nope") == 0

    def test_since_catches_up(self, store: RowStore) -> None:
        """load(since=v) gives what others appended after v; past the end fails."""
        msgs = chat(6)
        store.append("c", msgs[:4], expected_version=0)
        store.append("c", msgs[4:], expected_version=4)
        tail = store.load("c", since=4, view=False)
        assert (tail.version, tail.since) == (6, 4)
        same(tail.messages, msgs[4:])
        assert store.load("c", since=6).messages == ()
        with pytest.raises(StoreError, match="below since=7"):
            store.load("c", since=7)

    def test_another_handle_reads_the_same(self, backend: Backend) -> None:
        """What one handle wrote, another (a new process, say) reads exactly."""
        first, second = backend.open(), backend.open()
        msgs = chat(9)
        first.append("c", msgs, expected_version=0)
        first.update_meta("c", {"model": "gpt-4o"})
        again = second.load("c")
        same(again.messages, msgs)
        assert again.meta == {"model": "gpt-4o"}

    def test_a_store_url_opens_the_same(self, backend: Backend) -> None:
        """The backend's URL names its storage (what the CLI and workers use)."""
        backend.open().append("c", chat(2), expected_version=0)
        assert backend.open().version("c") == 2


class TestViews:
    def _view(self, store: RowStore) -> tuple[list[Message], list[Message]]:
        msgs = chat(7)
        store.append("c", msgs, expected_version=0)
        cut = msgs[6].with_parts([ToolResult("c5", "[cut]")])
        summary = Message.user("Summary: asked twice.", id="sum1")
        return msgs, [summary, msgs[4], msgs[5], cut]

    def test_kinds_and_origins(self, store: RowStore) -> None:
        """Originals point to the log, rewrites to their id, summaries to sources."""
        _msgs, view = self._view(store)
        saved = store.save_view(
            "c", view, version=7, sources={"sum1": ["m0", "m1"]}, report={"saved": 40}
        )
        assert [(e.kind, e.origins) for e in saved.entries] == [
            ("new", (0, 1)),
            ("original", (4,)),
            ("original", (5,)),
            ("rewritten", (6,)),
        ]
        loaded = store.load_view("c")
        assert loaded is not None
        same(loaded.messages, view)
        assert loaded.entries == saved.entries
        assert loaded.report == {"saved": 40}
        assert [e.message.id for e in loaded.summaries] == ["sum1"]
        conv = store.load("c")
        assert conv.view == loaded
        assert conv.info.view_version == 7
        assert store.load("c", view=False).view is None

    def test_pointers_resolve_past_since(self, store: RowStore) -> None:
        """A view loaded with since > 0 still has the originals it points to."""
        _, view = self._view(store)
        store.save_view("c", view, version=7, sources={"sum1": ["m0"]})
        late = store.load("c", since=6)
        assert late.view is not None
        same(late.view.messages, view)

    def test_a_fitted_view_round_trips(
        self, store: RowStore, pool: list[list[Message]]
    ) -> None:
        """What fit() makes of each pooled conversation saves and loads exactly."""
        for k, conv in enumerate(pool[-40:]):
            cid = f"v{k}"
            store.append(cid, conv, expected_version=0)
            counter = TokenCounter(FakeTokenizer())
            total = counter.messages(conv)
            try:
                fitted = fit(conv, limit=total // 2, tokenizer=counter)
            except BudgetError:  # what must be kept needs more than half
                fitted = fit(conv, limit=total, tokenizer=counter)
            store.save_view(cid, fitted.messages, version=len(conv))
            loaded = store.load(cid).view
            assert loaded is not None
            assert loaded.version == len(conv)
            same(loaded.messages, fitted.messages)
            for entry in loaded.entries:
                if entry.kind != "new":
                    assert all(conv[p].id == entry.message.id for p in entry.origins)

    def test_versions_only_move_forward(self, store: RowStore) -> None:
        """A view past the log is an error; one older than the saved one conflicts."""
        _, view = self._view(store)
        with pytest.raises(
            StoreError, match="a view of version 8, but the log is at version 7"
        ):
            store.save_view("c", view[1:], version=8)
        store.save_view("c", view[1:], version=6)
        store.save_view("c", view[1:3], version=6)  # the same version again replaces it
        loaded = store.load_view("c")
        assert loaded is not None
        assert len(loaded.entries) == 2
        with pytest.raises(ConflictError) as info:
            store.save_view("c", view[1:], version=5)
        assert (info.value.expected_version, info.value.actual_version) == (5, 6)

    def test_refuses_bad_views(self, store: RowStore) -> None:
        """Unknown sources, a non-JSON report, a missing conversation: StoreErrors."""
        _, view = self._view(store)
        with pytest.raises(StoreError, match="names 'zz', which the log does not hold"):
            store.save_view("c", view, version=7, sources={"sum1": ["zz"]})
        with pytest.raises(StoreError, match="sources names 'other', not in the view"):
            store.save_view("c", view, version=7, sources={"other": ["m0"]})
        with pytest.raises(StoreError, match="the report is not JSON"):
            store.save_view("c", view, version=7, report={"at": object()})
        with pytest.raises(StoreError, match="no conversation 'gone'"):
            store.save_view("gone", view, version=0)
        assert store.load_view("c") is None
        assert store.load_view("gone") is None


class TestConversations:
    def test_create_and_metadata(self, store: RowStore) -> None:
        """create refuses an existing id; update_meta merges, replaces, creates."""
        made = store.create("a", meta={"model": "gpt-4o", "title": "Bug"})
        assert (made.version, dict(made.meta)) == (
            0,
            {"model": "gpt-4o", "title": "Bug"},
        )
        with pytest.raises(StoreError, match="already exists"):
            store.create("a")
        merged = store.update_meta("a", {"title": "Login bug", "tags": ["p1"]})
        assert dict(merged.meta) == {
            "model": "gpt-4o",
            "title": "Login bug",
            "tags": ["p1"],
        }
        replaced = store.update_meta("a", {"x": None}, replace=True)
        assert dict(replaced.meta) == {"x": None}
        assert merged.created == made.created <= replaced.updated
        assert dict(store.update_meta("b", {"k": 1}).meta) == {"k": 1}
        with pytest.raises(StoreError, match="not JSON"):
            store.update_meta("a", {"k": {1, 2}})

    def test_list_and_delete(self, store: RowStore) -> None:
        """list_conversations shows every id, sorted; delete removes log, view, meta."""
        store.append("b", chat(3), expected_version=0)
        store.append("a", chat(1), expected_version=0)
        store.save_view("b", chat(3)[:1], version=3)
        listed = store.list_conversations()
        assert [(i.id, i.version, i.view_version) for i in listed] == [
            ("a", 1, None),
            ("b", 3, 3),
        ]
        assert store.delete("b") is True
        assert store.delete("b") is False
        assert [i.id for i in store.list_conversations()] == ["a"]
        assert store.load_view("b") is None
        assert store.version("b") == 0
        assert store.append("b", chat(1), expected_version=0) == 1
        assert store.load("b").view is None


class TestArgumentChecks:
    def test_negative_counts_are_refused(self, store: RowStore) -> None:
        """A negative count would be summed by every manager resuming: refused."""
        for bad in (-10_000, -1, True, 1.5):
            with pytest.raises(StoreError, match=r"tokens\[1\]: expected counter"):
                store.append(
                    "c",
                    chat(3),
                    expected_version=0,
                    tokens=cast("Any", [{"k": 5}, {"o200k_base/openai": bad}, {}]),
                )
        assert store.info("c") is None
        store.append("c", chat(1), expected_version=0, tokens=[{"k": 0}])
        assert store.load("c").entries[0].tokens == {"k": 0}

    def test_flags_are_bools(self, store: RowStore) -> None:
        """``replace="no"`` replaced the metadata; ``view="no"``: a flag is a bool."""
        store.create("a", meta={"model": "gpt-4o"})
        for bad in ("no", "false", 0, None):
            with pytest.raises(ArgumentTypeError, match=r"^replace: expected True"):
                store.update_meta("a", {"k": 1}, replace=bad)  # type: ignore[arg-type]  # the wrong type on purpose
            with pytest.raises(ArgumentTypeError, match=r"^view: expected True"):
                store.load("a", view=bad)  # type: ignore[arg-type]  # the wrong type on purpose
        assert dict(store.info("a").meta) == {"model": "gpt-4o"}  # type: ignore[union-attr]  # created above

    def test_positions_past_any_backend(self, store: RowStore) -> None:
        """A version or position no backend holds: a StoreError, not OverflowError."""
        store.append("c", chat(2), expected_version=0)
        with pytest.raises(StoreError, match="since must be a non-negative integer"):
            store.load("c", since=10**30)
        with pytest.raises(StoreError, match="version must be a non-negative integer"):
            store.save_view("c", chat(1), version=10**30)

    def test_sources_is_a_mapping(self, store: RowStore) -> None:
        """``sources`` that is no mapping of ids to ids is named, nothing saved."""
        store.append("c", chat(2), expected_version=0)
        view = [Message.user("summary", id="s1")]
        for bad in ("12", True, 5.0, [("s1", "m0")]):
            with pytest.raises(
                ArgumentTypeError, match=r"^sources: expected a mapping"
            ):
                store.save_view("c", view, version=2, sources=bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match=r"^sources\['s1'\]: expected"):
            store.save_view("c", view, version=2, sources={"s1": 5})  # type: ignore[dict-item]  # the wrong type on purpose
        assert store.load_view("c") is None
        store.save_view("c", view, version=2, sources={"s1": "m0"})
        saved = store.load_view("c")
        assert saved is not None
        assert saved.entries[0].origins == (0,)
