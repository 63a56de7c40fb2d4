"""A re-fit of a grown conversation resumes every stage of the default pipeline.

Each stage keeps in the counter's memo what it decided (``_rescan``), and
resumes when the next conversation starts with the very messages it saw. Two
things broke that on coding sessions, and each made every re-fit a fit from
scratch (700 ms instead of 20 on a 3,000-message session): a memo too small
for the pipeline's entries (``ClearToolResults`` keeps one set per refill
lane), and a history repaired again at each fit (a transcript's blank text
blocks, which Anthropic refuses) coming out as new message objects each time.
"""

from __future__ import annotations

from typing import Any

import pytest

from contextwindow import Message, TokenCounter, ToolCall, fit
from contextwindow._memo import DEFAULT_MEMO_ENTRIES
from contextwindow.messages import Text, Thinking
from contextwindow.strategies import _rescan
from contextwindow.testing import FakeTokenizer
from contextwindow.validity import ensure_valid


def session(n: int, blank: bool = False) -> list[Message]:
    """A coding session: reads of about a hundred tokens each, the user asking
    again every fifth; ``blank``: each call's message opens with a blank text
    block, as Claude Code transcripts hold."""
    conv = [Message.system("You are a coding agent."), Message.user("Fix the build.")]
    for i in range(n):
        conv += exchange(i, blank)
    return conv


def exchange(i: int, blank: bool = False) -> list[Message]:
    out: list[Message] = []
    if i and i % 5 == 0:
        out.append(Message.user(f"Part {i} next."))
    call = ToolCall(f"c{i}", "read_file", f'{{"path": "src/m{i}.py"}}')
    asked = Message.assistant(f"Reading part {i}.", tool_calls=[call])
    if blank:
        asked = asked.with_parts((Text("\n\n"), *asked.parts))
    out += [
        asked,
        Message.tool(f"c{i}", f"# module {i}\n" + f"value_{i} = {i * 37}\n" * 8),
    ]
    return out


def scans_from_scratch(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stages that rescan a whole conversation from now on, one per scan."""
    full = _rescan._full  # pyright: ignore[reportPrivateUsage]  # the path under test
    seen: list[str] = []

    def spy(messages: Any, budget: Any, stage: str, *rest: Any) -> Any:
        seen.append(stage)
        return full(messages, budget, stage, *rest)

    monkeypatch.setattr(_rescan, "_full", spy)
    return seen


def scan_starts(monkeypatch: pytest.MonkeyPatch, stage: str) -> list[int]:
    """Where ``stage``'s scans start from now on (those deciding one message
    again alone left out), one per scan."""
    scan = _rescan._scan  # pyright: ignore[reportPrivateUsage]  # the path under test
    starts: list[int] = []

    def spy(
        messages: Any,
        budget: Any,
        name: str,
        kind: Any,
        rewrite: Any,
        start: int,
        *rest: Any,
        **kw: Any,
    ) -> Any:
        if name == stage and "until" not in kw:
            starts.append(start)
        return scan(messages, budget, name, kind, rewrite, start, *rest, **kw)

    monkeypatch.setattr(_rescan, "_scan", spy)
    return starts


@pytest.mark.parametrize("share", [0.25, 0.4, 0.55])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_stage_resumes(
    monkeypatch: pytest.MonkeyPatch, share: float, provider: str
) -> None:
    """On a session whose calls carry blank text blocks (repaired for
    Anthropic at each fit), re-fits after an exchange rescan nothing whole,
    and the memo holds what the pipeline keeps with room to spare."""
    conv = session(600, blank=True)
    counter = TokenCounter(FakeTokenizer(), provider)  # type: ignore[arg-type]  # the two providers named above
    limit = int(counter.messages(conv) * share)
    last = fit(conv, limit=limit, tokenizer=counter)
    assert "ClearToolResults" in last.report.stages  # the refill's lanes are in use
    full = scans_from_scratch(monkeypatch)
    for i in range(600, 606):
        conv += exchange(i, blank=True)
        fitted = fit(conv, limit=limit, tokenizer=counter)
        assert fitted.report.fits
        if fitted.report.stages == last.report.stages:
            assert full == [], f"re-fit {i}: {full} scanned from scratch"
        full.clear()
        last = fitted
    assert len(counter.memo) < DEFAULT_MEMO_ENTRIES // 2  # room for another budget


def test_a_repair_gives_the_same_messages_again() -> None:
    """Repairing the same history twice gives the very same repaired messages."""
    conv = session(3, blank=True)
    once = ensure_valid(conv, "anthropic")
    again = ensure_valid(list(conv), "anthropic")
    assert once.problems
    assert len(once.messages) == len(again.messages)
    assert all(a is b for a, b in zip(once.messages, again.messages, strict=True))
    opens = ensure_valid([Message.assistant("hi"), Message.user("go")], "anthropic")
    twice = ensure_valid([Message.assistant("hi"), Message.user("go")], "anthropic")
    assert opens.messages[0] is twice.messages[0]  # the placeholder turn


def test_a_thinking_opener_unpinned_is_decided_again_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a tool loop that opened with a signed thinking block runs, its
    opener is pinned for Anthropic; when a reply ends the loop it is not.
    That flip decides the opener again alone: no stage rescans from it (on
    Claude Code sessions, whose loops run for hundreds of messages, every
    re-fit after a turn ended rescanned from the loop's start: 5.0 ms at the
    median against 2.9). The output is a fresh fit's."""
    opener = Message.assistant(
        [Thinking("Plan the fix.", signature="c2lnbmVk")],
        tool_calls=[ToolCall("c0", "read_file", '{"path": "src/m0.py"}')],
    )
    conv = [Message.system("You are a coding agent."), Message.user("Fix it."), opener]
    conv.append(Message.tool("c0", "# module 0\n" + "value = 1\n" * 8))
    for i in range(1, 300):
        conv += exchange(i)[-2:]  # calls and results only: the loop goes on
    counter = TokenCounter(FakeTokenizer(), "anthropic")
    limit = int(counter.messages(conv) * 0.4)
    fit(conv, limit=limit, tokenizer=counter)
    starts = scan_starts(monkeypatch, "ClearToolResults")
    conv.append(Message.assistant("Fixed."))  # the loop ends
    again = fit(conv, limit=limit, tokenizer=counter)
    assert starts
    assert min(starts) > 10, starts  # the opener is message 2
    fresh = fit(conv, limit=limit, tokenizer=TokenCounter(FakeTokenizer(), "anthropic"))
    assert again.messages == fresh.messages
    assert again.report == fresh.report


def test_stale_reads_read_only_the_last_unit_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A re-read file makes the earlier read stale. When the last unit read
    changes in the next conversation (its result, final before, is compacted
    once it is not), ``StaleReads`` reads that unit again, not every call;
    the output is a fresh fit's."""
    from contextwindow.strategies import stale

    def rereads(i: int) -> list[Message]:
        call = ToolCall(f"r{i}", "read_file", f'{{"path": "src/m{i % 7}.py"}}')
        return [
            Message.assistant(f"Reading {i}.", tool_calls=[call]),
            Message.tool(
                f"r{i}",
                f"# m{i % 7} at {i}\n"
                + "".join(f"x{k} = {i * k}\n" for k in range(30))
                + "\n\n",
            ),
        ]

    conv = [Message.system("You are a coding agent."), Message.user("Fix it.")]
    for i in range(60):
        conv += rereads(i)
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * 0.3)
    fit(conv, limit=limit, tokenizer=counter)
    whole = stale._Superseded._all  # pyright: ignore[reportPrivateUsage]  # the path under test
    read_all: list[int] = []

    def spy(self: Any, messages: Any) -> Any:
        read_all.append(len(messages))
        return whole(self, messages)

    monkeypatch.setattr(stale._Superseded, "_all", spy)  # pyright: ignore[reportPrivateUsage]  # the path under test
    for i in range(60, 68):
        conv += rereads(i)
        again = fit(conv, limit=limit, tokenizer=counter)
        assert read_all == []
        fresh = fit(conv, limit=limit, tokenizer=TokenCounter(FakeTokenizer()))
        read_all.clear()
        assert again.messages == fresh.messages
        assert again.report == fresh.report
        assert any(c.kind == "stale" for c in again.report.changes)


def test_summary_kept_when_only_rewrites_inside_it_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Summarize`` (``read_originals``) reads the originals of what it replaces:
    when an earlier stage rewrites a result in there (a repeated output's note
    now pointing to the newest copy), the summary is the one made before, not
    made again; the output is a fresh fit's."""
    from contextwindow.strategies import summarize

    def checks(i: int) -> list[Message]:
        out: list[Message] = []
        if i % 4 == 0:
            out.append(Message.user(f"Step {i}: check module_{i} and the status."))
        call = ToolCall(f"c{i}", "run", f'{{"command": "check_{i % 3}"}}')
        if i % 3 == 0:  # the same output again: Deduplicate repoints the others
            body = "same status line for every check\n" * 20
        else:
            body = "".join(f"value_{i}_{k} = {i * k + 100}\n" for k in range(20))
        out += [
            Message.assistant(f"Checking {i}.", tool_calls=[call]),
            Message.tool(f"c{i}", body),
        ]
        return out

    conv = [Message.system("You are an agent."), Message.user("Do the task.")]
    for i in range(1500):
        conv += checks(i)
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * 0.1)
    assert "Summarize" in fit(conv, limit=limit, tokenizer=counter).report.stages
    made = summarize.Summarize._summary  # pyright: ignore[reportPrivateUsage]  # the path under test
    again: list[int] = []

    def spy(self: Any, *args: Any, **kw: Any) -> Any:
        again.append(len(conv))
        return made(self, *args, **kw)

    monkeypatch.setattr(summarize.Summarize, "_summary", spy)
    for i in range(1500, 1508):
        conv += checks(i)
        fitted = fit(conv, limit=limit, tokenizer=counter)
        assert again == [], "the summary was made again"
        if i % 3 == 0:  # a repeated output: older copies rewritten
            fresh = fit(conv, limit=limit, tokenizer=TokenCounter(FakeTokenizer()))
            again.clear()
            assert fitted.messages == fresh.messages
            assert fitted.report == fresh.report


@pytest.mark.parametrize("share", [0.15, 0.5, 0.95])
def test_repeated_outputs_decide_their_copies_again_alone(
    monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    """A new copy of an output seen since the start (an empty one, one that
    repeats) changes only the decisions of its earlier copies: ``Deduplicate``
    decides those again one by one and scans from the new messages, not from
    the first copy, also when the last message changed as well; ``Deduplicate``
    alone and the default pipeline give what a fresh fit gives, at budgets it
    meets early, late and not at all."""
    from contextwindow.strategies import Budget, Deduplicate

    def turn(i: int) -> list[Message]:
        call = ToolCall(f"c{i}", "run", f'{{"command": "step_{i}"}}')
        if i % 5 == 0:
            body = ""  # no output: a note would not save a token
        elif i % 7 == 0:
            body = "all services up and running, nothing to report\n" * 6
        else:
            body = "".join(f"value_{i}_{k} = {i * k + 100}\n" for k in range(12))
        return [
            Message.assistant(f"Step {i}.", tool_calls=[call]),
            Message.tool(f"c{i}", body),
        ]

    conv = [Message.system("You are an agent."), Message.user("Do the task.")]
    for i in range(400):
        conv += turn(i)
    counter = TokenCounter(FakeTokenizer())  # Deduplicate's alone
    piped = TokenCounter(FakeTokenizer())  # the default pipeline's
    limit = int(counter.messages(conv) * share)
    dedup = Deduplicate()
    dedup(conv, Budget(limit, counter))
    fit(conv, limit=limit, tokenizer=piped)
    starts = scan_starts(monkeypatch, "Deduplicate")
    in_place = _rescan._in_place  # pyright: ignore[reportPrivateUsage]  # the path under test
    later: list[int] = []  # results a later stage found rewritten in place

    def spy_in_place(*args: Any) -> Any:
        found = in_place(*args)
        later.append(len(found or ()))
        return found

    monkeypatch.setattr(_rescan, "_in_place", spy_in_place)
    for i in range(400, 412):
        before = len(conv)
        if i % 3 == 0:  # the last result changed too: the old one is no prefix
            call_id = conv[-1].tool_results[0].call_id
            conv[-1] = Message.tool(call_id, turn(7)[1].text)  # a repeated output
        conv += turn(i)
        starts.clear()
        alone = dedup(conv, Budget(limit, counter))
        assert starts, "Deduplicate rescanned nothing"
        # From the first copy (message 3) before; now from the new messages,
        # or from where the last scan met the budget (a step further on).
        first = before - 2 if share < 0.9 else 4
        assert min(starts) >= first, f"re-fit {i} rescanned from {min(starts)}"
        fresh = dedup(list(conv), Budget(limit, TokenCounter(FakeTokenizer())))
        assert alone.messages == fresh.messages
        assert alone.report == fresh.report
        fitted = fit(conv, limit=limit, tokenizer=piped)
        again = fit(list(conv), limit=limit, tokenizer=TokenCounter(FakeTokenizer()))
        assert fitted.messages == again.messages
        assert fitted.report == again.report
    if share < 0.9:  # a copy's note changed: the stages after decided it alone
        assert max(later) > 0
    notes = [m for m in alone.messages if m.text.startswith("[same output")]
    assert notes  # the repeated output's earlier copies are notes


@pytest.mark.parametrize("share", [0.2, 0.3])
def test_stale_reads_decide_rewritten_results_again_alone(
    monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    """Files read again (stale reads) whose outputs repeat (``Deduplicate``
    notes, repointed as new copies come): ``StaleReads`` decides again alone
    the results rewritten before it and the reads they superseded, without
    scanning from the first of them; the default pipeline gives what a
    fresh fit gives."""

    def turn(i: int) -> list[Message]:
        path = f"src/m{i % 9}.py"
        call = ToolCall(f"r{i}", "Read", f'{{"file_path": "{path}"}}')
        # Files 0-2 never change: their reads repeat (copies); the others do.
        version = 0 if i % 9 < 3 else i
        body = "".join(
            f"{k:>6}\u2192x_{i % 9}_{k} = {version * k}\n" for k in range(25)
        )
        return [
            Message.assistant(f"Reading {path}.", tool_calls=[call]),
            Message.tool(f"r{i}", body),
            Message.user(f"Next {i}."),
        ]

    conv = [Message.system("You are a coding agent."), Message.user("Fix it.")]
    for i in range(300):
        conv += turn(i)
    counter = TokenCounter(FakeTokenizer())
    limit = int(counter.messages(conv) * share)
    fit(conv, limit=limit, tokenizer=counter)
    starts = scan_starts(monkeypatch, "StaleReads")
    resumed = 0
    for i in range(300, 309):
        before = len(conv)
        conv += turn(i)
        starts.clear()
        fitted = fit(conv, limit=limit, tokenizer=counter)
        if starts and min(starts) >= before - 30:  # a read 9 turns back
            resumed += 1
        fresh = fit(list(conv), limit=limit, tokenizer=TokenCounter(FakeTokenizer()))
        assert fitted.messages == fresh.messages
        assert fitted.report == fresh.report
        assert any(c.kind == "stale" for c in fitted.report.changes)
    assert resumed == 9, f"StaleReads rescanned from far back in {9 - resumed} of 9"
