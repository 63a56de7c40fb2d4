from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from contextwindow import fit
from contextwindow.errors import BudgetError, ContextWindowError
from contextwindow.messages import Message, Provider, ToolCall, units
from contextwindow.relevance import BM25Scorer
from contextwindow.strategies import Budget, DropOldest, SelectRelevant, parse_strategy
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import TokenCounter
from contextwindow.validity import CONTINUED_ID, problems
from contextwindow.wire import to_dicts


def budget(
    limit: int,
    provider: Provider = "openai",
    query: str | None = None,
    protected: tuple[str, ...] = (),
) -> Budget:
    return Budget(
        limit, TokenCounter(FakeTokenizer(), provider), protected=protected, query=query
    )


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


CHAT = [
    "My sister Ana lives in Porto.",
    "Lunch was great today.",
    "The printer jammed again.",
    "I watched a film tonight.",
    "Rain all week, sadly.",
    "The bus was late.",
]


def chat(question: str = "Which city does Ana live in?") -> list[Message]:
    # One word a token; each message costs 3 + 1 (role) + its words.
    return [Message.user(t) for t in CHAT] + [Message.user(question)]


class Recorder:
    """A scorer that records what it was given and scores by a fixed table."""

    def __init__(self, table: dict[str, float] | None = None) -> None:
        self.calls: list[tuple[list[str], str]] = []
        self.table = table or {}

    def __call__(self, documents: Sequence[str], query: str, /) -> list[float]:
        self.calls.append((list(documents), query))
        return [self.table.get(d, 0.0) for d in documents]


class TestSelectRelevant:
    def test_a_fitting_conversation_is_left_alone(self) -> None:
        """Nothing is dropped (or scored) when it already fits."""
        scorer = Recorder()
        conv = chat()
        fitted = SelectRelevant(scorer=scorer)(conv, budget(1000))
        assert fitted.messages == tuple(conv)
        assert fitted.report.changes == ()
        assert scorer.calls == []

    def test_keeps_the_relevant_old_unit_and_the_recent_ones(self) -> None:
        """The old turn the question needs survives; the others go."""
        conv = chat()
        fitted = SelectRelevant(keep_recent=2)(conv, budget(32))
        assert texts(fitted.messages) == [CHAT[0], CHAT[-1], conv[-1].text]
        assert [(c.kind, c.index, c.units) for c in fitted.report.changes] == [
            ("dropped", 1, 4)
        ]
        drop = DropOldest(keep_first=0)(conv, budget(32))
        assert CHAT[0] not in texts(drop.messages), "what dropping the oldest loses"

    def test_recent_units_are_kept_whatever_their_score(self) -> None:
        """keep_recent units stay even when older ones score higher."""
        table = {CHAT[1]: 5.0, CHAT[2]: 4.0}
        fitted = SelectRelevant(keep_recent=3, scorer=Recorder(table))(
            chat(), budget(37)
        )
        assert texts(fitted.messages) == [CHAT[1], CHAT[4], CHAT[5], chat()[-1].text]

    def test_most_relevant_first_then_newest_first(self) -> None:
        """Ranked by score; ties, zeros included, go to the newer unit."""
        table = {CHAT[0]: 1.0, CHAT[2]: 1.0, CHAT[3]: 2.0}
        scorer = Recorder(table)
        # Room for the question and three more turns.
        fitted = SelectRelevant(keep_recent=1, scorer=scorer)(chat(), budget(38))
        assert texts(fitted.messages)[:-1] == [CHAT[2], CHAT[3], CHAT[5]]
        fitted = SelectRelevant(keep_recent=1, scorer=scorer)(chat(), budget(48))
        assert texts(fitted.messages)[:-1] == [CHAT[0], CHAT[2], CHAT[3], CHAT[5]]

    def test_skips_a_unit_too_big_and_takes_a_smaller_one(self) -> None:
        """A relevant unit that does not fit is passed over, not the end of it."""
        conv = [
            Message.user("Ana " + "word " * 40),
            Message.user("Ana moved to Porto."),
            Message.user("Chat."),
            Message.user("Where does Ana live?"),
        ]
        fitted = SelectRelevant(keep_recent=1)(conv, budget(30))
        assert texts(fitted.messages) == [conv[1].text, conv[2].text, conv[3].text]

    def test_the_final_message_is_the_query_and_no_document(self) -> None:
        """By default the final message's text is the query, not scored itself."""
        scorer = Recorder()
        SelectRelevant(keep_recent=1, scorer=scorer)(chat("where is Ana?"), budget(20))
        ((docs, query),) = scorer.calls
        assert query == "where is Ana?"
        assert docs == CHAT

    def test_an_explicit_query_wins_and_the_final_unit_is_a_document(self) -> None:
        """budget.query is the query; then the final message is scored like the rest."""
        scorer = Recorder()
        b = budget(20, query="printer trouble")
        SelectRelevant(keep_recent=1, scorer=scorer)(chat(), b)
        ((docs, query),) = scorer.calls
        assert query == "printer trouble"
        assert docs == [*CHAT, chat()[-1].text]
        fitted = SelectRelevant(keep_recent=1)(chat(), budget(21, query="printer"))
        assert texts(fitted.messages) == [CHAT[2], chat()[-1].text]

    def test_fit_passes_its_query(self) -> None:
        """fit(query=...) reaches the strategy through the budget."""
        fitted = fit(
            chat(),
            limit=22,
            strategy=SelectRelevant(keep_recent=1),
            tokenizer=TokenCounter(FakeTokenizer()),
            query="the film",
        )
        assert texts(fitted.messages) == [CHAT[3], chat()[-1].text]

    def test_system_and_pinned_units_stay_and_are_not_scored(self) -> None:
        """System messages and pinned ones are kept; system ones are no document."""
        conv = [
            Message.system("You are terse."),
            Message.user("Remember: code 1234", pinned=True),
            *chat(),
        ]
        scorer = Recorder()
        fitted = SelectRelevant(keep_recent=1, scorer=scorer)(conv, budget(40))
        assert texts(fitted.messages)[:2] == ["You are terse.", "Remember: code 1234"]
        assert scorer.calls[0][0][0] == "Remember: code 1234"
        marked = SelectRelevant(keep_recent=0)(conv, budget(40, protected=("bus",)))
        assert CHAT[5] in texts(marked.messages)

    def test_tool_exchanges_are_kept_or_dropped_whole(self) -> None:
        """A unit is scored as one text (call, arguments, results) and kept whole."""
        conv = [
            Message.user("Find the config."),
            Message.assistant(
                tool_calls=[ToolCall("c1", "grep", '{"pattern": "timeout"}')]
            ),
            Message.tool("c1", "settings.py: TIMEOUT = 30"),
            Message.assistant("Found it."),
            Message.user("Unrelated chatter " * 5),
            Message.user("What is the timeout setting?"),
        ]
        fitted = SelectRelevant(keep_recent=1)(conv, budget(40))
        kept = [m.id for m in fitted.messages]
        assert conv[1].id in kept, "the exchange naming the timeout is kept"
        at = kept.index(conv[1].id)
        assert kept[at : at + 2] == [conv[1].id, conv[2].id]
        assert conv[4].id not in kept
        assert problems(fitted.messages, "openai") == ()
        assert all(u.complete for u in units(fitted.messages))

    def test_anthropic_repair_cost_is_paid_by_the_least_relevant(self) -> None:
        """When the placeholder turn does not fit, the last unit chosen goes too."""
        conv = [
            Message.assistant("Porto is where Ana lives."),
            Message.user("Ana likes Porto a lot, she says."),
            Message.assistant("ok"),
            Message.user("Where is Ana?"),
        ]
        # Tokens: 8, 10, 4 and 6; the placeholder turn 4. Chosen: the first
        # two turns (both name Ana), then "ok"; the placeholder does not fit.
        for limit, kept in ((27, [0, 3]), (30, [0, 1, 3])):
            fitted = SelectRelevant(keep_recent=1)(conv, budget(limit, "anthropic"))
            assert fitted.report.fits
            assert problems(fitted.messages, "anthropic") == ()
            assert fitted.messages[0].id == CONTINUED_ID
            assert [m.id for m in fitted.messages[1:]] == [conv[k].id for k in kept]

    def test_the_placeholder_turn_goes_with_what_needed_it(self) -> None:
        """A repaired input's placeholder turn is not kept once its reason is gone."""
        conv = [
            Message.assistant("Hello, how can I help today with anything?"),
            Message.user("Ana lives in Porto."),
            Message.assistant("Nice."),
            Message.user("Where does Ana live?"),
        ]
        fitted = fit(
            conv,
            limit=22,
            strategy=SelectRelevant(keep_recent=1),
            tokenizer=TokenCounter(FakeTokenizer(), "anthropic"),
        )
        assert [m.id for m in fitted.messages] == [conv[1].id, conv[2].id, conv[3].id]
        assert problems(fitted.messages, "anthropic") == ()

    def test_recent_units_that_cannot_fit_compete_with_the_rest(self) -> None:
        """The recent run is cut to what fits, newest first; then relevance fills."""
        conv = chat("Where does Ana live?")  # 8 tokens
        conv[3] = Message.user("I watched a very long film tonight with friends.")
        # The question and the two newest turns take 27 with the reply; the
        # long recent turn (13) does not fit beside them, the Ana turn (10) does.
        fitted = SelectRelevant(keep_recent=4)(conv, budget(37))
        assert texts(fitted.messages) == [CHAT[0], CHAT[4], CHAT[5], conv[-1].text]
        assert fitted.report.fits

    def test_pinned_content_over_the_budget_leaves_it_to_fit(self) -> None:
        """Every unpinned unit goes and the output does not fit; fit raises."""
        conv = [Message.user("keep " * 40, pinned=True), *chat()]
        alone = SelectRelevant()(conv, budget(30))
        assert not alone.report.fits
        assert texts(alone.messages) == [conv[0].text, conv[-1].text]
        with pytest.raises(BudgetError):
            fit(
                conv,
                limit=30,
                strategy=SelectRelevant(),
                tokenizer=TokenCounter(FakeTokenizer()),
            )

    def test_nothing_to_choose_from(self) -> None:
        """Everything pinned and over the budget: returned as it is, not fitting."""
        conv = [Message.user(t, pinned=True) for t in CHAT]
        fitted = SelectRelevant()(conv, budget(20))
        assert fitted.messages == tuple(conv)
        assert not fitted.report.fits

    def test_a_final_system_message_asks_and_the_last_turn_is_scored(self) -> None:
        """A final system message is the query; the last turn is then a document."""
        scorer = Recorder()
        conv = [*chat(), Message.system("Answer in French.")]
        SelectRelevant(keep_recent=0, scorer=scorer)(conv, budget(20))
        ((docs, query),) = scorer.calls
        assert query == "Answer in French."
        assert docs == [*CHAT, conv[-2].text]

    def test_input_is_not_mutated_and_the_report_adds_up(self) -> None:
        """The input stays as it was; saved tokens account for the difference."""
        conv = chat()
        wire = to_dicts(conv)
        fitted = SelectRelevant(keep_recent=2)(conv, budget(32))
        assert to_dicts(conv) == wire
        r = fitted.report
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after
        assert r.stages == ("SelectRelevant",)

    def test_re_selecting_after_an_append_tokenises_one_message(self) -> None:
        """The scorer's cache holds every old unit; only the new one is counted."""
        scorer = BM25Scorer()
        strategy = SelectRelevant(keep_recent=1, scorer=scorer)
        conv = chat()
        strategy(conv, budget(20))
        seen = len(scorer.cache)
        grown = [*conv[:-1], Message.user("Ana sent a postcard."), conv[-1]]
        strategy(grown, budget(20))
        assert len(scorer.cache) == seen + 1

    def test_bad_configuration_and_bad_scorers_fail_clearly(self) -> None:
        """keep_recent < 0, a scorer that is not callable or miscounts."""
        with pytest.raises(ContextWindowError, match="keep_recent"):
            SelectRelevant(keep_recent=-1)
        with pytest.raises(ContextWindowError, match="scorer: expected a Scorer"):
            SelectRelevant(scorer="bm25")  # type: ignore[arg-type]

        def short(documents: Sequence[str], query: str, /) -> list[float]:
            return [1.0]

        with pytest.raises(ContextWindowError, match="1 scores for 6 units"):
            SelectRelevant(scorer=short)(chat(), budget(20))

    @pytest.mark.parametrize(
        "shape",
        [
            lambda scores: dict(enumerate(scores)),
            lambda scores: "".join("9" if s else "0" for s in scores),
            lambda scores: b"0" * len(scores),
            lambda scores: set(range(len(scores))),
        ],
        ids=["dict", "str", "bytes", "set"],
    )
    def test_scores_that_are_no_sequence_are_refused(
        self, shape: Callable[[list[float]], object]
    ) -> None:
        """A dict of scores (its keys would rank), a str or a set: refused, named."""

        def ana(documents: Sequence[str], query: str, /) -> Any:
            return shape([10.0 if "Ana" in d else 0.0 for d in documents])

        with pytest.raises(
            ContextWindowError, match=r"the scorer <function .* not one number per unit"
        ):
            SelectRelevant(keep_recent=1, scorer=ana)(chat(), budget(20))

    def test_scores_in_any_ordered_iterable_are_read(self) -> None:
        """A tuple or a generator of scores ranks as the list does."""

        def scores(documents: Sequence[str]) -> list[float]:
            return [10.0 if "Ana" in d else 0.0 for d in documents]

        def as_tuple(documents: Sequence[str], query: str, /) -> Any:
            return tuple(scores(documents))

        def as_generator(documents: Sequence[str], query: str, /) -> Any:
            return iter(scores(documents))

        for scorer in (as_tuple, as_generator):
            fitted = SelectRelevant(keep_recent=1, scorer=scorer)(chat(), budget(30))
            assert texts(fitted.messages) == [CHAT[0], chat()[-1].text]

    def test_by_name(self) -> None:
        """'relevant(N)' is SelectRelevant(keep_recent=N), equal to one built."""
        assert parse_strategy("relevant(4)") == SelectRelevant(keep_recent=4)
        assert parse_strategy("relevant") == SelectRelevant()
        assert repr(SelectRelevant(2)) == (
            "SelectRelevant(keep_recent=2, scorer=BM25Scorer(k1=1.2, b=0.75, "
            "context=((2, 1.0), (8, 0.3))))"
        )
