"""Every exported callable refuses a bad argument with an error naming it.

For each public function and constructor, a valid call is written out below;
the property replaces one of its arguments at a time by a value of a wrong
type or out of range (``hypothesis.from_type`` of a few types, NaN,
infinity, ``None``, negatives, empty texts, generators) and asserts that the
call either succeeds (the value was one it takes) or raises a
``ContextWindowError`` whose message names the argument. Nothing else may
escape: no ``AttributeError`` or ``TypeError`` from inside the library.

Not called here, each for a reason:

- the error classes and warnings (their arguments are the library's own);
- protocols and type aliases (``Tokenizer``, ``Strategy``, ``Store``,
  ``Summarizer``, ``AsyncSummarizer``, ``Part``, ``Role``, ``Provider``);
- the records the library builds and returns (``Report``, ``Fitted``,
  ``Prepared``, ``Compaction``, ``Event``, ``Inspection``, ``Unit``, the
  stored records, ``Transcript``, ``Fact``, ``Facts``) and the handler
  contexts the manager makes: users read them, they do not build them, and
  checking them would tax the hot paths that do.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextwindow as cw
from contextwindow import (
    AnthropicSummarizer,
    AsyncContextManager,
    BPETokenizer,
    Budget,
    ClearToolResults,
    CompactionPolicy,
    ContextManager,
    ContextWindowError,
    Deduplicate,
    DropOldest,
    ExtractiveSummarizer,
    Image,
    MaxMessages,
    Message,
    ModelInfo,
    Opaque,
    OpenAICompatibleSummarizer,
    Pipeline,
    PostgresStore,
    RedisStore,
    SelectRelevant,
    SharedContext,
    SlidingWindow,
    SQLiteStore,
    Summarize,
    Text,
    Thinking,
    TokenCounter,
    ToolCall,
    ToolResult,
    ToolSpec,
    TruncateToolResults,
)
from contextwindow.testing import FakeTokenizer

# Hypothesis reads mypy_extensions (installed for mypy) while it reports a
# failure; its deprecation warning is not this test's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
)


@dataclass(frozen=True)
class Call:
    """A valid call: the callable, its positional and keyword arguments."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict[str, Any])
    skip: frozenset[str] = frozenset()
    """Arguments not varied, each for a reason given where the call is."""


def conv() -> list[Message]:
    return [
        Message.system("Be terse."),
        Message.user("read a.py"),
        Message.assistant(tool_calls=[ToolCall("c1", "read", '{"path": "a.py"}')]),
        Message.tool("c1", "print('hi')"),
        Message.user("thanks"),
    ]


def counter() -> TokenCounter:
    return TokenCounter(FakeTokenizer())


# What takes any value on purpose: opaque data a message carries, an HTTP
# transport (anything httpx takes).
FREE = frozenset({"meta", "transport"})

# Messages and tool schemas in any shape the user holds are read by the one
# coercion of the edge (issue 12, items 1 and 3), which names the message
# index and field at fault; they are varied by that work's own properties.
SHAPES = frozenset({"messages", "history", "parent", "result", "tools"})

# Readers name the place in the input at fault (``chat.json:3: ...``), not the
# argument: an ``InvalidMessageError`` from them names where it is.
READERS = frozenset({"source", "data", "items"})

CALLS: dict[str, Call] = {
    # -- messages and parts
    "Message": Call(Message, ("user", (Text("hi"),)), {"name": "ada"}),
    "Text": Call(Text, ("hi",)),
    "Image": Call(Image, ("https://e.com/a.png",), {"width": 2, "height": 2}),
    "ToolCall": Call(ToolCall, ("c1", "read", "{}")),
    "ToolResult": Call(ToolResult, ("c1", "out"), {"is_error": False}),
    "Thinking": Call(Thinking, ("hmm",), {"signature": "s"}),
    "Opaque": Call(Opaque, ("anthropic", '{"type":"document"}')),
    "ToolSpec": Call(ToolSpec, ("read", "Read a file", {"type": "object"})),
    "units": Call(cw.units, (conv(),)),
    # -- counting, models
    "BPETokenizer": Call(BPETokenizer, ("o200k_base",)),
    "TokenCounter": Call(TokenCounter, (FakeTokenizer(), "openai"), {"cache_size": 8}),
    "count_messages": Call(cw.count_messages, (conv(), FakeTokenizer())),
    "Calibration": Call(cw.Calibration, (), {"window": 5, "prior": 1.2}),
    "reported_input_tokens": Call(cw.reported_input_tokens, ({"prompt_tokens": 9},)),
    "get_model": Call(cw.get_model, ("gpt-4o",), {"default": True}),
    "get_tokenizer": Call(cw.get_tokenizer, ("gpt-4o",)),
    "register_model": Call(
        cw.register_model,
        ("argument-test-model",),
        {"context_window": 1000, "max_output_tokens": 100, "provider": "custom"},
    ),
    "ModelInfo": Call(ModelInfo, ("m", "custom", 1000, 100, "o200k_base", False)),
    # -- fitting and strategies
    "fit": Call(
        cw.fit,
        (conv(),),
        {"limit": 1000, "reserve": 10, "tokenizer": FakeTokenizer(), "query": "a"},
    ),
    "Budget": Call(Budget, (100, counter()), {"protected": ("x",)}),
    "DropOldest": Call(DropOldest, (1,)),
    "SlidingWindow": Call(SlidingWindow, (3,)),
    "MaxMessages": Call(MaxMessages, (10,)),
    "TruncateToolResults": Call(TruncateToolResults, (2, 100)),
    "ClearToolResults": Call(ClearToolResults, (2,)),
    "Deduplicate": Call(Deduplicate),
    "CompactLossless": Call(cw.CompactLossless),
    "TruncateToolInputs": Call(cw.TruncateToolInputs, (2, 100)),
    "StaleReads": Call(cw.StaleReads, (), {"shell": ("bash",), "marker": "{path}"}),
    "SelectRelevant": Call(SelectRelevant, (2,)),
    "Summarize": Call(Summarize, (None, 2, 100, 0.5)),
    "Pipeline": Call(Pipeline, (SlidingWindow(2), DropOldest())),
    "ensure_valid": Call(cw.ensure_valid, (conv(), "openai"), {"start": 0}),
    "problems": Call(cw.problems, (conv(), "anthropic"), {"start": 0}),
    "inspect_messages": Call(
        cw.inspect_messages, (conv(),), {"tokenizer": FakeTokenizer(), "top": 2}
    ),
    # -- formats
    "to_openai": Call(cw.to_openai, (conv(),)),
    "to_anthropic": Call(cw.to_anthropic, (conv(),)),
    "to_responses": Call(cw.to_responses, (conv(),)),
    "to_provider": Call(cw.to_provider, (conv(), "openai")),
    "from_openai": Call(cw.from_openai, ([{"role": "user", "content": "hi"}],)),
    "from_anthropic": Call(
        cw.from_anthropic, ([{"role": "user", "content": "hi"}],), {"system": "s"}
    ),
    "from_responses": Call(cw.from_responses, ("hi",), {"instructions": "s"}),
    "from_provider": Call(
        cw.from_provider, ([{"role": "user", "content": "hi"}], "openai")
    ),
    # -- the manager
    "ContextManager": Call(
        ContextManager,
        (None,),
        {
            "token_limit": 1000,
            "reserve": 10,
            "tokenizer": FakeTokenizer(),
            "max_messages": 50,
            "thresholds": (50, 90),
            "agent_name": "a",
            "system": "Be terse.",
        },
    ),
    "AsyncContextManager": Call(
        AsyncContextManager, (None,), {"token_limit": 1000, "tokenizer": "heuristic"}
    ),
    "CompactionPolicy": Call(CompactionPolicy, (90, 60, 5, 2)),
    # -- agents
    "SharedContext": Call(SharedContext, (), {"tokenizer": FakeTokenizer()}),
    "handoff": Call(
        cw.handoff, (conv(), "do it"), {"limit": 1000, "tokenizer": FakeTokenizer()}
    ),
    "fold_result": Call(cw.fold_result, (conv(), "done"), {"agent": "coder"}),
    # -- summaries
    "ExtractiveSummarizer": Call(ExtractiveSummarizer, (None, 0.5)),
    "OpenAICompatibleSummarizer": Call(
        OpenAICompatibleSummarizer,
        ("m",),
        {"base_url": "http://127.0.0.1:1/v1", "timeout": 1.0, "retries": 0},
    ),
    "AnthropicSummarizer": Call(
        AnthropicSummarizer,
        ("m",),
        {"base_url": "http://127.0.0.1:1", "timeout": 1.0, "retries": 0},
    ),
    "extract_facts": Call(cw.extract_facts, (conv(),)),
    "check_facts": Call(cw.check_facts, ("a.py", cw.extract_facts(conv()))),
    "is_summary": Call(cw.is_summary, (Message.user("hi"),)),
    "summary_sources": Call(cw.summary_sources, (Message.user("hi"),)),
    "recall": Call(cw.recall, (conv(), ["x"])),
    "context_recall": Call(cw.context_recall, (conv(), "x"), {"max_tokens": 50}),
    "answer_recall": Call(
        cw.answer_recall, (conv(), ToolCall("r1", "context_recall", '{"handle": "x"}'))
    ),
    "recall_tool": Call(cw.recall_tool, ("anthropic",)),
    # -- stores and transcripts
    "MemoryStore": Call(cw.MemoryStore),
    "SQLiteStore": Call(SQLiteStore, (":memory:",), {"timeout": 1.0}),
    "PostgresStore": Call(
        PostgresStore, ("postgresql://127.0.0.1:1/none",), {"timeout": 1.0}
    ),
    "RedisStore": Call(RedisStore, ("redis://127.0.0.1:1/0",), {"timeout": 1.0}),
    "open_store": Call(cw.open_store, ("memory://",)),
    "read_transcript": Call(cw.read_transcript, ("chat.json",)),
    "read_transcripts": Call(cw.read_transcripts, ("chat.json",)),
}

NOT_CALLED = {
    # errors and warnings
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BudgetError",
    "ConflictError",
    "ContentDroppedWarning",
    "ContextWindowError",
    "InvalidMessageError",
    "StoreError",
    "SummarizerError",
    "UnknownModelError",
    "UnknownModelWarning",
    # protocols and aliases
    "AsyncSummarizer",
    "Part",
    "Provider",
    "Role",
    "Store",
    "Strategy",
    "Summarizer",
    "Tokenizer",
    # records the library builds, and the handler contexts
    "AsyncThresholdContext",
    "Compaction",
    "ConversationInfo",
    "Event",
    "Fact",
    "Facts",
    "Fitted",
    "Inspection",
    "Prepared",
    "Report",
    "StoredConversation",
    "StoredMessage",
    "StoredView",
    "ThresholdContext",
    "Transcript",
    "Unit",
    "ViewMessage",
    # not callable
    "__version__",
    # stateless, no arguments
    "HeuristicTokenizer",
}


NO_SERVER = frozenset({"PostgresStore", "RedisStore"})
"""Called with the URL of a port nothing listens on: they get as far as
connecting, after every argument was checked."""


def _generator() -> Iterator[int]:
    yield from (1, 2)


BAD: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, -math.inf, -1, -(2**40), 0, 1.5, -0.5]),
    st.booleans(),
    st.integers(max_value=-1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.from_type(bytes),
    st.from_type(complex),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.builds(object),
    st.builds(_generator),
    st.just(""),
    st.just(" "),
    st.just("hello".count),
)


def parameters(call: Call) -> list[str]:
    sig = inspect.signature(call.fn)
    out: list[str] = []
    for name, p in sig.parameters.items():
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            out.append("*")
        elif p.kind is not inspect.Parameter.VAR_KEYWORD and name not in FREE | SHAPES:
            out.append(name)
    return [n for n in out if n not in call.skip]


def with_bad(
    call: Call, name: str, value: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with ``name`` replaced by ``value``."""
    args = list(call.args)
    kwargs = dict(call.kwargs)
    if name == "*":
        return (*args[:-1], value), kwargs
    params = list(inspect.signature(call.fn).parameters)
    k = params.index(name)
    if k < len(args):
        args[k] = value
    else:
        kwargs[name] = value
    return tuple(args), kwargs


def test_every_export_is_called_or_excused() -> None:
    """Each exported name is in the table of calls, or excused above with a reason."""
    exported = set(cw.__all__)
    assert exported == set(CALLS) | NOT_CALLED, exported ^ (set(CALLS) | NOT_CALLED)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_valid_call_works(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    """Each call of the table is valid as written (so a refusal is the bad value's)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chat.json").write_text('[{"role": "user", "content": "hi"}]')
    call = CALLS[name]
    if name in NO_SERVER:
        with pytest.raises(cw.StoreError):
            call.fn(*call.args, **call.kwargs)
        return
    call.fn(*call.args, **call.kwargs)


@pytest.mark.parametrize("name", sorted(CALLS))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_bad_argument_is_named(
    name: str, data: st.DataObject, tmp_path: Path, monkeypatch: Any
) -> None:
    """A wrong-typed or out-of-range argument raises a ContextWindowError naming it."""
    monkeypatch.chdir(tmp_path)  # a text taken for a path lands here
    (tmp_path / "chat.json").write_text('[{"role": "user", "content": "hi"}]')
    call = CALLS[name]
    params = parameters(call)
    if not params:
        return
    param = data.draw(st.sampled_from(params), label="argument")
    value = data.draw(BAD, label="value")
    args, kwargs = with_bad(call, param, value)
    error: ContextWindowError | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call.fn(*args, **kwargs)
        except ContextWindowError as exc:
            error = exc
        except Exception as exc:
            pytest.fail(f"{name}({param}={value!r}) raised {type(exc).__name__}: {exc}")
    named = "stages" if param == "*" else param
    if param in READERS and isinstance(error, cw.InvalidMessageError):
        return
    if isinstance(error, cw.BudgetError):  # a limit taken, too small to fit
        return
    if name in NO_SERVER and str(error).startswith("cannot connect"):
        return  # the value was taken: the valid call fails so too
    assert error is None or named in str(error), (
        f"{name}({param}={value!r}) raised {type(error).__name__} "
        f"without naming {named!r}: {error}"
    )
