"""The default pipeline keeps cut exchanges and runs' lines to a small share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextwindow import fit, read_transcripts
from contextwindow.errors import BudgetError
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import Budget
from contextwindow.strategies.collapse import (
    FLOOR_TOKENS,
    MAX_CUT_SHARE,
    bare_line,
    cut_share,
    line_of,
)
from contextwindow.testing import FakeTokenizer, conversations
from contextwindow.tokens import TokenCounter


def share(messages: tuple[Message, ...], counter: TokenCounter) -> float:
    """Cut exchanges (their markers, and their calls when bare) and lines."""
    return cut_share(messages, Budget(10**9, counter), "test", edits=True)


def cut_tokens(messages: tuple[Message, ...], counter: TokenCounter) -> float:
    """The tokens of what ``share`` counts."""
    return share(messages, counter) * counter.messages(list(messages))


class TestPlaceholderShare:
    @settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
    @given(conversations(min_turns=1, max_turns=8), st.floats(0.05, 1.0))
    def test_within_the_share_or_every_line_bare(
        self, conv: list[Message], fraction: float
    ) -> None:
        """Over MAX_CUT_SHARE only when few, or every run's line is bare."""
        counter = TokenCounter(FakeTokenizer(), "openai")
        limit = max(1, int(counter.messages(conv) * fraction))
        try:
            fitted = fit(conv, limit=limit, reserve=0, tokenizer=counter)
        except BudgetError:
            return
        if share(fitted.messages, counter) <= MAX_CUT_SHARE:
            return
        if cut_tokens(fitted.messages, counter) <= FLOOR_TOKENS:
            return
        for m in fitted.messages:
            line = line_of(m)
            assert line is None or bare_line(line) == line, line

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

    @pytest.mark.parametrize("fraction", [0.5, 0.25])
    def test_a_long_session_of_reads_and_edits(self, fraction: float) -> None:
        """Reads, edits and a user turn every few calls: within the share."""
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        conv = [Message.user("fix the app")]
        for i in range(120):
            path = f"lib/app/module_{i % 17}.ex"
            if i % 3 == 2:
                args = json.dumps({"file_path": path, "old_string": "a" * 900})
                call, out = ToolCall(f"c{i}", "Edit", args), f"The file {path} ok"
            else:
                args = json.dumps({"file_path": path})
                body = "".join(f"{n:>6}→  value_{n} = {n * 7}\n" for n in range(90))
                call, out = ToolCall(f"c{i}", "Read", args), body
            conv += [Message.assistant(tool_calls=[call]), Message.tool(f"c{i}", out)]
            if i % 7 == 6:
                conv.append(Message.user(f"go on with step {i}"))
        conv.append(Message.user("and now?"))
        limit = int(counter.messages(conv) * fraction)
        fitted = fit(conv, limit=limit, reserve=0, tokenizer=counter)
        assert fitted.report.tokens_after <= limit
        assert share(fitted.messages, counter) <= MAX_CUT_SHARE
