"""Shared by the benchmarks: data discovery, a walker over every message text,
``best_of`` timing, and ``TOOLS`` (tool schemas of a coding agent's size).

The data folder is ``$CONTEXTWINDOW_DATA``, or ``<repo>/../shared/data`` by
default. It is read in place, never copied.

``message_texts()`` yields every non-empty message string of the raw files, in
file order, duplicates included (the tau-bench system prompt appears 200
times, as it would in real requests):

- tau-bench: message ``content``, each tool call's ``function.arguments``, and
  tool results (``role: tool`` content);
- Claude Code sessions and their subagent runs: ``text``, ``thinking``,
  ``tool_use`` input (compact JSON, as ``ToolCall.arguments`` holds it) and
  ``tool_result`` content (a string, or its text blocks);
- LoCoMo: every turn's ``text``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Return the shared data folder; exit with a message when it is missing."""
    path = Path(os.environ.get("CONTEXTWINDOW_DATA", ROOT.parent / "shared" / "data"))
    if not (path / "tau-bench_gpt-4o-airline.json").exists():
        raise SystemExit(f"shared data not found at {path} (set CONTEXTWINDOW_DATA)")
    return path


def claude_files(data: Path) -> list[Path]:
    """Every Claude Code session file, main sessions first, then subagents."""
    root = data / "claude_code_sessions"
    return sorted(root.glob("*.jsonl")) + sorted(root.glob("*/subagents/*.jsonl"))


def compact_json(value: Any) -> str:
    """Serialise a tool input the way ``ToolCall.arguments`` holds it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tau_texts(data: Path) -> Iterator[str]:
    """Message texts of the tau-bench trajectories."""
    trajectories = json.loads((data / "tau-bench_gpt-4o-airline.json").read_text())
    for traj in trajectories:
        for msg in traj["traj"]:
            content = msg.get("content")
            if isinstance(content, str) and content:
                yield content
            for call in msg.get("tool_calls") or ():
                args = call["function"].get("arguments")
                if args:
                    yield args


def _block_texts(block: dict[str, Any]) -> Iterator[str]:
    kind = block.get("type")
    if kind == "text":
        yield block.get("text", "")
    elif kind == "thinking":
        yield block.get("thinking", "")
    elif kind == "tool_use":
        yield compact_json(block.get("input", {}))
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            for sub in content:
                if sub.get("type") == "text":
                    yield sub.get("text", "")


def claude_texts(data: Path) -> Iterator[str]:
    """Message texts of the Claude Code sessions, subagent runs included."""
    for path in claude_files(data):
        yield from claude_file_texts(path)


def claude_file_texts(path: Path) -> Iterator[str]:
    """Message texts of one Claude Code session file."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record.get("type") not in ("user", "assistant"):
                continue
            content = record["message"].get("content")
            if isinstance(content, str):
                texts: Iterator[str] = iter((content,))
            else:
                texts = (t for b in content or () for t in _block_texts(b))
            yield from (t for t in texts if t)


def locomo_texts(data: Path) -> Iterator[str]:
    """Turn texts of the LoCoMo conversations."""
    for sample in json.loads((data / "locomo10.json").read_text()):
        conv = sample["conversation"]
        for key, turns in conv.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    if turn.get("text"):
                        yield turn["text"]


def message_texts(data: Path | None = None) -> list[str]:
    """Every non-empty message text of the shared data, in file order."""
    data = data or data_dir()
    return [*tau_texts(data), *claude_texts(data), *locomo_texts(data)]


def minilm() -> Any:
    """A ``MiniLMEmbedder`` on one torch thread, or why there is none (a string).

    ``--no-embeddings`` on the command line skips it. One thread: on this
    shared 2-core machine a single query embeds in about 11 ms on one thread,
    and in 0.3-0.5 s on two, which fight the other processes for the cores.
    """
    if "--no-embeddings" in sys.argv:
        return "not run (--no-embeddings)"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from contextwindow.errors import ContextWindowError
    from contextwindow.relevance import MiniLMEmbedder

    try:
        embedder = MiniLMEmbedder()
    except ContextWindowError as exc:
        return f"not run: {exc}"
    import torch

    torch.set_num_threads(1)
    return embedder


def best_of(fn: Callable[[], Any], n: int = 3) -> float:
    """The shortest of ``n`` timed calls of ``fn``, in seconds."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _tool(i: int) -> dict[str, Any]:
    """A tool of the size of a coding agent's (about 1,000 tokens of schema)."""
    about = "explains what it takes and when to use it. " * 6
    props = {
        f"arg{j}": {"type": "string", "description": f"Argument {j}: {about}"}
        for j in range(8)
    }
    return {
        "type": "function",
        "function": {
            "name": f"tool_{i}",
            "description": f"Use this tool to do thing {i}. " * 40,
            "parameters": {"type": "object", "properties": props, "required": ["arg0"]},
        },
    }


TOOLS = [_tool(i) for i in range(18)]
"""Eighteen tools, 16,810 tokens as OpenAI renders them (o200k): a coding
agent sends about as many with every request (``proxy_latency.py``,
``fit_speed.py --tools``)."""
