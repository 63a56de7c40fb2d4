"""The manager's request writer: what ``to_provider`` writes, paying for appends."""

from __future__ import annotations

import pytest

from contextwindow import ContextManager, Message, ToolCall
from contextwindow.formats import to_provider
from contextwindow.manager._wire import Writer


def _exchange(cid: str, n: int) -> list[Message]:
    return [
        Message.assistant(tool_calls=[ToolCall(cid, "read", f'{{"n": {n}}}')]),
        Message.tool(cid, f"result {n}"),
    ]


@pytest.mark.parametrize(
    "ids",
    [
        ["call_0", "call_0", "call_0"],  # a backend that reuses its ids
        ["functions.read:0", "functions.read:1"],  # spelt as Anthropic refuses
        ["a.b", "a_b"],  # renaming must not take an id in use
        ["toolu_1", "toolu_2"],  # the common case
    ],
)
def test_grown_one_message_at_a_time_writes_what_to_provider_writes(
    ids: list[str],
) -> None:
    """Calls written earlier and their results later get the same new ids."""
    conv = [Message.user("go")]
    for n, cid in enumerate(ids):
        conv += _exchange(cid, n)
    conv.append(Message.user("so?"))
    w = Writer("anthropic")
    for k in range(1, len(conv) + 1):
        turns, _ = w.write(conv[:k])
        assert turns == to_provider(conv[:k], "anthropic").messages, k
    # a cut (the view changed) and growth again
    turns, _ = w.write(conv[:2])
    assert turns == to_provider(conv[:2], "anthropic").messages
    turns, _ = w.write(conv)
    assert turns == to_provider(conv, "anthropic").messages


def test_manager_requests_pair_renamed_calls() -> None:
    """A manager fed a backend's reused ids sends Anthropic unique ones, paired."""
    m = ContextManager("claude-sonnet-4-5", token_limit=100_000)
    m.push(Message.user("go"))
    for n in range(3):
        m.push_many(_exchange("call_0", n))
        p = m.prepare()
    uses = [
        (b["type"], b.get("id") or b.get("tool_use_id"))
        for t in p.messages
        if isinstance(t["content"], list)
        for b in t["content"]
    ]
    assert uses == [
        ("tool_use", "call_0"),
        ("tool_result", "call_0"),
        ("tool_use", "call_0_2"),
        ("tool_result", "call_0_2"),
        ("tool_use", "call_0_3"),
        ("tool_result", "call_0_3"),
    ]
