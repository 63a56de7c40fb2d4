from __future__ import annotations

import dataclasses

import pytest

from contextwindow import fit
from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message
from contextwindow.relevance import BM25Scorer
from contextwindow.strategies import (
    ClearToolResults,
    Pipeline,
    SelectRelevant,
    SlidingWindow,
    Summarize,
)
from contextwindow.strategies.names import STRATEGY_NAMES, parse_strategy
from contextwindow.summarizers import ExtractiveSummarizer


class TestSpecLanguage:
    @pytest.mark.parametrize("name", [n for n in STRATEGY_NAMES if n != "default"])
    def test_every_option_has_a_name(self, name: str) -> None:
        """Each strategy's every constructor option can be written in a spec."""
        entry = STRATEGY_NAMES[name]
        made = entry.make()
        assert dataclasses.is_dataclass(made)
        options = {f.name for f in dataclasses.fields(made) if f.init}
        assert set(entry.arguments) == options

    def test_values_of_every_kind(self) -> None:
        """Integers, numbers, quoted texts and parts chosen by name are read."""
        assert parse_strategy("relevant(3, scorer=bm25)") == SelectRelevant(
            3, BM25Scorer()
        )
        spec = "clear(keep_recent=1, placeholder='[cut, {tokens} (tokens)]')"
        assert parse_strategy(spec) == ClearToolResults(1, "[cut, {tokens} (tokens)]")
        spec = "summarize(summarizer=extractive, max_share=0.5), sliding-window(2)"
        assert parse_strategy(spec) == Pipeline(
            Summarize(ExtractiveSummarizer(), max_share=0.5), SlidingWindow(2)
        )

    def test_a_spec_where_a_strategy_goes(self) -> None:
        """fit and the manager take a spec string as their strategy."""
        conv = [Message.user(f"turn {i}") for i in range(6)]
        fitted = fit(
            conv, limit=10_000, strategy="sliding-window(2)", tokenizer="gpt-4o"
        )
        assert len(fitted.messages) == 6  # it fits: nothing runs
        with pytest.raises(ContextWindowError, match=r"^strategy: .*unknown name"):
            fit(conv, limit=10, strategy="shrink")
