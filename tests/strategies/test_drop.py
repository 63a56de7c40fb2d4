from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import contextwindow.strategies.drop as drop
from contextwindow import fit
from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.messages import (
    Message,
    Provider,
    ToolCall,
    ToolResult,
    ToolSpec,
    units,
)
from contextwindow.strategies import Budget, DropOldest, SlidingWindow
from contextwindow.testing import FakeTokenizer, conversations
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.validity import CONTINUED, CONTINUED_ID, problems


def budget(
    limit: int, provider: Provider = "openai", protected: tuple[str, ...] = ()
) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), provider), protected=protected)


def call(cid: str, name: str = "f") -> ToolCall:
    return ToolCall(cid, name, "{}")


def texts(messages: tuple[Message, ...]) -> list[str]:
    return [m.text for m in messages]


def chat() -> list[Message]:
    # Tokens (openai, one per word): 6, 7, 7, 6, 5, 6; 3 more to prime the reply.
    return [
        Message.system("be brief"),
        Message.user("one two three"),
        Message.assistant("four five six"),
        Message.user("seven eight"),
        Message.assistant("nine"),
        Message.user("and now?"),
    ]


class TestDropOldest:
    def test_drops_oldest_first(self) -> None:
        """Unpinned units after the task go oldest first, until the budget is met."""
        conv = chat()
        b = budget(30)
        assert b.count(conv) == 40
        fitted = DropOldest()(conv, b)
        assert texts(fitted.messages) == [
            "be brief",
            "one two three",
            "nine",
            "and now?",
        ]
        r = fitted.report
        assert [
            (c.kind, c.stage, c.index, c.units, c.saved, c.what) for c in r.changes
        ] == [("dropped", "DropOldest", 2, 2, 13, "2 units: 2 messages")]
        assert r.changes[0].ids == (conv[2].id, conv[3].id)
        assert (r.tokens_before, r.tokens_after, r.limit, r.stages) == (
            40,
            27,
            30,
            ("DropOldest",),
        )
        assert r.fits

    def test_nothing_to_do(self) -> None:
        """A conversation that fits comes back whole, as the same objects."""
        conv = chat()
        fitted = DropOldest()(conv, budget(40))
        assert all(a is b for a, b in zip(fitted.messages, conv, strict=True))
        assert fitted.report.changes == ()

    def test_drops_no_more_than_needed(self) -> None:
        """Dropping stops as soon as the conversation fits."""
        fitted = DropOldest()(chat(), budget(33))
        assert len(fitted.messages) == 5
        assert fitted.report.tokens_after == 33

    @pytest.mark.parametrize(
        "results",
        [
            [Message.tool("b", "b " * 20), Message.tool("a", "a " * 20)],
            [Message("tool", (ToolResult("a", "a " * 20), ToolResult("b", "b " * 20)))],
        ],
        ids=["split", "batched"],
    )
    def test_never_splits_an_exchange(self, results: list[Message]) -> None:
        """A tool exchange with parallel calls is dropped whole, never half."""
        exchange = [
            Message.assistant(tool_calls=[call("a", "read"), call("b", "grep")]),
            *results,
        ]
        conv = [
            Message.user("go"),
            *exchange,
            Message.assistant("ok"),
            Message.user("?"),
        ]
        b = budget(30)
        fitted = DropOldest()(conv, b)
        assert texts(fitted.messages) == ["go", "ok", "?"]
        (dropped,) = fitted.report.changes
        assert dropped.ids == tuple(m.id for m in exchange)
        assert (dropped.index, dropped.units) == (1, 1)
        assert dropped.what == f"tool exchange: read, grep ({len(exchange)} messages)"
        assert dropped.saved == sum(b.counter.message(m) for m in exchange)
        assert problems(fitted.messages, "openai") == ()

    def test_keeps_pinned_units_anywhere(self) -> None:
        """Pinned messages stay, with their whole exchange, wherever they are."""
        exchange = [
            Message.assistant(tool_calls=[call("a", "read")]),
            Message.tool("a", "KEEP: the deploy key is 42"),
        ]
        conv = [
            Message.user("old one"),
            Message.user("pinned middle", pinned=True),
            Message.user("filler " * 10),
            *exchange,
            Message.user("recent filler " * 5),
            Message.user("final"),
        ]
        kept = [conv[1], *exchange, conv[-1]]
        b = budget(0, protected=("KEEP:",))
        b = budget(b.count(kept), protected=("KEEP:",))
        fitted = DropOldest()(conv, b)
        assert list(fitted.messages) == kept
        assert [c.index for c in fitted.report.changes] == [0, 2, 5]

    def test_order_is_kept(self) -> None:
        """What is kept keeps its order."""
        conv = [Message.user(f"turn {i}", pinned=i % 2 == 0) for i in range(7)]
        b = budget(budget(0).count([conv[i] for i in (0, 2, 4, 5, 6)]))
        fitted = DropOldest()(conv, b)
        assert texts(fitted.messages) == [
            "turn 0",
            "turn 2",
            "turn 4",
            "turn 5",
            "turn 6",
        ]

    def test_budget_error(self) -> None:
        """Pinned content alone too big: the error says what, largest first."""
        conv = [
            Message.system("You are a careful assistant."),
            Message.user("old"),
            Message.user("note KEEP: the key is 42"),
            Message.user("x", pinned=True),
            Message.assistant(tool_calls=[call("a", "read")], pinned=True),
            Message.tool("a", "file body here"),
        ]
        b = budget(1, protected=("KEEP:",))
        with pytest.raises(BudgetError) as info:
            DropOldest()(conv, b)
        err = info.value
        assert err.budget == 1
        assert err.required == b.count([conv[i] for i in (0, 2, 3, 4, 5)]) == 43
        assert err.pinned == (
            "tool exchange: read (2 messages) #4 (final message, pinned): 16 tokens",
            "user message #2 (protected marker): 10 tokens",
            "system message #0 (system): 9 tokens",
            "user message #3 (pinned): 5 tokens",
            "request overhead (reply priming, tool schemas): 3 tokens",
        )
        assert str(err).startswith("cannot fit 43 tokens into a budget of 1: tool")

    def test_budget_error_final_message(self) -> None:
        """The final message is named as such."""
        conv = [Message.user("a b c"), Message.user("the last word")]
        with pytest.raises(BudgetError) as info:
            DropOldest()(conv, budget(5))
        assert info.value.pinned == (
            "user message #1 (final message): 7 tokens",
            "request overhead (reply priming, tool schemas): 3 tokens",
        )
        assert info.value.required == 10

    @pytest.mark.parametrize("strategy", [None, "relevant", "drop_oldest"])
    def test_budget_error_names_the_place_in_what_was_given(
        self, strategy: str | None
    ) -> None:
        """Whatever stage ran before (runs collapsed, results cleared), the
        error names each message at its place in the conversation given."""
        conv = [Message.system("s"), Message.user("go")]
        for i in range(10):
            conv += [
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "f")]),
                Message.tool(f"c{i}", f"result {i} " * 200),
            ]
        with pytest.raises(BudgetError) as info:
            fit(conv, limit=400, tokenizer=FakeTokenizer(), strategy=strategy)
        assert info.value.pinned[:2] == (
            "tool exchange: f (2 messages) #20 (final message): 413 tokens",
            "system message #0 (system): 5 tokens",
        )

    def test_budget_error_lists_five(self) -> None:
        """Beyond five pinned units, the error says how many more."""
        conv = [Message.user("w " * (i + 1), pinned=True) for i in range(7)]
        with pytest.raises(BudgetError) as info:
            DropOldest()(conv, budget(10))
        shown = info.value.pinned
        assert len(shown) == 6
        assert shown[0] == "user message #6 (pinned): 11 tokens"
        assert shown[4] == "user message #2 (pinned): 7 tokens"
        assert shown[5] == "and 3 more"  # two messages and the request overhead

    def test_budget_error_names_the_overhead(self) -> None:
        """An empty request that cannot fit names the request overhead."""
        with pytest.raises(BudgetError) as info:
            DropOldest()([], budget(0))
        assert (info.value.required, info.value.pinned) == (
            3,
            ("request overhead (reply priming, tool schemas): 3 tokens",),
        )

    def test_budget_error_tool_schemas(self) -> None:
        """Tool schemas are part of the overhead named."""
        b = Budget(
            5,
            TokenCounter(FakeTokenizer()),
            tools=(ToolSpec("ping", "Ping a host"),),
        )
        with pytest.raises(BudgetError) as info:
            DropOldest()([Message.user("hi")], b)
        assert info.value.pinned == (
            "request overhead (reply priming, tool schemas): 29 tokens",
            "user message #0 (final message): 5 tokens",
        )

    def test_budget_error_without_overhead(self) -> None:
        """Anthropic has no reply priming: no overhead to name."""
        with pytest.raises(BudgetError) as info:
            DropOldest()([Message.user("a b c d")], budget(2, "anthropic"))
        assert info.value.pinned == ("user message #0 (final message): 7 tokens",)

    def test_keeps_the_last_valid_message(self) -> None:
        """When the last message is one a repair drops, the turn before is kept."""
        conv = [
            Message.user("hello"),
            Message.user("the question that matters"),
            Message.assistant(""),  # an empty reply: ensure_valid drops it
        ]
        fitted = DropOldest()(conv, budget(12))  # 20 tokens; 11 once repaired
        assert texts(fitted.messages) == ["the question that matters"]
        with pytest.raises(BudgetError) as info:
            DropOldest()(conv[1:], budget(5))
        assert info.value.pinned[0] == "user message #0 (final message): 8 tokens"

    def test_anthropic_placeholder_costs_tokens(self) -> None:
        """When the first-turn repair costs tokens, one more unit goes."""
        # Anthropic, one token a word: 3 + 6, 3 + 1, 3 + 1; no reply priming.
        conv = [
            Message.user("one two three four five six"),
            Message.assistant("a"),
            Message.user("b"),
        ]
        # Without keep_first, dropping the first unit alone would leave 8 tokens,
        # but the placeholder the repair puts before "a" costs 4 more.
        fitted = DropOldest(keep_first=0)(conv, budget(8, "anthropic"))
        assert texts(fitted.messages) == ["b"]
        r = fitted.report
        assert [(c.kind, c.index, c.units, c.saved) for c in r.changes] == [
            ("dropped", 0, 2, 13),
        ]
        assert (r.tokens_after, r.fits) == (4, True)

    def test_anthropic_placeholder_reported(self) -> None:
        """When the placeholder fits, it is kept and reported as a repair."""
        conv = [
            Message.user("one two three four five six"),
            Message.assistant("a"),
            Message.user("b"),
        ]
        fitted = DropOldest(keep_first=0)(conv, budget(12, "anthropic"))
        assert [(m.text, m.id) for m in fitted.messages[:1]] == [
            (CONTINUED, CONTINUED_ID)
        ]
        assert texts(fitted.messages)[1:] == ["a", "b"]
        r = fitted.report
        assert [(c.kind, c.index, c.saved) for c in r.changes] == [
            ("dropped", 0, 9),
            ("repaired", 1, -4),
        ]
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after == 12

    def test_anthropic_task_kept(self) -> None:
        """Kept, the task opens Anthropic's conversation on a user turn: no repair."""
        conv = [
            Message.user("one two three four five six"),
            Message.assistant("a"),
            Message.user("b"),
        ]
        fitted = DropOldest()(conv, budget(13, "anthropic"))
        assert list(fitted.messages) == [conv[0], conv[2]]
        assert [(c.kind, c.index) for c in fitted.report.changes] == [("dropped", 1)]

    def test_exact_tokenizer(self) -> None:
        """With real BPE counts, the output fits and the sums add up."""
        counter = TokenCounter(BPETokenizer("o200k_base"))
        conv = [Message.system("Answer in French.")] + [
            Message.user(f"Question {i}: what is {i} squared?")
            if i % 2 == 0
            else Message.assistant(f"{i} squared is {i * i}.")
            for i in range(20)
        ]
        b = Budget(80, counter)
        r = DropOldest()(conv, b).report
        assert r.tokens_after <= 80 < r.tokens_after + r.changes[-1].saved
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_never_mutates(self) -> None:
        """The input is left as it was."""
        conv = chat()
        before = copy.deepcopy(conv)
        ids = [m.id for m in conv]
        DropOldest()(conv, budget(20))
        assert conv == before
        assert [m.id for m in conv] == ids


class TestRefit:
    """A re-fit resumes from the cut it made last, and equals a fit from scratch."""

    @staticmethod
    def history(n: int) -> list[Message]:
        conv = [Message.system("be brief"), Message.user("the task")]
        for k in range(n):
            conv += [
                Message.user(f"question {k} " + "word " * 6),
                Message.assistant(tool_calls=[call(f"c{k}")]),
                Message.tool(f"c{k}", "out " * 12),
            ]
        return conv

    @staticmethod
    def shrunk(
        conv: list[Message], kept: tuple[Message, ...], text: str
    ) -> list[Message]:
        """``conv`` with the results ``kept`` holds cut to ``text``."""
        ids = {m.id for m in kept}
        return [
            Message.tool(m.tool_results[0].call_id, text)
            if m.role == "tool" and m.id in ids
            else m
            for m in conv
        ]

    def test_fewer_drops_when_what_is_kept_shrank(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A result after the cut cut short since (an earlier stage's doing):
        the last drops come back, oldest first as from scratch, without
        grouping the conversation again."""
        conv = self.history(30)
        counter = TokenCounter(FakeTokenizer())
        strategy = DropOldest()
        first = fit(conv, limit=300, strategy=strategy, tokenizer=counter)
        dropped = sum(c.units for c in first.report.changes)
        # The kept results shrink: much less needs to go.
        shrunk = self.shrunk(conv, first.messages, "short")
        shrunk.append(Message.user("and now?"))

        def no_full_path(*args: object, **kw: object) -> object:
            raise AssertionError("the conversation was grouped from scratch")

        monkeypatch.setattr(drop, "pinned_units", no_full_path)
        again = fit(shrunk, limit=300, strategy=strategy, tokenizer=counter)
        monkeypatch.undo()
        fresh = fit(shrunk, limit=300, strategy=DropOldest(), tokenizer=FakeTokenizer())
        assert again.messages == fresh.messages
        assert [m.id for m in again.messages] == [m.id for m in fresh.messages]
        assert again.report == fresh.report
        assert 0 < sum(c.units for c in again.report.changes) < dropped
        assert again.report.tokens_after <= 300

    def test_the_whole_run_back_is_fitted_from_scratch(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When the last run (after a pinned message) would come back whole,
        drops before it may come back too: the fit starts over, and equals
        one from scratch."""
        conv = self.history(30)
        conv[65] = Message.user(conv[65].text, pinned=True)
        counter = TokenCounter(FakeTokenizer())
        first = fit(conv, limit=300, strategy=DropOldest(), tokenizer=counter)
        assert [(c.index, c.units) for c in first.report.changes] == [(2, 42), (66, 3)]
        shrunk = self.shrunk(conv, first.messages, "-")
        undone: list[object] = []
        undrop = drop._undrop  # pyright: ignore[reportPrivateUsage]  # the path under test

        def spy(*args: object) -> object:
            undone.append(undrop(*args))  # type: ignore[arg-type]  # passed through
            return undone[-1]

        monkeypatch.setattr(drop, "_undrop", spy)
        again = fit(shrunk, limit=300, strategy=DropOldest(), tokenizer=counter)
        monkeypatch.undo()
        fresh = fit(shrunk, limit=300, strategy=DropOldest(), tokenizer=FakeTokenizer())
        assert undone == [None]
        assert again.messages == fresh.messages
        assert again.report == fresh.report
        # The later run comes back whole; the one before stays (what is still
        # needed ends in the step its last unit starts in).
        assert [(c.index, c.units) for c in again.report.changes] == [(2, 42)]


class TestKeepFirst:
    def test_default_keeps_the_task(self) -> None:
        """By default the first turn (the task) stays while newer units go."""
        conv = [
            Message.system("You are a coding agent."),
            Message.user("fix the login bug"),
            Message.assistant(tool_calls=[call("a", "read")]),
            Message.tool("a", "w " * 30),
            Message.assistant(tool_calls=[call("b", "grep")]),
            Message.tool("b", "w " * 30),
            Message.user("status?"),
        ]
        assert DropOldest().keep_first == 1
        b = budget(40)
        fitted = DropOldest()(conv, b)
        assert list(fitted.messages) == [conv[0], conv[1], conv[-1]]
        (run,) = fitted.report.changes
        assert (run.index, run.units) == (2, 2)
        assert run.what == "2 units: 2 tool exchanges (read, grep)"
        assert run.saved == sum(b.counter.message(m) for m in conv[2:6])

    def test_task_goes_when_newer_units_are_not_enough(self) -> None:
        """When dropping every newer unit is not enough, the drop is oldest first."""
        conv = chat()  # 40 tokens: 6 | 7 7 6 5 | 6, and 3 to prime the reply
        # Without the three turns after the task: 22 tokens, one too many.
        fitted = DropOldest()(conv, budget(21))
        # Plain oldest first then keeps a recent turn rather than the task.
        assert texts(fitted.messages) == ["be brief", "nine", "and now?"]
        (run,) = fitted.report.changes
        assert (run.index, run.units, run.saved) == (1, 3, 20)
        assert run.ids == tuple(m.id for m in conv[1:4])
        assert fitted.report.tokens_after == 20
        assert fitted == DropOldest(keep_first=0)(conv, budget(21))
        # Once no other unit is left, the task goes too.
        fitted = DropOldest()(conv, budget(15))
        assert texts(fitted.messages) == ["be brief", "and now?"]
        assert [(c.index, c.units) for c in fitted.report.changes] == [(1, 4)]

    def test_keep_first_two(self) -> None:
        """``keep_first=2`` keeps the first two units while later ones go."""
        conv = chat()
        fitted = DropOldest(keep_first=2)(conv, budget(30))
        assert texts(fitted.messages) == [
            "be brief",
            "one two three",
            "four five six",
            "and now?",
        ]
        (run,) = fitted.report.changes
        assert (run.index, run.units, run.saved) == (3, 2, 11)

    def test_keep_first_zero(self) -> None:
        """``keep_first=0`` drops strictly oldest first."""
        conv = chat()
        fitted = DropOldest(keep_first=0)(conv, budget(30))
        assert texts(fitted.messages) == ["be brief", "seven eight", "nine", "and now?"]
        (run,) = fitted.report.changes
        assert (run.index, run.units, run.saved) == (1, 2, 14)
        assert run.ids == (conv[1].id, conv[2].id)
        assert DropOldest(0) != DropOldest()

    def test_system_units_not_counted(self) -> None:
        """System messages are not the task: the first other unit is."""
        conv = [Message.system("s"), Message.system("t"), *chat()[1:]]
        fitted = DropOldest()(conv, budget(33))
        assert texts(fitted.messages)[:3] == ["s", "t", "one two three"]
        assert [c.index for c in fitted.report.changes] == [3]

    def test_pinned_lead_unit(self) -> None:
        """A pinned unit among the first ones takes its place there, and stays."""
        conv = chat()
        conv[1] = Message.user("one two three", pinned=True)
        # The pinned turn is the one kept first: the turn after it is not.
        fitted = DropOldest()(conv, budget(30))
        assert texts(fitted.messages) == [
            "be brief",
            "one two three",
            "nine",
            "and now?",
        ]
        assert [(c.index, c.units) for c in fitted.report.changes] == [(2, 2)]
        # With two kept first, the turn after it stays while later ones go.
        fitted = DropOldest(keep_first=2)(conv, budget(30))
        assert texts(fitted.messages)[:3] == [
            "be brief",
            "one two three",
            "four five six",
        ]
        # When everything must go, the pinned one still stays.
        fitted = DropOldest(keep_first=2)(conv, budget(22))
        assert texts(fitted.messages) == ["be brief", "one two three", "and now?"]
        assert [(c.index, c.units) for c in fitted.report.changes] == [(2, 3)]

    def test_negative(self) -> None:
        """A negative ``keep_first`` fails at construction."""
        with pytest.raises(
            ContextWindowError, match="keep_first: expected an int >= 0, got -1"
        ):
            DropOldest(keep_first=-1)


class TestDroppedRuns:
    def test_pinned_units_split_runs(self) -> None:
        """A pinned unit between dropped ones ends a run; the next starts after it."""
        conv = [
            Message.user(f"turn {i}", pinned=i == 3) for i in range(7)
        ]  # 6 tokens each
        for strategy in (DropOldest(keep_first=0), SlidingWindow(1)):
            fitted = strategy(conv, budget(15))
            assert texts(fitted.messages) == ["turn 3", "turn 6"]
            runs = fitted.report.changes
            assert [(c.index, c.units, c.saved) for c in runs] == [
                (0, 3, 18),
                (4, 2, 12),
            ]
            assert [c.ids for c in runs] == [
                tuple(m.id for m in conv[0:3]),
                tuple(m.id for m in conv[4:6]),
            ]
            assert [c.what for c in runs] == [
                "3 units: 3 messages",
                "2 units: 2 messages",
            ]

    @pytest.mark.parametrize("keep_first", [0, 1, 3])
    def test_runs_add_up(self, keep_first: int) -> None:
        """Runs cover each dropped message once, in order, with their tokens."""
        conv = [Message.system("s")]
        for i in range(8):
            conv += [
                Message.user(f"q{i} " + "w " * i, pinned=i == 5),
                Message.assistant(tool_calls=[call(f"c{i}", f"t{i % 3}")]),
                Message.tool(f"c{i}", "out " * (i + 1)),
            ]
        conv.append(Message.user("done?"))
        b = budget(60)
        fitted = DropOldest(keep_first=keep_first)(conv, b)
        r = fitted.report
        assert len(r.changes) == 2  # the pinned turn splits what goes
        assert all(c.kind == "dropped" for c in r.changes)
        kept = {m.id for m in fitted.messages}
        dropped = tuple(m.id for m in conv if m.id not in kept)
        assert tuple(i for c in r.changes for i in c.ids) == dropped
        for c in r.changes:
            run = conv[c.index : c.index + len(c.ids)]
            assert tuple(m.id for m in run) == c.ids
            assert c.saved == sum(b.counter.message(m) for m in run)
        gone = [u for u in units(conv) if conv[u.start].id not in kept]
        assert sum(c.units for c in r.changes) == len(gone) > 3
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after
        assert r.fits
        # A run never holds a kept message: runs are separated by kept ones.
        assert all(i not in kept for c in r.changes for i in c.ids)


class TestSlidingWindow:
    def test_keeps_the_last_units(self) -> None:
        """Only the last ``keep_last`` units are kept."""
        conv = [Message.user(f"turn {i}") for i in range(5)]
        fitted = SlidingWindow(2)(conv, budget(1000))
        assert texts(fitted.messages) == ["turn 3", "turn 4"]
        r = fitted.report
        assert [
            (c.stage, c.kind, c.index, c.units, c.saved, c.what) for c in r.changes
        ] == [("SlidingWindow", "dropped", 0, 3, 18, "3 units: 3 messages")]
        assert r.changes[0].ids == tuple(m.id for m in conv[:3])
        assert r.stages == ("SlidingWindow",)

    def test_system_not_counted(self) -> None:
        """System messages are kept and do not use up the window."""
        conv = [Message.system("s"), *(Message.user(f"turn {i}") for i in range(5))]
        fitted = SlidingWindow(2)(conv, budget(1000))
        assert texts(fitted.messages) == ["s", "turn 3", "turn 4"]

    def test_pinned_before_the_window(self) -> None:
        """A pinned unit before the window is kept, in its place."""
        conv = [Message.user(f"turn {i}", pinned=i == 1) for i in range(5)]
        fitted = SlidingWindow(2)(conv, budget(1000))
        assert texts(fitted.messages) == ["turn 1", "turn 3", "turn 4"]

    def test_protected_marker(self) -> None:
        """A protected marker pins a message before the window."""
        conv = [Message.user("KEEP this"), *(Message.user(f"t{i}") for i in range(3))]
        fitted = SlidingWindow(1)(conv, budget(1000, protected=("KEEP",)))
        assert texts(fitted.messages) == ["KEEP this", "t2"]

    def test_keeps_the_last_valid_message(self) -> None:
        """A window over an empty final reply still holds the turn before it."""
        conv = [
            Message.user("hello"),
            Message.assistant("hi"),
            Message.user("the question that matters"),
            Message.assistant(""),
        ]
        fitted = SlidingWindow(1)(conv, budget(1000))
        assert texts(fitted.messages) == ["the question that matters"]

    def test_keep_none(self) -> None:
        """``keep_last=0`` keeps only what is pinned: system and final message."""
        conv = [Message.system("s"), *(Message.user(f"turn {i}") for i in range(3))]
        fitted = SlidingWindow(0)(conv, budget(1000))
        assert texts(fitted.messages) == ["s", "turn 2"]

    def test_window_larger_than_the_conversation(self) -> None:
        """A window wider than the conversation keeps all of it."""
        conv = chat()
        fitted = SlidingWindow(50)(conv, budget(1000))
        assert all(a is b for a, b in zip(fitted.messages, conv, strict=True))
        assert fitted.report.changes == ()

    def test_exchange_is_one_unit(self) -> None:
        """A tool exchange counts as one unit and is kept or dropped whole."""
        exchange = [
            Message.assistant(tool_calls=[call("a"), call("b")]),
            Message.tool("a", "1"),
            Message.tool("b", "2"),
        ]
        conv = [Message.user("go"), *exchange, Message.user("thanks")]
        fitted = SlidingWindow(2)(conv, budget(1000))
        assert list(fitted.messages) == [*exchange, conv[-1]]
        fitted = SlidingWindow(1)(conv, budget(1000))
        assert list(fitted.messages) == [conv[-1]]
        (run,) = fitted.report.changes
        assert run.ids == tuple(m.id for m in conv[:-1])
        assert (run.index, run.units) == (0, 2)
        assert run.what == "2 units: 1 tool exchange (f), 1 message"

    def test_ignores_the_budget(self) -> None:
        """The window is its rule; whether it fits is for the report to say."""
        conv = [Message.user(f"turn {i}") for i in range(5)]
        fitted = SlidingWindow(3)(conv, budget(0))
        assert len(fitted.messages) == 3
        assert not fitted.report.fits

    def test_anthropic_window_opening_on_the_assistant(self) -> None:
        """A window that opens on the assistant's turn gets the placeholder."""
        conv = [Message.user("q1"), Message.assistant("a1"), Message.user("q2")]
        fitted = SlidingWindow(2)(conv, budget(1000, "anthropic"))
        assert texts(fitted.messages) == [CONTINUED, "a1", "q2"]
        assert fitted.report.changes[-1].kind == "repaired"

    def test_default_and_negative(self) -> None:
        """The window defaults to 20 units; a negative one is an error."""
        assert SlidingWindow().keep_last == 20
        with pytest.raises(ContextWindowError, match="keep_last: expected an int >= 0"):
            SlidingWindow(-1)


def test_a_summary_standing_as_a_thinking_loops_task_may_go() -> None:
    """Anthropic: a summary right before a loop that opened with thinking is the
    loop's task, pinned with its opener. It stands for messages the history
    holds, so like any summary it goes when the pinned content alone is over
    budget, and the error names only what is pinned otherwise (it counted the
    summary, over the pinned content a fresh count gives)."""
    from contextwindow.messages import Thinking
    from contextwindow.summarizers.record import SUMMARY_KEY
    from contextwindow.validity import ensure_valid

    summary = Message.user(
        "[Summary of 9 earlier messages] " + "fact " * 40, meta={SUMMARY_KEY: {}}
    )
    opener = Message.assistant(
        [Thinking("Plan.", signature="c2ln")],
        tool_calls=[ToolCall("t1", "read_file", '{"path": "a.py"}')],
    )
    conv = [summary, opener, Message.tool("t1", "x " * 200)]
    counter = TokenCounter(FakeTokenizer(), "anthropic")
    # The loop alone, as sent: a repair puts its placeholder turn first.
    loop = counter.messages(ensure_valid([opener, conv[2]], "anthropic").messages)
    with pytest.raises(BudgetError) as caught:
        DropOldest()(conv, Budget(loop // 2, counter))
    assert caught.value.required <= loop
    assert not any("summary" in row for row in caught.value.pinned)


@settings(max_examples=60, deadline=None)
@given(conversations(max_turns=8), st.data())
def test_dropped_runs_are_the_maximal_runs_not_kept(
    conv: list[Message], data: st.DataObject
) -> None:
    """One change per maximal run of units not kept, described by ``describe_run``."""
    from contextwindow.messages import units
    from contextwindow.strategies.base import describe_run

    us = units(conv)
    keep = data.draw(st.lists(st.booleans(), min_size=len(us), max_size=len(us)))
    cost = list(range(1, len(us) + 1))
    changes = drop.dropped_runs("S", conv, us, keep, cost)
    runs: list[tuple[int, int]] = []
    for k, kept in enumerate(keep):
        if not kept:
            if runs and runs[-1][1] == k:
                runs[-1] = (runs[-1][0], k + 1)
            else:
                runs.append((k, k + 1))
    assert [(c.index, c.units) for c in changes] == [
        (us[a].start, b - a) for a, b in runs
    ]
    for c, (a, b) in zip(changes, runs, strict=True):
        assert c.what == describe_run(conv, us[a:b])
        assert c.tokens_before == sum(cost[a:b])
        assert c.ids == tuple(m.id for m in conv[us[a].start : us[b - 1].stop])
