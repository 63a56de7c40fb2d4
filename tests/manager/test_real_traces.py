"""Real agent traces replayed through a manager, message by message.

``prepare`` runs before each assistant message (the request that produced
it), as the agent loop did. Every request must fit the window and pass the
provider's rules, and the history must equal the transcript at the end.

Claude Code sessions run on Claude with a 200,000-token window: the sessions
compacted at 142K to 170K tokens, Claude Code's behaviour on that window (the
1M window the registry lists for Opus 4.6 needs a beta header the sessions
did not send). They are also replayed at 40,000 tokens, which forces many
compactions. tau-bench runs are OpenAI chat; their windows are a share of
each run's own size, since the runs are small.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contextwindow import ContextManager, Message, problems, read_transcripts, units
from contextwindow.transcripts import Transcript

CLAUDE_WINDOW = 200_000


@pytest.fixture(scope="module")
def claude_code(shared_data: Path) -> list[tuple[Path, Transcript]]:
    """Every Claude Code file: main sessions, subagent and compaction runs."""
    root = shared_data / "claude_code_sessions"
    paths = sorted(root.glob("*.jsonl")) + sorted(root.glob("*/subagents/*.jsonl"))
    assert len(paths) == 16
    return [(p, read_transcripts(p)[0]) for p in paths]


def replay(m: ContextManager, messages: tuple[Message, ...]) -> dict[str, int]:
    figures = {"requests": 0, "compactions": 0, "tokens": 0, "prefix": 0}
    for msg in messages:
        if msg.role == "assistant":
            p = m.prepare()
            assert p.tokens <= p.budget <= m.context_limit
            assert problems(p.conversation, m.provider) == ()
            figures["requests"] += 1
            figures["compactions"] += sum(1 for c in p.compactions if c.applied)
            figures["tokens"] += p.tokens
            figures["prefix"] += p.prefix_tokens
        m.push(msg)
    assert m.history == messages
    return figures


def test_claude_code_files_at_their_window(
    claude_code: list[tuple[Path, Transcript]],
) -> None:
    for path, t in claude_code:
        m = ContextManager(t.model or "claude-opus-4-6", token_limit=CLAUDE_WINDOW)
        assert m.provider == "anthropic", path
        figures = replay(m, t.messages)
        assert figures["requests"] > 0, path
        assert figures["prefix"] <= figures["tokens"], path


def test_claude_code_sessions_in_a_small_window(
    claude_code: list[tuple[Path, Transcript]],
) -> None:
    for path, t in claude_code:
        if "subagents" in path.parts:
            continue
        m = ContextManager(t.model, token_limit=40_000, reserve=4_000)
        figures = replay(m, t.messages)
        assert figures["compactions"] >= 3, (path, figures)
        # between compactions the view only grows: most of what is sent is a
        # prefix the request before had already sent
        assert figures["prefix"] / figures["tokens"] > 0.75, (path, figures)


def test_tau_bench_runs_in_windows_a_share_of_their_size(shared_data: Path) -> None:
    runs = read_transcripts(shared_data / "tau-bench_gpt-4o-airline.json")
    compacted = 0
    for k, t in enumerate(runs):
        probe = ContextManager("gpt-4o")
        probe.push_many(t.messages)
        total = probe.token_estimate()
        count = probe._counter.message
        system = count(t.messages[0])
        largest = max(
            sum(count(x) for x in t.messages[u.start : u.stop])
            for u in units(t.messages)
        )
        # the system prompt and the largest exchange (when it is the last) must
        # fit what a request may take: the window less the default reserve,
        # a quarter of these windows at most
        floor = system + largest + 50
        window = max(floor * 4 // 3 + 4, int(total * (0.4, 0.6, 0.8)[k % 3]))
        m = ContextManager("gpt-4o", token_limit=window)
        figures = replay(m, t.messages)
        compacted += figures["compactions"] > 0
    assert compacted > len(runs) // 3
