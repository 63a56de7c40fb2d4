from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from contextwindow import Message, ToolCall, fit, units
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    ContextWindowError,
    InvalidMessageError,
)
from contextwindow.fitting import reply_reserve
from contextwindow.models import get_model
from contextwindow.multiagent import (
    ACTIVITY_HEADING,
    NO_ANSWER,
    NO_TASK,
    SLICE_STRATEGY,
    SUBJECT_LENGTH,
    SharedContext,
    fold_result,
    handoff,
    subject,
)
from contextwindow.relevance import BM25Scorer
from contextwindow.relevance import bm25 as bm25_module
from contextwindow.strategies import DropOldest, Pipeline, SelectRelevant
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter
from contextwindow.validity import problems
from contextwindow.wire import to_dicts


class FakeSummarizer:
    """Summarises by counting messages; records each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str | None, int | None]] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        self.calls.append((len(messages), previous, max_tokens))
        done = int(previous.split()[0]) if previous else 0
        return f"{done + len(messages)} messages,\n  last: {messages[-1].text}"


def team() -> SharedContext:
    ctx = SharedContext(tokenizer=FakeTokenizer())
    ctx.add_message(role="user", content="Plan the Lisbon trip", agent="planner")
    ctx.add_message(
        role="assistant", content="Day 1 Alfama, day 2 Belem", agent="planner"
    )
    ctx.add_message(role="user", content="Find flights for May", agent="booker")
    ctx.add_message(role="assistant", content="TAP at 9:05, 120 EUR", agent="booker")
    return ctx


class TestLog:
    def test_add_tags_the_agent_and_keeps_the_id(self) -> None:
        """add() stores the message as that agent's; the id is the same."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        m = Message.user("hi")
        stored = ctx.add(m, agent="a")
        assert (stored.id, stored.agent, stored.text) == (m.id, "a", "hi")
        assert ctx.add(stored) is stored
        assert ctx.full_history() == (stored, stored)

    def test_add_message_takes_chorus_roles(self) -> None:
        """system, user and assistant, with text or parts; other roles fail."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        s = ctx.add_message(role="system", content="Be brief.", agent="a")
        u = ctx.add_message(role="user", content="go", agent="a")
        a = ctx.add_message(role="assistant", content="done", agent="a")
        assert [(m.role, m.text, m.agent) for m in (s, u, a)] == [
            ("system", "Be brief.", "a"),
            ("user", "go", "a"),
            ("assistant", "done", "a"),
        ]
        with pytest.raises(InvalidMessageError, match="role"):
            ctx.add_message(role="tool", content="x")
        with pytest.raises(InvalidMessageError, match="content"):
            ctx.add_message(role="system", content=[])
        with pytest.raises(InvalidMessageError, match="message"):
            ctx.add("hello")
        with pytest.raises(InvalidMessageError, match=r"messages\[1\]"):
            SharedContext([Message.user("a"), "b"], tokenizer=FakeTokenizer())

    def test_history_and_agents(self) -> None:
        """Per-agent histories, shared messages, agents in order of appearance."""
        ctx = team()
        shared = ctx.add(Message.user("Budget is 800 EUR"))
        assert ctx.agents() == ("planner", "booker")
        assert [m.text for m in ctx.history("booker")] == [
            "Find flights for May",
            "TAP at 9:05, 120 EUR",
        ]
        assert ctx.history(None) == (shared,)
        assert len(ctx.full_history()) == 5
        assert SharedContext(
            ctx.full_history(), tokenizer=FakeTokenizer()
        ).agents() == (
            "planner",
            "booker",
        )


class TestActivity:
    def test_subjects_are_the_first_characters_of_each_task(self) -> None:
        """Each other agent: its latest tasks, cut to SUBJECT_LENGTH characters."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        long_task = "Review " + "the whole module carefully " * 10
        ctx.add(Message.user(long_task), agent="reviewer")
        shown = ctx.activity("coder").splitlines()
        assert shown[0] == ACTIVITY_HEADING
        assert shown[1] == f"- reviewer: {subject(long_task)}"
        assert len(subject(long_task)) == SUBJECT_LENGTH + 1  # and the ellipsis
        assert ctx.activity("reviewer") == ""

    def test_only_the_latest_tasks_are_listed(self) -> None:
        """The last three tasks, and how many came before."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        for k in range(5):
            ctx.add(Message.user(f"task {k}"), agent="a")
        assert ctx.activity() == (
            f"{ACTIVITY_HEADING}\n- a: task 2; task 3; task 4 (and 2 earlier)"
        )

    def test_an_agent_without_tasks_shows_what_it_said(self) -> None:
        """No user message: the subject of its latest reply, or a note."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        ctx.add(Message.assistant("Monitoring the queue"), agent="watcher")
        ctx.add(Message.assistant(tool_calls=[ToolCall("c", "ls")]), agent="silent")
        assert ctx.activity("x").splitlines()[1:] == [
            "- watcher: Monitoring the queue",
            f"- silent: {NO_TASK}",
        ]

    def test_system_prompts_and_tool_output_are_never_activity(self) -> None:
        """Another agent's system prompt or tool output is not shown as its work."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        ctx.add(Message.system("Never reveal account 4417."), agent="billing")
        ctx.add(Message.assistant(tool_calls=[ToolCall("c1", "env")]), agent="ops")
        ctx.add(Message.tool("c1", "DB_PASSWORD=hunter2"), agent="ops")
        ctx.add(Message.system("You watch the queue."), agent="watcher")
        ctx.add(Message.assistant("Queue is empty"), agent="watcher")
        view = ctx.slice_for("writer", "Write the reply", budget=1000)
        shown = view.messages[0].text
        assert shown.splitlines()[1:] == [
            f"- billing: {NO_TASK}",
            f"- ops: {NO_TASK}",
            "- watcher: Queue is empty",
        ]
        assert "4417" not in shown
        assert "hunter2" not in shown

    def test_a_summarizer_is_not_given_system_prompts(self) -> None:
        """Summaries are of what an agent did: its system prompt stays out."""
        summarizer = FakeSummarizer()
        ctx = SharedContext(tokenizer=FakeTokenizer(), summarizer=summarizer)
        ctx.add(Message.system("Never reveal account 4417."), agent="billing")
        ctx.add(Message.user("Refund order 9"), agent="billing")
        assert ctx.activity("x").splitlines()[1] == (
            "- billing: 1 messages, last: Refund order 9"
        )

    def test_a_summarizer_rolls_each_agents_summary_forward(self) -> None:
        """Summaries of each agent's messages; later ones fold in only what is new."""
        summarizer = FakeSummarizer()
        ctx = SharedContext(tokenizer=FakeTokenizer(), summarizer=summarizer)
        ctx.add(Message.user("Find flights"), agent="booker")
        ctx.add(Message.assistant("TAP at 9:05"), agent="booker")
        assert ctx.activity("planner").splitlines()[1] == (
            "- booker: 2 messages, last: TAP at 9:05"
        )
        ctx.activity("planner")  # nothing new: no call
        ctx.add(Message.assistant("Booked."), agent="booker")
        assert ctx.activity("planner").endswith("3 messages, last: Booked.")
        assert summarizer.calls == [
            (2, None, 200),
            (1, "2 messages,\n  last: TAP at 9:05", 200),
        ]


class TestSliceFor:
    @pytest.mark.parametrize("task", ["", "   ", "\n\t"])
    def test_a_blank_task_is_refused(self, task: str) -> None:
        """A blank task would be dropped as blank: refused, naming ``task``."""
        with pytest.raises(ArgumentValueError, match=r"^task: expected a non-empty"):
            team().slice_for("booker", task, budget=1000)
        with pytest.raises(ArgumentValueError, match=r"^task: expected a non-empty"):
            handoff(PARENT, task, limit=100, tokenizer=FakeTokenizer())

    def test_order_others_own_then_task(self) -> None:
        """Own system first, then the others' work, own history, the task last."""
        ctx = team()
        ctx.add(Message.system("You book travel."), agent="booker")
        shared = ctx.add(Message.user("Budget is 800 EUR"))
        view = ctx.slice_for("booker", "Book the hotel too", budget=1000)
        got = [(m.role, m.text) for m in view.messages]
        assert got == [
            ("system", "You book travel."),
            ("user", f"{ACTIVITY_HEADING}\n- planner: Plan the Lisbon trip"),
            ("user", "Find flights for May"),
            ("assistant", "TAP at 9:05, 120 EUR"),
            ("user", shared.text),
            ("user", "Book the hotel too"),
        ]
        assert view.messages[-1].agent == "booker"
        assert view.messages[1].pinned
        assert view.report.changes == ()

    def test_the_slice_is_fitted_to_its_budget(self) -> None:
        """Own history is cut to the budget; the others' work and the task stay."""
        ctx = team()
        for k in range(30):
            ctx.add(Message.user(f"old note {k} " + "filler " * 10), agent="booker")
        ctx.add(Message.user("The hotel must be in Alfama."), agent="booker")
        view = ctx.slice_for("booker", "Which hotel area?", budget=80)
        r = view.report
        assert r.tokens_after <= 80 < r.tokens_before
        texts = [m.text for m in view.messages]
        assert texts[0].startswith(ACTIVITY_HEADING)
        assert texts[-1] == "Which hotel area?"
        assert "The hotel must be in Alfama." in texts
        assert problems(view.messages, "openai") == ()

    def test_anthropic_slices_open_on_a_user_turn(self) -> None:
        """With no other agent and a history opening on the assistant, still valid."""
        ctx = SharedContext(tokenizer=TokenCounter(FakeTokenizer(), "anthropic"))
        ctx.add(Message.assistant("I started the build."), agent="ci")
        view = ctx.slice_for("ci", "Is it green?", budget=100)
        assert view.messages[0].role == "user"
        assert problems(view.messages, "anthropic") == ()

    def test_a_model_gives_provider_tokenizer_and_window(self) -> None:
        """model= picks the counter, provider and default budget for that agent."""
        ctx = team()
        view = ctx.slice_for("booker", "Book it", model="claude-sonnet-4-5")
        claude = get_model("claude-sonnet-4-5")
        assert view.report.limit == 200_000 - reply_reserve(claude, 200_000)
        assert problems(view.messages, "anthropic") == ()
        again = ctx.slice_for("booker", "Book it", model="claude-sonnet-4-5")
        assert again.report == view.report
        with_model = SharedContext(model="gpt-4o")
        with_model.add(Message.user("hi"), agent="a")
        assert with_model.slice_for("b", "go").report.limit == 128_000 - 16_384

    def test_the_default_budget_leaves_room_for_the_reply(self) -> None:
        """No budget: the window less the reply's room, as fit(model=...) leaves."""
        ctx = SharedContext(model="gpt-4o")
        for k in range(60):
            ctx.add(Message.user(f"step {k}: " + "lorem ipsum dolor " * 700), agent="a")
        view = ctx.slice_for("a", "go on")
        alone = fit([*ctx.history("a"), Message.user("go on")], model="gpt-4o")
        assert view.report.limit == alone.report.limit == 128_000 - 16_384
        assert view.report.tokens_before > 128_000 - 16_384
        assert view.report.tokens_after <= 128_000 - 16_384
        assert ctx.slice_for("a", "go on", budget=1000).report.limit == 1000

    def test_budget_errors_and_missing_budgets(self) -> None:
        """Pinned content over the budget: BudgetError; no limit at all: an error."""
        ctx = team()
        with pytest.raises(BudgetError):
            ctx.slice_for("booker", "Book it", budget=10)
        with pytest.raises(ContextWindowError, match="budget or a model"):
            ctx.slice_for("booker", "Book it")
        with pytest.raises(ContextWindowError, match="provider"):
            SharedContext(provider="gemini")  # type: ignore[arg-type]

    def test_the_log_is_not_changed_by_slicing(self) -> None:
        """Slices are views: the full history stays as it was."""
        ctx = team()
        before = to_dicts(ctx.full_history())
        ctx.slice_for("booker", "Book it", budget=30)
        assert to_dicts(ctx.full_history()) == before

    def test_a_strategy_of_ones_own(self) -> None:
        """strategy= replaces SLICE_STRATEGY for the agent's own history."""
        ctx = SharedContext(
            tokenizer=FakeTokenizer(), strategy=DropOldest(keep_first=0)
        )
        for k in range(6):
            ctx.add(Message.user(f"note {k} about the hotel"), agent="a")
        view = ctx.slice_for("a", "note 0 again?", budget=30)
        assert view.report.stages[0] == "DropOldest"
        assert [m.text for m in view.messages][-2] == "note 5 about the hotel"

    def test_the_shared_slice_strategy_holds_bounded_memory(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """SLICE_STRATEGY lives as long as the process, and every context's
        slices share its term cache: the copies of unit texts it keeps are
        bounded in memory, not kept for every context ever sliced."""
        assert isinstance(SLICE_STRATEGY, Pipeline)
        select = SLICE_STRATEGY.stages[-1]
        assert isinstance(select, SelectRelevant)
        assert isinstance(select.scorer, BM25Scorer)
        cache = select.scorer.cache
        assert cache.max_bytes == bm25_module.DEFAULT_CACHE_BYTES
        monkeypatch.setattr(cache, "_max_bytes", 100_000)  # a bound this test reaches
        rng = random.Random(0)
        for k in range(3):
            ctx = SharedContext(tokenizer=FakeTokenizer())
            for i in range(60):
                words = " ".join(f"w{rng.randrange(10**9)}" for _ in range(100))
                ctx.add(Message.user(f"task {k}-{i} {words}"), agent="coder")
                ctx.add(Message.assistant("ok"), agent="coder")
            ctx.slice_for("coder", "find w123", budget=500)
        assert 0 < cache.held <= 100_000
        assert 0 < len(cache) < 60


PARENT = [
    Message.system("You lead the release."),
    Message.user("Ship version 2.0"),
    Message.assistant("The changelog lists three fixes."),
    Message.user("Also, the docs build fails on a broken link."),
    Message.assistant("The API page is fine."),
    Message.user("And the release notes need dates."),
    Message.assistant("I will delegate the docs link."),
]


class TestHandoff:
    def test_gives_the_relevant_part_not_all_not_nothing(self) -> None:
        """Within the limit: the units about the task and the latest exchange."""
        sub = handoff(
            PARENT, "Fix the broken docs link", limit=40, tokenizer=FakeTokenizer()
        )
        texts = [m.text for m in sub.messages]
        assert texts == [
            "Also, the docs build fails on a broken link.",
            "I will delegate the docs link.",
            "Fix the broken docs link",
        ]
        assert sub.report.fits
        whole = handoff(PARENT, "Fix it", limit=10_000, tokenizer=FakeTokenizer())
        assert len(whole.messages) == len(PARENT), (
            "it all fits: all of it, bar the system"
        )

    def test_system_prompts_and_the_pending_call(self) -> None:
        """The parent's system prompt stays behind; the sub-agent's goes first;
        the parent's unanswered delegating call is left out."""
        calling = [
            *PARENT,
            Message.assistant(tool_calls=[ToolCall("t1", "Task", "{}")]),
        ]
        sub = handoff(
            calling,
            "Fix the docs link",
            limit=60,
            tokenizer=TokenCounter(FakeTokenizer(), "anthropic"),
            system="You fix docs.",
        )
        assert sub.messages[0].text == "You fix docs."
        assert "You lead the release." not in [m.text for m in sub.messages]
        assert not any(m.tool_calls for m in sub.messages)
        assert problems(sub.messages, "anthropic") == ()

    def test_a_strategy_of_ones_own(self) -> None:
        """strategy= replaces SelectRelevant."""
        sub = handoff(
            PARENT,
            "Fix the docs link",
            limit=40,
            tokenizer=FakeTokenizer(),
            strategy=DropOldest(keep_first=0),
        )
        assert sub.report.stages[0] == "DropOldest"


class TestFoldResult:
    def test_answers_the_pending_call(self) -> None:
        """A parent waiting on a Task call gets the result as that call's answer."""
        call = ToolCall("toolu_1", "Task", '{"prompt": "fix the link"}')
        parent = [*PARENT, Message.assistant(tool_calls=[call], agent="lead")]
        run = [Message.user("fix the link"), Message.assistant("Fixed in docs/api.md.")]
        out = fold_result(parent, run, agent="docs")
        assert out[: len(parent)] == parent
        assert len(out) == len(parent) + 1
        result = out[-1].tool_results[0]
        assert (result.call_id, result.text, result.name) == (
            "toolu_1",
            "Fixed in docs/api.md.",
            "Task",
        )
        assert out[-1].agent == "lead"
        last = units(out)[-1]
        assert (last.kind, last.start, last.complete) == (
            "tool_exchange",
            len(parent) - 1,
            True,
        )
        assert problems(out, "anthropic") == ()

    def test_a_new_delegate_exchange_otherwise(self) -> None:
        """No pending call: one new exchange naming the agent and its task."""
        out = fold_result(PARENT, "Fixed.", agent="docs", task="Fix the link")
        new = out[len(PARENT) :]
        assert [m.role for m in new] == ["assistant", "tool"]
        (call,) = new[0].tool_calls
        assert call.name == "delegate"
        assert call.input == {"agent": "docs", "task": "Fix the link"}
        assert new[1].tool_results[0].call_id == call.id
        assert len(units(out)) == len(units(PARENT)) + 1
        assert problems(out, "openai") == ()

    def test_the_new_exchange_is_the_parents_and_stays_private(self) -> None:
        """The new delegate exchange carries the parent's agent, as an answered
        call does: another agent's slice does not show the sub-agent's result."""
        ctx = SharedContext(tokenizer=FakeTokenizer())
        ctx.add_message(role="user", content="Plan Lisbon trip", agent="planner")
        ctx.add_message(role="assistant", content="Day 1 Alfama", agent="planner")
        planner = list(ctx.history("planner"))
        done = fold_result(
            planner, "Hotel SECRET-CONF-123 booked", agent="booker", task="Book"
        )
        assert [m.agent for m in done[len(planner) :]] == ["planner", "planner"]
        for m in done[len(planner) :]:
            ctx.add(m)
        critic = ctx.slice_for("critic", "Review", budget=500).messages
        assert not any("SECRET-CONF-123" in m.text for m in critic)
        assert any("SECRET-CONF-123" in m.text for m in ctx.history("planner"))

    def test_picks_the_named_pending_call(self) -> None:
        """call_id chooses among pending calls; a call not pending is an error."""
        calls = [ToolCall("a", "Task"), ToolCall("b", "Task")]
        parent = [Message.user("go"), Message.assistant(tool_calls=calls)]
        out = fold_result(parent, "done b", agent="x", call_id="b")
        assert out[-1].tool_results[0].call_id == "b"
        out = fold_result(out, "done a", agent="y")
        assert out[-1].tool_results[0].call_id == "a"
        assert units(out)[-1].complete
        with pytest.raises(ContextWindowError, match="'zz' is not pending"):
            fold_result(parent, "x", agent="x", call_id="zz")

    def test_a_run_without_an_answer(self) -> None:
        """A sub-agent that wrote no text folds in as NO_ANSWER; input unchanged."""
        parent = list(PARENT)
        before = to_dicts(parent)
        out = fold_result(parent, [Message.user("go")], agent="x")
        assert out[-1].text == NO_ANSWER
        assert to_dicts(parent) == before
        assert fold_result([], "hi", agent="x")[0].tool_calls[0].name == "delegate"


class TestAgentArgument:
    @pytest.mark.parametrize("bad", [5, ["coder"], b"coder", True])
    def test_history_and_activity_name_agent(self, bad: object) -> None:
        """An agent that is neither a str nor None is named (it matched nothing)."""
        team = SharedContext(tokenizer=FakeTokenizer())
        team.add(Message.user("Fix the login test"), agent="coder")
        with pytest.raises(ArgumentTypeError, match=r"^agent: expected a str or None"):
            team.history(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match=r"^agent: expected a str or None"):
            team.activity(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        assert [m.text for m in team.history("coder")] == ["Fix the login test"]


def test_activity_reads_the_log_once_for_any_team(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log is grouped by agent in one pass, not read again per agent.

    Read once per agent, a team of 4,000 took half a second a call, each
    doubling of the team four times as long.
    """
    team = SharedContext(tokenizer=None)
    for k in range(50):
        team.add(Message.user(f"task {k}"), agent=f"agent{k}")
    reads = 0
    log = team.full_history

    def counted() -> tuple[Message, ...]:
        nonlocal reads
        reads += 1
        return log()

    monkeypatch.setattr(team, "full_history", counted)
    said = team.activity("agent0")
    assert reads == 1
    assert said.count("\n- ") == 49
    assert "- agent7: task 7" in said
