"""A user's summarizer or scorer that answers the wrong type is named as the culprit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message
from contextwindow.strategies import SelectRelevant, Summarize
from contextwindow.testing import FakeTokenizer


class Silent:
    """A summarizer that forgets to return its summary."""

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> Any:
        return None

    def __repr__(self) -> str:
        return "Silent()"


def words(documents: Sequence[str], query: str, /) -> Any:
    """A scorer that answers words, not numbers."""
    return ["high" for _ in documents]


def chat() -> list[Message]:
    out = [Message.user(f"step {i} " + "word " * 30) for i in range(8)]
    return [*out, Message.user("and now?")]


class TestUserParts:
    def test_summarizer_returning_none(self) -> None:
        """A summarizer's None is an error naming that summarizer, never skipped."""
        with pytest.raises(
            TypeError, match=r"got Silent\(\) \(Silent\) returning None"
        ):
            fit(
                chat(),
                limit=120,
                tokenizer=FakeTokenizer(),
                strategy=Summarize(Silent(), keep_recent=1),
            )

    def test_scorer_returning_words(self) -> None:
        """A scorer's words instead of numbers are an error naming that scorer."""
        with pytest.raises(ContextWindowError, match="the scorer <function words"):
            fit(
                chat(),
                limit=120,
                tokenizer=FakeTokenizer(),
                strategy=SelectRelevant(keep_recent=1, scorer=words),
            )
