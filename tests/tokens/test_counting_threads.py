"""A counter shared by threads: one count reads one list of recent sequences.

``TokenCounter`` keeps the running totals of the last sequences it counted,
and a count of a sequence sharing a prefix with one of them starts from its
totals. Another thread's count, landing between the look for that prefix and
the read of its totals, used to shift the list, and the count started from
another sequence's totals (the proxy's planner and pydantic-ai's history
processor share a counter between worker threads). The interleaving is made
here deterministically, by counting another sequence inside the look.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from contextwindow._prefix import longest_prefix
from contextwindow.messages import Message
from contextwindow.tokens import BPETokenizer, TokenCounter, counting


def test_a_count_interleaved_with_another_is_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tok = BPETokenizer("o200k_base")
    shared = TokenCounter(tok)
    first = [Message.user(f"first {i} " + "word " * 5) for i in range(100)]
    other = [Message.user(f"other {i} " + "longer words here " * 9) for i in range(100)]
    shared.running(first)
    shared.running(other)  # remembered after ``first``: ``first`` is second
    grown = [*first[:80], *(Message.user(f"new {i}") for i in range(30))]
    look = longest_prefix

    def interleaved(seq: Sequence[Any], olds: Sequence[Sequence[Any]]) -> Any:
        found = look(seq, olds)
        if seq is grown:  # another thread counts while this one looks
            shared.running([*other, Message.user("one more")])
        return found

    monkeypatch.setattr(counting, "longest_prefix", interleaved)
    assert shared.running(grown) == TokenCounter(tok).running(grown)
