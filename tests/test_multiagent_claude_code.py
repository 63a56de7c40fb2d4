"""Acceptance: the Claude Code sessions of the shared data, replayed as a team.

Each main session (agent ``main``) and its Task/Explore sub-agent runs
(``subagents/agent-a*.jsonl``, one agent per file, named by ``agentId``) go
through one ``SharedContext`` in the order their records were written
(timestamps). Each sub-agent is linked to the parent's ``Task`` call whose
``prompt`` is the sub-agent's first message. At three points of each
sub-agent's run (before its first message, halfway, after its last) its
slice is taken for a task, at three budgets, for its own model: every slice
fits its budget, passes ``problems(slice, "anthropic") == ()``, ends on the
task and shows what the parent has been doing. The parent's hand-off at the
``Task`` call and the sub-agent's result folded back are checked the same way,
and the folded answer is what Claude Code itself handed back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from contextwindow import Message, fit, units
from contextwindow.multiagent import (
    ACTIVITY_HEADING,
    SharedContext,
    fold_result,
    handoff,
)
from contextwindow.strategies import Fitted
from contextwindow.transcripts import Transcript, read_transcripts
from contextwindow.validity import ensure_valid, problems

BUDGETS = (2_000, 8_000, 32_000)
"""Token budgets of each slice (Claude's approximate count)."""
HANDOFF_LIMIT = 8_000
FOLLOW_UP = "Summarise what you found so far for the parent agent."


@dataclass(frozen=True)
class Run:
    """One sub-agent run and where its parent called it."""

    session: str
    agent: str
    model: str
    messages: tuple[Message, ...]
    parent: tuple[Message, ...]
    """The parent session, repaired for Anthropic (as recorded, a few
    sessions hold whitespace-only text blocks)."""
    call: int
    """Index in ``parent`` of the message holding the Task call."""
    call_id: str
    prompt: str


@pytest.fixture(scope="module")
def runs(shared_data: Path) -> list[Run]:
    root = shared_data / "claude_code_sessions"
    found: list[Run] = []
    for path in sorted(root.glob("*/subagents/agent-a*.jsonl")):
        if path.name.startswith("agent-acompact"):
            continue
        (sub,) = read_transcripts(path)
        (main,) = read_transcripts(root / f"{path.parent.parent.name}.jsonl")
        parent = ensure_valid(main.messages, "anthropic").messages
        prompt = sub.messages[0].text
        (call, call_id) = next(
            (i, c.id)
            for i, m in enumerate(parent)
            for c in m.tool_calls
            if c.name in ("Task", "Agent") and c.input.get("prompt") == prompt
        )
        assert sub.model is not None
        found.append(
            Run(
                path.parent.parent.name,
                str(sub.meta["agent_id"]),
                sub.model,
                sub.messages,
                parent,
                call,
                call_id,
                prompt,
            )
        )
    assert len(found) == 6
    assert len({r.session for r in found}) == 5
    return found


def replay(session: Transcript | tuple[Message, ...], subs: list[Run]) -> list[Message]:
    """Parent and sub-agent messages, tagged with their agent, in record order."""
    parent = session.messages if isinstance(session, Transcript) else session
    tagged = [
        (m.meta.get("timestamp") or "", 0, k, m, "main") for k, m in enumerate(parent)
    ]
    for n, run in enumerate(subs, start=1):
        tagged += [
            (m.meta.get("timestamp") or "", n, k, m, run.agent)
            for k, m in enumerate(run.messages)
        ]
    tagged.sort(key=lambda t: (t[0], t[1], t[2]))
    return [
        Message(m.role, m.parts, m.name, agent, m.pinned, m.id, m.meta)
        for *_, m, agent in tagged
    ]


def check_slice(view: Fitted, budget: int, task: str, others: list[str]) -> None:
    """Fits, valid for Anthropic, the others' work first, the task last."""
    out = view.messages
    assert view.report.tokens_after <= budget, (view.report.tokens_after, budget)
    assert problems(out, "anthropic") == ()
    assert ensure_valid(out, "anthropic").problems == ()
    assert out[-1].role == "user"
    assert out[-1].text == task
    first = next(m for m in out if m.role != "system")
    if not others:
        assert not any(m.text.startswith(ACTIVITY_HEADING) for m in out)
        return
    assert first.text.startswith(ACTIVITY_HEADING)
    for other in others:
        assert f"- {other}: " in first.text


class TestReplay:
    def test_every_sub_agent_slice_fits_and_is_valid(self, runs: list[Run]) -> None:
        """Slices at three points of each run, three budgets: fit and valid."""
        checked = cut = 0
        for session in sorted({r.session for r in runs}):
            subs = [r for r in runs if r.session == session]
            log = replay(subs[0].parent, subs)
            ctx = SharedContext()
            points = {}
            for run in subs:
                ids = [m.id for m in run.messages]
                at = [log.index(next(m for m in log if m.id == i)) for i in ids]
                points[at[0]] = (run, run.prompt)
                points[at[len(at) // 2]] = (run, FOLLOW_UP)
                points[at[-1] + 1] = (run, FOLLOW_UP)
            for k, m in enumerate([*log, None]):
                if k in points:
                    run, task = points[k]
                    for budget in BUDGETS:
                        view = ctx.slice_for(
                            run.agent, task, budget=budget, model=run.model
                        )
                        check_slice(view, budget, task, ["main"])
                        checked += 1
                        cut += bool(view.report.changes)
                    main_view = ctx.slice_for(
                        "main", "Carry on.", budget=BUDGETS[-1], model="claude-opus-4-6"
                    )
                    ran = [a for a in ctx.agents() if a != "main"]
                    check_slice(main_view, BUDGETS[-1], "Carry on.", ran)
                if m is not None:
                    ctx.add(m)
            assert len(ctx.full_history()) == len(log)
        assert checked == 6 * 3 * len(BUDGETS)
        assert cut > checked // 3, "most slices had to be cut to their budget"

    def test_handoff_at_the_task_call(self, runs: list[Run]) -> None:
        """The parent's history before the call, cut to the task: some of it, valid."""
        for run in runs:
            before = run.parent[: run.call + 1]  # with the pending Task call
            sub = handoff(before, run.prompt, limit=HANDOFF_LIMIT, model=run.model)
            out = sub.messages
            assert sub.report.tokens_after <= HANDOFF_LIMIT
            assert problems(out, "anthropic") == ()
            assert out[-1].text == run.prompt
            from_parent = {m.id for m in before} & {m.id for m in out}
            whole = fit(before, limit=10**9, model=run.model).report.tokens_after
            if whole > HANDOFF_LIMIT:
                assert 0 < len(from_parent) < len(before), run.session
            assert not any(c.id == run.call_id for m in out for c in m.tool_calls)

    def test_fold_result_answers_the_task_call(self, runs: list[Run]) -> None:
        """The run's answer folds in as the Task call's result, as Claude Code did."""
        for run in runs:
            before = list(run.parent[: run.call + 1])
            folded = fold_result(before, run.messages, agent=run.agent, task=run.prompt)
            assert folded[:-1] == before
            (result,) = folded[-1].tool_results
            assert result.call_id == run.call_id
            real = next(
                r
                for m in run.parent[run.call + 1 :]
                for r in m.tool_results
                if r.call_id == run.call_id
            )
            assert real.text.startswith(result.text), run.agent
            # What may still wait: other calls the parent made in parallel.
            last = units(folded)[-1]
            calls = folded[last.start].tool_calls
            assert run.call_id not in [calls[k].id for k in last.unanswered]
            for p in problems(folded, "anthropic"):
                assert (p.index, p.reason) == (run.call, "tool call has no result")
