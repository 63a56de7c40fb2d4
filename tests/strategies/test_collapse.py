from __future__ import annotations

import json

import pytest

from contextwindow.handles import ORIGIN_KEY, handle_of, originals
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import Budget, ClearToolResults, Deduplicate
from contextwindow.strategies.collapse import (
    FLOOR_TOKENS,
    collapse_runs,
    cut_share,
    line_of,
    named_in,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter


def budget(limit: int = 0) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), "openai"))


def reads(n: int) -> list[Message]:
    conv = [Message.user("go")]
    for i in range(n):
        args = json.dumps({"file_path": f"lib/m{i}.ex"})
        conv += [
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
            Message.tool(f"c{i}", f"defmodule M{i} do\n" + "  x = 1\n" * 60),
        ]
    return [*conv, Message.user("next?")]


class TestClearCollapses:
    def test_placeholder_states_the_original_size_and_names(self) -> None:
        """A placeholder gives the original's tokens, what it named, its handle."""
        conv = reads(2)
        b = budget()
        fitted = ClearToolResults(keep_recent=0, max_share=1)(conv, b)
        text = fitted.messages[2].text
        n = b.counter.text(conv[2].text)
        assert text == (
            f"[tool result cleared: {n} tokens; recall {handle_of(fitted.messages[2])}]"
        )

    def test_runs_of_cut_exchanges_become_one_line(self) -> None:
        """Past MAX_CUT_SHARE, a run of cleared exchanges is one line with its paths."""
        conv = reads(6)
        fitted = ClearToolResults(keep_recent=0)(conv, budget())
        assert [m.role for m in fitted.messages] == ["user", "assistant", "user"]
        line = fitted.messages[1].text
        assert line.startswith("[6 earlier tool calls, results cut: Read x6 (lib/m0.ex")
        assert "lib/m5.ex" in line
        kinds = [c.kind for c in fitted.report.changes]
        assert kinds == ["cleared"] * 6 + ["collapsed"]
        collapsed = fitted.report.changes[-1]
        assert collapsed.ids == tuple(m.id for m in conv[1:13])
        assert originals(conv, handle_of(fitted.messages[1])) == conv[1:13]
        # What is left cut is the line alone (it counts: a run's line is cut).
        assert not any(m.tool_calls for m in fitted.messages)

    def test_under_the_share_nothing_collapses(self) -> None:
        """A few cut exchanges among real content stay as they are."""
        conv = [Message.user("context " * 400), *reads(2)]
        fitted = ClearToolResults(keep_recent=0)(conv, budget())
        assert "collapsed" not in fitted.report.totals()

    def test_names(self) -> None:
        """Paths first, then identifiers and numbers; Read's line numbers skipped."""
        assert named_in("   120→def run_all(): Repo.all 8080 a/b.py") == [
            "a/b.py",
            "run_all",
            "Repo.all",
            "8080",
        ]


class TestLinesName:
    def test_what_the_markers_named_not_their_sizes(self) -> None:
        """A run's line names what its placeholders named, not the sizes they state."""
        conv = [Message.user("go")]
        for i in range(6):
            args = json.dumps({"file_path": f"lib/m{i}.ex"})
            body = "\n".join(f"port {7000 + 60 * i + k}" for k in range(60))
            conv += [
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
                Message.tool(f"c{i}", body),
            ]
        conv.append(Message.user("next?"))
        b = budget()
        size = b.counter.text(conv[2].text)
        assert size >= 100  # a figure the digest's pattern would take for a name
        cleared = ClearToolResults(keep_recent=0, max_share=1)(conv, b)
        assert f"cleared: {size} tokens, naming 7000, " in cleared.messages[2].text
        line = line_of(ClearToolResults(keep_recent=0)(conv, b).messages[1])
        assert line is not None
        assert "naming 7000, 7001, " in line
        named = line.split(", naming ", 1)[1].split("; recall", 1)[0].split(", ")
        assert str(size) not in named

    @pytest.mark.parametrize(
        ("count", "over", "kept"), [(600, 50, 300), (600, 400, 150), (1000, 2000, 0)]
    )
    def test_a_line_keeps_the_first_names_the_share_allows(
        self, count: int, over: int, kept: int
    ) -> None:
        """Over the share by less than half its digest, a line keeps half its names."""
        b = budget(10**9)
        names = [f"name_{k}" for k in range(count)]
        text = (
            "[40 earlier tool calls, results cut: Read x40 (lib/a.ex), "
            f"naming {', '.join(names)}; recall 0123456789+80]"
        )
        meta = {ORIGIN_KEY: {"handle": "0123456789+80", "tokens": []}}
        conv = [
            Message.user("context " * 30000),
            Message.assistant(text, meta=meta),
            Message.user("next?"),
        ]
        tokens = b.counter.text(text)
        max_share = max(0.0, (tokens - over) / b.count(conv))
        fitted = collapse_runs(conv, b, max_share, "test")
        line = line_of(fitted.messages[1])
        assert line is not None
        if kept:
            shown = line.split(", naming ", 1)[1].split("; recall", 1)[0]
            assert shown.split(", ") == names[:kept]
        else:
            assert line == (
                "[40 earlier tool calls, results cut: Read x40 (lib/a.ex); "
                "recall 0123456789+80]"
            )
        share = cut_share(fitted.messages, b, "check")
        left = b.counter.text(line)
        assert share <= max_share or left <= FLOOR_TOKENS


class TestNearDuplicates:
    def test_near_duplicates_point_to_the_latest(self) -> None:
        """Outputs differing only in timestamps and ids count as the same."""
        body = "build finished: 412 files, all green " * 5
        conv: list[Message] = []
        for i, stamp in enumerate(("2026-01-02T10:00:01Z", "2026-01-02T10:05:09Z")):
            conv += [
                Message.user("status?"),
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "status")]),
                Message.tool(f"c{i}", f"{stamp} {body} took 1.52s"),
            ]
        conv.append(Message.user("ok"))
        fitted = Deduplicate()(conv, budget())
        note = fitted.messages[2].text
        assert note.startswith(
            "[same output as the later result of call c1, but for timestamps and ids"
        )
        assert Deduplicate(near=False)(conv, budget()).report.changes == ()


def test_tables_of_moved_units_are_those_of_a_fresh_look() -> None:
    """The collapse tables of a list holding the last list's units at other
    places (the oldest gone, a span made one line, messages appended, an
    exchange's result cut off) equal those a fresh budget builds."""
    import random

    from contextwindow.strategies.collapse import _tables

    cleared = ClearToolResults(keep_recent=0, max_share=1)(reads(40), budget())
    base = list(cleared.messages)
    for k in range(5, len(base) - 1, 9):  # the agent's text between exchanges
        base.insert(k, Message.assistant(f"now part {k}"))
    base.append(Message.assistant("done"))  # final: pinned here, not once moved
    lined = ClearToolResults(keep_recent=0)(reads(3), budget()).messages[1]
    rng = random.Random(3)
    fields = ("cost", "cut", "joins", "marked", "cutsum", "runs", "lines")
    for _ in range(40):
        warm = budget()
        _tables(base, warm, "t")
        edited = list(base)
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(1, len(edited))
            j = min(len(edited) - 1, i + rng.randrange(12))
            kind = rng.random()
            if kind < 0.3:
                del edited[1:i]
            elif kind < 0.6:
                edited[i:j] = [lined]
            elif kind < 0.8:
                edited += reads(2)[1:]
            elif edited[i].role == "tool":
                del edited[i]
        got = _tables(edited, warm, "t")
        want = _tables(list(edited), budget(), "t")
        assert [getattr(got, f) for f in fields] == [getattr(want, f) for f in fields]


def test_a_run_moved_keeps_its_line() -> None:
    """A run collapsed before, now at another place (older messages gone),
    is the same line object, and the report says where it is now."""
    from contextwindow.strategies.collapse import collapse_runs

    cleared = ClearToolResults(keep_recent=0, max_share=1)(reads(30), budget())
    conv = list(cleared.messages)
    for k in range(13, len(conv) - 1, 14):  # text between runs: several runs
        conv.insert(k, Message.user(f"and part {k}? " + "words " * 30))
    warm = budget()
    first = collapse_runs(conv, warm, 0.1, "ClearToolResults")
    moved = [conv[0], *conv[5:]]  # two exchanges gone from the front
    again = collapse_runs(moved, warm, 0.1, "ClearToolResults")
    fresh = collapse_runs(list(moved), budget(), 0.1, "ClearToolResults")
    assert again.messages == fresh.messages
    assert again.report == fresh.report
    lines = [m for m in first.messages if m.text.startswith("[")]
    kept = [m for m in again.messages if any(m is x for x in lines)]
    assert len(lines) >= 2
    assert len(kept) == len(lines) - 1  # the first run lost its first exchanges


def test_the_runs_before_the_window_are_taken_as_they_were(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over the budget, the runs before what it holds all collapse: on a
    re-fit of the grown conversation their lines are taken from the last
    call as they were, not looked up run by run, and the output is a fresh
    look's."""
    from contextwindow.strategies import collapse

    cleared = ClearToolResults(keep_recent=0, max_share=1)(reads(60), budget())
    conv = list(cleared.messages)
    for k in range(7, len(conv) - 1, 8):  # text between runs: several runs
        conv.insert(k, Message.user(f"and part {k}? " + "words " * 30))
    limit = TokenCounter(FakeTokenizer(), "openai").messages(conv) // 3
    warm = budget(limit)
    first = collapse.collapse_runs(conv, warm, 0.1, "ClearToolResults")
    lines = sum(c.kind == "collapsed" for c in first.report.changes)
    looked: list[object] = []
    same = collapse._same  # pyright: ignore[reportPrivateUsage]  # the per-run check

    def counted(*args: object) -> bool:
        looked.append(args)
        return same(*args)  # type: ignore[arg-type]  # passed through

    monkeypatch.setattr(collapse, "_same", counted)
    grown = [*conv, Message.user("more " * 20)]
    again = collapse.collapse_runs(grown, warm, 0.1, "ClearToolResults")
    monkeypatch.undo()
    fresh = collapse.collapse_runs(list(grown), budget(limit), 0.1, "ClearToolResults")
    assert again.messages == fresh.messages
    assert again.report == fresh.report
    assert lines >= 10
    assert len(looked) < lines / 2
