from __future__ import annotations

import asyncio

import pytest

from contextwindow import Message, ToolCall
from contextwindow.errors import ContextWindowError
from contextwindow.summarizers import (
    AsyncSummarizer,
    ExtractiveSummarizer,
    Facts,
    Summarizer,
    extract_facts,
)
from contextwindow.summarizers.extractive import DEFAULT_MAX_TOKENS
from contextwindow.summarizers.facts import FACTS_HEADER
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import HeuristicTokenizer


def chat(n: int) -> list[Message]:
    topics = ["billing", "search", "login", "exports", "alerts", "caching"]
    out: list[Message] = []
    for i in range(n):
        t = topics[i % len(topics)]
        out += [
            Message.user(f"Please look at the {t} module in src/{t}.py, it is slow."),
            Message.assistant(
                f"The {t} module spends 40% of its time in one query. "
                f"I added an index; {t} requests now take 120 ms. Anything else?"
            ),
        ]
    return out


class TestExtractiveSummarizer:
    def test_is_a_summarizer_both_ways(self) -> None:
        """It satisfies both protocols."""
        s = ExtractiveSummarizer()
        assert isinstance(s, Summarizer)
        assert isinstance(s, AsyncSummarizer)
        assert asyncio.run(s.asummarize(chat(2))) == s.summarize(chat(2))

    def test_deterministic(self) -> None:
        """The same messages give the same summary, ids or not."""
        s = ExtractiveSummarizer()
        assert s.summarize(chat(6), max_tokens=150) == s.summarize(
            chat(6), max_tokens=150
        )

    def test_stays_within_max_tokens(self) -> None:
        """Sentences and record together fit the budget, as its tokenizer counts."""
        tok = HeuristicTokenizer()
        s = ExtractiveSummarizer(tok)
        for limit in (20, 60, 150, 400):
            assert tok.count(s.summarize(chat(12), max_tokens=limit)) <= limit
        assert tok.count(s.summarize(chat(40))) <= DEFAULT_MAX_TOKENS

    def test_keeps_the_facts_that_fit(self) -> None:
        """With room, every fact is in the summary, in sentences or the record."""
        conv = chat(6)
        text = ExtractiveSummarizer().summarize(conv, max_tokens=600)
        assert not extract_facts(conv).missing_from(text)

    def test_sentences_in_order_with_their_speaker(self) -> None:
        """Lines name the speaker; chosen sentences keep their order."""
        conv = [
            Message.user("Deploy the web app to staging.", name="ada"),
            Message.assistant("Staging runs the old build from Monday."),
            Message.user("Then rebuild it first and tell me the new version."),
        ]
        text = ExtractiveSummarizer().summarize(conv, max_tokens=200)
        lines = text.split("\n\n")[0].splitlines()
        assert lines == [
            "ada: Deploy the web app to staging.",
            "assistant: Staging runs the old build from Monday.",
            "user: Then rebuild it first and tell me the new version.",
        ]

    def test_repeats_are_chosen_once(self) -> None:
        """Near-identical sentences are one line."""
        conv = [Message.user("Run the full test suite again now.")] * 5
        body = ExtractiveSummarizer().summarize(conv, max_tokens=300).split("\n\n")[0]
        assert body == "user: Run the full test suite again now."

    def test_tool_output_is_read_for_facts_only(self) -> None:
        """A file read's lines are not sentences; its paths and errors are facts."""
        conv = [
            Message.assistant(
                tool_calls=[ToolCall("c1", "Read", '{"file_path": "a.py"}')]
            ),
            Message.tool(
                "c1", "This line of the file is not prose at all.\nValueError: x"
            ),
        ]
        text = ExtractiveSummarizer().summarize(conv)
        assert text.startswith(FACTS_HEADER)
        assert "not prose" not in text
        assert "ValueError: x" in text
        assert "a.py" in text

    def test_previous_is_folded_in(self) -> None:
        """An earlier summary's lines compete as sentences; its facts carry over."""
        s = ExtractiveSummarizer()
        first = s.summarize(chat(3), max_tokens=200)
        later = s.summarize(chat(6)[6:], previous=first, max_tokens=300)
        assert (
            Facts.parse(first).keys()
            <= Facts.parse(later).keys() | extract_facts(chat(6)[6:]).keys()
        )
        assert not Facts.parse(first).missing_from(later)

    def test_fact_share(self) -> None:
        """fact_share=0: sentences only, facts only where they fit after them."""
        tok = FakeTokenizer()
        text = ExtractiveSummarizer(tok, fact_share=0).summarize(chat(6), max_tokens=60)
        assert text.splitlines()[0].startswith(("user: ", "assistant: "))
        with pytest.raises(ContextWindowError, match="fact_share"):
            ExtractiveSummarizer(fact_share=1.5)

    def test_nothing_to_say(self) -> None:
        """No prose and no facts: an empty summary."""
        assert ExtractiveSummarizer().summarize([]) == ""
        assert (
            ExtractiveSummarizer().summarize([Message.user("ok")], max_tokens=1) == ""
        )


def test_each_message_is_split_once_while_it_lives() -> None:
    """A message's sentences are read once while it lives, and a summary made
    again from the same history (or an equal one) is the same summary."""
    import gc

    from contextwindow.summarizers import extractive

    text = "We moved the cache to Redis. The tests in tests/store pass again."
    conv = [
        Message.user("Why is the store slow?"),
        Message.assistant(text),
        Message.user("Keep the SQLite path as the default."),
    ]
    summarizer = ExtractiveSummarizer()
    first = summarizer.summarize(conv, max_tokens=60)
    assert Message.assistant(text) in extractive._SENTENCES  # pyright: ignore[reportPrivateUsage]
    assert summarizer.summarize(conv, max_tokens=60) == first
    again = [Message(m.role, m.parts) for m in conv]  # equal, new ids
    assert summarizer.summarize(again, max_tokens=60) == first
    kept = extractive._SENTENCES.get(conv[1], extractive._read)  # pyright: ignore[reportPrivateUsage]
    assert kept == extractive._read(conv[1])  # pyright: ignore[reportPrivateUsage]
    assert [t for t, _ in kept] == [
        "We moved the cache to Redis.",
        "The tests in tests/store pass again.",
    ]
    del conv, again, kept
    gc.collect()
    assert Message.assistant(text) not in extractive._SENTENCES  # pyright: ignore[reportPrivateUsage]
