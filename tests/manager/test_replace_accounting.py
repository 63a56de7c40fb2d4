"""A handler's own edit (``replace_messages``) is accounted message by message.

Each message of the view is accounted once: a message given twice is one
kept and one ``added``; a message moved out of order is named (``rewritten``,
``moved``), so the compaction's report adds up and says what was sent.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow import (
    ContextManager,
    Message,
    Text,
    ThresholdContext,
    TokenCounter,
    ToolCall,
    ToolSpec,
)
from contextwindow.manager import Compaction
from contextwindow.testing import FakeTokenizer, conversations

from ._support import words

PING = ToolSpec("ping", "Ping a host")


def counter(m: ContextManager) -> TokenCounter:
    """A counter that counts as ``m`` does."""
    return TokenCounter(FakeTokenizer(), m.provider)


def loaded(**kw: Any) -> ContextManager:
    """A manager at 70 % of its window: system, task, 8 tool exchanges, a question."""
    m = ContextManager(token_limit=1000, tokenizer=FakeTokenizer(), strategy=None, **kw)
    m.push(Message.system("You are a coding agent."))
    m.push(Message.user("Fix the bug."))
    for i in range(8):
        m.push_many(
            [
                Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
                Message.tool(f"c{i}", words(70, f"r{i}_")),
            ]
        )
    m.push(Message.user("Where is it?"))
    return m


def replaced(
    m: ContextManager,
    edit: Callable[[list[Message]], list[Message]],
    threshold: float = 60,
) -> tuple[list[Message], Compaction]:
    """The view a handler at ``threshold`` saw, and the compaction its edit made."""
    seen: list[list[Message]] = []

    @m.on_threshold(threshold)
    def handler(ctx: ThresholdContext) -> None:
        seen.append(ctx.messages)
        ctx.replace_messages(edit(ctx.messages))

    p = m.prepare()
    (done,) = [c for c in p.compactions if c.trigger == "handler"]
    assert done.applied
    return seen[0], done


def adds_up(c: Compaction) -> bool:
    r = c.report
    return r.tokens_before - sum(x.saved for x in r.changes) == r.tokens_after


class TestGivenTwice:
    def test_a_copy_of_the_final_message_is_added(self) -> None:
        m = loaded()
        before, done = replaced(m, lambda ms: [ms[0], ms[-1], ms[-1]])
        final = before[-1]
        assert [x.text for x in m.messages][1:] == [final.text, final.text]
        assert adds_up(done)
        (added,) = [c for c in done.report.changes if c.kind == "added"]
        assert added.ids == (final.id,)
        assert added.saved == -counter(m).message(final)
        assert "given more than once" in added.what
        # Everything between the system prompt and the question is dropped,
        # the question itself is not.
        dropped = [c.index for c in done.report.changes if c.kind == "dropped"]
        assert dropped == list(range(1, len(before) - 1))

    def test_a_rewritten_copy_beside_the_original_is_the_one_added(self) -> None:
        m = loaded()

        def edit(ms: list[Message]) -> list[Message]:
            copy = ms[-1].with_parts([Text("Where exactly is it?")])
            return [ms[0], ms[1], copy, ms[-1]]

        before, done = replaced(m, edit)
        assert adds_up(done)
        changed = [(c.kind, c.ids) for c in done.report.changes if c.kind != "dropped"]
        assert changed == [("added", (before[-1].id,))]
        assert [c.index for c in done.report.changes if c.kind == "added"] == [
            len(before) - 1  # it went before the final message
        ]


class TestToolsFraming:
    """With tools, OpenAI's count reads the first system message."""

    def test_dropping_the_system_prompt_adds_up(self) -> None:
        m = loaded(tools=[PING])
        before, done = replaced(m, lambda ms: ms[1:])
        assert adds_up(done)
        (dropped,) = [c for c in done.report.changes if before[0].id in c.ids]
        assert (dropped.kind, dropped.tokens_after) == ("dropped", 0)
        assert "tools' framing" in dropped.what

    def test_a_system_prompt_added_adds_up(self) -> None:
        m = loaded(tools=[PING])
        m.set_messages(m.messages[1:])  # no system prompt
        prompt = Message.system("Be brief.")
        _, done = replaced(m, lambda ms: [prompt, *ms])
        assert adds_up(done)
        (added,) = done.report.changes
        assert (added.kind, added.ids, added.tokens_before) == (
            "added",
            (prompt.id,),
            0,
        )


class TestMoved:
    def test_a_swap_is_reported(self) -> None:
        m = loaded()
        before, done = replaced(m, lambda ms: [ms[0], ms[-1], ms[1]])
        assert [x.text for x in m.messages] == [
            "You are a coding agent.",
            "Where is it?",
            "Fix the bug.",
        ]
        assert adds_up(done)
        moved = [c for c in done.report.changes if c.what.endswith("moved")]
        assert [(c.kind, c.saved) for c in moved] == [("rewritten", 0)]
        assert moved[0].ids[0] in {before[1].id, before[-1].id}

    def test_the_fewest_moves_are_named(self) -> None:
        """Moving the task to the end moves one message, not the ones it passed."""
        m = loaded()
        before, done = replaced(m, lambda ms: [ms[0], *ms[2:], ms[1]])
        (moved,) = [c for c in done.report.changes if c.what.endswith("moved")]
        assert (moved.ids, moved.index) == ((before[1].id,), 1)
        assert len(done.report.changes) == 1

    def test_a_kept_order_names_no_move(self) -> None:
        m = loaded()
        _, done = replaced(m, lambda ms: [ms[0], ms[1], ms[-1]])
        assert {c.kind for c in done.report.changes} == {"dropped"}
        assert adds_up(done)


# -- every edit: the report adds up and names what changed ------------------------


@st.composite
def edits(draw: Any) -> tuple[list[Message], list[tuple[str, int]]]:
    """A conversation, and an edit of it: messages kept (any order, any number
    of times), rewritten (keeping their ids) or new."""
    conv = draw(conversations(min_turns=1, max_turns=4))
    n = len(conv)
    op = st.tuples(
        st.sampled_from(["keep", "keep", "rewrite", "new"]), st.integers(0, n - 1)
    )
    return conv, draw(st.lists(op, max_size=2 * n + 2))


def _apply(ms: list[Message], ops: list[tuple[str, int]]) -> list[Message]:
    out: list[Message] = []
    for op, i in ops:
        m = ms[i % len(ms)]  # the view may hold fewer (empty messages)
        if op == "keep":
            out.append(m)
        elif op == "rewrite" and not m.tool_calls and m.role != "tool":
            out.append(m.with_parts([Text(f"rewritten {i}")]))
        else:
            out.append(Message.user(f"new {i}"))
    if not any(m.role == "user" and m.text for m in out):  # else it may send none
        out.append(Message.user("go on"))
    return out


@pytest.mark.filterwarnings("ignore::contextwindow.errors.ContentDroppedWarning")
@settings(max_examples=200, deadline=None)
@given(edits(), st.booleans())
def test_every_edit_is_accounted(
    case: tuple[list[Message], list[tuple[str, int]]], tools: bool
) -> None:
    conv, ops = case
    m = ContextManager(
        token_limit=1_000_000,
        tokenizer=FakeTokenizer(),
        strategy=None,
        tools=[PING] if tools else (),
    )
    m.push_many(conv)
    before, done = replaced(m, lambda ms: _apply(ms, ops), threshold=0.0001)
    r = done.report
    assert adds_up(done), r.changes
    assert r.tokens_before == counter(m).messages(before, tools=[PING] if tools else [])
    # Each message of the view is carried over as it was, or named.
    named = {i for c in r.changes for i in c.ids}
    after = m.messages
    for x in before:
        assert any(y is x for y in after) or x.id in named, x
    # Messages carried over out of their order (a copy's first place is
    # where it was carried to, the others are added): a move is named.
    where = {id(x): i for i, x in enumerate(before)}
    order: list[int] = []
    for y in after:
        i = where.pop(id(y), None)
        if i is not None:
            order.append(i)
    if any(a > b for a, b in pairwise(order)):
        assert any(c.what.endswith("moved") for c in r.changes), r.changes
