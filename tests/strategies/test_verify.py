"""``verify`` holds a user's strategy to what every strategy keeps.

A user's stage (any callable) may drop or rewrite the system, pinned and
protected messages or the final one, move messages, rewrite one at the same
size, or report changes whose fields hold anything: the output keeps the
invariants (put back, said in ``warnings``), every change is in the report
(by id, even at no net tokens), and a bad field is an error naming the stage
and the field. The library's own stages are not looked at again.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from contextwindow import ContextManager, ContextWindowError, Message, ToolCall, fit
from contextwindow.messages import Text
from contextwindow.strategies import (
    CollapseRuns,
    DropOldest,
    Pipeline,
    SlidingWindow,
    TruncateToolResults,
)
from contextwindow.strategies.base import (
    Budget,
    Change,
    Fitted,
    Report,
    trusted,
    verify,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter
from contextwindow.validity import problems

Stage = Callable[[Sequence[Message], Budget], Fitted]


def agent_conv(n: int = 8, size: int = 40) -> list[Message]:
    conv = [
        Message.system("You are a coding agent."),
        Message.user("Find the bug <keep>."),
        Message.user("pinned note", pinned=True),
    ]
    for i in range(n):
        conv += [
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
            Message.tool(f"c{i}", " ".join(f"w{i}_{k}" for k in range(size))),
        ]
    conv.append(Message.user("So, where is it?"))
    return conv


def budget(limit: int = 10_000, **kw: Any) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer()), **kw)


def adds_up(report: Report) -> bool:
    saved = sum(c.saved for c in report.changes)
    return report.tokens_before - saved == report.tokens_after


def silent(out: Callable[[Sequence[Message]], Sequence[Message]]) -> Stage:
    """A stage returning ``out(messages)`` and reporting nothing."""

    def stage(messages: Sequence[Message], budget: Budget, /) -> Fitted:
        return Fitted(tuple(out(messages)), Report(0, 0, budget.limit))

    return stage


def run(stage: Stage, conv: list[Message], b: Budget) -> Fitted:
    return verify(stage, conv, stage(conv, b), b)


class TestPinsKept:
    def test_a_naive_cut_keeps_system_pinned_protected_and_final(self) -> None:
        """Popping from the front: each pinned message is put back, said in warnings."""

        def oldest_first_cut(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            ms = list(messages)
            while ms and budget.count(ms) > budget.limit:
                ms.pop(0)
            return Fitted(tuple(ms), Report(0, 0, budget.limit))

        conv = agent_conv()
        c = TokenCounter(FakeTokenizer())
        fitted = fit(
            conv,
            limit=250,
            strategy=oldest_first_cut,
            tokenizer=c,
            protected=["<keep>"],
        )
        out = list(fitted.messages)
        for i in (0, 1, 2, -1):
            assert any(m is conv[i] for m in out), i
        assert out[0] is conv[0]
        assert out[-1] is conv[-1]
        assert [m for m in out if m in conv[:3]] == conv[:3]  # in order
        assert problems(out, "openai") == ()
        assert c.messages(out) <= 250
        assert adds_up(fitted.report)
        [warning] = [w for w in fitted.report.warnings if "oldest_first_cut" in w]
        assert "messages[0] (system)" in warning
        assert "messages[1] (protected)" in warning
        assert "messages[2] (pinned)" in warning

    def test_a_rewritten_final_message_is_put_back(self) -> None:
        """The final message goes out as it came, not as the stage rewrote it."""

        def rewrite_final(messages: Sequence[Message]) -> list[Message]:
            ms = list(messages)
            ms[-1] = replace(ms[-1], parts=(Text("So?"),))
            return ms

        conv = agent_conv()
        fitted = run(silent(rewrite_final), conv, budget())
        assert fitted.messages[-1] is conv[-1]
        assert list(fitted.messages) == conv
        assert "messages[19] (final)" in fitted.report.warnings[0]
        assert fitted.report.changes == ()  # nothing changed in the end
        assert adds_up(fitted.report)

    def test_a_reported_cut_of_a_pinned_message_is_repaired(self) -> None:
        """A drop the stage reported and that was undone adds its tokens back."""
        conv = agent_conv()
        b = budget()

        def drops_system(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            gone = messages[0]
            n = budget.counter.message(gone)
            said = Change("dropped", "drops_system", (gone.id,), 0, n, 0, "system")
            return Fitted(tuple(messages[1:]), Report(0, 0, budget.limit, (said,)))

        fitted = run(drops_system, conv, b)
        assert fitted.messages[0] is conv[0]
        kinds = [(c.kind, c.index, c.saved) for c in fitted.report.changes]
        n = b.counter.message(conv[0])
        assert kinds == [("dropped", 0, n), ("repaired", 0, -n)]
        assert fitted.report.tokens_after == fitted.report.tokens_before
        assert adds_up(fitted.report)

    def test_a_pinned_tool_result_keeps_its_call(self) -> None:
        """A pinned result whose call was dropped: the whole exchange comes back."""
        conv = agent_conv()
        conv[6] = replace(conv[6], pinned=True)  # c1's result; its call is [5]
        fitted = run(silent(lambda ms: [*ms[:5], *ms[6:]]), conv, budget())
        assert list(fitted.messages) == conv
        assert (
            "messages[5] (assistant, of a pinned tool exchange)"
            in (fitted.report.warnings[0])
        )

    def test_the_manager_keeps_its_system_prompt(self) -> None:
        """A manager compacting with a naive strategy keeps its view's system prompt."""

        def tail(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            return Fitted(tuple(messages[-3:]), Report(0, 0, budget.limit))

        m = ContextManager(token_limit=400, tokenizer=FakeTokenizer(), strategy=tail)
        for msg in agent_conv():
            m.push(msg)
        p = m.prepare()
        assert p.conversation[0].role == "system"
        assert m.messages[0].role == "system"
        assert problems(m.messages, "openai") == ()

    def test_force_compress_with_keeps_them(self) -> None:
        """force_compress_with a naive strategy: the system prompt stays."""
        m = ContextManager(token_limit=10_000, tokenizer=FakeTokenizer())
        m.push_many(agent_conv(4, 5))
        done = m.force_compress_with(silent(lambda ms: ms[-1:]))
        assert m.messages[0].role == "system"
        assert m.messages[-1].text == "So, where is it?"
        assert adds_up(done.report)


class TestEveryChangeAccounted:
    def test_a_same_size_rewrite_is_reported(self) -> None:
        """A rewrite keeping the token count is a ``rewritten`` change at its index."""

        def sneaky(messages: Sequence[Message]) -> list[Message]:
            ms = list(messages)
            ms[3] = replace(ms[3], parts=(Text("Find it in db.py"),))
            return ms

        conv = agent_conv()
        conv.insert(3, Message.user("Find it in auth.py"))
        b = budget()
        fitted = run(silent(sneaky), conv, b)
        [c] = fitted.report.changes
        assert (c.kind, c.stage, c.index, c.ids) == (
            "rewritten",
            "stage",
            3,
            (conv[3].id,),
        )
        assert c.tokens_before == c.tokens_after == b.counter.message(conv[3])
        assert adds_up(fitted.report)

    def test_a_reorder_is_put_back_and_said(self) -> None:
        """Messages moved are put back in the input's order, the final message last."""

        def swap(messages: Sequence[Message]) -> list[Message]:
            ms = list(messages)
            ms[1], ms[-1] = ms[-1], ms[1]
            del ms[3:5]
            return ms

        conv = agent_conv()
        fitted = run(silent(swap), conv, budget())
        assert list(fitted.messages) == [*conv[:3], *conv[5:]]
        assert fitted.messages[-1] is conv[-1]
        assert any("moved messages" in w for w in fitted.report.warnings)
        [c] = fitted.report.changes
        assert (c.kind, c.index, set(c.ids)) == (
            "dropped",
            3,
            {m.id for m in conv[3:5]},
        )
        assert adds_up(fitted.report)

    def test_a_message_given_twice_is_added(self) -> None:
        """A copy of a message the stage repeated is an ``added`` change."""
        conv = agent_conv(2)
        fitted = run(silent(lambda ms: [*ms[:2], ms[1], *ms[2:]]), conv, budget())
        assert len(fitted.messages) == len(conv) + 1
        [c] = fitted.report.changes
        assert (c.kind, c.ids, c.index) == ("added", (conv[1].id,), 2)
        assert c.saved < 0
        assert adds_up(fitted.report)

    def test_a_message_added_after_the_final_one_goes_before_it(self) -> None:
        """The final message stays last; what was added after it is accounted."""
        note = Message.user("a note")
        conv = agent_conv(2)
        fitted = run(silent(lambda ms: [*ms, note]), conv, budget())
        assert list(fitted.messages) == [*conv[:-1], note, conv[-1]]
        assert [c.kind for c in fitted.report.changes] == ["added"]
        assert adds_up(fitted.report)

    def test_messages_rebuilt_with_new_ids_are_no_change(self) -> None:
        """Equal messages under new ids (a round trip lost them): nothing reported."""
        conv = agent_conv(3)
        rebuilt = silent(
            lambda ms: [replace(m, id=f"new-{i}") for i, m in enumerate(ms)]
        )
        fitted = run(rebuilt, conv, budget())
        assert list(fitted.messages) == conv
        assert len(fitted.messages) == len(conv)  # no pinned message twice
        assert fitted.report.changes == ()
        assert fitted.report.warnings == ()

    def test_a_summary_in_place_of_old_units(self) -> None:
        """A new message replacing old units: one change names them and the new one."""
        conv = agent_conv(4)
        summary = Message.assistant("earlier: read four files")
        fitted = run(silent(lambda ms: [*ms[:3], summary, *ms[7:]]), conv, budget())
        assert list(fitted.messages) == [*conv[:3], summary, *conv[7:]]
        [c] = fitted.report.changes
        assert c.kind == "rewritten"
        assert set(c.ids) == {*(m.id for m in conv[3:7]), summary.id}
        assert c.index == 3
        assert adds_up(fitted.report)
        assert fitted.report.warnings == ()


def bad_change(**fields: Any) -> Change:
    """A change with ``fields`` in place of a valid one's (of any type)."""
    valid: dict[str, Any] = {
        "kind": "dropped",
        "stage": "my_stage",
        "ids": ("a",),
        "index": 3,
        "tokens_before": 5,
        "tokens_after": 0,
        "what": "x",
    }
    return Change(**{**valid, **fields})


def bad_report(**fields: Any) -> Report:
    """An empty report with ``fields`` in place of its own (of any type)."""
    return Report(**{"tokens_before": 0, "tokens_after": 0, "limit": 0, **fields})


class TestReportFields:
    @pytest.mark.parametrize(
        ("report", "match"),
        [
            (
                bad_report(changes=(bad_change(tokens_before=None),)),
                r"report\.changes\[0\]\.tokens_before = None, not an int >= 0",
            ),
            (
                bad_report(changes=(bad_change(tokens_before=2.5),)),
                r"report\.changes\[0\]\.tokens_before = 2\.5, not an int",
            ),
            (
                bad_report(changes=(bad_change(units=-1),)),
                r"report\.changes\[0\]\.units = -1, not an int >= 0",
            ),
            (
                bad_report(changes=None),
                r"report\.changes = None, not a tuple of Change",
            ),
            (
                bad_report(warnings="oops"),
                r"report\.warnings = 'oops', not a tuple of str",
            ),
            (
                bad_report(stages=(3,)),
                r"report\.stages\[0\] = 3, not a str",
            ),
            (
                bad_report(changes=(bad_change(index=10**6),)),
                r"report\.changes\[0\]\.index = 1000000, not an index into its 20 in",
            ),
            (
                bad_report(changes=(bad_change(index=-5),)),
                r"report\.changes\[0\]\.index = -5",
            ),
            (
                bad_report(changes=(bad_change(kind="gone"),)),
                r"report\.changes\[0\]\.kind = 'gone', not a ChangeKind",
            ),
            (
                bad_report(changes=(bad_change(ids=["a"]),)),
                r"report\.changes\[0\]\.ids = \['a'\] \(list\), not a tuple of str",
            ),
            (
                bad_report(changes=(bad_change(what=None),)),
                r"report\.changes\[0\]\.what = None, not a str",
            ),
        ],
    )
    def test_a_bad_field_is_named(self, report: Report, match: str) -> None:
        """A field that is not what Change or Report declares: an error naming both."""

        def my_stage(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            return Fitted((*messages[:3], *messages[5:]), report)

        with pytest.raises(
            ContextWindowError, match=rf"strategy 'my_stage' returned {match}"
        ):
            fit(agent_conv(), limit=200, strategy=my_stage, tokenizer=FakeTokenizer())

    def test_lists_are_read_as_tuples(self) -> None:
        """Changes, warnings and stages given as lists are taken."""
        conv = agent_conv()
        b = budget()

        def lists(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            n = sum(budget.counter.message(m) for m in messages[3:5])
            ids = (messages[3].id, messages[4].id)
            said = [Change("dropped", "lists", ids, 3, n, 0, "exchange")]
            report = bad_report(changes=said, stages=["mine"], warnings=["careful"])
            return Fitted((*messages[:3], *messages[5:]), report)

        fitted = run(lists, conv, b)
        assert fitted.report.stages == ("mine",)
        assert fitted.report.warnings == ("careful",)
        assert [c.kind for c in fitted.report.changes] == ["dropped"]
        assert adds_up(fitted.report)


class TestAsync:
    def test_a_coroutine_is_closed_and_named(self) -> None:
        """An async stage's coroutine: closed (no RuntimeWarning), and said."""

        async def keep_tail(messages: Sequence[Message], budget: Budget, /) -> Fitted:
            return Fitted(tuple(messages), Report(0, 0, budget.limit))

        conv = agent_conv(1)
        coro = keep_tail(conv, budget())
        with pytest.raises(ContextWindowError, match=r"returned coroutine.*async def"):
            verify(keep_tail, conv, coro, budget())
        assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


class TestBuiltinsTrusted:
    def test_trusted(self) -> None:
        """The library's own stages are trusted; a function or a subclass is not."""

        class Mine(DropOldest):
            pass

        assert trusted(DropOldest())
        assert trusted(Pipeline(DropOldest()))
        assert not trusted(Mine())
        assert not trusted(silent(lambda ms: ms))

    def test_builtin_output_passes_as_it_is(self) -> None:
        """A built-in stage's output comes back as the very object, unlooked at."""
        b = budget(300)
        conv = agent_conv()
        for strategy in (DropOldest(), SlidingWindow(2), TruncateToolResults()):
            out = strategy(conv, b)
            assert verify(strategy, conv, out, b) is out


class TestCollapseRunsChecksItsStrategy:
    def test_the_wrong_type_is_named(self) -> None:
        """CollapseRuns(a strategy returning a list): the error names that one."""

        def returns_list(messages: Sequence[Message], budget: Budget, /) -> Any:
            return list(messages)

        conv = agent_conv()
        calls: list[Callable[[], object]] = [
            lambda: CollapseRuns(returns_list)(conv, budget()),
            lambda: Pipeline(CollapseRuns(returns_list), DropOldest())(
                conv, budget(99)
            ),
        ]
        for call in calls:
            with pytest.raises(
                ContextWindowError, match="strategy 'returns_list' returned list"
            ):
                call()

    def test_its_output_is_valid_and_accounted(self) -> None:
        """Results left without their calls are repaired; the drop is the stage's."""
        conv = agent_conv(3)
        orphan_results = silent(lambda ms: [m for m in ms if not m.tool_calls])
        orphan_results.__name__ = "orphan_results"
        fitted = CollapseRuns(orphan_results)(conv, budget())
        assert problems(list(fitted.messages), "openai") == ()
        assert fitted.report.stages == ("orphan_results",)
        assert {c.stage for c in fitted.report.changes} == {
            "orphan_results",
            "ensure_valid",
        }
        assert adds_up(fitted.report)
