"""Session pools for the property tests (see ``_support``)."""

from __future__ import annotations

import pytest

from contextwindow.messages import Message
from contextwindow.testing import messages_strategy
from contextwindow.tokens import BPETokenizer
from contextwindow.tokens.base import Tokenizer

from ._support import collect, conversation_pool, dump, pool_size


@pytest.fixture(scope="session")
def convs() -> list[list[Message]]:
    """Distinct valid conversations from ``conversations()``, smallest first."""
    n = pool_size()
    pool = conversation_pool(n)
    assert len(pool) == n, f"only {len(pool)} distinct conversations of {n}"
    return pool


@pytest.fixture(scope="session")
def loose_messages() -> list[Message]:
    """Distinct ``messages_strategy()`` messages (any role, any parts): 125 in CI."""
    n = pool_size()
    pool = collect(messages_strategy(), n // 8, dump)
    return sorted(pool, key=lambda m: len(dump(m)))


@pytest.fixture(scope="session")
def some_convs(convs: list[list[Message]]) -> list[list[Message]]:
    """Every fourth conversation of ``convs`` (250 under CI): for the slow
    variants (exact BPE counts) and for checks beyond the core invariants."""
    return convs[::4]


class Memo:
    """A tokenizer that remembers its counts: the same texts are counted by
    many fresh counters, and BPE counting is a pure function of the text."""

    def __init__(self, inner: Tokenizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self.seen: dict[str, int] = {}

    def count(self, text: str) -> int:
        """The inner tokenizer's count, computed once per text."""
        n = self.seen.get(text)
        if n is None:
            n = self.seen[text] = self.inner.count(text)
        return n


@pytest.fixture(scope="session")
def o200k() -> Tokenizer:
    """One exact ``o200k_base`` tokenizer (memoised) for every counting test."""
    return Memo(BPETokenizer("o200k_base"))
