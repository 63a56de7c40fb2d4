"""Conversation ids: one rule for every backend, checked before any sees them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow import ContextManager, Message, StoreError
from contextwindow.store import MemoryStore
from contextwindow.store._backend import RowStore
from contextwindow.store._codec import MAX_ID, check_id

BAD = {
    "a\ud800b": r"character 1 \('\\ud800'\) is not printable",
    "line\nbreak": r"character 4 \('\\n'\) is not printable",
    "tab\there": "character 3",
    "nul\0": "character 3",
    "x" * (MAX_ID + 1): f"{MAX_ID + 1} characters",
    "": "non-empty string",
}


class TestIds:
    @pytest.mark.parametrize("cid", list(BAD), ids=range(len(BAD)))
    def test_refused_with_the_reason(self, store: RowStore, cid: str) -> None:
        """Every backend refuses the same ids with the same clear StoreError."""
        for call in (
            lambda: store.append(cid, [Message.user("hi")], expected_version=0),
            lambda: store.load(cid),
            lambda: store.info(cid),
            lambda: store.update_meta(cid, {"a": 1}),
        ):
            with pytest.raises(StoreError, match=BAD[cid]):
                call()
        assert store.list_conversations() == []

    def test_the_longest_and_widest_id(self, store: RowStore) -> None:
        """MAX_ID characters of four UTF-8 bytes each fit every backend."""
        cid = "\U0001f600" * MAX_ID
        store.append(cid, [Message.user("hi")], expected_version=0)
        assert store.load(cid).messages[0].text == "hi"
        assert [c.id for c in store.list_conversations()] == [cid]

    def test_a_manager_names_the_bad_id(self) -> None:
        """A manager given a bad id fails at once, clearly."""
        with pytest.raises(StoreError, match="not printable"):
            ContextManager(
                token_limit=100, store=MemoryStore(), conversation_id="a\ud800"
            )


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=MAX_ID + 2))
def test_the_rule(cid: str) -> None:
    """An id is accepted exactly when it is printable, 1 to MAX_ID characters."""
    ok = 0 < len(cid) <= MAX_ID and cid.isprintable()
    if ok:
        assert check_id(cid) == cid
        cid.encode("utf-8")  # every accepted id has a UTF-8 form
    else:
        with pytest.raises(StoreError):
            check_id(cid)
