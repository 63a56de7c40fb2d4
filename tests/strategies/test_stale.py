from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextwindow.handles import handle_of, originals
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import Budget, FileTool, StaleReads
from contextwindow.strategies.files import FileAction, file_actions
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter
from contextwindow.transcripts import read_transcripts

from ._support import full_scans


def budget(limit: int = 0) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), "anthropic"))


def call(cid: str, name: str, output: str = "ok", **args: object) -> list[Message]:
    return [
        Message.assistant(tool_calls=[ToolCall(cid, name, json.dumps(args))]),
        Message.tool(cid, output),
    ]


BODY = "\n".join(f"line {i} of the module" for i in range(60))


class TestFileActions:
    def test_known_tools(self) -> None:
        """Claude Code, generic and editor tools, by name and argument."""
        assert file_actions(ToolCall("1", "Read", '{"file_path": "a/b.py"}')) == [
            FileAction("read", "a/b.py")
        ]
        part = file_actions(
            ToolCall("1", "Read", '{"file_path": "a.py", "offset": 5, "limit": 9}')
        )
        assert part == [FileAction("read", "a.py", "offset=5 limit=9")]
        assert file_actions(ToolCall("1", "write_file", '{"path": "./x.txt"}')) == [
            FileAction("write", "x.txt")
        ]
        view = '{"command": "view", "path": "x.py"}'
        assert (
            file_actions(ToolCall("1", "str_replace_editor", view))[0].action == "read"
        )
        assert file_actions(ToolCall("1", "ls", '{"path": "x"}')) == []

    def test_shell_reads_and_patches(self) -> None:
        """Plain reads in a shell command; apply_patch writes; pipes are not reads."""
        cat = '{"command": ["bash", "-lc", "cat src/a.py"]}'
        assert file_actions(ToolCall("1", "shell", cat)) == [
            FileAction("read", "src/a.py")
        ]
        piped = '{"command": "cat a.py | grep x"}'
        assert file_actions(ToolCall("1", "Bash", piped)) == []
        patch = {"command": ["apply_patch", "*** Begin Patch\n*** Update File: a.py\n"]}
        assert file_actions(ToolCall("1", "shell", json.dumps(patch))) == [
            FileAction("write", "a.py")
        ]


class TestStaleReads:
    def test_read_superseded_by_a_later_read(self) -> None:
        """An earlier read of a file read again becomes a one-line marker."""
        conv = [
            Message.user("fix"),
            *call("r1", "Read", BODY, file_path="src/a.py"),
            *call("r2", "Read", BODY, file_path="src/a.py"),
            Message.user("done?"),
        ]
        fitted = StaleReads()(conv, budget())
        marker = fitted.messages[2].text
        assert marker.startswith("[stale read of src/a.py: 60 lines, sha ")
        assert "superseded by Read at message 3" in marker
        assert f"recall {handle_of(fitted.messages[2])}]" in marker
        assert fitted.messages[4] is conv[4]
        assert [(c.kind, c.stage, c.index) for c in fitted.report.changes] == [
            ("stale", "StaleReads", 2)
        ]
        assert originals(conv, handle_of(fitted.messages[2])) == [conv[2]]

    def test_write_supersedes_partial_reads_and_other_parts_do_not(self) -> None:
        """A write supersedes any read; a read of another part supersedes none."""
        conv = [
            Message.user("fix"),
            *call("r1", "Read", BODY, file_path="a.py", offset=1, limit=50),
            *call("r2", "Read", BODY, file_path="a.py", offset=50, limit=50),
            *call("r3", "Read", BODY, file_path="b.py"),
            *call("w1", "Edit", "updated", file_path="b.py"),
            Message.user("done?"),
        ]
        fitted = StaleReads()(conv, budget())
        assert [c.index for c in fitted.report.changes] == [6]
        assert "superseded by Edit at message 7" in fitted.messages[6].text

    def test_marker_names_the_paths_only_the_read_held(self) -> None:
        """Paths the stale read named and the superseding text does not (an
        edit took them out; a later read no longer shows them) are named;
        the file's own path, paths still there and other names are not."""
        old = "\n".join(
            f"import {n} from 'lib/{n}.ts'  // run_task {i}"
            for i, n in enumerate(("cache", "queue", "store") * 12)
        )
        new = old.replace("lib/queue.ts", "lib/jobs.ts")
        conv = [
            Message.user("fix"),
            *call("r1", "Read", old, file_path="src/app.ts"),
            *call("w1", "Write", "ok", file_path="src/app.ts", content=new),
            *call("r2", "Read", old, file_path="src/b.ts"),
            *call("r3", "Read", new, file_path="src/b.ts"),
            Message.user("done?"),
        ]
        fitted = StaleReads()(conv, budget())
        assert [c.index for c in fitted.report.changes] == [2, 6]
        by_write, by_read = fitted.messages[2].text, fitted.messages[6].text
        for marker in (by_write, by_read):
            assert ", naming lib/queue.ts; recall " in marker
            assert "lib/cache.ts" not in marker
            assert "run_task" not in marker
        conv[8] = Message.tool("r3", old)  # the later read shows them all
        assert "naming" not in StaleReads()(conv, budget()).messages[6].text
        # An edit shows only its strings: the paths it does not name are named.
        edited = [
            *conv[:3],
            *call(
                "e1",
                "Edit",
                "ok",
                file_path="src/app.ts",
                old_string="lib/queue.ts",
                new_string="lib/jobs.ts",
            ),
        ]
        marker = StaleReads()(edited, budget()).messages[2].text
        assert "superseded by Edit" in marker
        assert "lib/cache.ts" in marker
        assert "lib/queue.ts" not in marker

    def test_configurable_tools(self) -> None:
        """Other tools are known by name and path argument."""
        tools = {"fetch_doc": FileTool("read", "doc")}
        conv = [
            Message.user("x"),
            *call("r1", "fetch_doc", BODY, doc="d1"),
            *call("r2", "fetch_doc", BODY, doc="d1"),
            Message.user("?"),
        ]
        assert StaleReads()(conv, budget()).report.changes == ()
        assert len(StaleReads(tools=tools)(conv, budget()).report.changes) == 1

    def test_errors_pinned_and_fitting_left_alone(self) -> None:
        """An error, a pinned result and a fitting conversation stay."""
        conv = [
            Message.user("fix"),
            *call("r1", "Read", BODY, file_path="a.py"),
            *call("r2", "Read", BODY, file_path="a.py"),
            Message.user("?"),
        ]
        assert StaleReads()(conv, budget(10**6)).report.changes == ()
        conv[2] = Message.tool("r1", BODY, is_error=True)
        assert StaleReads()(conv, budget()).report.changes == ()


def test_real_sessions_have_stale_reads(shared_data: Path) -> None:
    """On the real Claude Code sessions, re-read and rewritten files are marked.

    The generated pool of the property tests has no result long enough for
    a marker to pay; these sessions have hundreds of ``Read`` calls.
    """
    marked = 0
    for path in sorted((shared_data / "claude_code_sessions").glob("*.jsonl")):
        (t,) = read_transcripts(path)
        fitted = StaleReads()(t.messages, budget())
        kinds = {c.kind for c in fitted.report.changes}
        # A raw session may end on a pending call: fit's repair shows too.
        assert kinds <= {"stale", "repaired"}, path.name
        marked += sum(c.kind == "stale" for c in fitted.report.changes)
    assert marked > 20


def test_a_scan_from_scratch_sends_the_same_markers_again() -> None:
    """A re-fit that scans again from the start reuses the markers it made.

    The final result changed (a tool message where the two lists part: the
    scan cannot resume), yet the reads marked before are marked the same,
    and those very message objects go out, so the stages after resume.
    """
    conv = [
        Message.user("go"),
        *call("r1", "Read", BODY, file_path="a.py"),
        *call("r2", "Read", BODY, file_path="b.py"),
        *call("r3", "Read", BODY, file_path="a.py"),
        *call("r4", "Read", BODY, file_path="b.py"),
    ]
    counter = TokenCounter(FakeTokenizer(), "anthropic")
    first = StaleReads()(conv, Budget(0, counter))
    assert [c.index for c in first.report.changes] == [2, 4]
    edited = [*conv[:-1], Message.tool("r4", BODY + "\nmore")]
    again = StaleReads()(edited, Budget(0, counter))
    fresh = StaleReads()(edited, budget())
    assert again.messages == fresh.messages
    assert again.messages[2] is first.messages[2]
    assert again.messages[4] is first.messages[4]


def test_a_conversation_changed_before_its_end_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An input that parts from the last one at a tool result (a result an
    earlier stage rewrote) has its calls read again, not every result
    rewritten again; a verdict that moves (a read no longer superseded) is
    found, and the output is a fresh one's."""
    conv = [
        Message.user("go"),
        *call("r1", "Read", BODY, file_path="a.py"),
        *call("r2", "Read", BODY, file_path="b.py"),
        *call("r3", "Read", BODY, file_path="a.py"),
        *call("r4", "Read", BODY, file_path="b.py"),
        Message.user("next"),
    ]
    counter = TokenCounter(FakeTokenizer(), "anthropic")
    StaleReads()(conv, Budget(0, counter))
    scans = full_scans(monkeypatch)
    rewritten = [*conv[:6], Message.tool("r3", BODY + "\nchanged"), *conv[7:]]
    moved = [*conv[:5], *call("r3", "Read", BODY, file_path="c.py"), *conv[7:]]
    for edited in (rewritten, moved):
        again = StaleReads()(edited, Budget(0, counter))
        assert scans == []
        fresh = StaleReads()(edited, budget())
        scans.clear()
        assert [(m, m.id) for m in again.messages] == [
            (m, m.id) for m in fresh.messages
        ]
        assert again.report == fresh.report
    assert [c.index for c in again.report.changes] == [4]  # b.py only, now
