"""Claude Code sessions: the conversation Claude Code itself would resume.

Queued prompts, duplicated records, sub-agent sidechains written into the
session file and branches left by ``/rewind``, on small files built here and
on the 16 files of the shared data.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.messages import ToolCall, ToolResult, units
from contextwindow.transcripts import Transcript, read_transcript, read_transcripts

MODEL = "claude-opus-4-6"


def rec(
    kind: str, uuid: str, parent: str | None, message: dict[str, Any], **fields: Any
) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s1",
        "isSidechain": False,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": message,
        **fields,
    }


def user(uuid: str, parent: str | None, text: str, **fields: Any) -> dict[str, Any]:
    return rec("user", uuid, parent, {"role": "user", "content": text}, **fields)


def said(
    uuid: str, parent: str | None, mid: str, text: str, **fields: Any
) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    msg = {"id": mid, "role": "assistant", "model": MODEL, "content": content}
    return rec("assistant", uuid, parent, msg, **fields)


def call(
    uuid: str, parent: str | None, mid: str, call_id: str, **fields: Any
) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"n": 1}}
    msg = {"id": mid, "role": "assistant", "model": MODEL, "content": [block]}
    return rec("assistant", uuid, parent, msg, **fields)


def result(
    uuid: str, parent: str | None, call_id: str, text: str, **fields: Any
) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": call_id, "content": text}
    return rec("user", uuid, parent, {"role": "user", "content": [block]}, **fields)


def queue(op: str, content: str | None = None, at: str = "t") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "queue-operation",
        "operation": op,
        "timestamp": at,
        "sessionId": "s1",
    }
    if content is not None:
        out["content"] = content
    return out


def read(tmp_path: Path, records: list[dict[str, Any]]) -> Transcript:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return read_transcript(path)


def shown(t: Transcript) -> list[tuple[str, str]]:
    """Each message as (role, its text or its calls' and results' ids)."""
    out: list[tuple[str, str]] = []
    for m in t.messages:
        ids = [p.id for p in m.parts if isinstance(p, ToolCall)]
        ids += [p.call_id for p in m.parts if isinstance(p, ToolResult)]
        out.append((m.role, m.text if not ids else " ".join(ids)))
    return out


NO_LEFT_OUT = {"duplicates": 0, "sidechain": 0, "abandoned": 0}


class TestQueuedPrompts:
    def test_a_prompt_taken_into_the_turn_follows_the_tool_results(
        self, tmp_path: Path
    ) -> None:
        """An enqueue consumed by a remove is a user message after the results."""
        t = read(
            tmp_path,
            [
                user("u1", None, "run the tests"),
                call("a1", "u1", "m1", "c1"),
                queue("enqueue", "check again", at="2026-01-01T00:01:00Z"),
                queue("remove"),
                result("r1", "a1", "c1", "3 passed"),
                said("a2", "r1", "m2", "Checked again: still 3 passed."),
            ],
        )
        assert shown(t) == [
            ("user", "run the tests"),
            ("assistant", "c1"),
            ("tool", "c1"),
            ("user", "check again"),
            ("assistant", "Checked again: still 3 passed."),
        ]
        queued = t.messages[3]
        assert queued.meta["queued"] is True
        assert queued.meta["timestamp"] == "2026-01-01T00:01:00Z"
        assert "uuid" not in queued.meta
        assert len({m.id for m in t.messages}) == len(t.messages)
        assert all(u.complete for u in units(t.messages))

    def test_results_of_one_turn_stay_together(self, tmp_path: Path) -> None:
        """Results written after the remove stay one turn; the prompt follows."""
        t = read(
            tmp_path,
            [
                user("u1", None, "go"),
                call("a1", "u1", "m1", "c1"),
                call("a2", "a1", "m1", "c2"),
                queue("enqueue", "also lint"),
                queue("remove"),
                result("r1", "a1", "c1", "ok"),
                result("r2", "a2", "c2", "ok"),
            ],
        )
        assert shown(t) == [
            ("user", "go"),
            ("assistant", "c1 c2"),
            ("tool", "c1 c2"),
            ("user", "also lint"),
        ]

    def test_a_prompt_a_later_record_carries_is_read_once(self, tmp_path: Path) -> None:
        """A task notification queued first and run later as its own turn is
        not what a remove took: the typed prompt is."""
        note = "<task-notification>done</task-notification>"
        t = read(
            tmp_path,
            [
                user("u1", None, "go"),
                call("a1", "u1", "m1", "c1"),
                queue("enqueue", note),
                queue("enqueue", "tackle the new beads"),
                queue("remove"),
                result("r1", "a1", "c1", "ok"),
                said("a2", "r1", "m2", "On it."),
                user("u2", "a2", note),
                said("a3", "u2", "m3", "Noted."),
            ],
        )
        assert [m.text for m in t.messages if m.role == "user"] == [
            "go",
            "tackle the new beads",
            note,
        ]

    @pytest.mark.parametrize("ops", [["dequeue", "remove"], ["popAll", "remove"], []])
    def test_prompts_not_taken_into_a_turn_add_nothing(
        self, tmp_path: Path, ops: list[str]
    ) -> None:
        """Run as a turn of its own, taken back, or never taken: no message."""
        records = [user("u1", None, "go"), queue("enqueue", "and then this")]
        records += [queue(op) for op in ops]
        records.append(said("a1", "u1", "m1", "done"))
        assert shown(read(tmp_path, records)) == [
            ("user", "go"),
            ("assistant", "done"),
        ]

    def test_a_prompt_taken_at_the_end_is_read(self, tmp_path: Path) -> None:
        """A file that ends before the model answered still holds the prompt."""
        t = read(
            tmp_path,
            [
                user("u1", None, "go"),
                call("a1", "u1", "m1", "c1"),
                queue("enqueue", "stop after this"),
                queue("remove"),
                result("r1", "a1", "c1", "ok"),
            ],
        )
        assert shown(t)[-2:] == [("tool", "c1"), ("user", "stop after this")]

    def test_the_real_sessions_queued_prompts(self, shared_data: Path) -> None:
        """Session 258c7280's two prompts typed mid-turn are read where the
        model took them: its next answer acts on them."""
        path = (
            shared_data
            / "claude_code_sessions"
            / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
        )
        t = read_transcript(path)
        queued = [k for k, m in enumerate(t.messages) if m.meta.get("queued")]
        assert [t.messages[k].text for k in queued] == [
            "check again",
            "new beads for the epic were added. tackle them",
        ]
        for k in queued:
            assert t.messages[k - 1].role == "tool"
            assert t.messages[k + 1].role == "assistant"
        answer = next(k for k, m in enumerate(t.messages) if "beads you men" in m.text)
        assert queued[1] < answer


class TestDuplicates:
    def test_records_written_twice_are_read_once(self, tmp_path: Path) -> None:
        """A file holding each record twice reads as the file holding it once."""
        once = [
            user("u1", None, "list files"),
            call("a1", "u1", "m1", "c1"),
            result("u2", "a1", "c1", "a.py"),
            said("a2", "u2", "m2", "There is a.py."),
        ]
        single = read(tmp_path, once)
        double = read(tmp_path, once + once)
        assert double.messages == single.messages
        assert [m.id for m in double.messages] == [m.id for m in single.messages]
        assert double.meta["left_out"] == {**NO_LEFT_OUT, "duplicates": 4}
        assert single.meta["left_out"] == NO_LEFT_OUT
        fitted = fit(list(double.messages), limit=100_000, provider="anthropic")
        assert fitted.report.changes == ()

    def test_a_queue_operation_written_twice_delivers_once(
        self, tmp_path: Path
    ) -> None:
        """Copies of queue operations deliver their prompt once."""
        ops = [queue("enqueue", "again", at="t1"), queue("remove", at="t2")]
        t = read(
            tmp_path,
            [
                user("u1", None, "go"),
                call("a1", "u1", "m1", "c1"),
                *ops,
                *ops,
                result("r1", "a1", "c1", "ok"),
            ],
        )
        assert [m.text for m in t.messages if m.meta.get("queued")] == ["again"]


class TestSidechains:
    RECORDS = (
        user("u1", None, "find the config"),
        call("a1", "u1", "m1", "task"),
        user("s1", None, "search for config", isSidechain=True, agentId="x1"),
        call("s2", "s1", "ms1", "glob", isSidechain=True, agentId="x1"),
        result("s3", "s2", "glob", "config/app.toml", isSidechain=True),
        said("s4", "s3", "ms2", "It is config/app.toml", isSidechain=True),
        result("u2", "a1", "task", "It is config/app.toml"),
        said("a2", "u2", "m2", "Found it."),
    )

    def test_a_sub_agents_records_are_not_the_main_thread(self, tmp_path: Path) -> None:
        """Sidechain records inline in a session file are left out; the Task
        call and its result stay one exchange."""
        records = copy.deepcopy(list(self.RECORDS))
        for side in records[2:6]:
            side["message"]["model"] = "claude-haiku-4-5"
        t = read(tmp_path, records)
        assert shown(t) == [
            ("user", "find the config"),
            ("assistant", "task"),
            ("tool", "task"),
            ("assistant", "Found it."),
        ]
        assert t.meta["left_out"] == {**NO_LEFT_OUT, "sidechain": 4}
        assert (t.model, t.title) == (MODEL, "s1")
        fitted = fit(list(t.messages), limit=100_000, provider="anthropic")
        assert fitted.report.changes == ()

    def test_the_model_is_the_main_threads(self, tmp_path: Path) -> None:
        """A sidechain record written last does not name the session's model."""
        side = said("s9", "s4", "ms9", "late", isSidechain=True)
        side["message"]["model"] = "claude-haiku-4-5"
        t = read(tmp_path, [*copy.deepcopy(self.RECORDS), side])
        assert t.model == MODEL

    def test_a_sub_agent_file_is_read_whole(self, tmp_path: Path) -> None:
        """A file of sidechain records only (subagents/agent-*.jsonl) is read."""
        t = read(tmp_path, copy.deepcopy(list(self.RECORDS[2:6])))
        assert [m.role for m in t.messages] == [
            "user",
            "assistant",
            "tool",
            "assistant",
        ]
        assert t.meta["left_out"] == NO_LEFT_OUT
        assert t.meta["agent_id"] == "x1"


class TestBranches:
    def test_a_rewound_branch_is_left_out(self, tmp_path: Path) -> None:
        """/rewind: the answer given again replaces the retracted one."""
        t = read(
            tmp_path,
            [
                user("u1", None, "delete the old logs"),
                said("a1", "u1", "m1", "Which folder?"),
                user("u2", "a1", "the whole home folder"),
                call("a2", "u2", "m2", "rm"),
                result("r2", "a2", "rm", "deleted"),
                said("a3", "r2", "m3", "Deleted ~."),
                user("u3", "a1", "only /var/log/app"),
                said("a4", "u3", "m4", "Deleting /var/log/app."),
            ],
        )
        assert [m.text for m in t.messages] == [
            "delete the old logs",
            "Which folder?",
            "only /var/log/app",
            "Deleting /var/log/app.",
        ]
        assert t.meta["left_out"] == {**NO_LEFT_OUT, "abandoned": 4}

    def test_parallel_calls_and_progress_branches_are_kept(
        self, tmp_path: Path
    ) -> None:
        """Parallel tool calls branch the chain: every call and result is kept."""
        progress = {
            "type": "progress",
            "uuid": "p1",
            "parentUuid": "a2",
            "sessionId": "s1",
        }
        t = read(
            tmp_path,
            [
                user("u1", None, "read both"),
                call("a1", "u1", "m1", "c1"),
                call("a2", "a1", "m1", "c2"),
                progress,
                result("r1", "a1", "c1", "one"),
                result("r2", "a2", "c2", "two"),
                said("a3", "r2", "m2", "Both read."),
            ],
        )
        assert shown(t) == [
            ("user", "read both"),
            ("assistant", "c1 c2"),
            ("tool", "c1 c2"),
            ("assistant", "Both read."),
        ]
        assert t.meta["left_out"] == NO_LEFT_OUT

    def test_a_compaction_and_a_missing_parent_are_walked_across(
        self, tmp_path: Path
    ) -> None:
        """logicalParentUuid crosses a compaction; a parent missing from the
        file is taken as the record before it."""
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "parentUuid": None,
            "logicalParentUuid": "a2",
            "sessionId": "s1",
            "compactMetadata": {"trigger": "auto", "preTokens": 9},
        }
        records = [
            user("u1", None, "one"),
            said("a1", "u1", "m1", "first"),
            user("u2", "not-in-the-file", "two"),
            said("a2", "u2", "m2", "second"),
            boundary,
            user("u3", "b1", "Summary of before.", isCompactSummary=True),
            said("a3", "u3", "m3", "third"),
        ]
        t = read(tmp_path, records)
        assert [m.text for m in t.messages] == [
            "one",
            "first",
            "two",
            "second",
            "Summary of before.",
            "third",
        ]
        assert [c["index"] for c in t.meta["compactions"]] == [4]
        boundary["logicalParentUuid"] = "lost"
        assert len(read(tmp_path, records).messages) == 6

    def test_the_first_record_of_a_session(self, tmp_path: Path) -> None:
        """A first record in the middle ends the walk when it starts this
        session again (a rewind to the start), not when another session
        came before it in the file."""
        old = [user("u1", None, "drop the table"), said("a1", "u1", "m1", "Done.")]
        new = [user("u2", None, "hello"), said("a2", "u2", "m2", "Hi.")]
        t = read(tmp_path, old + new)
        assert [m.text for m in t.messages] == ["hello", "Hi."]
        assert t.meta["left_out"] == {**NO_LEFT_OUT, "abandoned": 2}
        for r in old:
            r["sessionId"] = "s0"
        t = read(tmp_path, old + new)
        assert [m.text for m in t.messages] == [
            "drop the table",
            "Done.",
            "hello",
            "Hi.",
        ]

    def test_records_naming_no_parent_are_read_whole(self, tmp_path: Path) -> None:
        """Without parentUuid (another writer, an older file) file order stands."""
        records = [
            user("u1", None, "one"),
            said("a1", None, "m1", "first"),
            user("u2", None, "two"),
        ]
        for r in records:
            del r["parentUuid"]
        assert [m.text for m in read(tmp_path, records).messages] == [
            "one",
            "first",
            "two",
        ]


class TestSharedData:
    def test_every_message_record_is_read(self, shared_data: Path) -> None:
        """No rule leaves out a record of the 16 real files: each user and
        assistant record's uuid is a message's, and only the 2 queued
        prompts are messages no record wrote."""
        files = sorted((shared_data / "claude_code_sessions").rglob("*.jsonl"))
        assert len(files) == 16
        queued = 0
        for path in files:
            (t,) = read_transcripts(path)
            assert t.meta["left_out"] == NO_LEFT_OUT, path.name
            records = [json.loads(line) for line in path.read_text().splitlines()]
            wanted = {r["uuid"] for r in records if r["type"] in ("user", "assistant")}
            got: set[str] = set()
            for m in t.messages:
                got.update(m.meta.get("uuids") or [m.meta.get("uuid")])
                queued += bool(m.meta.get("queued"))
            assert wanted <= got, path.name
        assert queued == 2
