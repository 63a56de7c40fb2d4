"""Round trips over every conversation in ../shared/data.

OpenAI -> neutral -> Anthropic -> neutral -> OpenAI must keep every text, tool
call (id, name, parsed arguments) and tool result (call id, text, is_error), in
order, for each tau-bench trajectory, each Claude Code session and subagent
file, and each LoCoMo conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from contextwindow.formats import from_anthropic, from_openai, to_anthropic, to_openai
from contextwindow.messages import Message, Text, ToolCall, ToolResult
from contextwindow.transcripts import read_transcript, read_transcripts

Summary = tuple[list[str], list[tuple[str, str, Any]], list[tuple[str, str, bool]]]


def summary(messages: Sequence[Message]) -> Summary:
    """Every text, tool call and tool result of a conversation, in order.

    A call is named by its place among the calls, and a result by the place
    of the latest call with its id: Anthropic renames ids another provider
    reused (tau-bench's trajectories reuse some), so the pairing is what
    must survive, not the spelling.
    """
    texts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    results: list[tuple[str, str, bool]] = []
    latest: dict[str, str] = {}
    for m in messages:
        for p in m.parts:
            if isinstance(p, Text):
                texts.append(p.text)
            elif isinstance(p, ToolCall):
                latest[p.id] = f"call {len(calls)}"
                calls.append((latest[p.id], p.name, json.loads(p.arguments or "{}")))
            elif isinstance(p, ToolResult):
                results.append((latest.get(p.call_id, p.call_id), p.text, p.is_error))
    return texts, calls, results


def through_anthropic(
    start: list[dict[str, Any]],
) -> tuple[list[Message], list[dict[str, Any]]]:
    """OpenAI -> neutral -> Anthropic -> neutral -> OpenAI: (second neutral, end)."""
    request = to_anthropic(from_openai(start))
    middle = from_anthropic(request.messages, system=request.system)
    return middle, to_openai(middle)


def claude_code_files(data: Path) -> list[Path]:
    return sorted((data / "claude_code_sessions").rglob("*.jsonl"))


def assert_keeps_everything(start: list[dict[str, Any]], label: str) -> None:
    before = summary(from_openai(start))
    middle, end = through_anthropic(start)
    ids = [c.id for m in middle for c in m.tool_calls]
    assert len(set(ids)) == len(ids), label  # as Anthropic requires
    assert summary(middle) == before, label
    assert summary(from_openai(end)) == before, label
    assert before[0] or before[1], label  # the comparison is not vacuous


class TestRoundTripSharedData:
    def test_tau_bench(self, shared_data: Path) -> None:
        """Every tau-bench trajectory keeps all texts, calls and results."""
        runs = json.loads((shared_data / "tau-bench_gpt-4o-airline.json").read_text())
        assert len(runs) == 200
        for i, run in enumerate(runs):
            assert_keeps_everything(run["traj"], f"trajectory {i}")

    def test_tau_bench_openai_identity(self, shared_data: Path) -> None:
        """OpenAI -> neutral -> OpenAI is the identity on every trajectory."""
        runs = json.loads((shared_data / "tau-bench_gpt-4o-airline.json").read_text())
        for run in runs:
            assert to_openai(from_openai(run["traj"])) == run["traj"]

    def test_claude_code(self, shared_data: Path) -> None:
        """Every Claude Code file, written as OpenAI, survives the round trip."""
        files = claude_code_files(shared_data)
        assert len(files) == 16
        for path in files:
            start = to_openai(read_transcript(path).messages)
            assert_keeps_everything(start, path.name)

    def test_claude_code_anthropic_fixpoint(self, shared_data: Path) -> None:
        """Neutral -> Anthropic -> neutral keeps every part, is_error included."""
        errors = 0
        for path in claude_code_files(shared_data):
            messages = list(read_transcript(path).messages)
            request = to_anthropic(messages)
            again = from_anthropic(request.messages, system=request.system)
            assert again == messages, path.name
            assert to_anthropic(again) == request, path.name
            errors += sum(r.is_error for m in again for r in m.tool_results)
        assert errors == 55

    def test_claude_code_api_identity(self, shared_data: Path) -> None:
        """The API messages rebuilt from each session read and write back unchanged."""
        for path in claude_code_files(shared_data):
            api = list(rebuild_api_messages(path))
            request = to_anthropic(from_anthropic(api))
            assert request.system is None
            assert request.messages == api, path.name

    def test_locomo(self, shared_data: Path) -> None:
        """Every LoCoMo conversation keeps every turn's text."""
        transcripts = read_transcripts(shared_data / "locomo10.json")
        assert len(transcripts) == 10
        for t in transcripts:
            start = to_openai(t.messages)
            assert_keeps_everything(start, t.title)


def rebuild_api_messages(path: Path) -> Iterator[dict[str, Any]]:
    """Group a session's records into API messages, independently of the reader.

    Assistant records sharing message.id are one message; consecutive user
    records of tool results alone are one user turn. A results-only turn
    directly followed by a user turn is joined to it, as ``to_anthropic`` does.
    """
    out: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    open_results = False
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") not in ("user", "assistant"):
            continue
        msg = rec["message"]
        content = msg["content"]
        if rec["type"] == "assistant":
            if msg["id"] in by_id:
                by_id[msg["id"]]["content"].extend(content)
            else:
                by_id[msg["id"]] = {"role": "assistant", "content": list(content)}
                out.append(by_id[msg["id"]])
                open_results = False
            continue
        results = isinstance(content, list) and all(
            b["type"] == "tool_result" for b in content
        )
        if open_results and out[-1]["role"] == "user":
            blocks = (
                content
                if isinstance(content, list)
                else [{"type": "text", "text": content}]
            )
            out[-1]["content"].extend(blocks)
            open_results = results
        else:
            out.append({"role": "user", "content": _copy(content)})
            open_results = results
    yield from out


def _copy(content: Any) -> Any:
    return list(content) if isinstance(content, list) else content
