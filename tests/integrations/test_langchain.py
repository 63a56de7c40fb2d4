"""The LangChain / LangGraph adapter: the real packages, LangChain's fake models."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.utils import trim_messages as langchain_trim
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import SecretStr
from tests.llama import LlamaServer

from contextwindow import Message, ToolCall, ToolResult, fit, get_tokenizer, problems
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    InvalidMessageError,
)
from contextwindow.formats import from_openai
from contextwindow.integrations.langchain import (
    ContextWindowMiddleware,
    LangChainSummarizer,
    from_langchain,
    to_langchain,
    token_counter,
    trim_messages,
)
from contextwindow.strategies import Summarize
from contextwindow.testing import FakeTokenizer, conversations
from contextwindow.tokens import TokenCounter


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, with tools bound and each request recorded."""

    seen: list[list[BaseMessage]] = []  # noqa: RUF012 -- a pydantic field, copied per instance

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "".join(
        f"line {k}: value = compute({k})\n" for k in range(40)
    )


@tool
def search(query: str) -> str:
    """Search the project's code."""
    return f"{query}: found in src/app.py:12, src/db.py:40, tests/test_app.py:7"


def script(turns: int, *, answer_each: bool = True) -> list[AIMessage]:
    """``turns`` model replies calling both tools, each answered or all at the end."""
    out: list[AIMessage] = []
    for i in range(turns):
        out.append(
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"path": f"src/m{i}.py"},
                        "id": f"r{i}",
                    },
                    {"name": "search", "args": {"query": f"name{i}"}, "id": f"s{i}"},
                ],
                usage_metadata={
                    "input_tokens": 0,
                    "output_tokens": 5,
                    "total_tokens": 5,
                },
            )
        )
        if answer_each:
            out.append(AIMessage(f"module {i} read; nothing to change."))
    return out if answer_each else [*out, AIMessage("all modules read.")]


class TestAgentLoop:
    def test_two_hundred_turns_fit_and_stay_valid(self) -> None:
        """200 turns of two tool calls: each request fits, is valid; all kept."""
        turns = 200
        model = ScriptedModel(messages=iter(script(turns, answer_each=False)))
        middleware = ContextWindowMiddleware("gpt-4o", token_limit=3_000, reserve=500)
        agent = create_agent(
            model,
            tools=[read_file, search],
            system_prompt="You are a coding agent.",
            middleware=[middleware],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t1"}, "recursion_limit": 2_000}
        agent.invoke({"messages": [HumanMessage("check every module")]}, config)
        state = agent.get_state(config).values["messages"]
        assert len(state) == 1 + turns * 3 + 1
        assert state[-1].content == "all modules read."
        assert sum(isinstance(m, ToolMessage) for m in state) == 2 * turns
        assert state[2].content == read_file.invoke({"path": "src/m0.py"})  # untouched
        counter = TokenCounter(get_tokenizer("gpt-4o"), "openai")
        specs = [convert_to_openai_tool(t) for t in (read_file, search)]
        assert len(model.seen) == turns + 1
        for request in model.seen:
            conv = from_langchain(request)
            assert problems(conv, "openai") == ()
            assert counter.messages(conv, tools=specs) <= 2_500
            assert conv[0].text == "You are a coding agent."
        assert len(model.seen[-1]) < len(state) / 4  # compacted: it had to be
        manager = middleware.manager("t1")
        assert manager is not None
        # The system prompt, and all but the last answer (no call came after it).
        assert len(manager.history) == len(state)

    def test_a_message_replaced_under_its_id_is_what_the_model_sees(self) -> None:
        """The graph's state replacing a message by id (a redaction) reaches the
        model: the middleware compares what it pushed as messages, not by id."""
        model = ScriptedModel(messages=iter([AIMessage("a1"), AIMessage("a2")]))
        agent = create_agent(
            model,
            middleware=[ContextWindowMiddleware("gpt-4o")],
            checkpointer=InMemorySaver(),
        )
        config: Any = {"configurable": {"thread_id": "t"}}
        secret = HumanMessage("my card is 4111-1111-1111-1111", id="u1")
        agent.invoke({"messages": [secret]}, config)
        redacted = HumanMessage("my card is [REDACTED]", id="u1")
        agent.update_state(config, {"messages": [redacted]})
        agent.invoke({"messages": [HumanMessage("go on", id="u2")]}, config)
        assert [m.content for m in model.seen[-1]] == [
            "my card is [REDACTED]",
            "a1",
            "go on",
        ]

    def test_without_a_thread_each_call_fits(self) -> None:
        """An agent with no checkpointer is fitted too, call by call."""
        model = ScriptedModel(messages=iter(script(3)))
        agent = create_agent(
            model,
            tools=[read_file, search],
            middleware=[
                ContextWindowMiddleware(token_limit=600, tokenizer="o200k_base")
            ],
        )
        history: list[Any] = []
        for i in range(3):
            history = agent.invoke({"messages": [*history, HumanMessage(f"m{i}")]})[
                "messages"
            ]
        assert len(history) == 15
        for request in model.seen:
            assert problems(from_langchain(request), "openai") == ()

    def test_async_agent(self) -> None:
        """``ainvoke`` goes through ``awrap_model_call`` with the same result."""
        import asyncio

        model = ScriptedModel(messages=iter(script(2)))
        agent = create_agent(
            model,
            tools=[read_file, search],
            middleware=[
                ContextWindowMiddleware("gpt-4o", token_limit=800, reserve=100)
            ],
        )
        out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("go")]}))
        assert out["messages"][-1].content == "module 0 read; nothing to change."
        counter = TokenCounter(get_tokenizer("gpt-4o"), "openai")
        for request in model.seen:
            assert counter.messages(from_langchain(request)) <= 700


def _split_batches(conv: Sequence[Message]) -> list[Message]:
    out: list[Message] = []
    for m in conv:
        if m.role == "tool" and len(m.parts) > 1:
            out += [m.with_parts([p]) for p in m.parts]
        else:
            out.append(m)
    return out


def _kinds(m: Message) -> list[str]:
    """The part kinds but empty texts (LangChain's content "" is no part)."""
    return [p.kind for p in m.parts if not (p.kind == "text" and not m.text)]


class TestConversion:
    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(conversations())
    def test_round_trip(self, conv: list[Message]) -> None:
        """LangChain -> neutral -> LangChain is equal; neutral content survives."""
        lc = to_langchain(conv)
        back = from_langchain(lc)
        assert to_langchain(back) == lc
        expected = _split_batches(conv)
        assert len(back) == len(expected)
        for a, b in zip(back, expected, strict=True):
            assert (a.role, a.agent, a.pinned, a.name) == (
                b.role,
                b.agent,
                b.pinned,
                b.name,
            )
            assert {k: v for k, v in a.meta.items() if k != "langchain"} == b.meta
            assert _kinds(a) == _kinds(b)

    def test_everything_langchain_carries(self) -> None:
        """Ids, metadata, usage, blocks with no neutral field and chunks round-trip."""
        lc: list[BaseMessage] = [
            SystemMessage(
                [
                    {
                        "type": "text",
                        "text": "Be brief.",
                        "cache_control": {"type": "ephemeral"},
                    }
                ]
            ),
            HumanMessage(
                [
                    {"type": "text", "text": "what is this?"},
                    {
                        "type": "image",
                        "base64": "iVBORw0KGgo=",
                        "mime_type": "image/png",
                    },
                ],
                id="h1",
                name="ada",
            ),
            AIMessage(
                [
                    {"type": "thinking", "thinking": "look", "signature": "sig"},
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "c1", "name": "ls", "input": {}},
                ],
                tool_calls=[
                    {"name": "ls", "args": {}, "id": "c1", "type": "tool_call"}
                ],
                id="a1",
                additional_kwargs={"refusal": None},
                response_metadata={"model_name": "claude", "stop_reason": "tool_use"},
                usage_metadata={
                    "input_tokens": 40,
                    "output_tokens": 9,
                    "total_tokens": 49,
                },
            ),
            ToolMessage(
                "a.py", tool_call_id="c1", status="error", artifact={"k": 1}, id="t1"
            ),
            AIMessageChunk(content="partial", id="a2"),
            ChatMessage(content="note", role="user", id="c2"),
        ]
        neutral = from_langchain(lc)
        assert [m.role for m in neutral] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
        ]
        assert neutral[2].tool_calls[0].id == "c1"
        assert [p.kind for p in neutral[2].parts] == ["thinking", "text", "tool_call"]
        assert neutral[3].tool_results[0].is_error
        assert neutral[1].parts[1].kind == "image"
        assert to_langchain(neutral) == lc

    def test_provider_blocks_are_content_counted_and_passed_on(self) -> None:
        """A document, a file or a refusal block in a LangChain message is the
        provider's own content: read as an ``Opaque`` part (counted as what it
        holds, not as JSON text) and written back as it came."""
        doc = {
            "type": "document",
            "source": {
                "type": "text",
                "media_type": "text/plain",
                "data": "Clause: the fee is 4,200 EUR. " * 40,
            },
        }
        lc: list[BaseMessage] = [
            HumanMessage([doc, {"type": "text", "text": "What is the fee?"}]),
            AIMessage([{"type": "refusal", "refusal": "I cannot say."}]),
        ]
        neutral = from_langchain(lc)
        assert [p.kind for p in neutral[0].parts] == ["opaque", "text"]
        assert [p.kind for p in neutral[1].parts] == ["opaque"]
        assert to_langchain(neutral) == lc
        counter = TokenCounter(FakeTokenizer())
        # The document's words, not its JSON: about the 240 words it holds.
        assert 240 <= counter.message(neutral[0]) < 300
        assert fit(neutral, limit=10_000, tokenizer=FakeTokenizer()).messages == tuple(
            neutral
        )

    def test_fit_names_the_reader_of_langchain_messages(self) -> None:
        """``fit`` given LangChain messages says how to read them, not that a
        'system' item is an unknown Responses type."""
        with pytest.raises(InvalidMessageError) as info:
            fit([SystemMessage("s"), HumanMessage("hi")], limit=1000)
        assert str(info.value).startswith(
            "messages[0]: a LangChain SystemMessage: read LangChain messages with "
            "contextwindow.integrations.langchain.from_langchain"
        )

    def test_a_changed_message_is_written_from_its_parts(self) -> None:
        """A strategy's truncated result goes back as the new text, fields kept."""
        lc = [ToolMessage("x" * 50, tool_call_id="c1", id="t1", artifact=[1])]
        neutral = from_langchain(lc)[0]
        cut = neutral.with_parts([ToolResult("c1", "x [cut]")])
        (out,) = to_langchain([cut])
        assert isinstance(out, ToolMessage)
        assert (out.content, out.id, out.artifact) == ("x [cut]", "t1", [1])

    def test_bad_messages_name_their_index(self) -> None:
        """What LangChain cannot hold, or no neutral role fits, names messages[i]."""
        from langchain_core.messages import RemoveMessage

        with pytest.raises(InvalidMessageError, match=r"messages\[1\]"):
            from_langchain([HumanMessage("a"), RemoveMessage(id="x")])
        with pytest.raises(InvalidMessageError, match=r"messages\[0\]\.parts\[0\]"):
            to_langchain([Message("user", (Message.tool("c", "r").parts[0],))])


class TestTrimMessages:
    def test_never_invalid_where_langchain_is(self) -> None:
        """On tau-bench runs LangChain's defaults give invalid histories; ours none."""
        from contextwindow.transcripts import read_transcripts

        data = os.environ.get("CONTEXTWINDOW_DATA", str(_data_dir()))
        runs = read_transcripts(f"{data}/tau-bench_gpt-4o-airline.json")[::20]
        count = token_counter("gpt-4o")
        theirs = ours = outputs = 0
        for run in runs:
            lc = to_langchain(run.messages)
            total = count(lc)
            for share in (0.5, 0.25, 0.1):
                limit = int(total * share)
                out = langchain_trim(lc, max_tokens=limit, token_counter=count)
                theirs += (
                    bool(
                        problems(from_openai(convert_to_openai_messages(out)), "openai")
                    )
                    or not out
                )
                try:
                    mine = trim_messages(lc, max_tokens=limit, token_counter=count)
                except BudgetError:  # the system prompt alone is over: said, not cut
                    continue
                outputs += 1
                ours += bool(problems(from_langchain(mine), "openai"))
                assert count(mine) <= limit
                assert mine[0] == lc[0]
                assert mine[-1] == lc[-1]
        assert theirs > 0
        assert ours == 0
        assert outputs >= len(runs)

    def test_len_counts_messages_as_langchain_does(self) -> None:
        """``token_counter=len`` (LangChain's idiom for a count of messages)
        keeps at most that many, as LangChain's ``trim_messages`` does."""
        history: list[BaseMessage] = [SystemMessage("sys")]
        for i in range(1, 5):
            history += [HumanMessage(f"h{i}"), AIMessage(f"a{i}")]
        history.pop()  # ends on h4
        for n in (2, 4, 5, 11):
            ours = trim_messages(history, max_tokens=n, token_counter=len)
            theirs = langchain_trim(
                history, max_tokens=n, token_counter=len, include_system=True
            )
            assert ours == theirs, n
        with pytest.raises(BudgetError):
            trim_messages(history, max_tokens=1, token_counter=len)

    @pytest.mark.parametrize("allow_partial", [False, True])
    @pytest.mark.parametrize(
        ("counter", "error", "got"),
        [
            (lambda ms: sum(len(m.content) for m in ms) / 4, ArgumentTypeError, "0.0"),
            (lambda ms: -sum(len(m.content) for m in ms), ArgumentValueError, "-6"),
        ],
        ids=["float", "negative"],
    )
    def test_a_counter_that_is_not_an_int_is_named(
        self, counter: Any, error: type[Exception], got: str, allow_partial: bool
    ) -> None:
        """A float or negative count from the user's counter: named, not summed."""
        history: list[BaseMessage] = [
            SystemMessage("Be brief."),
            HumanMessage("a " * 200),
            AIMessage("b " * 200),
            HumanMessage("and c?"),
        ]
        match = rf"^token_counter: expected a token counter .*returned {got}\)"
        with pytest.raises(error, match=match):
            trim_messages(
                history,
                max_tokens=60,
                token_counter=counter,
                allow_partial=allow_partial,
            )

    def test_with_langchains_approximate_counter(self) -> None:
        """LangChain's own counters are honoured: the output fits by their count."""
        from langchain_core.messages.utils import count_tokens_approximately

        history: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("go")]
        for i in range(30):
            history += [
                AIMessage(
                    "", tool_calls=[{"name": "ls", "args": {"i": i}, "id": f"c{i}"}]
                ),
                ToolMessage("file " * 40, tool_call_id=f"c{i}"),
            ]
        out = trim_messages(history, max_tokens=400)
        assert count_tokens_approximately(out) <= 400
        assert problems(from_langchain(out), "openai") == ()
        runnable = trim_messages(max_tokens=400)
        assert runnable.invoke(history) == out

    def test_first_is_refused(self) -> None:
        """``strategy="first"`` keeps no valid history: refused, naming it."""
        from contextwindow.errors import ArgumentValueError

        with pytest.raises(ArgumentValueError, match="strategy"):
            trim_messages([HumanMessage("a")], max_tokens=10, strategy="first")


class TestSummarizer:
    def test_summarizes_with_a_fake_model_in_a_strategy(self) -> None:
        """The summary the chat model writes replaces old exchanges."""
        from contextwindow import fit

        fake = GenericFakeChatModel(
            messages=iter([AIMessage("The user asked about tides.")] * 3)
        )
        conv = [Message.user(f"question {i}: " + "tides " * 60) for i in range(8)]
        fitted = fit(
            conv,
            limit=300,
            tokenizer="o200k_base",
            strategy=Summarize(LangChainSummarizer(fake, keep_facts=False)),
        )
        assert any("tides" in m.text and "asked" in m.text for m in fitted.messages)


def _data_dir() -> Any:
    from pathlib import Path

    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


class TestLlama:
    def test_agent_against_llama_cpp(self, llama_server: LlamaServer) -> None:
        """create_agent, ChatOpenAI on the local llama.cpp server: fitted, answered."""
        from langchain_openai import ChatOpenAI

        chat = ChatOpenAI(
            model=llama_server.model,
            base_url=llama_server.base_url,
            api_key=SecretStr(os.environ[llama_server.key_env]),
            temperature=0,
            extra_body={"max_tokens": 24},  # llama.cpp reads max_tokens only
        )
        middleware = ContextWindowMiddleware(
            token_limit=300, reserve=50, tokenizer="o200k_base"
        )
        agent = create_agent(
            chat, middleware=[middleware], checkpointer=InMemorySaver()
        )
        config: Any = {"configurable": {"thread_id": "llama"}}
        for i in range(3):
            out = agent.invoke(
                {"messages": [HumanMessage(f"Note {i}: " + "the sky is blue. " * 15)]},
                config,
            )
        assert isinstance(out["messages"][-1], AIMessage)
        assert len(out["messages"]) == 6
        manager = middleware.manager("llama")
        assert manager is not None
        assert manager.calibration.observed >= 1  # llama.cpp's reported usage

    def test_summarizer_against_llama_cpp(self, llama_server: LlamaServer) -> None:
        """LangChainSummarizer over ChatOpenAI returns the model's text."""
        from langchain_openai import ChatOpenAI

        chat = ChatOpenAI(
            model=llama_server.model,
            base_url=llama_server.base_url,
            api_key=SecretStr(os.environ[llama_server.key_env]),
            temperature=0,
            extra_body={"max_tokens": 40},
        )
        text = LangChainSummarizer(chat, keep_facts=False).summarize(
            [
                Message.user("My name is Ada and I fix the build."),
                Message.assistant("Noted."),
            ]
        )
        assert text.strip()


class TestTrimMessagesArguments:
    @pytest.mark.parametrize("bad", ["false", "no", 0, None])
    def test_allow_partial_is_a_bool(self, bad: Any) -> None:
        """``allow_partial="false"`` acted as True (tool results cut)."""
        with pytest.raises(ArgumentTypeError, match=r"^allow_partial: expected True"):
            trim_messages(
                [HumanMessage("hi")],
                max_tokens=40,
                token_counter="gpt-4o",
                allow_partial=bad,
            )


class TestArgumentsThatAreNotAnObject:
    """LangChain's args take an object: other JSON values are wrapped, and
    read back as the call that was written."""

    def test_custom_call_is_written_and_read_back(self) -> None:
        """A Chat custom call becomes args={"input": text}; reading gives it back."""
        from contextwindow.formats import to_openai

        chat: list[dict[str, Any]] = [
            {"role": "user", "content": "patch it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "custom",
                        "custom": {"name": "apply_patch", "input": "*** Begin"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ]
        out = to_langchain(from_openai(chat))
        assert isinstance(out[1], AIMessage)
        assert out[1].tool_calls[0]["args"] == {"input": "*** Begin"}
        back = from_langchain(out)
        assert back[1].tool_calls[0].arguments == '"*** Begin"'
        assert to_openai(back) == chat

    def test_array_arguments(self) -> None:
        """Array arguments are wrapped, and round-trip."""
        conv = [
            Message.user("x"),
            Message.assistant(tool_calls=[ToolCall("c1", "f", "[1,2]")]),
            Message.tool("c1", "r"),
        ]
        out = to_langchain(conv)
        assert isinstance(out[1], AIMessage)
        assert out[1].tool_calls[0]["args"] == {"input": [1, 2]}
        assert from_langchain(out) == conv

    def test_changed_args_are_read_as_they_are(self) -> None:
        """Args a user changed after writing are read as the new object."""
        conv = [Message.assistant(tool_calls=[ToolCall("c1", "f", "[1,2]")])]
        out = to_langchain(conv)
        assert isinstance(out[0], AIMessage)
        out[0].tool_calls[0]["args"] = {"input": [3]}
        assert from_langchain(out)[0].tool_calls[0].arguments == '{"input":[3]}'


class TestUsageOfInterleavedCalls:
    def test_each_reply_calibrates_against_its_own_request(self) -> None:
        """Calls sharing a manager (no checkpointer) learn from their own counts.

        The model bills 1.2x what it was sent. While the first call waits for
        its reply, a second call of another size is prepared and answered (what
        a web server's second thread does): the first reply's usage is then
        matched with the first request's count, not the second's.
        """
        from langchain_core.outputs import ChatGeneration

        counter = TokenCounter(get_tokenizer("claude-sonnet-4-5"), "anthropic")
        nested: list[bool] = []

        class Billing(GenericFakeChatModel):
            def _generate(
                self, messages: list[BaseMessage], *args: Any, **kwargs: Any
            ) -> ChatResult:
                n = counter.messages(from_langchain(messages))
                if not nested:  # another call lands while this one waits
                    nested.append(True)
                    agent.invoke({"messages": [HumanMessage("short " * 30)]})
                billed = round(1.2 * n)
                usage = {
                    "input_tokens": billed,
                    "output_tokens": 1,
                    "total_tokens": billed + 1,
                }
                reply = AIMessage("ok", usage_metadata=usage)
                return ChatResult(generations=[ChatGeneration(message=reply)])

        mw = ContextWindowMiddleware("claude-sonnet-4-5")
        agent = create_agent(Billing(messages=iter([])), middleware=[mw])
        agent.invoke({"messages": [HumanMessage("a much longer request " * 200)]})
        assert len(mw.calibration.ratios) == 2
        assert all(abs(r - 1.2) < 0.01 for r in mw.calibration.ratios)
