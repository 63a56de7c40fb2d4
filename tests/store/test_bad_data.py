"""Damaged storage is a clear StoreError, never a silently short conversation."""

from __future__ import annotations

import json

import pytest

from contextwindow import Message, StoreError
from contextwindow.store import open_store
from contextwindow.store._backend import RowStore

from .conftest import Backend, Tamper


def written(backend: Backend, n: int = 5) -> tuple[RowStore, Tamper]:
    store = backend.open()
    msgs = [Message.user(f"message {i}", id=f"m{i}") for i in range(n)]
    store.append("c", msgs, expected_version=0)
    assert backend.tamper is not None
    return store, backend.tamper


class TestCorruptRows:
    def test_a_changed_body(self, durable: Backend) -> None:
        """A body edited behind the store's back fails its digest."""
        store, tamper = written(durable)
        tamper.set_body("c", 2, '{"role":"user","parts":[],"id":"m2"}', digest=False)
        with pytest.raises(
            StoreError, match=r"'c', message 2: body does not match its digest"
        ):
            store.load("c")

    def test_a_body_that_is_not_json(self, durable: Backend) -> None:
        """A body that is not JSON (digest made to match) names the position."""
        store, tamper = written(durable)
        tamper.set_body("c", 3, '{"role": "user", "parts": [', digest=True)
        with pytest.raises(StoreError, match=r"'c', message 3 body: not valid JSON"):
            store.load("c")

    def test_a_body_that_is_not_a_message(self, durable: Backend) -> None:
        """JSON that is no message names the field the wire form misses."""
        store, tamper = written(durable)
        tamper.set_body("c", 1, json.dumps({"parts": [], "id": "m1"}), digest=True)
        with pytest.raises(
            StoreError, match=r"message 1: not a message: message.role: missing"
        ):
            store.load("c")

    def test_a_body_of_another_message(self, durable: Backend) -> None:
        """A valid body whose id differs from its row's is caught too."""
        store, tamper = written(durable)
        other = '{"role":"user","parts":[],"id":"zz"}'
        tamper.set_body("c", 4, other, digest=True)
        with pytest.raises(StoreError, match=r"message 4: the row says id 'm4'"):
            store.load("c")

    def test_a_field_of_the_wrong_type(self, durable: Backend) -> None:
        """Token counts that are not counts name the position and the field."""
        store, tamper = written(durable)
        tamper.set_tokens("c", 0, '"many"', digest=True)
        with pytest.raises(
            StoreError, match=r"'c', message 0: tokens: expected counts"
        ):
            store.load("c")

    def test_a_negative_count(self, durable: Backend) -> None:
        """A negative count (digest made to match) is damage: a manager resuming
        would take it as the message's tokens."""
        store, tamper = written(durable)
        tamper.set_tokens("c", 1, '{"o200k_base/openai":-10000}', digest=True)
        with pytest.raises(
            StoreError, match=r"'c', message 1: tokens: expected counts"
        ):
            store.load("c")

    def test_a_changed_count(self, durable: Backend) -> None:
        """A count edited behind the store's back fails the digest, as a body does."""
        store = durable.open()
        msgs = [Message.user(f"message {i}", id=f"m{i}") for i in range(3)]
        store.append("c", msgs, expected_version=0, tokens=[{"k": 5}] * 3)
        assert durable.tamper is not None
        durable.tamper.set_tokens("c", 1, '{"k":4}')
        with pytest.raises(
            StoreError, match=r"'c', message 1: token counts do not match the digest"
        ):
            store.load("c")

    def test_counts_a_digest_does_not_cover(self, durable: Backend) -> None:
        """Counts on a row whose digest covers its body alone (what a worker of
        the release before digests covered counts still appends during a
        rolling upgrade) are dropped, to be counted again, never trusted and
        never fatal."""
        store, tamper = written(durable)
        tamper.set_tokens("c", 2, '{"k":1}')
        conv = durable.open().load("c")
        assert [m.text for m in conv.messages] == [f"message {i}" for i in range(5)]
        assert [dict(e.tokens) for e in conv.entries] == [{}] * 5
        store.append("c", [Message.user("x")], expected_version=5, tokens=[{"k": 2}])
        assert durable.open().load("c").entries[5].tokens == {"k": 2}

    def test_a_gap_in_positions(self, durable: Backend) -> None:
        """A missing row is reported, not skipped."""
        store, tamper = written(durable)
        tamper.drop("c", 2)
        with pytest.raises(StoreError, match=r"'c': position 2 is missing"):
            store.load("c")

    def test_a_version_past_the_log(self, durable: Backend) -> None:
        """A version above the rows held names the first missing position."""
        store, tamper = written(durable)
        tamper.set_version("c", 7)
        with pytest.raises(
            StoreError, match=r"at version 7 but holds 5 .*position 5 is missing"
        ):
            store.load("c")

    def test_a_view_pointing_at_a_lost_message(self, durable: Backend) -> None:
        """A view whose original is gone from the log cannot load."""
        store, tamper = written(durable)
        store.save_view("c", store.load("c").messages[3:], version=5)
        tamper.drop("c", 4)
        with pytest.raises(StoreError, match=r"view message 1: points to message 4"):
            store.load_view("c")


class TestSchema:
    def test_a_schema_from_before_counts_were_digested(self, durable: Backend) -> None:
        """Opened, older storage is upgraded: its unprotected counts are dropped."""
        store = durable.open()
        msgs = [Message.user(f"message {i}", id=f"m{i}") for i in range(3)]
        store.append("c", msgs, expected_version=0, tokens=[{"k": 5}] * 3)
        assert durable.tamper is not None
        durable.tamper.past_schema()
        upgraded = open_store(durable.url)
        conv = upgraded.load("c")
        assert conv.messages == tuple(msgs)
        assert [dict(e.tokens) for e in conv.entries] == [{}, {}, {}]
        upgraded.append("c", [Message.user("x")], expected_version=3, tokens=[{"k": 1}])
        assert open_store(durable.url).load("c").entries[3].tokens == {"k": 1}

    def test_a_schema_from_the_future(self, durable: Backend) -> None:
        """Storage laid out by a newer contextwindow is refused when opened."""
        _, tamper = written(durable)
        tamper.future_schema()
        with pytest.raises(StoreError, match="upgrade contextwindow"):
            open_store(durable.url)

    def test_sqlite_not_a_database(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        """A file that is not SQLite fails to open with the reason."""
        path = tmp_path / "notes.db"
        path.write_text("these are my notes\n" * 100)
        with pytest.raises(
            StoreError, match=r"cannot open SQLiteStore.*not a database"
        ):
            open_store(f"sqlite:///{path}")

    def test_sqlite_unknown_migration(self, tmp_path) -> None:  # type: ignore[no-untyped-def]
        """A migration name this code does not know is refused, by name."""
        import sqlite3

        path = tmp_path / "s.db"
        open_store(f"sqlite:///{path}").close()
        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO cw_migrations VALUES ('0002_from_a_fork', 0)")
        with pytest.raises(
            StoreError, match="0002_from_a_fork that this contextwindow"
        ):
            open_store(f"sqlite:///{path}")
