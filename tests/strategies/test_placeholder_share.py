"""The default pipeline keeps cut exchanges and runs' lines to a small share."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwindow import fit, read_transcripts
from contextwindow.errors import BudgetError
from contextwindow.messages import Message
from contextwindow.strategies import Budget
from contextwindow.strategies.collapse import (
    MAX_CUT_SHARE,
    cut_share,
    line_of,
    plain_line,
)
from contextwindow.testing import FakeTokenizer, conversations
from contextwindow.tokens import TokenCounter


def share(messages: tuple[Message, ...], counter: TokenCounter) -> float:
    """Cut exchanges (their markers, and their calls when bare) and lines."""
    return cut_share(messages, Budget(10**9, counter), "test", edits=True)


class TestPlaceholderShare:
    @settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
    @given(conversations(min_turns=1, max_turns=8), st.floats(0.05, 1.0))
    def test_within_the_share_or_every_line_plain(
        self, conv: list[Message], fraction: float
    ) -> None:
        """Over MAX_CUT_SHARE only when every run's line has lost its names."""
        counter = TokenCounter(FakeTokenizer(), "openai")
        limit = max(1, int(counter.messages(conv) * fraction))
        try:
            fitted = fit(conv, limit=limit, reserve=0, tokenizer=counter)
        except BudgetError:
            return
        if share(fitted.messages, counter) <= MAX_CUT_SHARE:
            return
        for m in fitted.messages:
            line = line_of(m)
            assert line is None or plain_line(line) == line, line

    @pytest.mark.parametrize("stem", ["258c7280", "8463c716", "ae4a77f8"])
    def test_a_claude_code_session_at_half_its_tokens(
        self, shared_data: Path, stem: str
    ) -> None:
        """Fitted to 50 % of its tokens, a real session is at most the share cut."""
        folder = shared_data / "claude_code_sessions"
        (path,) = folder.glob(f"{stem}*.jsonl")
        (t,) = read_transcripts(path)
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        limit = counter.messages(list(t.messages)) // 2
        fitted = fit(t.messages, limit=limit, reserve=0, tokenizer=counter)
        assert fitted.report.tokens_after <= limit
        assert share(fitted.messages, counter) <= MAX_CUT_SHARE
