"""A push interrupted after the store took it: in the log once, and in the manager.

``Persistence.append`` moves the manager's version when the store has the
messages; an interrupt (Ctrl-C) before the history takes them in left the
manager without them, and a retry stored them twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from contextwindow import ContextManager, Message
from contextwindow.manager import _persist
from contextwindow.store import MemoryStore, SQLiteStore
from contextwindow.store.base import Store


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
    else:
        with SQLiteStore(tmp_path / "chats.db") as s:
            yield s


def stored(store: Store) -> ContextManager:
    return ContextManager("gpt-4o", token_limit=5000, store=store, conversation_id="c1")


def interrupted_push(
    m: ContextManager,
    message: Message | dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Push ``message``; Ctrl-C comes right after the store acknowledged it."""
    original = _persist.Persistence.append

    def append(
        self: _persist.Persistence, msgs: Sequence[Message], counts: Sequence[int]
    ) -> list[Message]:
        original(self, msgs, counts)
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(_persist.Persistence, "append", append)
        with pytest.raises(KeyboardInterrupt):
            m.push(message)


def texts(m: ContextManager) -> list[str]:
    return [x["content"] for x in m.prepare().messages]


class TestInterruptedPush:
    def test_a_retry_is_stored_once(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Pushing the interrupted message again adds it once, to log and history."""
        m = stored(store)
        m.push(Message.user("hello", id="u1"))
        answer = Message.assistant("hi there", id="a1")
        interrupted_push(m, answer, monkeypatch)
        m.push(answer)  # the caller cannot know it was stored: it retries
        assert Counter(x.id for x in store.load("c1").messages) == {"u1": 1, "a1": 1}
        assert [x.id for x in m.history] == ["u1", "a1"]
        assert texts(m) == texts(stored(store)) == ["hello", "hi there"]

    def test_carrying_on_keeps_it(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The next push takes the stored message in first, as a restart does."""
        m = stored(store)
        m.push(Message.user("hello", id="u1"))
        interrupted_push(m, Message.assistant("the answer is 42", id="a1"), monkeypatch)
        m.push(Message.user("what was the answer?", id="u2"))
        want = ["hello", "the answer is 42", "what was the answer?"]
        assert texts(m) == texts(stored(store)) == want
        assert [x.id for x in store.load("c1").messages] == ["u1", "a1", "u2"]

    def test_the_next_request_has_it(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A prepare right after the interrupt sends what the store holds."""
        m = stored(store)
        m.push(Message.user("hello", id="u1"))
        interrupted_push(m, Message.user("and more", id="u2"), monkeypatch)
        assert texts(m) == texts(stored(store)) == ["hello", "and more"]
        assert len(m.history) == 2

    def test_a_retried_dict_is_stored_once(
        self, store: Store, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A provider dict gets a new id at each push: it is known by its content."""
        m = stored(store)
        m.push({"role": "user", "content": "hello"})
        reply = {"role": "assistant", "content": "hi there"}
        interrupted_push(m, reply, monkeypatch)
        m.push(reply)
        m.push({"role": "user", "content": "hello"})  # said again: a new message
        log = [x.text for x in store.load("c1").messages]
        assert log == ["hello", "hi there", "hello"]
        assert [x.text for x in m.history] == log
