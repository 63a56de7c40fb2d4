"""WhileAlive: what was computed from an object, kept while it lives."""

from __future__ import annotations

from contextwindow._memo import WhileAlive
from contextwindow.messages import Message


class TestWhileAlive:
    def test_computed_once_while_alive(self) -> None:
        """A second get of an equal object computes nothing; the entry goes with it."""
        calls: list[str] = []

        def words(m: Message) -> int:
            calls.append(m.text)
            return len(m.text.split())

        read = WhileAlive[Message, int]()
        m = Message.user("four words right here")
        assert read.get(m, words) == read.get(Message.user(m.text), words) == 4
        assert calls == [m.text]
        del m
        assert len(read) == 0

    def test_empty_results_computed_again_when_not_kept(self) -> None:
        """With keep_empty=False, an empty result is no entry: computed each time."""
        calls: list[str] = []

        def shouting(m: Message) -> tuple[str, ...]:
            calls.append(m.text)
            return tuple(w for w in m.text.split() if w.isupper())

        read = WhileAlive[Message, tuple[str, ...]](keep_empty=False)
        quiet, loud = Message.user("all quiet here"), Message.user("a LOUD one")
        for _ in range(2):
            assert read.get(quiet, shouting) == ()
            assert read.get(loud, shouting) == ("LOUD",)
        assert calls == [quiet.text, loud.text, quiet.text]
        assert len(read) == 1

    def test_empty_results_kept_for_the_keys_named(self) -> None:
        """With keep_empty a predicate, the empty results of the keys it names
        are kept (long messages, costly to read again), the others not."""
        calls: list[str] = []

        def shouting(m: Message) -> tuple[str, ...]:
            calls.append(m.text)
            return tuple(w for w in m.text.split() if w.isupper())

        read = WhileAlive[Message, tuple[str, ...]](
            keep_empty=lambda m: len(m.text) > 20
        )
        short, long = Message.user("all quiet"), Message.user("all quiet here, " * 3)
        for _ in range(2):
            assert read.get(short, shouting) == ()
            assert read.get(long, shouting) == ()
        assert calls == [short.text, long.text, short.text]
        assert len(read) == 1
