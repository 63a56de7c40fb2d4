"""The summarizers' public helpers check their arguments at entry."""

from __future__ import annotations

from typing import Any

import pytest

from contextwindow.errors import ArgumentTypeError, InvalidMessageError
from contextwindow.messages import Message
from contextwindow.summarizers._llm import render_transcript
from contextwindow.summarizers.facts import Facts, extract_facts
from contextwindow.summarizers.record import recall, summary_message


class TestSummaryMessage:
    def test_sources_is_not_a_str(self) -> None:
        """``sources="abc"`` said "Summary of 3 earlier messages"."""
        with pytest.raises(ArgumentTypeError, match=r"^sources: expected an iterable"):
            summary_message("done.", "abc", Facts())
        s = summary_message("done.", ("a", "b"), Facts())
        assert s.text.splitlines()[0] == "[Summary of 2 earlier messages]"

    @pytest.mark.parametrize(
        ("kw", "name"),
        [
            ({"body": None}, "body"),
            ({"body": 5}, "body"),
            ({"sources": [1, 2]}, r"sources\[0\]"),
            ({"facts": None}, "facts"),
            ({"handle": 5}, "handle"),
        ],
    )
    def test_each_argument(self, kw: dict[str, Any], name: str) -> None:
        """A body, a handle or a source that is no str is named."""
        args: dict[str, Any] = {"body": "b", "sources": ["u1"], "facts": Facts()}
        args.update(kw)
        with pytest.raises(ArgumentTypeError, match=rf"^{name}: "):
            summary_message(**args)


class TestMessageArguments:
    @pytest.mark.parametrize("bad", [None, 5, "12", True])
    def test_not_an_iterable_of_messages(self, bad: Any) -> None:
        """recall, extract_facts and render_transcript name what they got."""
        with pytest.raises(ArgumentTypeError, match=r"^history: expected an iter"):
            recall(bad, ["a"])
        with pytest.raises(ArgumentTypeError, match=r"^messages: expected an iter"):
            extract_facts(bad)
        with pytest.raises(ArgumentTypeError, match=r"^messages: expected an iter"):
            render_transcript(bad)

    def test_items_are_messages(self) -> None:
        """An item that is no Message is named by its index."""
        bad: list[Any] = [Message.user("a", id="1"), {"role": "user"}]
        with pytest.raises(InvalidMessageError, match=r"^history\[1\]"):
            recall(bad, ["1"])
        with pytest.raises(InvalidMessageError, match=r"^messages\[1\]"):
            extract_facts(bad)
        with pytest.raises(InvalidMessageError, match=r"^messages\[1\]"):
            render_transcript(bad)
        good = [Message.user("We decided to use SQLite.", id="1")]
        assert [m.id for m in recall(iter(good), ["1"])] == ["1"]
        assert extract_facts(iter(good)) == extract_facts(good)
