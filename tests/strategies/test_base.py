from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow.errors import ContextWindowError
from contextwindow.messages import (
    Image,
    Message,
    Provider,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    units,
)
from contextwindow.strategies import DropOldest, Pipeline
from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    Report,
    RunTally,
    describe,
    describe_run,
    final_indices,
    finish,
    pinned_flags,
    relocate,
    stage_name,
)
from contextwindow.testing import FakeTokenizer, conversations
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.validity import CONTINUED, CONTINUED_ID, problems


def budget(limit: int = 1000, provider: Provider = "openai", **kw: Any) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), provider), **kw)


def call(cid: str, name: str = "f") -> ToolCall:
    return ToolCall(cid, name, "{}")


def change(kind: ChangeKind = "dropped", saved: int = 10, index: int = 0) -> Change:
    return Change(kind, "S", ("m",), index, saved, 0, "user message")


class TestBudget:
    def test_negative_limit(self) -> None:
        """A negative limit is a configuration error; zero is a budget."""
        with pytest.raises(ContextWindowError, match=r"^limit: expected an int >= 0"):
            budget(-1)
        assert budget(0).limit == 0

    def test_count_and_fits(self) -> None:
        """The request is counted with framing and reply priming."""
        b = budget(9)
        conv = [Message.user("two words")]  # 3 + "user" + 2, then 3 to prime
        assert b.count(conv) == 9
        assert b.fits(conv)
        assert not budget(8).fits(conv)

    def test_tools_counted(self) -> None:
        """Tool schemas sent with the request count against the budget."""
        tools = [ToolSpec("ping", "Ping a host")]
        b = budget(100, tools=tools)
        conv = [Message.user("two words")]
        assert b.tools == tuple(tools)
        assert b.count(conv) == b.counter.messages(conv, tools=tools) == 35
        assert b.count(conv) > budget(100).count(conv)

    def test_provider_is_the_counters(self) -> None:
        """The budget's provider is its counter's."""
        assert budget(provider="anthropic").provider == "anthropic"
        assert budget().provider == "openai"

    def test_markers_become_a_tuple(self) -> None:
        """Markers given in any iterable are kept as a tuple."""
        assert budget(protected=["KEEP", "TODO"]).protected == ("KEEP", "TODO")

    def test_string_is_one_marker(self) -> None:
        """A lone string is one marker, not one per character."""
        b = budget(protected="KEEP")
        assert b.protected == ("KEEP",)
        conv = [Message.user("Kites"), Message.user("last")]
        assert pinned_flags(conv, b.protected) == [False, True]

    def test_empty_marker(self) -> None:
        """An empty marker would pin every message: an error."""
        with pytest.raises(ContextWindowError, match="markers that are not empty"):
            budget(protected=["KEEP", ""])

    def test_history(self) -> None:
        """The conversation as its owner holds it: no setting, a sequence."""
        conv = [Message.user("a")]
        b = budget(history=conv)
        assert b.history is conv
        plain = Budget(b.limit, b.counter)
        assert (b, b.settings) == (plain, plain.settings)  # no decision keyed by it
        with pytest.raises(ContextWindowError, match=r"^history: expected a sequence"):
            budget(history=iter(conv))


class TestChange:
    def test_saved(self) -> None:
        """Saved is tokens before minus tokens after, negative for an insert."""
        assert Change("truncated", "T", ("m",), 2, 120, 20, "x").saved == 100
        assert Change("repaired", "ensure_valid", ("m",), 0, 0, 5, "x").saved == -5

    def test_units_default_to_one(self) -> None:
        """A change covers one unit unless it says how many."""
        assert change().units == 1
        run = Change("dropped", "S", ("a", "b", "c"), 2, 30, 0, "3 units", 3)
        assert (run.units, run.saved) == (3, 30)


class TestReport:
    def test_totals(self) -> None:
        """Totals count changes and add their savings, per kind."""
        r = Report(
            100,
            40,
            50,
            (change("dropped", 30), change("truncated", 20), change("dropped", 10)),
        )
        assert r.totals() == {"dropped": (2, 40), "truncated": (1, 20)}
        assert Report(5, 5, 5).totals() == {}

    def test_fits_and_saved(self) -> None:
        """Fits compares tokens after with the limit; saved is before minus after."""
        assert Report(100, 50, 50).fits
        assert not Report(100, 51, 50).fits
        assert Report(100, 51, 50).saved == 49

    def test_then(self) -> None:
        """A later report extends an earlier one: changes and stages joined."""
        first = Report(100, 70, 60, (change(saved=30),), ("A",))
        later = Report(70, 50, 55, (change("truncated", 20),), ("B",))
        joined = first.then(later)
        assert (joined.tokens_before, joined.tokens_after, joined.limit) == (
            100,
            50,
            55,
        )
        assert joined.changes == first.changes + later.changes
        assert joined.stages == ("A", "B")


class TestPinnedFlags:
    def test_each_reason(self) -> None:
        """System, pinned, marked and final messages are pinned; others not."""
        conv = [
            Message.system("s"),
            Message.user("plain"),
            Message.user("x", pinned=True),
            Message.user("note KEEP: id 7"),
            Message.assistant(tool_calls=[call("a")]),
            Message.tool("a", "output with KEEP: inside"),
            Message.user("other marker TODO"),
            Message.user("last"),
        ]
        assert pinned_flags(conv, ["KEEP:", "TODO"]) == [
            True,
            False,
            True,
            True,
            False,
            True,
            True,
            True,
        ]

    def test_placeholder_never_marked(self) -> None:
        """The placeholder turn is not pinned by a marker found in its text."""
        placeholder = Message.user(CONTINUED, id=CONTINUED_ID)
        copy = Message.user(CONTINUED)
        conv = [placeholder, copy, Message.user("last")]
        assert pinned_flags(conv, ["cont"]) == [False, True, True]

    def test_without_markers(self) -> None:
        """Without markers, text plays no part."""
        conv = [Message.user("KEEP:"), Message.assistant("ok")]
        assert pinned_flags(conv) == [False, True]

    def test_empty(self) -> None:
        """No messages, no flags."""
        assert pinned_flags([], ["KEEP"]) == []

    def test_final_valid_message(self) -> None:
        """With a provider, the last message its repairs keep is pinned too."""
        conv = [
            Message.user("a"),
            Message.user("b"),
            Message.assistant(""),
            Message.tool("zz", "stale"),
        ]
        assert pinned_flags(conv) == [False, False, False, True]
        assert pinned_flags(conv, (), "openai") == [False, True, False, True]
        assert pinned_flags(conv[:2], (), "openai") == [False, True]
        assert pinned_flags([Message.assistant("")], (), "openai") == [True]

    def test_final_indices(self) -> None:
        """The final message, and the last one a provider will see when other."""
        q = Message.user("q")
        image = Message.assistant([Image("https://example.com/a.png")])
        assert final_indices([], "openai") == ()
        assert final_indices([q, Message.system("s")], "openai") == (1,)
        assert final_indices([q, image], "anthropic") == (1,)
        assert final_indices([q, Message.assistant("")], "openai") == (1, 0)
        assert final_indices([q, Message.assistant("")]) == (1,)
        assert final_indices([Message.assistant("")], "openai") == (0,)
        answered = [
            q,
            Message.assistant(tool_calls=[call("a")]),
            Message.tool("a", "1"),
        ]
        assert final_indices(answered, "openai") == (2,)
        assert final_indices(answered[:2], "openai") == (1, 0)

    def test_string_is_one_marker(self) -> None:
        """A lone string is one marker, here too."""
        assert pinned_flags([Message.user("K"), Message.user("z")], "KEEP") == [
            False,
            True,
        ]

    def test_final_message(self) -> None:
        """The final message is pinned, whatever its role."""
        assert pinned_flags([Message.user("a"), Message.tool("c", "out")]) == [
            False,
            True,
        ]


class TestDescribe:
    def test_kinds(self) -> None:
        """Each unit kind has a short description; tool names appear once."""
        conv = [
            Message.system("s"),
            Message.user("hi"),
            Message.assistant(
                tool_calls=[call("1", "ls"), call("2", "cat"), call("3", "ls")]
            ),
            Message.tool("1", "a"),
            Message.tool("2", "b"),
            Message.tool("3", "c"),
            Message.tool("zz", "?"),
        ]
        assert [describe(conv, u) for u in units(conv)] == [
            "system message",
            "user message",
            "tool exchange: ls, cat (4 messages)",
            "orphan tool results (1 messages)",
        ]


class TestDescribeRun:
    def test_one_unit(self) -> None:
        """A run of one unit reads as the unit itself."""
        conv = [Message.user("hi"), Message.assistant(tool_calls=[call("1", "ls")])]
        conv.append(Message.tool("1", "a"))
        us = units(conv)
        assert describe_run(conv, us[:1]) == "user message"
        assert describe_run(conv, us[1:]) == "tool exchange: ls (2 messages)"

    def test_singular_and_plural(self) -> None:
        """Counts agree with their nouns."""
        conv = [
            Message.user("a"),
            Message.assistant(tool_calls=[call("1", "ls")]),
            Message.tool("1", "x"),
            Message.user("b"),
            Message.assistant(tool_calls=[call("2", "cat")]),
            Message.tool("2", "y"),
        ]
        us = units(conv)
        assert describe_run(conv, us[:2]) == "2 units: 1 tool exchange (ls), 1 message"
        assert describe_run(conv, us) == (
            "4 units: 2 tool exchanges (ls, cat), 2 messages"
        )
        assert describe_run(conv, [us[0], us[2]]) == "2 units: 2 messages"

    def test_orphans(self) -> None:
        """Orphan results are counted as groups, one per unit."""
        conv = [
            Message.tool("zz", "?"),
            Message.tool("yy", "?"),
            Message.user("a"),
            Message.tool("xx", "?"),
        ]
        us = units(conv)
        assert [u.kind for u in us] == ["orphan_results", "message", "orphan_results"]
        assert describe_run(conv, us[:2]) == "2 units: 1 message, 1 orphan result group"
        assert describe_run(conv, us) == "3 units: 1 message, 2 orphan result groups"

    def test_names_once_and_at_most_four(self) -> None:
        """Tool names appear once each, in order; past four, ``...`` ends them."""

        def exchanges(*names: str) -> list[Message]:
            out: list[Message] = []
            for k, name in enumerate(names):
                out += [
                    Message.assistant(tool_calls=[call(f"c{k}", name)]),
                    Message.tool(f"c{k}", "out"),
                ]
            return out

        conv = exchanges("ls", "cat", "ls", "grep", "sed")
        assert describe_run(conv, units(conv)) == (
            "5 units: 5 tool exchanges (ls, cat, grep, sed)"
        )
        conv = exchanges("a", "b", "c", "d", "e", "f")
        assert describe_run(conv, units(conv)) == (
            "6 units: 6 tool exchanges (a, b, c, d, ...)"
        )
        parallel = [
            Message.assistant(tool_calls=[call(str(k), f"t{k}") for k in range(5)]),
            *(Message.tool(str(k), "out") for k in range(5)),
            Message.user("next"),
        ]
        assert describe_run(parallel, units(parallel)) == (
            "2 units: 1 tool exchange (t0, t1, t2, t3, ...), 1 message"
        )


@settings(max_examples=200, deadline=None)
@given(conversations(), st.data())
def test_describe_run_says_what_the_tally_gathers(
    conv: list[Message], data: st.DataObject
) -> None:
    """``describe_run`` counts at C speed what ``RunTally.add`` counts unit by
    unit (a strategy extending a run adds units to its tally): the same text."""
    us = units(conv)
    a = data.draw(st.integers(0, len(us)))
    b = data.draw(st.integers(a, len(us)))
    tally = RunTally()
    for u in us[a:b]:
        tally.add(conv, u)
    assert describe_run(conv, us[a:b]) == tally.text()
    # Extending a tally that holds units already adds as ``add`` does.
    split = data.draw(st.integers(a, b))
    both = RunTally()
    for u in us[a:split]:
        both.add(conv, u)
    both.extend(conv, us[split:b])
    assert both.text() == tally.text()


class TestStageName:
    def test_names(self) -> None:
        """Classes, instances and functions are named as a reader expects."""

        def trim(messages: Sequence[Message], b: Budget, /) -> Fitted:
            return finish("trim", messages, messages, [], b)

        assert stage_name(DropOldest) == "DropOldest"
        assert stage_name(DropOldest()) == "DropOldest"
        assert stage_name(trim) == "trim"
        assert stage_name(Pipeline(DropOldest())) == "Pipeline"


class TestFinish:
    def test_valid_output(self) -> None:
        """A valid output is returned as it is, with the strategy's changes."""
        conv = [Message.user("one two"), Message.assistant("three")]
        b = budget(13)
        dropped = Change("dropped", "S", (conv[0].id,), 0, 6, 0, "user message")
        fitted = finish("S", conv, conv[1:], [dropped], b)
        assert fitted.messages == (conv[1],)
        assert fitted.messages[0] is conv[1]
        r = fitted.report
        assert (r.tokens_before, r.tokens_after, r.limit) == (14, 8, 13)
        assert (r.changes, r.stages) == ((dropped,), ("S",))
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    @pytest.mark.parametrize("tools", [(), (ToolSpec("ping", "Ping a host"),)])
    def test_a_given_count_follows_from_the_changes(
        self, tools: tuple[ToolSpec, ...]
    ) -> None:
        """With ``counted``, the output's tokens are those a fresh count gives:
        from the changes, or counted again when tools are sent and the first
        system message changed (OpenAI's count of tools reads it)."""
        counter = TokenCounter(BPETokenizer("o200k_base"))
        b = Budget(1000, counter, tools)
        conv = [
            Message.system("You are terse and careful."),
            Message.user("one two three"),
            Message.assistant("four"),
        ]
        for out, gone in ((conv[1:], 0), (conv[:1] + conv[2:], 1)):
            m = conv[gone]
            dropped = Change("dropped", "S", (m.id,), gone, counter.message(m), 0, "")
            counted = counter.messages(conv, tools=tools)
            fitted = finish("S", conv, out, [dropped], b, counted=counted)
            assert fitted.report.tokens_after == counter.messages(out, tools=tools)

    def test_repairs_reported(self) -> None:
        """Repairs are changes of the ensure_valid stage, with their tokens."""
        conv = [
            Message.system("s"),
            Message.tool("zz", "stale output here"),
            Message.assistant("Checking.", tool_calls=[call("a")]),
            Message.user("next"),
        ]
        b = budget(provider="anthropic")
        fitted = finish("S", conv, conv, [], b)
        assert problems(fitted.messages, "anthropic") == ()
        r = fitted.report
        assert [(c.kind, c.stage, c.index) for c in r.changes] == [
            ("repaired", "ensure_valid", 1),
            ("repaired", "ensure_valid", 2),
            ("repaired", "ensure_valid", 2),
        ]
        orphan, strip, insert = r.changes
        assert orphan.ids == (conv[1].id,)
        assert (orphan.tokens_before, orphan.tokens_after) == (9, 0)
        assert orphan.what == (
            "tool result answers no pending tool call (parts[0].call_id)"
        )
        # The placeholder goes before the assistant turn (input index 2).
        assert insert.ids == (CONTINUED_ID,)
        assert (insert.tokens_before, insert.tokens_after, insert.saved) == (0, 4, -4)
        assert strip.ids == (conv[2].id,)
        assert strip.what == "tool call has no result (parts[1])"
        assert strip.saved == b.counter.part(call("a"))
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_blank_block_beside_a_result(self) -> None:
        """Anthropic: a blank text block in a tool message goes, as a repair."""
        conv = [
            Message.user("go"),
            Message.assistant(tool_calls=[call("a")]),
            Message("tool", (ToolResult("a", "1"), Text(" "))),
            Message.user("?"),
        ]
        fitted = finish("S", conv, conv, [], budget(provider="anthropic"))
        assert fitted.messages[2].parts == conv[2].parts[:1]
        assert fitted.messages[2].id == conv[2].id
        assert [(c.kind, c.index, c.what) for c in fitted.report.changes] == [
            ("repaired", 2, "blank text block (parts[1].text)")
        ]
        fitted = finish("S", conv, conv, [], budget())  # OpenAI: nothing to do
        assert fitted.messages[2] is conv[2]

    def test_one_change_per_repaired_message(self) -> None:
        """A message breaking several rules is one change, its tokens once."""
        conv = [
            Message.user("hi"),
            Message.assistant(
                [Text(" "), Text("Looking.")], tool_calls=[call("a"), call("b")]
            ),
        ]
        fitted = finish("S", conv, conv, [], budget(provider="anthropic"))
        r = fitted.report
        assert len(r.changes) == 1
        assert r.changes[0].what == (
            "tool call has no result (parts[2]); tool call has no result (parts[3]); "
            "blank text block (parts[0].text)"
        )
        assert r.tokens_before - r.changes[0].saved == r.tokens_after

    def test_strategy_changes_come_first(self) -> None:
        """Repairs follow the strategy's own changes, indexed into its input."""
        conv = [
            Message.user("old"),
            Message.assistant("hi"),
            Message.user("x"),
        ]
        dropped = Change("dropped", "S", (conv[0].id,), 0, 4, 0, "user message")
        r = finish("S", conv, conv[1:], [dropped], budget(provider="anthropic")).report
        assert [(c.kind, c.index) for c in r.changes] == [
            ("dropped", 0),
            ("repaired", 1),
        ]
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after

    def test_repair_of_a_new_message(self) -> None:
        """A message the strategy made sits where the next input message is."""
        conv = [Message.user("hi"), Message.assistant("ok")]
        made = Message.tool("zz", "summary")
        r = finish("S", conv, [conv[0], made, conv[1]], [], budget()).report
        assert [(c.ids, c.index) for c in r.changes] == [((made.id,), 1)]
        r = finish("S", conv, [conv[0], made], [], budget()).report
        assert [c.index for c in r.changes] == [2]

    def test_exact_counts(self) -> None:
        """The report's totals are the counter's, with a real tokenizer."""
        counter = TokenCounter(BPETokenizer("o200k_base"))
        b = Budget(100, counter)
        conv = [Message.user("hello world"), Message.tool("zz", "stale")]
        r = finish("S", conv, conv, [], b).report
        assert r.tokens_before == counter.messages(conv)
        assert r.tokens_after == counter.messages(conv[:1]) == 9
        assert r.changes[0].saved == counter.message(conv[1])


class TestRelocate:
    def test_by_id(self) -> None:
        """Without a source, each change is found by its first id."""
        conv = [Message.user("a"), Message.user("b"), Message.user("c")]
        r = Report(0, 0, 0, (Change("dropped", "S", (conv[2].id,), 0, 1, 0, "x"),))
        assert relocate(r, conv).changes[0].index == 2

    def test_unknown_id_keeps_its_index(self) -> None:
        """A change naming no message of the conversation keeps its index."""
        conv = [Message.user("a")]
        r = Report(0, 0, 0, (Change("dropped", "S", ("nope",), 5, 1, 0, "x"),))
        assert relocate(r, conv).changes[0].index == 5
        r = Report(0, 0, 0, (Change("dropped", "S", (), 5, 1, 0, "x"),))
        assert relocate(r, conv).changes[0].index == 5

    def test_unmoved_changes_kept_as_they_are(self) -> None:
        """A change whose index does not move is the same object afterwards."""
        conv = [Message.user("a"), Message.user("b")]
        same = Change("dropped", "S", (conv[1].id,), 1, 1, 0, "x")
        moved = Change("dropped", "S", (conv[0].id,), 1, 1, 0, "y")
        out = relocate(Report(0, 0, 0, (same, moved)), conv).changes
        assert out[0] is same
        assert out[1] is not moved
        assert (out[1].index, out[1].ids, out[1].what) == (0, moved.ids, "y")

    def test_from_a_source(self) -> None:
        """With a source, an index moves to where its message is in the target."""
        conv = [Message.user(w) for w in "abcd"]
        placeholder = Message.user("(continued)", id=CONTINUED_ID)
        source = [conv[1], placeholder, conv[3]]
        r = Report(
            0,
            0,
            0,
            (
                Change("dropped", "S", (conv[3].id,), 2, 1, 0, "x"),
                Change("repaired", "ensure_valid", (CONTINUED_ID,), 1, 0, 1, "y"),
                Change("dropped", "S", (conv[1].id,), 9, 1, 0, "z"),
            ),
        )
        assert [c.index for c in relocate(r, conv, source).changes] == [3, 3, 1]
        tail = [conv[0], placeholder]
        r = Report(0, 0, 0, (Change("dropped", "S", (CONTINUED_ID,), 1, 1, 0, "x"),))
        assert relocate(r, conv, tail).changes[0].index == len(conv)

    def test_memo_table_grows_with_the_conversation(self) -> None:
        """A table kept in a memo is grown by an append, rebuilt otherwise.

        Each relocation through the memo equals one without it: a grown
        conversation (an id repeated in the new messages keeps its first
        index), one that parted from the last (a message replaced), and one
        shorter than the last.
        """
        from contextwindow._memo import Memo

        memo = Memo()
        conv = [Message.user(w) for w in "abcdef"]
        dup = Message.user("again", id=conv[1].id)
        grown = [*conv, Message.user("g"), dup]
        parted = [conv[0], Message.user("x"), *conv[2:], Message.user("g")]
        for target in (conv, grown, parted, conv[:3], grown):
            source = [target[0], Message.user("inserted"), *target[2:]]
            r = Report(
                0,
                0,
                0,
                tuple(
                    Change("dropped", "S", (m.id,), i, 1, 0, "x")
                    for i, m in enumerate(source)
                ),
            )
            with_memo = relocate(r, target, source, memo=memo)
            assert with_memo == relocate(r, target, source)
        # The duplicate id points at its first message, as without a memo.
        r = Report(0, 0, 0, (Change("dropped", "S", (dup.id,), 9, 1, 0, "x"),))
        assert relocate(r, grown, memo=memo).changes[0].index == 1
