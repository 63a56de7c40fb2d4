r"""LangChain 1.x and LangGraph: fit what each model call sees, in the framework.

Contract:

- ``ContextWindowMiddleware`` is an ``AgentMiddleware`` for
  ``langchain.agents.create_agent``: before each model call it fits the
  request (system message, messages and tool schemas counted) into the
  model's window with any strategy, and hands the model the fitted messages
  only. The graph state keeps the full history. Each LangGraph thread
  (``configurable.thread_id``) has its own ``ContextManager``: new messages are
  pushed, so compaction is incremental and the request's prefix stays stable
  between compactions. The usage the model reports (``usage_metadata``)
  calibrates the count (``ContextManager.observe_usage``).
- ``trim_messages`` takes the arguments of LangChain's ``trim_messages`` and
  never returns an invalid history: no orphan tool result, no unanswered tool
  call, the system message and the last message kept (or ``BudgetError``).
- ``token_counter(model)`` is a LangChain token counter (a callable over a
  list of messages) with this project's counts, for LangChain's own
  ``trim_messages`` and ``SummarizationMiddleware``.
- ``LangChainSummarizer`` is a ``Summarizer`` over any LangChain chat model.
- ``from_langchain`` / ``to_langchain`` convert messages losslessly both ways
  (``contextwindow.integrations._langchain_messages``).

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> history = [HumanMessage("read the log")]
    >>> for i in range(20):
    ...     history += [AIMessage("", tool_calls=[{"name": "read", "args": {},
    ...                                            "id": f"c{i}"}]),
    ...                 ToolMessage("log line\n" * 50, tool_call_id=f"c{i}")]
    >>> count = token_counter("gpt-4o")  # LangChain's own trim_messages, then ours
    >>> from langchain_core.messages import trim_messages as langchain_trim
    >>> cut = langchain_trim(history, max_tokens=487, token_counter=count)
    >>> [m.type for m in cut][:2]  # an orphan tool result first: a 400
    ['tool', 'ai']
    >>> out = trim_messages(history, max_tokens=487, token_counter=count)
    >>> [m.type for m in out][:3], count(out) <= 487
    (['human', 'ai', 'tool'], True)
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        ModelRequest,
        ModelResponse,
    )
    from langchain_core.language_models import BaseLanguageModel
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
    )
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover -- the extra is installed in tests
    raise ImportError(
        "contextwindow.integrations.langchain needs LangChain 1.x: "
        "pip install 'contextwindow[langchain]'"
    ) from exc

from contextwindow._args import (
    as_model,
    as_strategy,
    as_tokenizer,
    check_bool,
    shown,
)
from contextwindow._lru import LRU
from contextwindow.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    BudgetError,
    SummarizerError,
)
from contextwindow.fitting import fit
from contextwindow.integrations._langchain_messages import (
    from_langchain,
    to_langchain,
)
from contextwindow.manager import ContextManager
from contextwindow.messages import Message, Provider, ToolSpec
from contextwindow.models import ModelInfo, get_tokenizer
from contextwindow.strategies.base import Budget, Strategy
from contextwindow.strategies.drop import DropOldest, MaxMessages
from contextwindow.summarizers._llm import (
    DEFAULT_PROMPT,
    check_prompt,
    conclude,
    prepare,
)
from contextwindow.summarizers.base import Summarizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.calibration import Calibration
from contextwindow.tokens.counting import TokenCounter
from contextwindow.tokens.heuristic import HeuristicTokenizer

__all__ = [
    "ContextWindowMiddleware",
    "LangChainSummarizer",
    "from_langchain",
    "to_langchain",
    "token_counter",
    "trim_messages",
]

MAX_THREADS = 1024
"""Threads whose managers a middleware keeps (the least recently used go)."""


class ContextWindowMiddleware(AgentMiddleware):
    """Fit every model request of a ``create_agent`` agent into the window.

    Args:
        model: The model whose window, tokenizer and provider apply (a name
            or a ``ModelInfo``).
        token_limit: The window in tokens (default: the model's).
        strategy: How to make room (default: the one ``fit`` uses), or a spec.
        reserve: Tokens kept free for the reply (default: as ``fit``).
        provider: Whose rules apply (default: the model's).
        tokenizer: Counts text (default: the model's).
        summarizer: What a summarising strategy or handler summarises with
            (e.g. ``LangChainSummarizer(chat_model)``).
        calibration: Shared by every thread's manager; the model's reported
            usage feeds it (default: a new one).

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import (
        ...     GenericFakeChatModel)
        >>> from langchain_core.messages import AIMessage
        >>> fake = GenericFakeChatModel(messages=iter([AIMessage("done")]))
        >>> agent = create_agent(fake, middleware=[
        ...     ContextWindowMiddleware("gpt-4o", token_limit=2_000)])
        >>> agent.invoke({"messages": [("user", "hi")]})["messages"][-1].content
        'done'
    """

    def __init__(
        self,
        model: str | ModelInfo | None = None,
        *,
        token_limit: int | None = None,
        strategy: Strategy | str | None = "default",
        reserve: int | None = None,
        provider: Provider | None = None,
        tokenizer: Tokenizer | str | None = None,
        summarizer: Summarizer | None = None,
        calibration: Calibration | None = None,
    ) -> None:
        super().__init__()
        self._options: dict[str, Any] = {
            "token_limit": token_limit,
            "strategy": strategy,
            "reserve": reserve,
            "provider": provider,
            "tokenizer": tokenizer,
            "summarizer": summarizer,
        }
        self._model = as_model(model)
        if tokenizer is None and self._model is not None:
            # Loaded once, for every thread's manager.
            self._options["tokenizer"] = get_tokenizer(self._model)
        self.calibration = calibration if calibration is not None else Calibration()
        """Learnt from every thread's reported usage."""
        # Fails now, naming the argument, not at the first model call.
        self._new_manager(())
        self._threads: LRU[Any, _Thread] = LRU(MAX_THREADS)
        self._lock = threading.Lock()

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse:
        """Fit the request, call the model, learn from the usage it reports."""
        thread, fitted, counted = self._fit(request)
        response = handler(fitted)
        thread.observe(response, counted)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """``wrap_model_call``, fitting on a worker thread (a summarizer may wait)."""
        thread, fitted, counted = await asyncio.to_thread(self._fit, request)
        response = await handler(fitted)
        thread.observe(response, counted)
        return response

    def manager(self, thread_id: Any = None) -> ContextManager | None:
        """The manager of a thread (``None``: calls made outside any thread)."""
        with self._lock:
            found = self._threads.get(thread_id)
        return found.manager if found is not None else None

    # -- internals --------------------------------------------------------

    def _new_manager(self, tools: Sequence[ToolSpec | Any]) -> ContextManager:
        return ContextManager(
            self._model,
            tools=tools,
            calibration=getattr(self, "calibration", None),
            **self._options,
        )

    def _fit(self, request: ModelRequest) -> tuple[_Thread, ModelRequest, int]:
        """The thread's manager, the fitted request, and its tokens counted here."""
        key = _thread_id()
        tools = _tool_dicts(request.tools or ())
        with self._lock:
            thread = self._threads.get(key)
            if thread is None or thread.tools != tools:
                thread = _Thread(self._new_manager(tools), tools)
                self._threads.put(key, thread)
        system = request.system_message
        with thread.lock:
            thread.sync(system, request.messages)
            prepared = thread.manager.prepare()
        out = list(prepared.conversation)
        if system is not None and out and out[0].role == "system":
            out = out[1:]
        # LangChain types the list as its union of message classes.
        messages: list[Any] = to_langchain(out)
        return thread, request.override(messages=messages), prepared.tokens


@dataclass
class _Thread:
    """One conversation's manager, and what of it was pushed."""

    manager: ContextManager
    tools: list[dict[str, Any]]

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[BaseMessage] = []

    def sync(
        self, system: SystemMessage | None, messages: Sequence[BaseMessage]
    ) -> None:
        """Push what is new; restore the whole conversation when it changed.

        What was pushed before is compared as messages, not by id: a message
        the graph's state replaced under the same id (a redaction, another
        middleware's edit) is a change, and the model sees the new one.
        """
        lc = ([system] if system is not None else []) + list(messages)
        known = len(self.seen)
        if len(lc) >= known and all(
            a is b or a == b for a, b in zip(lc, self.seen, strict=False)
        ):
            if len(lc) > known:
                self.manager.push_many(from_langchain(lc[known:]))
        else:
            self.manager.set_messages(from_langchain(lc))
        self.seen = lc

    def observe(self, response: Any, counted: int) -> None:
        """Feed the usage the model reported to the manager's calibration.

        ``counted``: this request's tokens as prepared; not the manager's
        last, which another call of the same thread (calls without a
        checkpointer share one) may have prepared since.
        """
        found = response.result if isinstance(response, ModelResponse) else [response]
        for m in found:
            usage = getattr(m, "usage_metadata", None)
            if isinstance(m, AIMessage) and usage and usage.get("input_tokens"):
                self.manager.observe_usage(usage, counted=counted)


def _thread_id() -> Any:
    try:
        from langgraph.config import get_config

        config = get_config()
    except (ImportError, RuntimeError):
        return None
    return config.get("configurable", {}).get("thread_id")


def _tool_dicts(tools: Iterable[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in tools:
        try:
            out.append(convert_to_openai_tool(t))
        except (ValueError, TypeError, KeyError):
            # A provider's built-in tool ({"type": "web_search"}): its schema
            # is the provider's, and costs what its name does.
            out.append({"type": "function", "function": {"name": str(t)}})
    return out


# -- token counts --------------------------------------------------------------


def token_counter(
    model: str | ModelInfo | None = None,
    *,
    provider: Provider | None = None,
    tokenizer: Tokenizer | str | None = None,
) -> Callable[[Sequence[BaseMessage]], int]:
    """A LangChain token counter: a list of messages -> its tokens, counted here.

    Pass it as ``token_counter=`` to LangChain's ``trim_messages`` or
    ``SummarizationMiddleware``. Counts are the request's (provider framing,
    reply priming), cached per message.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> count = token_counter("gpt-4o")
        >>> count([HumanMessage("hello there")])
        9
    """
    info = as_model(model)
    chosen = get_tokenizer(info) if tokenizer is None else as_tokenizer(tokenizer)
    wire: Provider = provider or (
        "anthropic" if info is not None and "claude" in info.name.lower() else "openai"
    )
    counter = TokenCounter(chosen, wire, model=info)

    def count(messages: Sequence[BaseMessage]) -> int:
        return counter.messages(from_langchain(messages))

    return count


class _MessagesTokenizer:
    """A LangChain counter over message lists, seen as a ``Tokenizer``.

    The counter is the user's (``given``: what was passed as
    ``token_counter``), and this class the library's, whose counts a
    ``TokenCounter`` takes as they come: each count is checked here
    (``_lc_count``), so that a float or a negative one is named at once, not
    summed into the request's tokens.
    """

    exact = False

    def __init__(self, count: Callable[[list[BaseMessage]], int], given: Any) -> None:
        self._count = count
        self._given = given
        self._base = _lc_count(count([HumanMessage("")]), given, "an empty message")

    @property
    def name(self) -> str:
        return "langchain counter"

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._count([HumanMessage(text)])
        # Its length, not the text, is said: the text may hold a secret.
        what = f"a message of {len(text)} characters"
        return max(0, _lc_count(n, self._given, what) - self._base)


def _lc_count(n: object, counter: Any, what: str) -> int:
    """``n`` if it is a count (an ``int >= 0``), else an error naming the counter."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        negative = isinstance(n, int) and not isinstance(n, bool)
        raise (ArgumentValueError if negative else ArgumentTypeError)(
            "token_counter",
            shown(counter),
            "a token counter that returns an int >= 0",
            f"its count of {what} returned {shown(n)}",
        )
    return n


def _lc_counter(counter: Any) -> Callable[[list[BaseMessage]], int] | None:
    """LangChain's own counter forms, as a counter of message lists."""
    if counter == "approximate":
        from langchain_core.messages.utils import count_tokens_approximately

        return count_tokens_approximately
    if isinstance(counter, BaseLanguageModel):
        return counter.get_num_tokens_from_messages
    if callable(counter) and not isinstance(counter, (TokenCounter, Tokenizer)):
        return counter  # type: ignore[no-any-return]  # LangChain's counter callable
    return None


# -- trim_messages ---------------------------------------------------------------

_REFITS = 8


def trim_messages(
    messages: Iterable[Any] | None = None,
    *,
    max_tokens: int,
    token_counter: Any = "approximate",
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: Any = None,
    start_on: Any = None,
    include_system: bool = True,
    text_splitter: Any = None,
    provider: Provider = "openai",
    compaction: Strategy | str | None = None,
) -> Any:
    """LangChain's ``trim_messages``, returning only valid histories.

    The arguments are LangChain's; the output keeps the system message and
    the last message, never splits an assistant message from the tool results
    answering it, and fits ``max_tokens`` by ``token_counter``. Unlike
    LangChain's it keeps the task too (the first user turn, while it fits, as
    ``DropOldest`` does), so what is kept need not be one tail. With
    ``token_counter=len``, LangChain's idiom for a count of messages, it keeps
    at most ``max_tokens`` messages (``MaxMessages``: units whole, the oldest
    first to go).
    ``start_on``, ``end_on``, ``include_system`` and ``text_splitter`` are
    taken and not needed: the provider's rules decide where a valid history
    starts, and the system message is always kept. Without ``messages`` a
    LangChain ``Runnable`` is returned, as LangChain's does.

    Args:
        messages: LangChain messages (or what ``convert_to_messages`` takes).
        max_tokens: The most tokens the output may take.
        token_counter: LangChain's: a callable over a message list,
            ``"approximate"`` or a chat model; or a tokenizer, a model or an
            encoding name (``"gpt-4o"``) for this project's exact counts.
        strategy: ``"last"`` (keep the most recent); ``"first"`` keeps no
            valid agent history and is refused.
        allow_partial: Whether tool results may be truncated rather than
            whole exchanges dropped (``compaction`` overrides it).
        end_on: Taken and not needed.
        start_on: Taken and not needed.
        include_system: Taken; the system message is always kept.
        text_splitter: Taken and not needed.
        provider: Whose validity rules the output keeps (default ``openai``).
        compaction: Any strategy (default ``DropOldest()``; with
            ``allow_partial``, ``fit``'s default).

    Raises:
        BudgetError: The system message and the last message alone exceed
            ``max_tokens``.
        ArgumentValueError: ``strategy`` is not ``"last"``.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> out = trim_messages([SystemMessage("Be brief."), HumanMessage("a " * 200),
        ...                      HumanMessage("and b?")], max_tokens=40,
        ...                     token_counter="gpt-4o")
        >>> [m.content for m in out]
        ['Be brief.', 'and b?']
    """
    del end_on, start_on, include_system, text_splitter
    check_bool(allow_partial, "allow_partial")  # "false" would act as True
    if strategy != "last":
        raise ArgumentValueError(
            "strategy", shown(strategy), "'last'", "'first' keeps no valid history"
        )
    if messages is None:
        from langchain_core.runnables import RunnableLambda

        def run(ms: Iterable[Any]) -> list[BaseMessage]:
            out: list[BaseMessage] = trim_messages(
                ms,
                max_tokens=max_tokens,
                token_counter=token_counter,
                allow_partial=allow_partial,
                provider=provider,
                compaction=compaction,
            )
            return out

        return RunnableLambda(run)
    conv = from_langchain(messages)
    if token_counter is len:
        return to_langchain(_at_most(conv, max_tokens, provider))
    chosen: Strategy | None
    if compaction is not None:
        chosen = as_strategy(compaction)
    else:
        chosen = None if allow_partial else DropOldest()
    theirs = _lc_counter(token_counter)
    if theirs is None:
        if isinstance(token_counter, TokenCounter):
            counter = token_counter
        else:
            counter = TokenCounter(as_tokenizer(token_counter), provider)
        return to_langchain(_fit(conv, max_tokens, chosen, counter, provider))
    counter = TokenCounter(_MessagesTokenizer(theirs, token_counter), provider)
    limit = max_tokens
    got = 0  # set by the first pass (_REFITS > 0)
    for _ in range(_REFITS):
        fitted = _fit(conv, limit, chosen, counter, provider)
        out = to_langchain(fitted)
        got = _lc_count(theirs(out), token_counter, f"the {len(out)} messages kept")
        if got <= max_tokens:
            return out
        # Their count is not ours: shrink by the ratio between the two.
        limit = min(limit - 1, counter.messages(fitted) * max_tokens // got)
        if limit < 0:
            break
    raise BudgetError(max_tokens, got)


def _at_most(conv: list[Message], n: int, provider: Provider) -> Sequence[Message]:
    """At most ``n`` messages of ``conv``: its system ones, then the newest units."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:  # pyright: ignore[reportUnnecessaryIsInstance]  # max_tokens: callers may pass anything
        raise ArgumentTypeError("max_tokens", shown(n), "an int >= 0")
    systems = sum(1 for m in conv if m.role == "system")
    budget = Budget(sys.maxsize, TokenCounter(HeuristicTokenizer(), provider))
    out = MaxMessages(max(n - systems, 0))(conv, budget).messages
    if len(out) > n:  # the system messages and the last unit alone are more
        raise BudgetError(n, len(out), ("messages counted by len",))
    return out


def _fit(
    conv: list[Message],
    limit: int,
    strategy: Strategy | None,
    counter: TokenCounter,
    provider: Provider,
) -> Sequence[Message]:
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:  # pyright: ignore[reportUnnecessaryIsInstance]  # max_tokens: callers may pass anything
        raise ArgumentTypeError("max_tokens", shown(limit), "an int >= 0")
    return fit(
        conv,
        limit=limit,
        reserve=0,
        strategy=strategy,
        tokenizer=counter,
        provider=provider,
    ).messages


# -- summarizer ----------------------------------------------------------------


@dataclass(frozen=True)
class LangChainSummarizer:
    """A ``Summarizer`` that asks any LangChain chat model for the summary.

    The prompt and the fact check are those of the project's LLM summarizers
    (facts the model dropped are re-attached). A failing model call is a
    ``SummarizerError``, so a strategy keeps the history as it was.

    Args:
        model: A LangChain chat model (``ChatOpenAI(...)``,
            ``init_chat_model(...)``, a fake one in tests).
        prompt: The system prompt (``{words}`` is filled in).
        keep_facts: Re-attach the facts the model dropped.
        tokenizer: Counts the summary (default: the heuristic).

    Example:
        >>> from langchain_core.language_models.fake_chat_models import (
        ...     GenericFakeChatModel)
        >>> from langchain_core.messages import AIMessage
        >>> from contextwindow import Message
        >>> fake = GenericFakeChatModel(messages=iter([AIMessage("They met.")]))
        >>> LangChainSummarizer(fake).summarize([Message.user("Hi, I'm Ada.")])
        'They met.'
    """

    model: Any
    prompt: str = DEFAULT_PROMPT
    keep_facts: bool = True
    tokenizer: Tokenizer | None = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.model, "invoke", None)):
            raise ArgumentTypeError(
                "model", shown(self.model), "a LangChain chat model"
            )
        check_prompt(self.prompt)

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Return the model's summary of ``messages``, folding in ``previous``."""
        request = prepare(messages, previous, max_tokens, self.prompt)
        try:
            reply = self.model.invoke(_ask(request))
        except Exception as exc:
            failure = type(exc).__name__
        else:
            return self._done(request, reply)
        # Raised here: the provider's exception (its message may quote the
        # key) is neither chained nor kept as the context.
        raise SummarizerError(f"the LangChain model failed: {failure}")

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """``summarize``, awaiting the model."""
        request = prepare(messages, previous, max_tokens, self.prompt)
        try:
            reply = await self.model.ainvoke(_ask(request))
        except Exception as exc:
            failure = type(exc).__name__
        else:
            return self._done(request, reply)
        # Raised here: the provider's exception (its message may quote the
        # key) is neither chained nor kept as the context.
        raise SummarizerError(f"the LangChain model failed: {failure}")

    def _done(self, request: Any, reply: Any) -> str:
        text = reply.text if isinstance(reply, BaseMessage) else None
        if not isinstance(text, str) or not text.strip():
            raise SummarizerError("the LangChain model returned no text")
        return conclude(request, text, self.keep_facts, self.tokenizer).text


def _ask(request: Any) -> list[BaseMessage]:
    return [
        SystemMessage(request.system),
        HumanMessage(request.user),
    ]
