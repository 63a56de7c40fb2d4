"""Fixtures for the token tests: every message text of the shared data.

A copy of the walker in ``benchmarks/_data.py`` (tests never import the
benchmarks): tau-bench contents, tool-call arguments and tool results; Claude
Code sessions and subagent runs (text, thinking, tool_use input as compact
JSON, tool_result content); LoCoMo turn texts. Empty strings are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _tau(data: Path) -> Iterator[str]:
    for traj in json.loads((data / "tau-bench_gpt-4o-airline.json").read_text()):
        for msg in traj["traj"]:
            if isinstance(msg.get("content"), str):
                yield msg["content"]
            for call in msg.get("tool_calls") or ():
                yield call["function"].get("arguments") or ""


def _blocks(content: Any) -> Iterator[str]:
    if isinstance(content, str):
        yield content
        return
    for block in content or ():
        kind = block.get("type")
        if kind == "text":
            yield block.get("text", "")
        elif kind == "thinking":
            yield block.get("thinking", "")
        elif kind == "tool_use":
            yield json.dumps(
                block.get("input", {}), ensure_ascii=False, separators=(",", ":")
            )
        elif kind == "tool_result":
            inner = block.get("content")
            if isinstance(inner, str):
                yield inner
            else:
                for sub in inner or ():
                    if sub.get("type") == "text":
                        yield sub.get("text", "")


def _claude(data: Path) -> Iterator[str]:
    root = data / "claude_code_sessions"
    files = sorted(root.glob("*.jsonl")) + sorted(root.glob("*/subagents/*.jsonl"))
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                if record.get("type") in ("user", "assistant"):
                    yield from _blocks(record["message"].get("content"))


def _locomo(data: Path) -> Iterator[str]:
    for sample in json.loads((data / "locomo10.json").read_text()):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield turn.get("text") or ""


@pytest.fixture(scope="session")
def message_texts(shared_data: Path) -> list[str]:
    """Every non-empty message text of the shared data, in file order."""
    texts = [*_tau(shared_data), *_claude(shared_data), *_locomo(shared_data)]
    return [t for t in texts if t]


@pytest.fixture(scope="session")
def o200k_counts(message_texts: list[str]) -> list[int]:
    """The exact o200k_base count of each message text."""
    from contextwindow.tokens import BPETokenizer

    tok = BPETokenizer("o200k_base")
    return [tok.count(t) for t in message_texts]
