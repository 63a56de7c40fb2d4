"""Cuts move in steps of the budget (``step_end``).

A strategy that cuts from the oldest until the budget is met cuts on to the end
of the step it met it in, so a conversation that grows by a little is fitted to
the request it was fitted to before, and the new messages: a provider's prompt
cache keeps serving that prefix, and the stages resume from it. Cutting just
enough instead moves the cut at every turn.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextwindow import Message, TokenCounter, ToolCall, fit
from contextwindow.messages import units
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    DropOldest,
    Pipeline,
    Strategy,
    TruncateToolResults,
    tool_results,
)
from contextwindow.strategies.base import CUT_STEP, known_valid, step_end, step_size
from contextwindow.strategies.tool_results import REFILL_TRIES
from contextwindow.testing import FakeTokenizer
from contextwindow.validity import problems

TURNS = 40


def history(n: int = 300) -> list[Message]:
    """A coding session: a task, then reads of about a hundred tokens each,
    the user asking again every fifth."""
    conv = [Message.system("You are a coding agent."), Message.user("Fix the build.")]
    for i in range(n):
        if i and i % 5 == 0:
            conv.append(Message.user(f"Part {i} next."))
        conv += [
            Message.assistant(
                f"Reading part {i}.",
                tool_calls=[
                    ToolCall(f"c{i}", "read_file", f'{{"path": "src/m{i}.py"}}')
                ],
            ),
            Message.tool(f"c{i}", f"# module {i}\n" + f"value_{i} = {i * 37}\n" * 8),
        ]
    return conv


def turn(i: int, words: int) -> list[Message]:
    """An append of about ``words`` words: a question and an answer."""
    return [
        Message.user(f"And what does step {i} need?"),
        Message.assistant(f"Step {i} needs " + "the value " * (words // 2)),
    ]


def kept_shares(strategy: Strategy | None, share: float) -> list[float]:
    """For each of ``TURNS`` small appends, the share of the request's tokens
    that repeat the request before (what a prompt cache serves)."""
    conv = history()
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * share)
    before = fit(conv, limit=limit, strategy=strategy, tokenizer=counter).messages
    shares = []
    for i in range(TURNS):
        conv += turn(i, limit // 100)  # about 1 % of the budget
        out = fit(conv, limit=limit, strategy=strategy, tokenizer=counter).messages
        k = 0
        while k < min(len(out), len(before)) and out[k] == before[k]:
            k += 1
        run = counter.running(out)
        shares.append(run[k] / run[-1])
        before = out
    return shares


@pytest.mark.parametrize(
    ("strategy", "share"),
    [
        (DropOldest(), 0.25),
        (TruncateToolResults(keep_recent=2, max_tokens=40), 0.5),
        (ClearToolResults(keep_recent=2, max_share=1), 0.5),
        (Pipeline(TruncateToolResults(keep_recent=2), DropOldest()), 0.25),
    ],
)
def test_a_small_append_keeps_the_request_before(
    strategy: Strategy | None, share: float
) -> None:
    """Each append is about 1 % of the budget, a step 5 %: the cut moves on
    at most one turn in three (at every turn when it cut just enough)."""
    shares = kept_shares(strategy, share)
    moved = [s for s in shares if s < 0.9]
    assert len(moved) <= TURNS // 3, shares


def test_step_end_is_the_end_of_the_step_holding_a_position() -> None:
    budget = Budget(2_000, TokenCounter(FakeTokenizer()))
    step = step_size(budget)
    assert step == int(2_000 * CUT_STEP) == 100
    assert [step_end(p, budget) for p in (0, 99, 100, 250)] == [100, 100, 200, 300]
    assert step_size(Budget(3, TokenCounter(FakeTokenizer()))) == 1


def test_dropping_goes_on_to_the_end_of_the_step() -> None:
    """The units that start in the step the last unit needed starts in go
    too, and none after; just enough would have dropped fewer."""
    conv = [*history(60), Message.user("So?")]
    counter = TokenCounter(FakeTokenizer())
    budget = Budget(counter.messages(conv) // 2, counter)
    fitted = DropOldest()(conv, budget)
    starts = counter.running(conv)
    exchanges = units(conv)[2:-1]  # the system prompt, the task, the final turn stay
    total, needed = budget.count(conv), 0
    while total > budget.limit:
        u = exchanges[needed]
        total -= starts[u.stop] - starts[u.start]
        needed += 1
    end = step_end(starts[exchanges[needed - 1].start], budget)
    expected = [u for u in exchanges if starts[u.start] < end]
    assert len(expected) > needed  # the step holds more than what was needed
    gone = [m.id for u in expected for m in conv[u.start : u.stop]]
    assert [i for c in fitted.report.changes for i in c.ids] == gone
    assert fitted.report.fits


def test_refill_tries_resume_and_equal_a_fresh_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ClearToolResults`` clears less in whole steps once runs collapsed, each
    try in a memo lane of its own: a re-fit with the counter of the last one
    gives what a fresh counter gives, turn after turn."""
    lanes: list[str] = []
    collapsed = ClearToolResults._collapsed  # pyright: ignore[reportPrivateUsage]  # the path under test

    def spy(*args: Any, **kw: Any) -> Any:
        lanes.append(kw.get("lane", ""))
        return collapsed(*args, **kw)

    monkeypatch.setattr(ClearToolResults, "_collapsed", spy)
    conv = history()
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * 0.5)
    strategy = ClearToolResults(keep_recent=2)
    for i in range(6):
        conv += turn(i, limit // 100)
        again = strategy(conv, Budget(limit, counter))
        fresh = strategy(conv, Budget(limit, TokenCounter(FakeTokenizer())))
        assert again.messages == fresh.messages
        assert again.report == fresh.report
        assert again.report.fits
    assert {"+0", "+1"} <= set(lanes)  # the refill ran, in lanes
    assert all(not lane or int(lane[1:]) < REFILL_TRIES for lane in lanes)


def test_results_put_back_are_known_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cleared results the collapsed runs made room for come back in place,
    newest first; the output is valid, and known so (no stage checks it again)."""
    restore = tool_results._restore  # pyright: ignore[reportPrivateUsage]  # the path under test
    seen: list[tuple[Any, Any]] = []

    def spy(given: Any, cleared: Any, collapsed: Any, *rest: Any) -> Any:
        out = restore(given, cleared, collapsed, *rest)
        seen.append((collapsed, out[0]))
        return out

    monkeypatch.setattr(tool_results, "_restore", spy)
    conv = history()
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * 0.7)  # room left beside the lines
    budget = Budget(limit, counter)
    fitted = ClearToolResults(keep_recent=2)(conv, budget)
    back = [(before, after) for before, after in seen if after != tuple(before)]
    assert back  # some were put back
    ids = {m.id: m for m in conv}
    for before, after in back:
        assert len(after) == len(before)
        put = [a for a, b in zip(after, before, strict=True) if a is not b]
        assert put
        assert all(ids[m.id] is m for m in put)
        assert known_valid(budget, after)
        assert not problems(after, budget.provider)
    assert fitted.report.fits
