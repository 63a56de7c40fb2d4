from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwindow import Message, ToolCall, fit
from contextwindow.cli import main
from contextwindow.errors import (
    ArgumentTypeError,
    BudgetError,
    ContextWindowError,
    SummarizerError,
)
from contextwindow.formats import from_openai, to_openai
from contextwindow.handles import originals_of
from contextwindow.strategies import (
    Budget,
    ClearToolResults,
    DropOldest,
    SlidingWindow,
    Summarize,
    TruncateToolResults,
    parse_strategy,
    pinned_flags,
)
from contextwindow.summarizers import (
    SUMMARY_KEY,
    ExtractiveSummarizer,
    NamesSummarizer,
    extract_facts,
    is_summary,
    recall,
    summary_facts,
    summary_handle,
    summary_sources,
)
from contextwindow.summarizers.facts import FACTS_HEADER
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.counting import TokenCounter
from contextwindow.validity import problems
from contextwindow.wire import from_dicts, to_dicts

ROOT = Path(__file__).resolve().parent.parent.parent
LOG = "".join(f"tests/test_x.py::test_case_{k} PASSED\n" for k in range(30))
TOPICS = ("billing", "search", "login", "exports", "alerts", "caching", "mail", "auth")


def session(n: int = 8, system: bool = True) -> list[Message]:
    """n turns of a coding session: a request, a tool exchange, a reply."""
    out = [Message.system("You are a coding agent.", id="sys")] if system else []
    for i in range(n):
        t = TOPICS[i % len(TOPICS)]
        out += [
            Message.user(f"Please speed up the {t} module in src/{t}.py.", id=f"u{i}"),
            Message.assistant(
                tool_calls=[
                    ToolCall(
                        f"c{i}",
                        "Bash",
                        json.dumps({"command": f"pytest tests/test_{t}.py"}),
                    )
                ],
                id=f"a{i}",
            ),
            Message.tool(f"c{i}", LOG + f"{10 + i} passed in 0.{i}5s", id=f"t{i}"),
            Message.assistant(
                f"The {t} module now answers in {100 + i} ms; its query uses an index.",
                id=f"r{i}",
            ),
        ]
    return out


def budget(limit: int, provider: str = "openai", **kw: object) -> Budget:
    return Budget(limit, TokenCounter(FakeTokenizer(), provider), **kw)  # type: ignore[arg-type]  # provider from a test parameter


def the_summary(messages: Sequence[Message]) -> Message:
    (s,) = [m for m in messages if is_summary(m)]
    return s


class Echo:
    """A summarizer returning a fixed text and counting its calls."""

    def __init__(self, text: str = "Work happened.") -> None:
        self.text = text
        self.calls: list[tuple[int, str | None, int | None]] = []

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        self.calls.append((len(messages), previous, max_tokens))
        return self.text


class TestSummarize:
    def test_a_fitting_conversation_is_unchanged(self) -> None:
        """Nothing to do: the same messages, no change."""
        conv = session(2)
        fitted = Summarize()(conv, budget(10_000))
        assert list(fitted.messages) == conv
        assert fitted.report.changes == ()

    def test_just_enough_of_the_oldest_units(self) -> None:
        """The oldest units go into one summary, as few as meet the budget."""
        conv = session(8)
        b = budget(int(b0 := budget(0).count(conv)) * 3 // 4)
        fitted = Summarize()(conv, b)
        assert fitted.report.fits
        s = the_summary(fitted.messages)
        assert fitted.messages[0].id == "sys"
        assert fitted.messages[1] is s
        sources = summary_sources(s)
        assert sources == tuple(m.id for m in conv[1 : 1 + len(sources)])
        assert 0 < len(sources) < len(conv) - 9, "more than just enough"
        (change,) = fitted.report.changes
        assert (change.kind, change.index, change.ids[-1]) == ("summarized", 1, s.id)
        assert change.saved == b0 - fitted.report.tokens_after
        assert "into one summary" in change.what

    def test_a_zero_budget_summarises_all_but_the_recent(self) -> None:
        """Budget 0: every unit before the last keep_recent."""
        conv = session(6)
        fitted = Summarize(keep_recent=3)(conv, budget(0))
        s = the_summary(fitted.messages)
        kept = [m.id for m in fitted.messages if m is not s]
        assert kept == ["sys", "u5", "a5", "t5", "r5"]
        assert summary_sources(s) == tuple(m.id for m in conv[1:21])

    def test_keep_recent_units_are_never_summarised(self) -> None:
        """The last keep_recent units stay whole, whatever the budget."""
        conv = session(4)
        for k in (0, 1, 2, 5):
            fitted = Summarize(keep_recent=k)(conv, budget(0))
            tail = [m.id for m in fitted.messages if not is_summary(m)][1:]
            assert len(tail) >= min(k, 1), k  # the final message is pinned anyway
            assert not set(tail) & set(summary_sources(the_summary(fitted.messages)))

    def test_pinned_messages_stay_where_they_are(self) -> None:
        """Pinned and protected messages are never summarised."""
        conv = session(6)
        conv[5] = Message.user("KEEP: the API key rotates on Fridays.", id="u1")
        conv[9] = Message.user("Remember this one.", id="u2", pinned=True)
        fitted = Summarize(keep_recent=1)(conv, budget(0, protected=("KEEP:",)))
        ids = [m.id for m in fitted.messages]
        assert ids[1].startswith("summary-")
        assert {"u1", "u2"} <= set(ids)
        assert not {"u1", "u2"} & set(summary_sources(the_summary(fitted.messages)))

    def test_tool_exchanges_go_whole(self) -> None:
        """A call and its result are summarised together or not at all."""
        conv = session(5)
        for keep in range(6):
            fitted = Summarize(keep_recent=keep)(conv, budget(0))
            src = set(summary_sources(the_summary(fitted.messages)))
            for i in range(5):
                assert (f"a{i}" in src) == (f"t{i}" in src)

    @pytest.mark.parametrize("provider", ["openai", "anthropic", "responses"])
    def test_valid_for_every_provider(self, provider: str) -> None:
        """The summary is a user turn, valid first and in the middle."""
        conv = session(5, system=False)[2:]  # opens on the assistant's call
        conv.insert(4, Message.user("A pinned note.", pinned=True))
        fitted = Summarize(keep_recent=2)(conv, budget(0, provider))
        assert problems(fitted.messages, provider) == ()  # type: ignore[arg-type]  # a provider
        assert the_summary(fitted.messages).role == "user"

    def test_the_summary_keeps_the_facts(self) -> None:
        """Paths, commands and numbers of what it replaced are in its text."""
        conv = session(6)
        fitted = Summarize(keep_recent=1, max_tokens=2000)(conv, budget(0))
        s = the_summary(fitted.messages)
        replaced = recall(conv, summary_sources(s))
        assert not extract_facts(replaced).missing_from(s.text)
        assert summary_facts(s).keys() == extract_facts(replaced).keys()
        handle = summary_handle(s)
        assert handle is not None
        header = f"[Summary of {len(replaced)} earlier messages; recall {handle}]\n"
        assert s.text.startswith(header)

    def test_a_summarizer_that_drops_facts_gets_them_back(self) -> None:
        """Whatever the summarizer writes, the dropped facts are re-attached."""
        echo = Echo("Some speed work.")
        fitted = Summarize(echo, keep_recent=1)(session(6), budget(0))
        s = the_summary(fitted.messages)
        assert s.text.split("\n", 2)[1] == "Some speed work."
        assert FACTS_HEADER in s.text
        assert any(f.kind == "command" for f in summary_facts(s))
        ((n, previous, max_tokens),) = echo.calls
        assert (n, previous) == (23, None)
        assert max_tokens is not None

    def test_rolls_an_earlier_summary_forward(self) -> None:
        """The old summary is the summarizer's previous; sources and facts carry."""
        conv = session(8)
        first = Summarize(keep_recent=12)(conv, budget(0))
        old = the_summary(first.messages)
        echo = Echo("Later work.")
        again = Summarize(echo, keep_recent=2)(list(first.messages), budget(0))
        new = the_summary(again.messages)
        assert new.id != old.id
        assert again.messages[1] is new
        assert echo.calls[0][1] == old.text.split("\n", 1)[1]
        assert summary_sources(new)[: len(summary_sources(old))] == summary_sources(old)
        assert summary_facts(old).keys() <= summary_facts(new).keys()
        assert not summary_facts(old).missing_from(new.text)
        # Back to the originals, through both summaries.
        originals = recall(conv, summary_sources(new))
        assert [m.id for m in originals] == list(summary_sources(new))
        assert all(not is_summary(m) for m in originals)

    def test_the_same_sources_give_the_same_id(self) -> None:
        """A stable prefix for prompt caches."""
        a = Summarize(keep_recent=2)(session(4), budget(0))
        b = Summarize(keep_recent=2)(session(4), budget(0))
        assert the_summary(a.messages).id == the_summary(b.messages).id
        assert the_summary(a.messages) == the_summary(b.messages)

    def test_refuses_a_summary_that_is_not_smaller(self) -> None:
        """A summary over max_share of what it replaces: no change at all."""
        wordy = Echo("word " * 5000)
        conv = session(6)
        fitted = Summarize(wordy)(conv, budget(0))
        assert list(fitted.messages) == conv
        assert "summarized" not in fitted.report.totals()
        assert len(wordy.calls) == 1, "budget 0: everything at once, then stop"
        total = budget(0).count(conv)
        Summarize(wordy := Echo("word " * 5000), keep_recent=1)(
            conv, budget(total - 60)
        )
        assert len(wordy.calls) == 2, "just enough, refused; everything, refused"

    def test_refuses_a_summary_the_budget_cannot_hold(self) -> None:
        """Dropping could meet the budget; a pinned summary would not let it."""
        conv = session(6)
        pinned_only = budget(0).count([conv[0], conv[-1]])
        fitted = fit(
            conv,
            limit=pinned_only + 3,
            strategy=Summarize(),
            tokenizer=budget(0).counter,
        )
        assert fitted.report.fits
        assert "summarized" not in fitted.report.totals()
        assert fitted.report.stages == ("Summarize", "DropOldest")

    def test_at_most_two_calls(self) -> None:
        """A summary that leaves the conversation over budget: one more, for all."""
        echo = Echo("x " * 300)  # longer than asked for
        conv = session(8)
        fitted = Summarize(echo)(conv, budget(budget(0).count(conv) - 100))
        first, second = (n for n, _, _ in echo.calls)
        assert first < second == len(summary_sources(the_summary(fitted.messages)))
        assert fitted.report.fits

    def test_summarizer_errors_propagate(self) -> None:
        """A failing LLM is the caller's to handle; the input is untouched."""

        class Failing:
            def summarize(self, messages: object, **kw: object) -> str:
                raise SummarizerError("endpoint down")

        conv = session(4)
        before = to_dicts(conv)
        with pytest.raises(SummarizerError, match="endpoint down"):
            Summarize(Failing())(conv, budget(0))
        assert to_dicts(conv) == before

    @pytest.mark.parametrize(
        ("kw", "match"),
        [
            ({"keep_recent": -1}, "keep_recent: expected an int >= 0"),
            ({"max_tokens": 0}, "max_tokens: expected an int >= 1"),
            ({"max_share": 0}, r"max_share: expected a finite number in \(0, 1\]"),
            ({"max_share": 1.5}, "max_share"),
            ({"max_share": float("nan")}, "max_share: .*got nan"),
            ({"keep_recent": 2.0}, "keep_recent: expected an int"),
            ({"summarizer": object()}, "summarizer: expected a Summarizer"),
        ],
    )
    def test_bad_settings(self, kw: dict[str, object], match: str) -> None:
        """Bad configuration fails when the strategy is built."""
        with pytest.raises(ContextWindowError, match=match):
            Summarize(**kw)  # type: ignore[arg-type]  # deliberately wrong

    @pytest.mark.parametrize("cls", [ExtractiveSummarizer, NamesSummarizer])
    def test_a_summarizer_class_is_refused(self, cls: type) -> None:
        """The class, not an instance: refused when built, naming summarizer
        (its summarize is unbound: a TypeError on the first fit otherwise),
        wherever a summarizer is taken."""
        from contextwindow import ContextManager, SharedContext

        hint = rf"a class; pass an instance, e.g. {cls.__name__}\(\)"
        with pytest.raises(ArgumentTypeError, match=f"summarizer: .*{hint}"):
            Summarize(cls)  # type: ignore[arg-type]  # the class on purpose
        with pytest.raises(ArgumentTypeError, match=f"summarizer: .*{hint}"):
            ContextManager(model="gpt-4o", summarizer=cls)  # type: ignore[arg-type]  # the class on purpose
        with pytest.raises(ArgumentTypeError, match=f"summarizer: .*{hint}"):
            SharedContext(model="gpt-4o", summarizer=cls)  # type: ignore[arg-type]  # the class on purpose

    def test_a_summary_not_used_is_named_in_the_warnings(self) -> None:
        """A summarizer writing far more than asked: no summary, and the report
        says why, for the facts a later stage then drops."""
        conv = session(6)
        for limit in (0, budget(0).count([conv[0], conv[-1]]) + 3):
            fitted = Summarize(Echo("word " * 5000))(conv, budget(limit))
            assert "summarized" not in fitted.report.totals()
            (warning,) = fitted.report.warnings
            assert warning.startswith("Summarize: a summary of ")
            assert "was not used: it took " in warning
        piped = fit(
            conv,
            limit=budget(0).count(conv) // 3,
            strategy=Summarize(Echo("word " * 5000)),
            tokenizer=budget(0).counter,
        )
        assert piped.report.stages == ("Summarize", "DropOldest")
        assert any("was not used" in w for w in piped.report.warnings)
        used = fit(
            conv,
            limit=budget(0).count(conv) // 3,
            strategy=Summarize(Echo()),
            tokenizer=budget(0).counter,
        )
        assert used.report.warnings == ()

    def test_by_name(self) -> None:
        """`summarize` in strategy specs, with its integer arguments."""
        assert parse_strategy("summarize") == Summarize()
        assert parse_strategy("summarize(keep_recent=2, max_tokens=500)") == Summarize(
            keep_recent=2, max_tokens=500
        )
        pipe = parse_strategy("dedupe,summarize,drop-oldest")
        assert pipe.stages[1] == Summarize()  # type: ignore[attr-defined]  # a Pipeline
        assert Summarize(ExtractiveSummarizer()) == Summarize(ExtractiveSummarizer())


class TestWhatTheReportSays:
    def test_facts_the_record_cannot_list_are_counted(self) -> None:
        """A record cut to its room: the header says how many facts it does not
        list, beside the handle that reads them back; the change counts them."""
        conv = [Message.system("agent")]
        for i in range(60):
            conv += [
                Message.user(
                    f"Edit services/svc_{i}/handler.py; ticket JIRA-{4000 + i}. "
                    + "ctx " * 20
                ),
                Message.assistant(f"done {i}"),
            ]
        conv.append(Message.user("next"))
        fitted = fit(
            conv, limit=1500, strategy=Summarize(keep_recent=2, max_tokens=300)
        )
        summary = the_summary(fitted.messages)
        replaced = recall(conv, summary_sources(summary))
        lost = extract_facts(replaced).missing_from(summary.text)
        assert len(lost) > 50
        handle = summary_handle(summary)
        n = len(summary_sources(summary))
        assert summary.text.splitlines()[0] == (
            f"[Summary of {n} earlier messages (+{len(lost)} facts not listed); "
            f"recall {handle}]"
        )
        (change,) = [c for c in fitted.report.changes if c.kind == "summarized"]
        assert change.what.endswith(f", {len(lost)} facts not listed in it")
        # Rolled forward, the old count goes with the old header.
        grown = [*fitted.messages] + [
            Message.user(f"more {i} " + "ctx " * 40) for i in range(6)
        ]
        later = the_summary(
            fit(
                grown, limit=1500, strategy=Summarize(keep_recent=1, max_tokens=300)
            ).messages
        )
        assert later.text.count("facts not listed") == 1
        assert "facts not listed" in later.text.splitlines()[0]

    def test_names_the_summary_invents_are_reported(self) -> None:
        """Paths and ids in the summary's text that nothing it replaced holds
        are named in the change, and the summary is used all the same."""
        conv = session(6)
        invent = Echo("The fix went into src/app/client.py, commit 1a2b3c4d.")
        fitted = Summarize(invent, keep_recent=2)(conv, budget(0))
        (change,) = fitted.report.changes
        assert change.kind == "summarized"
        assert change.what.endswith(
            "; its text names 2 paths, URLs or identifiers not in what it "
            "replaced (src/app/client.py, 1a2b3c4d)"
        )
        honest = Summarize(Echo("The billing module in src/billing.py."), keep_recent=2)
        assert honest(conv, budget(0)).report.changes[0].what.endswith("one summary")


class TestKeepFirstAndEmpty:
    def test_keep_first_spares_the_task(self) -> None:
        """The first units after the system prompt stay; the summary follows them."""
        conv = session(6)
        fitted = Summarize(keep_recent=2, keep_first=1)(conv, budget(0))
        assert list(fitted.messages[:2]) == conv[:2]  # the system prompt, the task
        assert is_summary(fitted.messages[2])
        assert "u0" not in summary_sources(fitted.messages[2])
        plain = Summarize(keep_recent=2)(conv, budget(0))
        assert is_summary(plain.messages[1])
        assert "u0" in summary_sources(plain.messages[1])

    def test_a_summary_saying_nothing_is_refused(self) -> None:
        """A summarizer giving nothing, with no fact to re-attach: no change."""
        conv = [Message.user(f"ok {i}") for i in range(12)]
        fitted = Summarize(Echo(""), keep_recent=1)(conv, budget(5))
        assert "summarized" not in fitted.report.totals()
        assert list(fitted.messages) == conv


class TestReadOriginals:
    """``read_originals``: what earlier stages cut is summarised as it was."""

    def cleared(self) -> tuple[list[Message], list[Message]]:
        conv = session(8)
        cut = ClearToolResults(keep_recent=0)(conv, budget(0)).messages
        assert not any(m.role == "tool" for m in cut)  # every exchange one line
        return conv, list(cut)

    def test_names_what_clearing_cut(self) -> None:
        """The originals' names, not the placeholders': a test a log named."""
        conv, cut = self.cleared()
        reads = Summarize(NamesSummarizer(), keep_recent=1, read_originals=True)
        summary = the_summary(reads(cut, budget(0, history=conv)).messages)
        assert "test_case_10" in summary.text
        plain = Summarize(NamesSummarizer(), keep_recent=1)
        assert (
            "test_case_10"
            not in the_summary(plain(cut, budget(0, history=conv)).messages).text
        )
        no_history = the_summary(reads(cut, budget(0)).messages)
        assert "test_case_10" not in no_history.text

    def test_a_runs_line_stands_for_its_messages(self) -> None:
        """Its sources are every message of the run: recall gives them back."""
        conv, cut = self.cleared()
        reads = Summarize(NamesSummarizer(), keep_recent=1, read_originals=True)
        summary = the_summary(reads(cut, budget(0, history=conv)).messages)
        assert recall(conv, summary_sources(summary)) == conv[1:-1]

    def test_a_history_without_the_original_reads_the_rewrite(self) -> None:
        """Another conversation, or an edited one: the placeholder is read."""
        conv, cut = self.cleared()
        assert originals_of([Message.user("other")], cut) == cut
        edited = [*conv[:3], Message.tool("c0", "other", id="t0"), *conv[4:]]
        read = originals_of(edited, cut)
        assert read[:2] == conv[:2]
        assert read[2] is cut[2]  # the first run hashes otherwise
        assert read[3:5] == conv[4:6]  # the reply after it, the next run's
        assert originals_of(conv, cut[:1]) == cut[:1]  # no rewrite: no pass
        with pytest.raises(ContextWindowError, match=r"^history\[1\]: expected a M"):
            originals_of([conv[0], {"role": "user"}], cut)  # type: ignore[list-item]  # deliberately wrong

    def test_a_summary_of_everything_takes_only_the_room_left(self) -> None:
        """A budget that a small summary meets: one is made to fit, not
        made at its usual size and refused."""
        conv = session(8)
        rest = budget(0).count([conv[0], *conv[-4:]])
        for limit in (rest + 20, rest + 60):
            fitted = Summarize(NamesSummarizer(), keep_recent=1)(conv, budget(limit))
            assert fitted.report.fits
            assert is_summary(fitted.messages[1])
            assert budget(0).count(fitted.messages) <= limit

    def test_by_name(self) -> None:
        assert parse_strategy("summarize(read_originals=true)") == Summarize(
            read_originals=True
        )
        with pytest.raises(ContextWindowError, match="read_originals"):
            Summarize(read_originals=1)  # type: ignore[arg-type]  # deliberately wrong


class TestResumeAfterAChange:
    def test_a_refit_reads_from_the_first_changed_message(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An earlier message rewritten near the end: only the units from it
        are read again, and the fit is the one made from scratch."""
        import contextwindow.strategies.summarize as module

        read: list[int] = []
        unit_read = module._is_summary_unit

        def counted(messages: Sequence[Message], unit: object) -> bool:
            read.append(1)
            return unit_read(messages, unit)  # type: ignore[arg-type]  # a Unit

        monkeypatch.setattr(module, "_is_summary_unit", counted)
        conv = session(40)
        b = budget(400)
        strategy = Summarize(keep_recent=2)
        strategy(conv, b)
        grown = list(conv)
        at = len(grown) - 6
        was = grown[at]
        grown[at] = Message(was.role, was.parts, id=was.id)  # equal, not the same
        grown += [Message.user("and the mail module?", id="u-next")]
        read.clear()
        again = strategy(grown, b)
        assert 0 < len(read) <= 10
        fresh = strategy(grown, budget(400))
        assert again.messages == fresh.messages
        assert again.report == fresh.report


class TestOtherStrategiesPinTheSummary:
    def summarised(self) -> list[Message]:
        return list(Summarize(keep_recent=4)(session(6), budget(0)).messages)

    def test_pinned_flags(self) -> None:
        """Pinned for everyone, unless asked for Summarize's view."""
        conv = self.summarised()
        assert pinned_flags(conv)[1] is True
        assert pinned_flags(conv, summaries=False)[1] is False

    def test_drop_and_slide_keep_it(self) -> None:
        """DropOldest drops around it; SlidingWindow keeps it."""
        conv = self.summarised()
        s = conv[1]
        assert s in DropOldest(keep_first=0)(conv, budget(250)).messages
        assert s in SlidingWindow(1)(conv, budget(0)).messages
        assert (
            s
            in TruncateToolResults(keep_recent=0, max_tokens=1)(
                conv, budget(0)
            ).messages
        )
        assert s in ClearToolResults(keep_recent=0)(conv, budget(0)).messages

    def test_it_goes_rather_than_fail(self) -> None:
        """When nothing else fits, DropOldest drops it too, rather than raise."""
        conv = self.summarised()
        s = conv[1]
        pinned = budget(0).count([conv[0], conv[-1]])
        fitted = DropOldest(keep_first=0)(conv, budget(pinned))
        assert fitted.report.fits
        assert s not in fitted.messages
        assert s.id in {i for c in fitted.report.changes for i in c.ids}

    def test_it_goes_before_the_task(self) -> None:
        """When the task or the summary must go, the summary goes: the task last."""
        conv = self.summarised()
        task = Message.user("Fix the billing export.", id="task")
        conv = [conv[0], task, *conv[1:]]
        room = budget(0).count([conv[0], task, conv[-1]])
        fitted = DropOldest()(conv, budget(room))
        assert fitted.report.fits
        assert task in fitted.messages
        assert conv[2] not in fitted.messages  # the summary

    def test_a_marker_in_its_own_text_does_not_pin_it(self) -> None:
        """A protected marker the summary's header holds ("earlier") is no pin."""
        conv = self.summarised()
        pinned = budget(0).count([conv[0], conv[-1]])
        b = budget(pinned, protected=("earlier",))
        fitted = DropOldest(keep_first=0)(conv, b)
        assert fitted.report.fits
        assert conv[1] not in fitted.messages

    def test_budget_error_names_only_what_is_pinned(self) -> None:
        """When nothing fits even without it, the error does not name it."""
        with pytest.raises(BudgetError) as caught:
            DropOldest()(self.summarised(), budget(5))
        assert "(summary)" not in str(caught.value)
        assert "(final message)" in str(caught.value)


class TestSummaryMessages:
    def test_meta_survives_our_json_form(self) -> None:
        """to_dicts/from_dicts keep the marker, the sources and the facts."""
        s = Summarize(keep_recent=2)(session(4), budget(0)).messages[1]
        (back,) = from_dicts(to_dicts([s]))
        assert is_summary(back)
        assert summary_sources(back) == summary_sources(s)
        assert summary_facts(back) == summary_facts(s)

    def test_a_provider_shape_drops_meta_but_not_the_facts(self) -> None:
        """Through OpenAI's shape it is a plain user turn; its record is text."""
        s = Summarize(keep_recent=2)(session(4), budget(0)).messages[1]
        (back,) = from_openai(to_openai([s]))
        assert not is_summary(back)
        assert SUMMARY_KEY not in back.meta
        assert summary_facts(back) == type(summary_facts(s))()  # not a summary now
        from contextwindow.summarizers import Facts

        assert Facts.parse(back.text).keys() <= summary_facts(s).keys()


class TestCommandLine:
    def test_fit_with_summarize_works_offline(self, tmp_path: Path) -> None:
        """`contextwindow fit FILE --strategy summarize` writes a valid file."""
        out = tmp_path / "fitted.json"
        result = CliRunner().invoke(
            main,
            [
                "fit",
                str(ROOT / "examples" / "agent_session.json"),
                "--model",
                "gpt-4o",
                "--budget",
                "40%",
                "--strategy",
                "summarize",
                "-o",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        assert "summarized" in result.stdout
        data = json.loads(out.read_text())
        conv = from_openai(data)
        assert problems(conv, "openai") == ()
        assert conv[1].role == "user"
        assert conv[1].text.startswith("[Summary of ")
