"""Scans of tool output stay linear in its length, whatever its characters.

Each regular expression below backtracked to the end of a run from every place
it was tried: ``a/a/a/...`` (a path's folders with no name), 40,000 characters
of it, took 31 s in a digest, and four such results of 160 KB made the default
pipeline take 388 s; 40,000 spaces before a word, 11 s in the lossless stage.
Each test scans 200,000 characters or more (minutes, were the scan quadratic)
under an alarm of 30 s: a guard against hanging, not a measure of speed
(``benchmarks/`` measures that). The alarm is POSIX's (CI runs Linux).
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwindow import Message, TokenCounter, ToolCall
from contextwindow._redact import display_url
from contextwindow.messages import units
from contextwindow.strategies import Budget, ClearToolResults
from contextwindow.strategies._rescan import CallNames, call_name
from contextwindow.strategies.digest import is_listing, names
from contextwindow.strategies.files import file_actions
from contextwindow.strategies.lossless import squeeze_whitespace
from contextwindow.testing import FakeTokenizer

LONG = 200_000
"""Characters each adversarial text holds, about."""


class _Hung(Exception):
    pass


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail the block when it runs longer than ``seconds`` (a hang, not a speed)."""

    def ring(signum: int, frame: FrameType | None) -> None:
        raise _Hung

    before = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Hung:
        pytest.fail(f"still scanning after {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


@pytest.mark.parametrize(
    "junk", ["a/", "1.", ".", "a./", "a_", " /", "a" * 300 + "/"], ids=repr
)
def test_names_of_a_long_run_without_a_path(junk: str) -> None:
    """A path after a run that looks like folders is still found, once."""
    text = junk * (LONG // len(junk)) + " see src/app/main.py and port 8080"
    with within(30):
        found = names(text)
        listing = is_listing(text)
    assert "src/app/main.py" in found
    assert "8080" in found
    assert not listing


def test_a_path_64_folders_deep_is_found_whole() -> None:
    deep = "/".join(f"d{i}" for i in range(64)) + "/main.py"
    assert [n for n in names(f"open {deep} now") if n.endswith("main.py")] == [deep]


def test_trailing_blanks_of_a_long_line() -> None:
    text = "head\n" + " " * LONG + "x  \n" + "\t" * LONG + "\nend"
    with within(30):
        out = squeeze_whitespace(text)
    assert out == "head\n" + " " * LONG + "x\n\nend"


def test_a_patched_file_after_many_blanks() -> None:
    patch = "*** Begin Patch\n*** Update File: a" + " " * LONG + "b  \n*** End Patch"
    with within(30):
        actions = file_actions(
            ToolCall("c1", "apply_patch", json.dumps({"input": patch}))
        )
    assert [a.path for a in actions] == ["a" + " " * LONG + "b"]


def test_a_long_keyword_dsn_is_shown_masked() -> None:
    dsn = "host=db " + "a" * LONG + " password=hunter2hunter2"
    with within(30):
        shown = display_url(dsn)
    assert "hunter2" not in shown


def parallel(n: int) -> list[Message]:
    """One assistant message making ``n`` calls, then their ``n`` results."""
    calls = [ToolCall(f"c{i}", f"tool{i % 3}", f'{{"i": {i}}}') for i in range(n)]
    return [
        Message.user("go"),
        Message.assistant(tool_calls=calls),
        *(Message.tool(f"c{i}", f"result {i} " * 5) for i in range(n)),
        Message.user("done"),
    ]


def test_an_exchange_of_many_parallel_calls_is_grouped() -> None:
    """Each result found its call along every pending one (minutes at this size)."""
    conv = parallel(60_000)
    with within(30):
        found = units(conv)
    assert [(u.kind, u.start, u.stop, u.unanswered) for u in found] == [
        ("message", 0, 1, ()),
        ("tool_exchange", 1, 60_002, ()),
        ("message", 60_002, 60_003, ()),
    ]


@given(
    st.lists(
        st.one_of(
            st.lists(st.sampled_from("abcd"), max_size=4).map(
                lambda ids: Message.assistant(
                    tool_calls=[ToolCall(c, f"{c}{k}") for k, c in enumerate(ids)]
                )
            ),
            st.sampled_from("abcde").map(lambda c: Message.tool(c, "out")),
            st.just(Message.user("u")),
        ),
        max_size=30,
    ),
    st.lists(st.integers(0, 30), max_size=40),
)
def test_call_names_are_call_name(messages: list[Message], asked: list[int]) -> None:
    """Asked in any order, ``CallNames`` answers as ``call_name`` does."""
    names = CallNames(messages)
    for i in asked:
        i = min(i, len(messages))
        for cid in "abcde":
            assert names(i, cid) == call_name(messages, i, cid)


def test_results_of_parallel_calls_are_named_in_their_markers() -> None:
    conv = parallel(2_000)
    counter = TokenCounter(FakeTokenizer())
    fitted = ClearToolResults(keep_recent=0)(
        conv, Budget(counter.messages(conv) // 3, counter)
    )
    cleared = [c for c in fitted.report.changes if c.kind == "cleared"]
    assert cleared
    assert [c.what for c in cleared[:4]] == [
        "tool result: tool0",
        "tool result: tool1",
        "tool result: tool2",
        "tool result: tool0",
    ]
