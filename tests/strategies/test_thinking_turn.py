"""Anthropic's thinking turn: a tool loop that opened with thinking still does.

With extended thinking and tool use, the assistant message that opens the
tool loop a request ends in must open with its thinking block, passed back
complete and unmodified ("messages.1.content.0.type: Expected `thinking` or
`redacted_thinking`, but found `tool_use`"). Claude thinks once, at the start
of the loop, so the first assistant message of a long loop is the only one
holding a thinking block: every strategy keeps it, and the task before it.
"""

from __future__ import annotations

import copy
import glob
from typing import Any

import pytest

from contextwindow import ContextManager, fit
from contextwindow.errors import BudgetError
from contextwindow.formats import from_anthropic
from contextwindow.messages import Message, Text, Thinking, ToolCall
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    CollapseRuns,
    CompactLossless,
    Deduplicate,
    DropOldest,
    MaxMessages,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    StaleReads,
    Summarize,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.strategies.base import final_indices, pinned_flags
from contextwindow.summarizers.names import NamesSummarizer
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.transcripts import read_transcripts
from contextwindow.validity import ensure_valid, thinking_turn

THINKING = {
    "type": "thinking",
    "thinking": "Plan: read the files, then run the tests.",
    "signature": "EqQBCkgIARABGAIiQL",
}


def loop_body(n: int = 30, thinking: dict[str, Any] | None = None) -> dict[str, Any]:
    """The auditor's reproducer: a task, then ``n`` reads; only the first thinks."""
    block = THINKING if thinking is None else thinking
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests."}]
    for i in range(n):
        c: list[dict[str, Any]] = [
            {
                "type": "tool_use",
                "id": f"toolu_{i:03d}",
                "name": "Read",
                "input": {"file_path": f"/repo/m{i}.py"},
            }
        ]
        if i == 0:
            c.insert(0, dict(block))
        msgs.append({"role": "assistant", "content": c})
        text = "".join(f"line {k} v={k * i * 7919 % 10007}\n" for k in range(150))
        msgs.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:03d}",
                        "content": text,
                    }
                ],
            }
        )
    return {"messages": msgs}


def loop_opening(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks of the assistant turn that opens the loop a request ends in.

    Anthropic merges turns of one role; the loop starts after the last user
    turn that is not only tool results.
    """
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for m in messages:
        c = m["content"]
        blocks = c if isinstance(c, list) else [{"type": "text", "text": c}]
        if turns and turns[-1][0] == m["role"]:
            turns[-1][1].extend(blocks)
        else:
            turns.append((m["role"], list(blocks)))
    only = [
        r == "user" and all(b["type"] == "tool_result" for b in bs) for r, bs in turns
    ]
    assert only[-1], "the request no longer ends inside the loop"
    task = max(k for k, (r, _) in enumerate(turns) if r == "user" and not only[k])
    role, blocks = turns[task + 1]
    assert role == "assistant"
    return blocks


STRATEGIES: dict[str, Any] = {
    "default": None,
    "drop-oldest": "drop-oldest",
    "DropOldest": DropOldest(),
    "SlidingWindow": SlidingWindow(4),
    "MaxMessages": MaxMessages(6),
    "ClearToolResults": ClearToolResults(),
    "TruncateToolResults": TruncateToolResults(),
    "TruncateToolResults-0": TruncateToolResults(keep_recent=0),
    "TruncateToolInputs": TruncateToolInputs(),
    "Deduplicate": Deduplicate(),
    "CompactLossless": CompactLossless(),
    "StaleReads": StaleReads(),
    "Summarize": Summarize(NamesSummarizer()),
    "CollapseRuns": CollapseRuns(ClearToolResults()),
    "SelectRelevant": SelectRelevant(),
    "Pipeline": Pipeline(Summarize(), ClearToolResults(keep_recent=0), DropOldest()),
}


class TestEveryStrategy:
    @pytest.mark.parametrize("name", STRATEGIES)
    @pytest.mark.parametrize("share", [0.8, 0.5, 0.3, 0.1])
    def test_the_loop_opens_with_its_thinking_block(
        self, name: str, share: float
    ) -> None:
        """The output's loop opens with the very thinking block, and the task stays."""
        body = loop_body()
        whole = fit(copy.deepcopy(body), model="claude-sonnet-4-5", limit=10**6)
        limit = int(whole.report.tokens_after * share)
        fitted = fit(
            body,
            model="claude-sonnet-4-5",
            limit=limit,
            reserve=0,
            strategy=STRATEGIES[name],
        )
        assert fitted.report.tokens_after <= limit
        out = fitted.as_input()["messages"]
        opening = loop_opening(out)
        assert opening[0] == THINKING
        assert opening[:2] == body["messages"][1]["content"], "the opener changed"
        assert out[0] == body["messages"][0], "the task went"

    def test_the_reproducer_was_cut_into(self) -> None:
        """At a tenth, the loop itself lost exchanges: the pins are what kept it."""
        body = loop_body()
        fitted = fit(body, model="claude-sonnet-4-5", limit=5000, reserve=0)
        assert len(fitted.as_input()["messages"]) < len(body["messages"]) / 2

    def test_redacted_thinking_is_kept_too(self) -> None:
        """A ``redacted_thinking`` block opens the loop as it came."""
        block = {"type": "redacted_thinking", "data": "ErUBCkYIAxgCIkD"}
        body = loop_body(thinking=block)
        fitted = fit(body, model="claude-sonnet-4-5", limit=5000, reserve=0)
        assert loop_opening(fitted.as_input()["messages"])[0] == block

    def test_the_opener_result_may_still_be_cut(self) -> None:
        """Only the assistant turn is pinned: its tool result may be cleared."""
        body = loop_body()
        fitted = fit(
            body,
            model="claude-sonnet-4-5",
            limit=12000,
            reserve=0,
            strategy=ClearToolResults(keep_recent=1, max_share=1),
        )
        out = fitted.as_input()["messages"]
        assert out[1] == body["messages"][1]
        assert out[2] != body["messages"][2], "the first result was not cleared"
        assert "cleared" in str(out[2]["content"])


class TestManager:
    def test_prepare_keeps_the_thinking_turn(self) -> None:
        """A manager's compacted view still opens the loop with its thinking."""
        m = ContextManager("claude-sonnet-4-5", token_limit=20000)
        m.push_many(from_anthropic(loop_body()["messages"]))
        p = m.prepare()
        assert loop_opening(list(p.messages))[0] == THINKING

    def test_max_messages_keeps_the_thinking_turn(self) -> None:
        """The manager's hard cap drops units around the thinking turn."""
        m = ContextManager("claude-sonnet-4-5", token_limit=10**6, max_messages=8)
        m.push_many(from_anthropic(loop_body()["messages"]))
        p = m.prepare()
        assert len(p.messages) <= 12
        assert loop_opening(list(p.messages))[0] == THINKING

    def test_prune_old_messages_keeps_the_thinking_turn(self) -> None:
        """A threshold handler's prune keeps the task and the opener."""
        m = ContextManager("claude-sonnet-4-5", token_limit=40000)

        @m.on_threshold(60)
        def prune(ctx: Any) -> None:
            ctx.prune_old_messages(4)

        m.push_many(from_anthropic(loop_body()["messages"]))
        p = m.prepare()
        assert len(p.messages) < 20
        assert loop_opening(list(p.messages))[0] == THINKING


def conv() -> list[Message]:
    """A loop that opened with thinking, in the neutral form: 11 messages."""
    opener = Message.assistant(
        [Thinking("Plan.", signature="c2ln")], tool_calls=[ToolCall("t0", "read")]
    )
    out = [Message.user("Fix it."), opener, Message.tool("t0", "x " * 50)]
    for i in range(1, 5):
        out += [
            Message.assistant(tool_calls=[ToolCall(f"t{i}", "read")]),
            Message.tool(f"t{i}", "y " * 50),
        ]
    return out


class TestWhatIsPinned:
    def test_anthropic_pins_the_task_and_the_opener(self) -> None:
        """The task and the opening turn, for Anthropic only."""
        c = conv()
        assert thinking_turn(c, "anthropic") == (0, 1)
        assert final_indices(c, "anthropic") == (10, 0, 1)
        for provider in ("openai", "responses", None):
            assert final_indices(c, provider) == (10,)
        flags = pinned_flags(c, (), "anthropic")
        assert [i for i, f in enumerate(flags) if f] == [0, 1, 10]

    def test_nothing_more_once_the_loop_ended(self) -> None:
        """A reply without a call, or a new user turn, ends the loop: no pins."""
        c = conv()
        assert thinking_turn([*c, Message.assistant("Fixed.")], "anthropic") == ()
        assert thinking_turn([*c, Message.user("Thanks")], "anthropic") == ()
        # An empty reply is dropped by a repair: the loop is still open.
        assert thinking_turn([*c, Message.assistant("")], "anthropic") == (0, 1)

    def test_calls_awaiting_results_keep_the_loop_open(self) -> None:
        """A manager's view ending on a pending call is inside the loop."""
        c = [*conv(), Message.assistant(tool_calls=[ToolCall("t9", "test")])]
        assert thinking_turn(c, "anthropic") == (0, 1)

    def test_no_pins_without_a_signed_opener(self) -> None:
        """No thinking, unsigned thinking, or thinking later on: nothing is pinned."""
        c = conv()
        plain = [c[0], Message.assistant(tool_calls=[ToolCall("t0", "read")]), *c[2:]]
        assert thinking_turn(plain, "anthropic") == ()
        unsigned = [
            c[0],
            Message.assistant([Thinking("Plan.")], tool_calls=[ToolCall("t0", "r")]),
            *c[2:],
        ]
        assert thinking_turn(unsigned, "anthropic") == ()
        later = [*plain[:3], c[1].with_parts(c[1].parts), *plain[4:]]
        assert thinking_turn(later, "anthropic") == ()

    def test_a_loop_opening_the_conversation_pins_its_opener(self) -> None:
        """No task (the repair puts its own turn first): the opener alone."""
        assert thinking_turn(conv()[1:], "anthropic") == (0,)
        repaired = ensure_valid(conv()[1:], "anthropic").messages
        assert thinking_turn(repaired, "anthropic") == (1,)

    def test_a_reply_without_a_call_opens_no_loop(self) -> None:
        """A thinking reply that ended its turn, then a loop (the task between
        dropped), or thinking split from its calls: nothing is pinned."""
        c = conv()
        reply = Message.assistant([Thinking("Plan.", signature="c2ln"), Text("Done.")])
        plain = Message.assistant(tool_calls=[ToolCall("t0", "read")])
        assert thinking_turn([c[0], reply, plain, *c[2:]], "anthropic") == ()


class TestDropOldest:
    def test_drops_around_the_thinking_turn(self) -> None:
        """The oldest exchanges of the loop go; the task and the opener stay."""
        c = conv()
        budget = Budget(200, TokenCounter(FakeTokenizer(), "anthropic"))
        out = list(DropOldest()(c, budget).messages)
        assert out[:3] == c[:3]
        assert out[-2:] == c[-2:]
        assert len(out) < len(c)

    def test_budget_error_names_the_thinking_turn(self) -> None:
        """When the thinking turn alone overflows, the error says so."""
        c = conv()
        budget = Budget(30, TokenCounter(FakeTokenizer(), "anthropic"))
        with pytest.raises(BudgetError) as info:
            DropOldest()(c, budget)
        text = str(info.value)
        assert "(thinking turn)" in text
        assert "(thinking turn's task)" in text
        assert "(final message)" in text

    def test_a_refit_after_the_loop_ended_equals_a_fresh_one(self) -> None:
        """The cut a warm memo kept with the pins is not reused once they are gone."""
        c = conv()
        warm = TokenCounter(FakeTokenizer(), "anthropic")
        DropOldest()(c, Budget(200, warm))  # kept the pinned opener before the cut
        grown = [*c, Message.assistant("Done."), Message.user("Thanks. Next?")]
        got = DropOldest()(grown, Budget(200, warm))
        want = DropOldest()(
            grown, Budget(200, TokenCounter(FakeTokenizer(), "anthropic"))
        )
        assert [m.id for m in got.messages] == [m.id for m in want.messages]
        assert got.report == want.report
        assert c[1].id not in {m.id for m in want.messages}


class TestSummarize:
    def test_no_summary_inside_the_loop(self) -> None:
        """A summary (a user turn) would end the loop: only what precedes it goes."""
        head = [Message.user("Earlier " * 40), Message.assistant("Noted " * 40)]
        c = [*head, *conv()]
        budget = Budget(120, TokenCounter(FakeTokenizer(), "anthropic"))
        out = Summarize(keep_recent=1)(c, budget).messages
        ids = [m.id for m in out]
        assert ids.index(c[2].id) + 1 == ids.index(c[3].id), "task, then the opener"
        after = out[ids.index(c[3].id) :]
        assert all(m.role in ("assistant", "tool") for m in after)


@pytest.fixture(scope="module")
def session(shared_data: Any) -> list[Message]:
    """The Claude Code session where Summarize summarised the opener away."""
    (path,) = glob.glob(str(shared_data / "claude_code_sessions" / "ae4a77f8*.jsonl"))
    (t,) = read_transcripts(path)
    return list(ensure_valid(t.messages, "anthropic").messages)[:438]


class TestRealSession:
    @pytest.mark.parametrize("reserve", [0, None])
    def test_claude_code_loop_keeps_its_opener(
        self, session: list[Message], reserve: int | None
    ) -> None:
        """The default strategy keeps the loop's opening thinking on a real session."""
        opener = session[282]
        assert isinstance(opener.parts[0], Thinking)
        kw: dict[str, Any] = {} if reserve is None else {"reserve": reserve}
        fitted = fit(session, model="claude-sonnet-4-5", limit=34499, **kw)
        assert fitted.report.fits
        out = fitted.to("anthropic")["messages"]
        first = loop_opening(out)[0]
        assert first["type"] == "thinking"
        assert first["signature"] == opener.parts[0].signature
        assert any(m.id == opener.id and m == opener for m in fitted.messages)
