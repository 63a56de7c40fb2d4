from __future__ import annotations

import copy

import pytest

from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    ContextWindowError,
    InvalidMessageError,
    UnknownModelWarning,
)
from contextwindow.fitting import DEFAULT_STRATEGY, fit, provider_of
from contextwindow.formats._coerce import coerce_tools
from contextwindow.messages import PROVIDERS, Message, Provider, ToolCall, ToolSpec
from contextwindow.models import get_model
from contextwindow.strategies import (
    ClearToolResults,
    CollapseRuns,
    CompactLossless,
    Deduplicate,
    DropOldest,
    Pipeline,
    SlidingWindow,
    StaleReads,
    Summarize,
    TruncateToolInputs,
    TruncateToolResults,
)
from contextwindow.strategies.collapse import MAX_CUT_SHARE
from contextwindow.summarizers import NamesSummarizer, is_summary
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens import BPETokenizer, TokenCounter, count_messages
from contextwindow.validity import CONTINUED, problems


def chat(n: int = 6) -> list[Message]:
    """A system prompt, then ``n`` alternating turns of 12 words (16 tokens)."""
    out = [Message.system("be brief")]
    for i in range(n):
        text = f"turn {i} " + "word " * 10
        out.append(Message.user(text) if i % 2 == 0 else Message.assistant(text))
    return out


def agent(n: int = 6, size: int = 200, *, named: bool = False) -> list[Message]:
    """An agent loop: each turn reads a file of ``size`` words (``named``:
    whose output names its path)."""
    out = [Message.system("You are a coding agent.")]
    for i in range(n):
        head = f"part {i} of src/part{i}.py: " if named else f"part {i}: "
        out += [
            Message.user(f"read part {i}"),
            Message.assistant(tool_calls=[ToolCall(f"c{i}", "read", "{}")]),
            Message.tool(f"c{i}", head + "data " * size, name="read"),
        ]
    return [*out, Message.user("summarise")]


class TestLimits:
    def test_model_window(self) -> None:
        """The model's window less its output limit is the default budget."""
        fitted = fit([Message.user("hello")], model="gpt-4o")
        info = get_model("gpt-4o")
        assert (info.context_window, info.max_output_tokens) == (128_000, 16_384)
        assert fitted.report.limit == 128_000 - 16_384
        assert fitted.report.tokens_after == 8  # o200k_base: 3 + 1 + 1, 3 to prime

    def test_model_info(self) -> None:
        """A ``ModelInfo`` serves as the model, without a lookup."""
        fitted = fit([Message.user("hello")], model=get_model("gpt-4o"), limit=100)
        assert fitted.report.limit == 75  # a quarter of the limit for the reply

    def test_default_reserve(self) -> None:
        """The reply's room: the output limit, at most a quarter; 0 without a model."""
        conv = [Message.user("hello")]
        assert fit(conv, model="gpt-4o", limit=200_000).report.limit == 183_616
        assert fit(conv, model="gpt-4o", limit=1_000).report.limit == 750
        assert fit(conv, limit=1_000, tokenizer="gpt-4o").report.limit == 1_000
        assert fit(conv, model="gpt-4o", limit=1_000, reserve=0).report.limit == 1_000
        with pytest.warns(UnknownModelWarning):  # no output limit known: none kept
            assert fit(conv, model="no-such-model").report.limit == 8192

    def test_tokenizer_by_name(self) -> None:
        """A model or encoding name counts exactly; a str never counts 0."""
        conv = [Message.user("hello " * 1000)]
        exact = TokenCounter(BPETokenizer("o200k_base")).messages(conv)
        assert exact == 1008
        for name in ("gpt-4o", "o200k_base", "openai/gpt-4o-2024-08-06"):
            fitted = fit(conv, limit=100_000, tokenizer=name)
            assert fitted.report.tokens_before == exact, name
            assert TokenCounter(name).messages(conv) == exact, name
        assert count_messages(conv, "cl100k_base") > 1000
        with pytest.raises(BudgetError):  # counted, so it cannot pass unchanged
            fit(conv, limit=500, tokenizer="gpt-4o", strategy="drop-oldest")

    @pytest.mark.parametrize(
        ("tokenizer", "error"),
        [
            ("gtp-4o", ArgumentValueError),
            ("", ArgumentValueError),
            (5, ArgumentTypeError),
            ("hello".count, ArgumentTypeError),
            (["o200k_base"], ArgumentTypeError),
        ],
    )
    def test_not_a_tokenizer(self, tokenizer: object, error: type[Exception]) -> None:
        """Anything that is not a tokenizer is refused at once, naming the argument."""
        conv = [Message.user("hello " * 1000)]
        with pytest.raises(error, match=r"^tokenizer: expected a Tokenizer"):
            fit(conv, limit=100, tokenizer=tokenizer)  # type: ignore[arg-type]  # on purpose
        with pytest.raises(error, match=r"^tokenizer: "):
            TokenCounter(tokenizer)  # type: ignore[arg-type]  # on purpose

    @pytest.mark.parametrize(
        ("strategy", "hint"),
        [
            (DropOldest, r"a class; pass an instance, e\.g\. DropOldest\(\)"),
            (lambda m: m, r"cannot take \(messages, budget\)"),
            (lambda m, b, extra: m, r"cannot take \(messages, budget\)"),
        ],
        ids=["class", "one-argument", "three-arguments"],
    )
    @pytest.mark.parametrize("limit", [10_000, 20])
    def test_not_a_strategy(self, strategy: object, hint: str, limit: int) -> None:
        """A class or a callable of the wrong arity is refused at the call,
        whether or not anything needs cutting."""
        conv = [Message.user("hello " * 30), Message.assistant("ok"), Message.user("q")]
        with pytest.raises(ArgumentTypeError, match=rf"^strategy: .*{hint}"):
            fit(conv, limit=limit, tokenizer=FakeTokenizer(), strategy=strategy)  # type: ignore[arg-type]  # on purpose
        with pytest.raises(ArgumentTypeError, match=r"^stages\[1\]: "):
            Pipeline(SlidingWindow(2), strategy)  # type: ignore[arg-type]  # on purpose

    def test_strategy_callables_that_fit(self) -> None:
        """Callables taking (messages, budget), with defaults or *args, pass."""

        def plain(messages: object, budget: object, extra: int = 0) -> object:
            return DropOldest()(messages, budget)  # type: ignore[arg-type]  # a test double

        def star(*args: object) -> object:
            return DropOldest()(*args)  # type: ignore[arg-type]  # a test double

        conv = [Message.user("hello " * 30), Message.assistant("ok"), Message.user("q")]
        for strategy in (plain, star):
            fitted = fit(conv, limit=20, tokenizer=FakeTokenizer(), strategy=strategy)  # type: ignore[arg-type]  # a test double
            assert fitted.report.fits

    def test_limit_and_reserve(self) -> None:
        """The budget is the limit less the reserve."""
        conv = chat()
        fitted = fit(conv, limit=100, reserve=40, tokenizer=FakeTokenizer())
        r = fitted.report
        assert r.limit == 60
        assert r.tokens_after <= 60 < r.tokens_before

    def test_reserve_above_limit(self) -> None:
        """A reserve larger than the limit is an error; equal is a zero budget."""
        with pytest.raises(ArgumentValueError, match=r"reserve: .*at most the limit"):
            fit([], limit=100, reserve=101)
        with pytest.raises(BudgetError) as info:  # the reply priming alone is 3
            fit([], limit=3, reserve=3, tokenizer=FakeTokenizer())
        assert info.value.budget == 0

    @pytest.mark.parametrize(("limit", "reserve"), [(-1, 0), (100, -5)])
    def test_negative(self, limit: int, reserve: int) -> None:
        """A negative limit or reserve is an error."""
        with pytest.raises(ArgumentValueError, match="expected an int >= 0, got -"):
            fit([], limit=limit, reserve=reserve)

    def test_neither_model_nor_limit(self) -> None:
        """Without a model, a limit is required."""
        with pytest.raises(ContextWindowError, match="needs a model or a limit"):
            fit([Message.user("hi")])

    def test_unknown_model_warns(self) -> None:
        """An unknown model falls back to the default window, with a warning."""
        with pytest.warns(UnknownModelWarning, match="no-such-model"):
            fitted = fit([Message.user("hi")], model="no-such-model")
        assert fitted.report.limit == 8192


class TestProvider:
    def test_claude_is_anthropic(self) -> None:
        """A Claude model gets Anthropic's rules: a user turn first."""
        conv = [Message.assistant("Hello!"), Message.user("hi")]
        fitted = fit(conv, model="claude-sonnet-4-5")
        assert [m.text for m in fitted.messages] == [CONTINUED, "Hello!", "hi"]
        assert fitted.report.changes[0].kind == "repaired"

    def test_openai_by_default(self) -> None:
        """Without a model the provider is OpenAI: no placeholder."""
        conv = [Message.assistant("Hello!"), Message.user("hi")]
        fitted = fit(conv, limit=100)
        assert list(fitted.messages) == conv

    def test_explicit_provider_wins(self) -> None:
        """``provider`` overrides the model's."""
        conv = [Message.assistant("Hello!"), Message.user("hi")]
        assert fit(
            conv, model="claude-sonnet-4-5", provider="openai"
        ).messages == tuple(conv)
        fitted = fit(conv, model="gpt-4o", provider="anthropic")
        assert fitted.messages[0].text == CONTINUED

    def test_unknown_provider(self) -> None:
        """An unknown provider is an error."""
        with pytest.raises(ArgumentValueError, match=r"^provider: .*got 'gemini'"):
            fit([], limit=10, provider="gemini")  # type: ignore[arg-type]  # the point of the test

    @pytest.mark.parametrize(
        ("model", "provider"),
        [
            ("claude-sonnet-4-5", "anthropic"),
            ("claude-3-5-haiku-latest", "anthropic"),  # served by Vertex AI
            ("gpt-4o", "openai"),
        ],
    )
    def test_provider_of(self, model: str, provider: str) -> None:
        """Claude models, whoever serves them, speak Anthropic's shape."""
        assert provider_of(get_model(model)) == provider


class TestCounter:
    def test_counter_is_reused(self) -> None:
        """A counter passed in is used as is: its cache serves the next fit."""
        tok = FakeTokenizer()
        counter = TokenCounter(tok)
        conv = chat()
        fit(conv, limit=1000, tokenizer=counter)
        assert tok.calls
        tok.reset()
        fitted = fit(conv, limit=1000, tokenizer=counter)
        assert tok.calls == []
        assert fitted.report.tokens_after == counter.messages(conv)

    def test_a_message_swapped_for_an_equal_one_is_read_as_given(self) -> None:
        """A re-fit compares the list with the last input by identity: a
        message replaced by an equal one (another id) is the new one in the
        output, and an object equal to anything is read, not taken."""
        from unittest.mock import ANY

        counter = TokenCounter(FakeTokenizer())
        conv = chat()
        fit(conv, limit=1000, tokenizer=counter)
        twin = Message.user(conv[1].text)
        assert twin == conv[1]
        assert twin.id != conv[1].id
        swapped = [conv[0], twin, *conv[2:]]
        fitted = fit(swapped, limit=1000, tokenizer=counter)
        assert [m.id for m in fitted.messages] == [m.id for m in swapped]
        with pytest.raises(InvalidMessageError, match=r"messages\[1\]"):
            fit([conv[0], ANY, *conv[2:]], limit=1000, tokenizer=counter)

    def test_the_same_tools_are_read_once(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Tools given again to a fit with the same counter (equal dicts, new
        objects) are not read again; a schema changed in place is read, and
        counted, anew."""
        import contextwindow.fitting as fitting

        read: list[object] = []
        coerce = coerce_tools  # the one the module imports

        def counted(tools: object) -> object:
            read.append(tools)
            return coerce(tools)

        monkeypatch.setattr(fitting, "coerce_tools", counted)

        def tools() -> list[dict[str, object]]:
            schema = {"type": "object", "properties": {"q": {"type": "string"}}}
            return [{"name": "search", "description": "look", "input_schema": schema}]

        counter = TokenCounter(FakeTokenizer())
        conv = chat()
        first = fit(conv, limit=1000, tokenizer=counter, tools=tools())
        given = tools()
        again = fit(conv, limit=1000, tokenizer=counter, tools=given)
        assert len(read) == 1
        assert again.report.tokens_before == first.report.tokens_before
        given[0]["description"] = "look it up " * 30
        grown = fit(conv, limit=1000, tokenizer=counter, tools=given)
        assert len(read) == 2
        fresh = fit(conv, limit=1000, tokenizer=FakeTokenizer(), tools=given)
        assert grown.report.tokens_before == fresh.report.tokens_before
        assert grown.report.tokens_before > first.report.tokens_before

    @pytest.mark.parametrize(
        ("tools", "shown"),
        [(None, "null"), ("ls", "string"), ({"name": "ls"}, "object"), (5, "number")],
    )
    def test_tools_that_are_no_list(self, tools: object, shown: str) -> None:
        """Tools given as something else than a list get the error naming them,
        with a counter that read tools before too."""
        counter = TokenCounter(FakeTokenizer())
        fit(chat(), limit=1000, tokenizer=counter, tools=[])
        want = f"tools: expected a list of tools, got {shown}"
        for _ in range(2):
            with pytest.raises(InvalidMessageError, match=want):
                fit(chat(), limit=1000, tokenizer=counter, tools=tools)  # type: ignore[arg-type]  # the point of the test

    def test_counter_for_another_provider(self) -> None:
        """A counter counting for another provider than asked is an error."""
        counter = TokenCounter(FakeTokenizer(), "openai")
        with pytest.raises(ContextWindowError, match="counts for 'openai'"):
            fit([], limit=10, tokenizer=counter, provider="anthropic")
        assert fit([], limit=10, tokenizer=counter, provider="openai").report.fits

    def test_counter_sets_the_provider(self) -> None:
        """A counter's provider is the one fitted for."""
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        conv = [Message.assistant("Hello!"), Message.user("hi")]
        assert fit(conv, limit=100, tokenizer=counter).messages[0].text == CONTINUED

    def test_tokenizer(self) -> None:
        """A tokenizer is wrapped in a counter for the provider."""
        conv = chat()
        fitted = fit(conv, limit=1000, tokenizer=FakeTokenizer())
        assert fitted.report.tokens_before == 3 + 6 + 6 * 16

    def test_exact_counts(self) -> None:
        """The model's tokenizer counts: exact BPE for gpt-4o."""
        conv = chat()
        fitted = fit(conv, model="gpt-4o")
        counter = TokenCounter(BPETokenizer("o200k_base"))
        assert fitted.report.tokens_before == counter.messages(conv)


class TestFit:
    def test_tools_counted(self) -> None:
        """Tool schemas count against the budget."""
        conv = chat()
        tools = [ToolSpec("search", "Search the web", {"type": "object"})]
        counter = TokenCounter(FakeTokenizer())
        plain = fit(conv, limit=1000, tokenizer=counter).report.tokens_before
        with_tools = fit(conv, limit=1000, tokenizer=counter, tools=tools)
        assert with_tools.report.tokens_before == counter.messages(conv, tools=tools)
        assert with_tools.report.tokens_before > plain
        limit = counter.messages(conv)
        assert fit(conv, limit=limit, tokenizer=counter).report.changes == ()
        assert fit(conv, limit=limit, tokenizer=counter, tools=tools).report.changes

    @pytest.mark.parametrize("protected", [["KEEP:"], "KEEP:"])
    def test_protected_markers(self, protected: list[str] | str) -> None:
        """A message holding a protected marker is kept while older ones go."""
        conv = chat()
        conv[1] = Message.user("KEEP: the deploy key is 42")
        fitted = fit(conv, limit=60, tokenizer=FakeTokenizer(), protected=protected)
        assert conv[1] in fitted.messages
        assert fitted.report.fits

    def test_marker_in_the_placeholder(self) -> None:
        """A marker in the placeholder's text does not keep the placeholder."""
        conv = [
            Message.assistant("hello there " * 10),
            Message.user("question one"),
            Message.assistant("answer"),
            Message.user("last question"),
        ]
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        for protected in ([], ["cont"]):
            fitted = fit(
                conv,
                limit=20,
                strategy=DropOldest(keep_first=0),  # the opening turn may go first
                tokenizer=counter,
                protected=protected,
            )
            assert list(fitted.messages) == conv[1:], protected

    def test_default_strategy(self) -> None:
        """By default: compact losslessly, deduplicate, mark stale reads,
        truncate results, then call inputs, clear, truncate the latest,
        summarize by names, drop."""
        assert isinstance(DEFAULT_STRATEGY, CollapseRuns)
        assert DEFAULT_STRATEGY.max_share == MAX_CUT_SHARE
        pipeline = DEFAULT_STRATEGY.strategy
        assert isinstance(pipeline, Pipeline)
        assert [type(s) for s in pipeline.stages] == [
            CompactLossless,
            Deduplicate,
            StaleReads,
            TruncateToolResults,
            TruncateToolInputs,
            ClearToolResults,
            TruncateToolResults,
            Summarize,
            DropOldest,
        ]
        assert pipeline.stages[-3] == TruncateToolResults(keep_recent=0)
        assert pipeline.stages[-2] == Summarize(
            NamesSummarizer(),
            keep_recent=2,
            max_tokens=1000,
            keep_first=1,
            read_originals=True,
        )

    def test_default_stops_at_the_cheapest_loss(self) -> None:
        """Truncating old results is enough: nothing is cleared or dropped."""
        conv = agent(size=600)  # 3,749 tokens; 3,386 with old results truncated
        fitted = fit(conv, limit=3500, tokenizer=FakeTokenizer())
        r = fitted.report
        assert r.stages == (
            "CompactLossless",
            "Deduplicate",
            "StaleReads",
            "TruncateToolResults",
        )
        assert set(r.totals()) == {"truncated"}
        assert len(fitted.messages) == len(conv)
        assert r.fits

    def test_default_summarizes_then_drops_last(self) -> None:
        """When clearing is not enough, the oldest units but the task become one
        summary; when that is not enough either, the oldest units go. The
        summary names what the results held before clearing cut them."""
        conv = agent(n=20, size=50, named=True)
        fitted = fit(conv, limit=300, tokenizer=FakeTokenizer())
        r = fitted.report
        assert r.stages == (
            "CompactLossless",
            "Deduplicate",
            "StaleReads",
            "TruncateToolResults",
            "TruncateToolInputs",
            "ClearToolResults",
            "TruncateToolResults",
            "Summarize",
        )
        assert "summarized" in r.totals()
        assert r.fits
        assert fitted.messages[1] is conv[1]  # the task, "read part 0", stays
        assert is_summary(fitted.messages[2])
        assert "src/part1.py" in fitted.messages[2].text  # cleared, then summarised
        assert conv[2] not in fitted.messages
        fitted = fit(conv, limit=100, tokenizer=FakeTokenizer())
        assert fitted.report.stages[-2:] == ("Summarize", "DropOldest")
        assert "dropped" in fitted.report.totals()
        assert fitted.report.fits
        assert fitted.messages[1] is conv[1]

    def test_default_drops_the_task_last(self) -> None:
        """By default the first turn stays while newer turns go, until none is left."""
        conv = [
            Message.user("Fix the login bug."),
            *chat()[1:],
            Message.user("Status?"),
        ]
        counter = TokenCounter(FakeTokenizer())
        assert counter.messages(conv) == 8 + 6 * 16 + 5 + 3
        fitted = fit(conv, limit=32, tokenizer=counter)
        assert [m.text for m in fitted.messages] == [
            conv[0].text,
            conv[-2].text,
            "Status?",
        ]
        (run,) = fitted.report.changes
        assert (run.stage, run.index, run.units) == ("DropOldest", 1, 5)
        assert run.ids == tuple(m.id for m in conv[1:-2])
        fitted = fit(conv, limit=10, tokenizer=counter)
        assert [m.text for m in fitted.messages] == ["Status?"]
        assert [(c.index, c.units) for c in fitted.report.changes] == [(0, 7)]

    def test_fallback(self) -> None:
        """When the strategy alone does not fit, ``DropOldest`` finishes the job."""
        conv = chat()
        fitted = fit(
            conv, limit=60, tokenizer=FakeTokenizer(), strategy=SlidingWindow(4)
        )
        r = fitted.report
        assert r.stages == ("SlidingWindow", "DropOldest")
        # 105 tokens; the window leaves 73, one more turn dropped leaves 57. The
        # fallback keeps the first turn it is given (turn 2) and drops turn 3.
        assert [(c.stage, c.index, c.units) for c in r.changes] == [
            ("SlidingWindow", 1, 2),
            ("DropOldest", 4, 1),
        ]
        assert r.tokens_after == 57
        assert r.fits

    def test_no_fallback_when_it_fits(self) -> None:
        """A strategy that meets the budget is the only stage."""
        fitted = fit(
            chat(), limit=80, tokenizer=FakeTokenizer(), strategy=SlidingWindow(4)
        )
        assert fitted.report.stages == ("SlidingWindow",)

    def test_budget_error(self) -> None:
        """Pinned content alone too large raises ``BudgetError``."""
        conv = [Message.system("w " * 100), *chat()[1:]]
        with pytest.raises(BudgetError) as info:
            fit(conv, limit=50, tokenizer=FakeTokenizer())
        assert info.value.budget == 50
        assert info.value.pinned[0] == "system message #0 (system): 104 tokens"

    def test_fits_unchanged(self) -> None:
        """A conversation that fits comes back as the same messages."""
        conv = chat()
        fitted = fit(conv, limit=1000, tokenizer=FakeTokenizer())
        assert all(a is b for a, b in zip(fitted.messages, conv, strict=True))
        assert (fitted.report.changes, fitted.report.stages) == ((), ())

    def test_never_mutates(self) -> None:
        """The input list and its messages are left as they were."""
        conv = agent(n=10)
        before = copy.deepcopy(conv)
        snapshot = list(conv)
        fit(conv, limit=300, tokenizer=FakeTokenizer())
        assert conv == before
        assert all(a is b for a, b in zip(conv, snapshot, strict=True))

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_indices_point_into_the_input(self, provider: Provider) -> None:
        """Every change names the input message at its index; output is valid."""
        conv = [Message.tool("zz", "stale"), *agent(n=10)[1:]]
        fitted = fit(
            conv,
            limit=400,
            tokenizer=FakeTokenizer(),
            provider=provider,
        )
        r = fitted.report
        assert r.changes
        for c in r.changes:
            if c.ids[0] in {m.id for m in conv}:
                assert conv[c.index].id == c.ids[0]
        assert r.tokens_before - sum(c.saved for c in r.changes) == r.tokens_after
        assert problems(fitted.messages, provider) == ()
        assert r.fits


def test_images_count_by_the_models_rule() -> None:
    """``fit`` counts an image as the model it fits for does.

    gpt-4.1-mini prices images by 32-pixel patches (2,353 tokens for an
    1800x2400 image), gpt-4o by 512-pixel tiles (765): the counter ``fit``
    builds from the model knows which.
    """
    from contextwindow.inspection import inspect_messages
    from contextwindow.messages import Image, Text

    conv = [Message.user([Text("look"), Image("https://x/y.png", "high", 1800, 2400)])]
    tile = fit(conv, model="gpt-4o").report.tokens_after
    patch = fit(conv, model="gpt-4.1-mini").report.tokens_after
    assert patch - tile == 2353 - 765
    assert inspect_messages(conv, model="gpt-4.1-mini").tokens == patch


def test_unknown_model_with_a_limit_warns_that_the_limit_is_used() -> None:
    """``fit(model=unknown, limit=N)`` uses N, and its warning says so, not 8,192."""
    with pytest.warns(UnknownModelWarning) as caught:
        fitted = fit([Message.user("hi " * 50)], model="my-deployment", limit=200)
    said = str(caught[0].message)
    assert "the window given is used" in said
    assert "8,192" not in said
    assert "8192" not in said
    assert fitted.report.limit == 200


def test_reply_reserve_takes_a_name_and_checks_its_arguments() -> None:
    """``reply_reserve`` takes a model name, and names a bad argument."""
    from contextwindow.errors import ArgumentError
    from contextwindow.fitting import reply_reserve

    assert reply_reserve("gpt-4o", 128_000) == 16_384
    with pytest.raises(ArgumentError, match=r"^limit"):
        reply_reserve("gpt-4o", "128000")  # type: ignore[arg-type]  # the wrong type on purpose
    with pytest.raises(ArgumentError, match=r"^limit"):
        reply_reserve("gpt-4o", -1)
    with pytest.raises(ArgumentError, match=r"^model"):
        reply_reserve(4, 1000)  # type: ignore[arg-type]  # the wrong type on purpose
