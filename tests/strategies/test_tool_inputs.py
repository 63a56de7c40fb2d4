from __future__ import annotations

import copy
import json
import random

import pytest

from contextwindow.handles import find_handles, handle_of, originals
from contextwindow.messages import Message, ToolCall
from contextwindow.strategies import Budget, StaleReads, TruncateToolInputs
from contextwindow.strategies.base import step_end
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter

from ._support import full_scans

BODY = "\n".join(f"def handler_{i}(): return {i}" for i in range(80))


def budget(limit: int = 0) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), "anthropic"))


def write(cid: str, path: str) -> list[Message]:
    args = json.dumps({"file_path": path, "content": BODY})
    return [
        Message.assistant(tool_calls=[ToolCall(cid, "Write", args)]),
        Message.tool(cid, "File written"),
    ]


def conv(n: int = 4) -> list[Message]:
    out = [Message.user("write the handlers")]
    for i in range(n):
        out += write(f"w{i}", f"lib/h{i}.py")
    return [*out, Message.user("and now?")]


class TestTruncateToolInputs:
    def test_old_long_arguments_are_cut(self) -> None:
        """Old calls keep their short arguments, their long ones are cut with a
        marker naming what went and the handle of the original."""
        c = conv()
        fitted = TruncateToolInputs(keep_recent=1, max_tokens=20)(c, budget())
        changed = [ch.index for ch in fitted.report.changes]
        assert changed == [1, 3, 5]
        new = fitted.messages[1].tool_calls[0]
        assert new.input["file_path"] == "lib/h0.py"
        content = new.input["content"]
        assert "handler_5," in content
        assert "handler_5()" not in content
        (h,) = find_handles(content)
        assert originals(c, h) == [c[1]]
        assert handle_of(fitted.messages[1]) == h
        assert fitted.messages[7] is c[7]  # the latest call stays whole

    def test_stops_at_the_end_of_the_step_it_fits_in(self) -> None:
        """Oldest first: once the budget is met, the calls that start in the
        same step of the budget go too (``step_end``), and the rest stays."""
        c = conv(40)
        b = budget(budget().count(c) - 50)  # met by the first cut
        fitted = TruncateToolInputs(keep_recent=0, max_tokens=20)(c, b)
        starts = b.counter.running(c)
        end = step_end(starts[2], b)  # where the step the budget was met in ends
        calls = range(1, len(c) - 1, 2)
        expected = [i for i in calls if i == 1 or starts[i] < end]
        assert [ch.index for ch in fitted.report.changes] == expected
        assert 1 < len(expected) < len(calls)
        assert fitted.report.fits

    def test_never_mutates_and_stays_stale_aware(self) -> None:
        """The input is left as it was; paths stay, so a later stage still
        knows which file each call wrote."""
        c = conv()
        before = copy.deepcopy(c)
        fitted = TruncateToolInputs(keep_recent=0, max_tokens=20)(c, budget())
        assert c == before
        assert StaleReads()(fitted.messages, budget()).messages is not None
        assert all(
            json.loads(m.tool_calls[0].arguments)["file_path"].startswith("lib/")
            for m in fitted.messages
            if m.tool_calls
        )

    def test_short_calls_untouched(self) -> None:
        """A call with only short arguments is not changed."""
        c = [
            Message.user("go"),
            Message.assistant(
                tool_calls=[ToolCall("c1", "Read", '{"file_path": "a"}')]
            ),
            Message.tool("c1", "x"),
            Message.user("?"),
        ]
        fitted = TruncateToolInputs(keep_recent=0)(c, budget())
        assert not fitted.report.changes

    def test_a_lone_surrogate_escape_stays_an_escape(self) -> None:
        """A cut call whose arguments held ``\\ud83d`` holds the escape, not the
        raw surrogate: its arguments stay UTF-8 text."""
        args = '{"title": "cut emoji \\ud83d", "content": ' + json.dumps(BODY) + "}"
        c = [
            Message.user("go"),
            Message.assistant(tool_calls=[ToolCall("w1", "Write", args)]),
            Message.tool("w1", "File written"),
            Message.user("?"),
        ]
        fitted = TruncateToolInputs(keep_recent=0, max_tokens=20)(c, budget())
        new = fitted.messages[1].tool_calls[0]
        assert new.arguments.startswith('{"title":"cut emoji \\ud83d","content":')
        new.arguments.encode("utf-8")  # no error
        assert new.input["title"] == "cut emoji \ud83d"
        assert "[..." in new.input["content"]

    def test_arguments_past_a_double_are_left_alone(self) -> None:
        """A call holding 1e400 (one that skipped the constructor, as unpickled)
        is not cut, and never written as ``Infinity``."""
        call = ToolCall("w1", "Write")
        text = '{"n": 1e400, "content": ' + json.dumps(BODY) + "}"
        object.__setattr__(call, "arguments", text)
        c = [
            Message.user("go"),
            Message.assistant(tool_calls=[call]),
            Message.tool("w1", "File written"),
            Message.user("?"),
        ]
        fitted = TruncateToolInputs(keep_recent=0, max_tokens=20)(c, budget())
        assert fitted.report.changes == ()
        assert fitted.messages[1].tool_calls[0] is call


class TestIncremental:
    """A re-fit with a warm counter (the stage resumes) equals a fresh fit."""

    def grown(self, rng: random.Random) -> list[Message]:
        out = [Message.user("write the handlers")]
        for i in range(rng.randint(3, 9)):
            if rng.random() < 0.3:
                out.append(Message.user(f"then part {i}"))
            out += write(f"w{i}", f"lib/h{i}.py")
        return out

    @pytest.mark.parametrize("keep_recent", [0, 1, 2, 3])
    def test_every_step(self, keep_recent: int) -> None:
        cut = 0
        for seed in range(12):
            rng = random.Random(seed)
            whole = self.grown(rng)
            total = TokenCounter(FakeTokenizer(), "openai").messages(whole)
            limit = int(total * rng.choice((0.2, 0.4, 0.6)))
            warm = TokenCounter(FakeTokenizer(), "openai")
            for n in range(1, len(whole) + 1):
                step = whole[:n]
                strategy = TruncateToolInputs(keep_recent=keep_recent, max_tokens=20)
                got = strategy(step, Budget(limit, warm))
                want = strategy(step, Budget(limit, TokenCounter(FakeTokenizer())))
                assert [(m, m.id) for m in got.messages] == [
                    (m, m.id) for m in want.messages
                ], f"seed {seed}, step {n}"
                assert got.report == want.report
                cut += len(got.report.changes)
        assert cut > 0  # the stage acted, so resuming was put to the test


def test_a_boundary_moved_back_or_an_earlier_change_resumes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recent calls' boundary moving back (the newest call gone) or a
    result rewritten before it (an earlier stage's work) resumes the scan at
    the earlier boundary, not from scratch, and gives a fresh fit's output."""
    whole = conv(6)
    counter = TokenCounter(FakeTokenizer(), "openai")
    strategy = TruncateToolInputs(keep_recent=2, max_tokens=20)
    strategy(whole, Budget(0, counter))
    scans = full_scans(monkeypatch)
    shorter = whole[:-3]  # the newest exchange and the last turn gone
    rewritten = [*whole[:8], Message.tool("w3", "File written, twice"), *whole[9:]]
    for edited in (shorter, rewritten, whole):
        got = strategy(edited, Budget(0, counter))
        assert scans == []
        want = strategy(edited, Budget(0, TokenCounter(FakeTokenizer(), "openai")))
        scans.clear()
        assert [(m, m.id) for m in got.messages] == [(m, m.id) for m in want.messages]
        assert got.report == want.report
        assert got.report.changes
