"""ContextManager: every public method, its state, events and errors."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from contextwindow import (
    ArgumentTypeError,
    ArgumentValueError,
    AsyncContextManager,
    BudgetError,
    ContextManager,
    ContextWindowError,
    Event,
    HeuristicTokenizer,
    InvalidMessageError,
    Message,
    SlidingWindow,
    TokenCounter,
    ToolCall,
    ToolSpec,
    problems,
)
from contextwindow.manager import CompactionPolicy
from contextwindow.testing import FakeTokenizer

from ._support import manager, words


def exchange(i: int, size: int = 10) -> list[Message]:
    return [
        Message.assistant(tool_calls=[ToolCall(f"c{i}", "read")]),
        Message.tool(f"c{i}", words(size, f"r{i}_")),
    ]


class TestConstruction:
    def test_model_gives_window_tokenizer_and_provider(self) -> None:
        m = ContextManager("claude-sonnet-4-5")
        assert (m.context_limit, m.provider) == (200_000, "anthropic")
        assert not m.tokenizer.exact
        assert m.model is not None
        assert m.model.name == "claude-sonnet-4-5"

    def test_token_limit_overrides_the_window(self) -> None:
        m = ContextManager("gpt-4o", token_limit=5000)
        assert (m.context_limit, m.provider, m.tokenizer.name) == (
            5000,
            "openai",
            "o200k_base",
        )

    def test_needs_a_model_or_a_limit(self) -> None:
        with pytest.raises(ContextWindowError, match="model or a token_limit"):
            ContextManager()

    @pytest.mark.parametrize(
        ("kw", "match"),
        [
            ({"token_limit": 0}, "token_limit: expected an int >= 1, got 0"),
            ({"token_limit": 100, "reserve": 100}, r"reserve: .* in \[0, 99\]"),
            ({"token_limit": 100, "reserve": -1}, "reserve: expected"),
            ({"token_limit": 100, "max_messages": 0}, "max_messages: expected"),
            ({"token_limit": 100, "provider": "gemini"}, "unknown provider"),
            ({"token_limit": 100, "thresholds": [0]}, r"thresholds\[0\]"),
            ({"token_limit": 100, "thresholds": [101]}, r"thresholds\[0\]"),
            ({"token_limit": 100, "strategy": "drop"}, "strategy: .*unknown name"),
            ({"token_limit": 100, "strategy": 5}, "strategy: expected a Strategy"),
            ({"token_limit": 100, "tokenizer": "gpt-4o".count}, "tokenizer: "),
            ({"token_limit": 1.5}, "token_limit: expected an int"),
            ({"token_limit": 100, "reserve": float("nan")}, "reserve: expected"),
        ],
    )
    def test_bad_configuration_fails_at_once(
        self, kw: dict[str, Any], match: str
    ) -> None:
        with pytest.raises(ContextWindowError, match=match):
            ContextManager(**kw)

    def test_a_counter_given_is_counted_with(self) -> None:
        counter = TokenCounter(FakeTokenizer(), "anthropic")
        said = Message.user("one two three")
        counter.learn(said, 1_000)  # a count only this counter holds
        m = ContextManager(token_limit=5_000, tokenizer=counter)
        assert m.provider == "anthropic"
        assert m.tokenizer is counter.tokenizer
        m.push(said)
        assert m.token_estimate() == 1_000 + counter.messages([])
        heard = Message.assistant("four five")
        m.push(heard)
        assert counter.message(heard) == m.token_estimate() - 1_000 - counter.messages(
            []
        )
        with pytest.raises(ContextWindowError, match="counts for 'anthropic'"):
            ContextManager(token_limit=5_000, tokenizer=counter, provider="openai")

    def test_system_prompt_to_start_with(self) -> None:
        m = manager(system="Be terse.")
        assert [(x.role, x.text) for x in m.messages] == [("system", "Be terse.")]
        assert m.history == m.messages

    def test_repr_names_model_and_sizes(self) -> None:
        m = ContextManager("gpt-4o", token_limit=100)
        m.push(Message.user("hi"))
        assert repr(m) == (
            "ContextManager(model='gpt-4o', token_limit=100, messages=1, history=1)"
        )

    def test_defaults(self) -> None:
        m = manager()
        assert m.thresholds == (60, 80, 90)
        assert m.policy == CompactionPolicy()
        assert (m.reserve, m.agent_name, m.protected_markers) == (0, None, ())


class TestPush:
    def test_push_appends_to_view_and_history(self) -> None:
        m = manager()
        a, b = Message.user("a"), Message.assistant("b")
        m.push(a)
        m.push(b)
        assert m.messages == (a, b) == m.history

    def test_push_many_keeps_order(self) -> None:
        m = manager()
        msgs = [Message.user(str(i)) for i in range(5)]
        m.push_many(msgs)
        assert list(m.messages) == msgs

    def test_push_takes_a_provider_dict_and_names_a_bad_one(self) -> None:
        """A provider dict is read; what is no message is refused by name."""
        m = manager()
        m.push({"role": "user", "content": "hi"})
        assert [(x.role, x.text) for x in m.messages] == [("user", "hi")]
        with pytest.raises(InvalidMessageError, match=r"^message\.role: unknown"):
            m.push({"role": "robot", "content": "hi"})
        with pytest.raises(InvalidMessageError, match=r"^message: expected a message"):
            m.push("hi")
        assert len(m.history) == 1

    def test_push_many_is_all_or_nothing(self) -> None:
        m = manager()
        with pytest.raises(InvalidMessageError, match=r"messages\[1\]"):
            m.push_many([Message.user("ok"), "not a message"])
        assert m.history == ()


class TestRestore:
    def test_set_messages_replaces_view_and_history(self) -> None:
        m = manager()
        m.push(Message.user("old"))
        new = [Message.user("new"), Message.assistant("reply")]
        m.set_messages(new)
        assert list(m.messages) == new == list(m.history)

    def test_set_messages_with_a_separate_history(self) -> None:
        m = manager()
        log = [Message.user(str(i)) for i in range(4)]
        m.set_messages(log[-1:], history=log)
        assert (list(m.messages), list(m.history)) == (log[-1:], log)

    def test_set_messages_validates_both(self) -> None:
        m = manager()
        with pytest.raises(InvalidMessageError, match=r"history\[0\]"):
            m.set_messages([], history=[1])

    def test_restore_rearms_thresholds(self) -> None:
        m = manager(limit=100)
        fired: list[float] = []
        m.on_threshold(50)(lambda ctx: fired.append(ctx.threshold))
        m.push(Message.user(words(60)))
        m.prepare()
        m.set_messages([Message.user(words(60))])
        m.prepare()
        assert fired == [50, 50]

    def test_clear_forgets_everything_but_configuration(self) -> None:
        m = manager(system="s")
        m.add_protected_marker("KEEP")
        m.push(Message.user("hi"))
        m.clear()
        assert (m.messages, m.history) == ((), ())
        assert m.protected_markers == ("KEEP",)

    def test_update_system_replaces_in_place_in_view_and_history(self) -> None:
        m = manager(system="old")
        first = m.messages[0]
        m.push(Message.user("hi"))
        m.update_system("new")
        assert [x.text for x in m.messages] == ["new", "hi"]
        assert [x.text for x in m.history] == ["new", "hi"]
        assert m.messages[0].id == first.id

    def test_update_system_inserts_one_first(self) -> None:
        m = manager()
        m.push(Message.user("hi"))
        m.update_system("sys")
        assert [x.role for x in m.messages] == ["system", "user"]

    def test_update_system_needs_text(self) -> None:
        with pytest.raises(ContextWindowError, match="text"):
            manager().update_system(None)  # type: ignore[arg-type]


class TestConfiguration:
    def test_strategy_set_remove_has(self) -> None:
        m = manager()
        assert m.has_strategy
        m.remove_strategy()
        assert (m.has_strategy, m.strategy) == (False, None)
        m.set_strategy(SlidingWindow(3))
        assert m.strategy == SlidingWindow(3)

    def test_set_strategy_rejects_none_and_non_callables(self) -> None:
        m = manager()
        with pytest.raises(ContextWindowError, match="remove_strategy"):
            m.set_strategy(None)  # type: ignore[arg-type]
        with pytest.raises(ContextWindowError, match="strategy: expected a Strategy"):
            m.set_strategy(3)  # type: ignore[arg-type]

    def test_strategy_none_at_construction(self) -> None:
        assert not manager(strategy=None).has_strategy

    def test_tokenizer_and_set_tokenizer_recount(self) -> None:
        m = ContextManager("gpt-4o")
        m.push(Message.user("antidisestablishmentarianism " * 20))
        exact = m.token_estimate()
        m.set_tokenizer(FakeTokenizer())
        assert m.tokenizer.name == "fake"
        assert m.token_estimate() != exact
        assert m.token_estimate() == 3 + 20 + 3 + 1  # framing, words, priming, role

    def test_add_protected_marker_pins_messages(self) -> None:
        m = manager(limit=60)
        m.add_protected_marker("KEEP")
        keep = Message.user("KEEP " + words(20))
        m.push_many([keep, Message.assistant(words(30)), Message.user("now?")])
        m.prepare()
        assert keep in m.messages

    def test_add_protected_marker_rejects_empty(self) -> None:
        with pytest.raises(ContextWindowError, match="non-empty"):
            manager().add_protected_marker("")

    def test_token_estimate_counts_framing_and_tools(self) -> None:
        m = ContextManager("gpt-4o")
        m.push(Message.user("hello world"))
        assert m.token_estimate() == 9
        with_tools = ContextManager("gpt-4o", tools=[ToolSpec("ping", "Ping a host")])
        with_tools.push(Message.user("hello world"))
        assert with_tools.token_estimate() > 9

    def test_recall_brings_back_originals_in_history_order(self) -> None:
        m = manager()
        msgs = [Message.user(str(i)) for i in range(4)]
        m.push_many(msgs)
        m.force_compress_with(SlidingWindow(1))
        assert [x.text for x in m.recall([msgs[2].id, msgs[0].id, "nope"])] == [
            "0",
            "2",
        ]


class TestPrepare:
    def test_shapes_for_each_provider(self) -> None:
        for provider, key in (("openai", "messages"), ("responses", "input")):
            m = manager(provider=provider, system="s")
            m.push(Message.user("hi"))
            p = m.prepare()
            assert p.provider == provider
            assert p.system is None
            assert key in p.body()
        a = manager(provider="anthropic", system="s")
        a.push(Message.user("hi"))
        p = a.prepare()
        assert p.body() == {
            "system": "s",
            "messages": [{"role": "user", "content": "hi"}],
        }

    def test_figures(self) -> None:
        m = manager(limit=200, reserve=50)
        m.push(Message.user(words(10)))
        p = m.prepare()
        assert (p.tokens, p.context_limit, p.budget) == (m.token_estimate(), 200, 150)
        assert p.usage == pytest.approx(100 * p.tokens / 150)  # of the budget
        assert (p.report, p.compactions, p.thresholds) == (None, (), ())

    def test_reserve_per_call(self) -> None:
        m = manager(limit=100)
        m.push_many(
            [Message.user(words(40)), Message.assistant(words(20)), Message.user("q")]
        )
        assert m.prepare(reserve=60).tokens <= 40
        with pytest.raises(ContextWindowError, match="reserve"):
            m.prepare(reserve=100)

    def test_prefix_is_the_previous_request_after_appends(self) -> None:
        m = manager(system="s")
        m.push(Message.user("hi"))
        first = m.prepare()
        m.push_many([Message.assistant("hello"), Message.user("more")])
        second = m.prepare()
        assert first.prefix_tokens == 0
        assert second.prefix_tokens == first.tokens - 3  # all but reply priming

    def test_history_never_shrinks(self) -> None:
        m = manager(limit=100)
        pushed: list[Message] = []
        for i in range(30):
            msg = Message.user(words(10, f"u{i}_"))
            pushed.append(msg)
            m.push(msg)
            assert m.prepare().tokens <= 100
        assert list(m.history) == pushed
        assert len(m.messages) < len(pushed)

    def test_no_strategy_over_the_window_raises(self) -> None:
        m = manager(limit=50, strategy=None)
        m.push(Message.user(words(80)))
        with pytest.raises(BudgetError, match="no strategy is set"):
            m.prepare()

    def test_pinned_content_over_the_window_raises(self) -> None:
        m = manager(limit=50)
        m.push(Message.system(words(80)))
        m.push(Message.user("q"))
        with pytest.raises(BudgetError, match="system"):
            m.prepare()

    def test_pending_tool_call_is_left_out_of_the_request_only(self) -> None:
        m = manager(provider="openai")
        call = Message.assistant("Looking.", tool_calls=[ToolCall("c1", "ls")])
        m.push_many([Message.user("list files"), call])
        p = m.prepare()
        assert problems(p.conversation, "openai") == ()
        assert p.conversation[-1].tool_calls == ()
        assert [c.trigger for c in p.compactions] == ["repair"]
        assert not p.compactions[0].applied
        assert m.messages[-1] is call  # the view still waits for the result
        m.push(Message.tool("c1", "a.txt"))
        p = m.prepare()
        assert p.conversation[-2] is call
        assert p.compactions == ()

    def test_broken_history_is_repaired_in_the_view(self) -> None:
        m = manager(provider="anthropic")
        m.push_many([Message.tool("zz", "orphan"), Message.user("hi")])
        p = m.prepare()
        assert [c.trigger for c in p.compactions] == ["repair"]
        assert p.compactions[0].applied
        assert [x.text for x in m.messages] == ["hi"]
        assert len(m.history) == 2
        assert p.report is not None
        assert p.report.changes[0].kind == "repaired"

    def test_max_messages_caps_without_splitting(self) -> None:
        m = manager(limit=10_000, max_messages=5, system="s")
        m.push(Message.user("task"))
        for i in range(5):
            m.push_many(exchange(i))
        p = m.prepare()
        assert sum(1 for x in m.messages if x.role != "system") <= 5
        assert "max_messages" in [c.trigger for c in p.compactions]
        assert problems(p.conversation, "openai") == ()
        assert m.messages[0].role == "system"

    def test_coroutine_handler_needs_the_async_manager(self) -> None:
        """Refused at registration; one that returns a coroutine, at prepare."""
        m = manager(limit=100)

        async def handler(ctx: object) -> None:  # pragma: no cover  # never awaited
            pass

        with pytest.raises(ContextWindowError, match="AsyncContextManager"):
            m.on_threshold(10)(handler)
        m.on_threshold(10)(lambda ctx: handler(ctx))  # not a coroutine function
        m.push(Message.user(words(50)))
        with pytest.raises(ContextWindowError, match="AsyncContextManager"):
            m.prepare()

    def test_a_handler_error_propagates(self) -> None:
        m = manager(limit=100)

        @m.on_threshold(10)
        def handler(ctx: object) -> None:
            raise RuntimeError("boom")

        m.push(Message.user(words(50)))
        with pytest.raises(RuntimeError, match="boom"):
            m.prepare()


class TestForceCompress:
    def test_uses_the_strategy_when_set(self) -> None:
        m = manager(limit=1000, strategy=SlidingWindow(2))
        m.push_many([Message.user(str(i)) for i in range(5)])
        c = m.force_compress()
        assert (c.applied, c.trigger, [x.text for x in m.messages]) == (
            True,
            "forced",
            ["3", "4"],
        )

    def test_falls_back_to_a_sliding_window(self) -> None:
        m = manager(strategy=None)
        m.push_many([Message.user(str(i)) for i in range(5)])
        m.force_compress(3)
        assert [x.text for x in m.messages] == ["2", "3", "4"]

    def test_target_bounds_budgeted_strategies(self) -> None:
        m = manager(limit=10_000)
        m.push_many([Message.user(words(20, f"u{i}_")) for i in range(10)])
        assert not m.force_compress().applied  # under the 60% watermark already
        c = m.force_compress(target=100)
        assert c.applied
        assert c.report.tokens_after <= 100
        with pytest.raises(ContextWindowError, match="target"):
            m.force_compress(target=-1)

    def test_with_keeps_the_manager_strategy(self) -> None:
        m = manager()
        before = m.strategy
        m.push_many([Message.user(str(i)) for i in range(5)])
        m.force_compress_with(SlidingWindow(1))
        assert m.strategy is before
        assert len(m.messages) == 1
        assert len(m.history) == 5

    def test_with_takes_a_spec_string(self) -> None:
        """force_compress_with takes a spec, as the constructor and set_strategy do."""
        m = manager()
        m.push_many([Message.user(str(i)) for i in range(5)])
        c = m.force_compress_with("sliding-window(2)", target=0)
        assert (c.applied, [x.text for x in m.messages]) == (True, ["3", "4"])


class TestArguments:
    @pytest.mark.parametrize(
        ("strategy", "error"),
        [
            (None, ArgumentTypeError),
            ("no-such-strategy", ArgumentValueError),
            (SlidingWindow, ArgumentTypeError),
            (lambda messages: messages, ArgumentTypeError),
        ],
        ids=["none", "unknown-spec", "class", "one-argument"],
    )
    def test_force_compress_with_names_strategy(
        self, strategy: Any, error: type[Exception]
    ) -> None:
        """A bad strategy is the library's error naming ``strategy``."""
        m = manager()
        m.push_many([Message.user(str(i)) for i in range(5)])
        with pytest.raises(error, match=r"^strategy: "):
            m.force_compress_with(strategy)
        assert len(m.messages) == 5

    @pytest.mark.parametrize("strategy", [SlidingWindow(3), None])
    @pytest.mark.parametrize(
        ("window", "error"), [("x", ArgumentTypeError), (-1, ArgumentValueError)]
    )
    def test_force_compress_names_fallback_window(
        self, strategy: Any, window: Any, error: type[Exception]
    ) -> None:
        """A bad fallback_window is refused, strategy or not, under its own name."""
        m = manager(strategy=strategy)
        m.push_many([Message.user(str(i)) for i in range(5)])
        with pytest.raises(error, match=r"^fallback_window: "):
            m.force_compress(window)

    def test_subscribe_refuses_a_non_callable(self) -> None:
        """subscribe(5) fails at once, not as a logged error on every push."""
        m = manager()
        with pytest.raises(ArgumentTypeError, match=r"^callback: "):
            m.subscribe(5)  # type: ignore[arg-type]
        m.push(Message.user("hi"))

    def test_on_threshold_refuses_a_non_callable(self) -> None:
        """A handler that cannot be called is an argument error naming it."""
        with pytest.raises(ArgumentTypeError, match=r"^handler: "):
            manager().on_threshold(50)("not a function")  # type: ignore[type-var]  # on purpose

    @pytest.mark.parametrize("value", ["false", 0, 1, None])
    def test_offer_recall_is_a_bool(self, value: Any) -> None:
        """offer_recall='false' is refused, not taken as true."""
        with pytest.raises(ArgumentTypeError, match=r"^offer_recall: "):
            manager(offer_recall=value)

    @pytest.mark.parametrize("cls", [ContextManager, AsyncContextManager])
    def test_an_unknown_keyword_names_the_class(self, cls: type[Any]) -> None:
        """limit= is the library's error naming the class, with what was meant."""
        with pytest.raises(
            ArgumentTypeError,
            match=rf"^limit: expected a keyword argument {cls.__name__}\(\) takes, "
            r"got limit=1000 \(did you mean token_limit\?\)$",
        ):
            cls(limit=1000)

    def test_an_unknown_keyword_shows_no_secret(self) -> None:
        """A key passed where none is taken is not shown in the error."""
        with pytest.raises(ArgumentTypeError, match="api_key") as caught:
            ContextManager("gpt-4o", api_key="sk-proj-0123456789abcdef")  # type: ignore[call-arg]  # on purpose
        assert "01234567" not in str(caught.value)

    @pytest.mark.parametrize("cls", [ContextManager, AsyncContextManager])
    def test_a_second_positional_argument_names_the_class(self, cls: type[Any]) -> None:
        """("gpt-4o", 1000) says only the model goes by position."""
        with pytest.raises(
            ArgumentTypeError,
            match=rf"^{cls.__name__}\(\) arguments: expected at most 1 by position "
            r"\(model\).*\(e\.g\. token_limit=1000\)$",
        ):
            cls("gpt-4o", 1000)

    def test_the_model_twice(self) -> None:
        """The model by position and by keyword is an error naming ``model``."""
        with pytest.raises(ArgumentTypeError, match=r"^model: expected one value"):
            ContextManager("gpt-4o", model="gpt-4o")  # type: ignore[misc]  # on purpose

    def test_prepare_checks_query_when_nothing_is_cut(self) -> None:
        """prepare(query=5) is refused even when the view fits, as fit refuses it."""
        m = manager()
        m.push(Message.user("hi"))
        with pytest.raises(ArgumentTypeError, match=r"^query: "):
            m.prepare(query=5)  # type: ignore[arg-type]


class TestEvents:
    def test_subscribers_get_structured_events(self) -> None:
        m = manager(limit=100, agent_name="coder")
        seen: list[Event] = []
        m.subscribe(seen.append)
        m.push(Message.user(words(95)))
        m.push(Message.user("q"))
        m.prepare()
        kinds = [e.kind for e in seen]
        assert kinds[:2] == ["push", "push"]
        assert "threshold" in kinds
        assert "compaction" in kinds
        compaction = next(e for e in seen if e.kind == "compaction")
        assert compaction.agent == "coder"
        assert compaction.data["trigger"] == "limit"
        assert compaction.data["tokens_after"] <= 100

    def test_unsubscribe_twice_is_harmless(self) -> None:
        m = manager()
        stop = m.subscribe(lambda e: None)
        stop()
        stop()

    def test_events_go_to_logging(self, caplog: pytest.LogCaptureFixture) -> None:
        m = manager(limit=100, agent_name="coder")
        with caplog.at_level(logging.INFO, logger="contextwindow.manager"):
            m.push(Message.user(words(95)))
            m.push(Message.user("q"))
            m.prepare()
        records = [r for r in caplog.records if r.name == "contextwindow.manager"]
        assert any(
            getattr(r, "contextwindow_event", None) == "compaction" for r in records
        )
        assert all("[coder]" in r.getMessage() for r in records)
        assert not any(
            getattr(r, "contextwindow_event", None) == "push" for r in records
        )

    def test_config_changes_are_events(self) -> None:
        m = ContextManager("gpt-4o")
        seen: list[str] = []
        m.subscribe(lambda e: seen.append(e.kind))
        m.set_strategy(SlidingWindow(2))
        m.remove_strategy()
        m.set_tokenizer(HeuristicTokenizer())
        m.add_protected_marker("X")
        m.update_system("s")
        m.set_messages([])
        m.clear()
        assert seen == [
            "strategy",
            "strategy",
            "tokenizer",
            "marker",
            "system",
            "restore",
            "clear",
        ]


class TestReserve:
    def test_default_leaves_room_for_the_reply(self) -> None:
        """The model's output limit is kept free, at most a quarter of the window."""
        assert ContextManager("gpt-4o").reserve == 16_384
        assert ContextManager("gpt-4o", token_limit=8_000).reserve == 2_000
        assert ContextManager("gpt-4o", reserve=0).budget == 128_000
        assert ContextManager(token_limit=8_000).reserve == 0  # no model

    @pytest.mark.parametrize("reserve", [0, 100, 500])
    def test_a_90_percent_handler_fires_whatever_the_reserve(
        self, reserve: int
    ) -> None:
        """Usage is a share of what a request may take, so 90 % means 90 % of it."""
        m = ContextManager(
            token_limit=1_000,
            reserve=reserve,
            tokenizer=FakeTokenizer(),
            strategy=None,
            thresholds=(90,),
        )
        seen: list[tuple[float, int]] = []
        m.on_threshold(90)(lambda ctx: seen.append((ctx.usage_percentage, ctx.budget)))
        budget = 1_000 - reserve
        m.push(Message.user(words(int(budget * 0.8))))
        m.prepare()
        assert seen == []  # about 80 % of the budget
        m.push(Message.user(words(int(budget * 0.12))))
        p = m.prepare()
        assert p.thresholds == (90,)
        ((usage, seen_budget),) = seen
        assert seen_budget == p.budget == budget
        assert 90 <= usage <= 100
        assert p.usage == pytest.approx(100 * p.tokens / budget)


def test_images_count_by_the_models_rule_and_are_stored_apart(tmp_path: Path) -> None:
    """A manager's counter knows its model: gpt-4.1-mini's images by patches.

    Counts a store keeps are under a key naming that model, so a conversation
    reopened for gpt-4o does not take gpt-4.1-mini's image counts.
    """
    from contextwindow.messages import Image, Text

    image = Message.user([Text("look"), Image("https://x/y.png", "high", 1800, 2400)])
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    patch = ContextManager("gpt-4.1-mini", store=url, conversation_id="c")
    patch.push(image)
    tiles = ContextManager("gpt-4o", store=url, conversation_id="c")
    assert patch.prepare().tokens - tiles.prepare().tokens == 2353 - 765
