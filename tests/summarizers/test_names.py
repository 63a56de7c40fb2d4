from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from contextwindow import Message, ToolCall, fit, read_transcripts
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    InvalidMessageError,
)
from contextwindow.messages import Thinking
from contextwindow.strategies import Budget, Summarize
from contextwindow.summarizers import (
    AsyncSummarizer,
    ExtractiveSummarizer,
    NamesSummarizer,
    Summarizer,
    is_summary,
    recall,
    summary_sources,
)
from contextwindow.summarizers.names import DEFAULT_MAX_TOKENS, PREFIX
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import HeuristicTokenizer, TokenCounter


def session(n: int) -> list[Message]:
    out: list[Message] = [Message.user("Speed up the billing export.")]
    for i in range(n):
        args = json.dumps({"file_path": f"src/billing/part_{i}.py"})
        out += [
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "Read", args)]),
            Message.tool(f"c{i}", f'{{"invoice_id": {7000 + i}, "rows": {300 + i}}}'),
            Message.assistant(f"part_{i} calls fetch_rows_{i} for invoice {7000 + i}"),
        ]
    return out


class TestNamesSummarizer:
    def test_is_a_summarizer_both_ways(self) -> None:
        """It satisfies both protocols, and says the same both ways."""
        s = NamesSummarizer()
        assert isinstance(s, Summarizer)
        assert isinstance(s, AsyncSummarizer)
        assert asyncio.run(s.asummarize(session(3))) == s.summarize(session(3))

    def test_names_paths_then_identifiers_then_numbers(self) -> None:
        """Paths first, JSON keys after the values, each name once."""
        text = NamesSummarizer().summarize(session(2))
        assert text == (
            f"{PREFIX}src/billing/part_0.py, src/billing/part_1.py, part_0, "
            "fetch_rows_0, part_1, fetch_rows_1, 7000, 300, 7001, 301, file_path, "
            "invoice_id"
        )

    def test_reasoning_is_not_read(self) -> None:
        """A path the agent only guessed in its reasoning is no fact."""
        m = Message("assistant", (Thinking("maybe lib/guess.ex has it"),))
        assert NamesSummarizer().summarize([m, Message.user("try app/real.ex")]) == (
            f"{PREFIX}app/real.ex"
        )

    def test_nothing_named_is_empty(self) -> None:
        """Messages naming nothing give an empty summary."""
        assert NamesSummarizer().summarize([Message.user("hello there")]) == ""

    def test_previous_comes_first(self) -> None:
        """A summary rolled forward names what the earlier one named first."""
        s = NamesSummarizer()
        text = s.summarize(session(1), previous=f"{PREFIX}docs/old.md, 9999")
        assert text.startswith(f"{PREFIX}docs/old.md, src/billing/part_0.py, ")
        assert "9999" in text

    def test_handles_are_not_named(self) -> None:
        """A marker's handle is no fact, even when its ten digits are all numbers."""
        marker = "[tool result cleared: 12 tokens, naming 4242; recall 1234567890]"
        m = Message.tool("c1", marker)
        assert NamesSummarizer().summarize([m]) == f"{PREFIX}4242"

    def test_tool_names_are_not_named(self) -> None:
        """The tools called are in the request's schemas; their arguments are facts."""
        call = ToolCall("c1", "get_user_details", '{"user_id": "mia_li_3668"}')
        m = Message.assistant(tool_calls=[call])
        assert NamesSummarizer().summarize([m]) == f"{PREFIX}mia_li_3668, user_id"

    def test_a_markers_figures_are_not_named(self) -> None:
        """The size a marker states is no fact: only what it named is."""
        marker = "[tool result cleared: 375 tokens, naming a/b.py; recall 1234567890]"
        m = Message.tool("c1", marker)
        assert NamesSummarizer().summarize([m]) == f"{PREFIX}a/b.py"

    def test_stays_within_max_tokens(self) -> None:
        """The summary fits ``max_tokens`` as its tokenizer counts, names whole."""
        tok = HeuristicTokenizer()
        s = NamesSummarizer(tok)
        conv = session(200)
        for limit in (5, 20, 80, 300):
            text = s.summarize(conv, max_tokens=limit)
            assert tok.count(text) <= limit
            assert set(text.removeprefix(PREFIX).split(", ")) <= set(
                s.summarize(conv, max_tokens=10**6).removeprefix(PREFIX).split(", ")
            ) | {""}
        assert tok.count(s.summarize(conv)) <= DEFAULT_MAX_TOKENS


class TestThroughSummarize:
    def test_the_summary_names_what_it_replaced(self) -> None:
        """Summarize with it: one summary naming the older units' facts, recallable."""
        conv = session(8)
        budget = Budget(120, TokenCounter(FakeTokenizer()))
        fitted = Summarize(NamesSummarizer(), keep_recent=2, max_tokens=150)(
            conv, budget
        )
        assert fitted.report.fits
        summary = fitted.messages[0]
        assert is_summary(summary)
        assert "src/billing/part_0.py" in summary.text
        assert "fetch_rows_0" in summary.text
        sources = summary_sources(summary)
        assert recall(conv, sources) == conv[: len(sources)]


def test_tau_bench_numbers_survive_half_the_tokens(shared_data: Path) -> None:
    """At half its tokens, a tau-bench run keeps most of its tool results' numbers.

    Dropping the oldest units lost them; the summary naming them keeps them.
    """
    runs = read_transcripts(shared_data / "tau-bench_gpt-4o-airline.json")
    counter = TokenCounter(HeuristicTokenizer(), "openai")
    kept = total = fitted_runs = 0
    for t in runs[:40]:
        limit = counter.messages(list(t.messages)) // 2
        try:
            fitted = fit(t.messages, limit=limit, reserve=0, tokenizer=counter)
        except BudgetError:
            continue
        fitted_runs += 1
        assert fitted.report.tokens_after <= limit
        results = " ".join(r.text for m in t.messages for r in m.tool_results)
        numbers = {w for w in results.replace('"', " ").split() if w.isdigit()}
        out = " ".join(
            [m.text for m in fitted.messages]
            + [c.arguments for m in fitted.messages for c in m.tool_calls]
        )
        found = set(out.replace('"', " ").replace(",", " ").split())
        kept += len(numbers & found)
        total += len(numbers)
    assert fitted_runs >= 20
    assert kept / total >= 0.6


@pytest.mark.parametrize("summarizer", [NamesSummarizer(), ExtractiveSummarizer()])
class TestWhatUsersHold:
    def test_provider_dicts_are_read(self, summarizer: Summarizer) -> None:
        """Messages as provider dicts are read like neutral ones."""
        dicts = [{"role": "user", "content": "see a/b.py on port 8080"}]
        assert summarizer.summarize(dicts) == summarizer.summarize(  # type: ignore[arg-type]  # what users hold
            [Message.user("see a/b.py on port 8080")]
        )

    def test_bad_arguments_are_named(self, summarizer: Summarizer) -> None:
        """None for messages, a number for previous: errors naming the argument."""
        with pytest.raises(InvalidMessageError, match="messages"):
            summarizer.summarize(None)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(ArgumentTypeError, match="previous"):
            summarizer.summarize([], previous=3)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize(
        ("max_tokens", "error"),
        [
            ("100", ArgumentTypeError),
            (2.5, ArgumentTypeError),
            (True, ArgumentTypeError),
            (0, ArgumentValueError),
            (-5, ArgumentValueError),
        ],
    )
    def test_max_tokens_below_one_is_refused(
        self, summarizer: Summarizer, max_tokens: object, error: type
    ) -> None:
        """max_tokens takes an int of at least 1 (or None), as the LLM
        summarizers do: an error naming it, not a TypeError from inside."""
        with pytest.raises(error, match="max_tokens: expected an int >= 1"):
            summarizer.summarize([Message.user("hi")], max_tokens=max_tokens)  # type: ignore[arg-type]  # the wrong type on purpose
        assert summarizer.summarize([Message.user("see a/b.py")], max_tokens=1) == ""
