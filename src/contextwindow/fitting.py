"""``fit``: one call that makes a conversation fit a model's window, validly.

Contract:

- The output fits ``limit - reserve`` tokens (as ``TokenCounter.messages``
  counts a request: framing, reply priming, tool schemas) and is valid for the
  provider, or ``fit`` raises ``BudgetError`` listing the pinned content that
  alone exceeds the budget. Never a silent overflow.
- The reserve leaves room for the reply: by default the model's output limit,
  at most a quarter of ``limit`` (``reply_reserve``); 0 when no model is given.
- Every argument is checked before any work (``ArgumentError`` naming it); a
  tokenizer may be named (``"gpt-4o"``, ``"o200k_base"``), a strategy written
  as a spec (``"dedupe,drop-oldest"``).
- The input is first repaired by ``ensure_valid`` (reported). When it then
  fits, it comes back unchanged. Otherwise the strategy runs; if its output
  still does not fit, ``DropOldest`` finishes the job (reported as a stage).
- A strategy is any callable, so nothing it returns is trusted: each stage's
  output is checked (``strategies.base.verify``): a wrong type is a
  ``ContextWindowError`` naming the strategy, an invalid output is repaired
  (reported), its tokens are counted again, and changes it did not report
  are accounted for it. Whether the budget is met is decided on that count.
- System messages, pinned messages, messages holding a protected marker and
  the final message are kept as they are. The input is never mutated.
- The report's change indices point into the input.

Example:
    >>> from contextwindow import Message, ToolCall
    >>> conv = [Message.system("You are a coding agent.")]
    >>> for i in range(30):
    ...     conv += [Message.user(f"read part {i}"),
    ...              Message.assistant(tool_calls=[ToolCall(f"c{i}", "read", "{}")]),
    ...              Message.tool(f"c{i}", f"part {i}: " + "data " * 400)]
    >>> fitted = fit(conv, model="gpt-4o", limit=4000)
    >>> fitted.report.limit  # a quarter of the limit is left for the reply
    3000
    >>> fitted.report.tokens_before, fitted.report.tokens_after
    (12793, 2923)
    >>> fitted.report.stages  # doctest: +NORMALIZE_WHITESPACE
    ('CompactLossless', 'Deduplicate', 'StaleReads', 'TruncateToolResults',
     'TruncateToolInputs', 'ClearToolResults')
    >>> fitted.report.totals()
    {'compacted': (29, 29), 'cleared': (25, 9648), 'collapsed': (25, 193)}
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any, cast

from contextwindow._args import (
    as_model,
    as_strategy,
    as_tokenizer,
    check_int,
    check_str,
    check_strs,
)
from contextwindow._lru import LRU
from contextwindow._prefix import identical_prefix
from contextwindow.errors import ArgumentValueError, ContextWindowError
from contextwindow.formats._coerce import (
    NEUTRAL,
    Coerced,
    coerce_messages,
    coerce_tools,
)
from contextwindow.messages import COMPARED, Message, Provider, ToolSpec, check_provider
from contextwindow.models import ModelInfo, get_tokenizer
from contextwindow.strategies.base import Budget, Fitted, Strategy, note_shared
from contextwindow.strategies.collapse import CollapseRuns
from contextwindow.strategies.drop import DropOldest
from contextwindow.strategies.lossless import CompactLossless
from contextwindow.strategies.pipeline import Pipeline, input_snapshot
from contextwindow.strategies.stale import StaleReads
from contextwindow.strategies.summarize import Summarize
from contextwindow.strategies.tool_inputs import TruncateToolInputs
from contextwindow.strategies.tool_results import (
    ClearToolResults,
    Deduplicate,
    TruncateToolResults,
)
from contextwindow.summarizers.names import NamesSummarizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = ["DEFAULT_STRATEGY", "fit", "provider_of", "reply_reserve"]

DEFAULT_STRATEGY: Strategy = CollapseRuns(
    Pipeline(
        CompactLossless(),
        Deduplicate(),
        StaleReads(),
        TruncateToolResults(),
        TruncateToolInputs(),
        ClearToolResults(),
        TruncateToolResults(keep_recent=0),
        Summarize(
            NamesSummarizer(),
            keep_recent=2,
            max_tokens=1000,
            keep_first=1,
            read_originals=True,
        ),
        DropOldest(),
    )
)
"""What ``fit`` does by default, cheapest loss first: tool output and
arguments are compacted without loss, repeated tool outputs (also but for
timestamps and ids) point to their latest copy, file reads a later read or
write supersedes become markers, then old tool results are truncated, then
the long arguments of old calls (a file written, an edit's strings), then
old results are cleared (runs of cleared exchanges collapse to one line once
they would take more than ``MAX_CUT_SHARE`` of the request), then the latest
results are truncated too, then the oldest units but the task are replaced by
one summary naming the paths, identifiers and numbers they held
(``NamesSummarizer``, within 1,000 tokens: chosen on the shared data, see
benchmarks/README), then the oldest units are dropped; each stage runs only
while the conversation does not fit. Whichever stage it stopped at, cut
exchanges (bare calls and their markers) and runs' lines take at most
``MAX_CUT_SHARE`` of the request (``CollapseRuns``). Every marker names the handle of
its original (``context_recall`` returns it) and what the cut held
(``strategies.digest``)."""


def provider_of(model: ModelInfo) -> Provider:
    """The wire shape a model is served in: ``anthropic`` for Claude, else ``openai``.

    Example:
        >>> from contextwindow.models import get_model
        >>> provider_of(get_model("claude-sonnet-4-5"))
        'anthropic'
        >>> provider_of(get_model("gpt-4o"))
        'openai'
    """
    if model.provider == "anthropic" or "claude" in model.name.lower():
        return "anthropic"
    return "openai"


def fit(
    messages: Iterable[Any] | Mapping[str, Any],
    *,
    model: str | ModelInfo | None = None,
    limit: int | None = None,
    reserve: int | None = None,
    strategy: Strategy | str | None = None,
    provider: Provider | None = None,
    tokenizer: Tokenizer | TokenCounter | str | None = None,
    tools: Iterable[ToolSpec | Any] = (),
    protected: Iterable[str] | str = (),
    query: str | None = None,
) -> Fitted:
    """Fit ``messages`` into a model's window (see the module's contract).

    Args:
        messages: The conversation: ``Message`` objects, or the messages
            as the user holds them (OpenAI, Anthropic or Responses dicts, a
            request body, SDK objects; see ``contextwindow.formats``).
        model: The model: its window is the default ``limit``, its tokenizer
            the default, its provider the default ``provider``.
        limit: The window in tokens (default: the model's window).
        reserve: Tokens kept free within ``limit`` for the reply (default:
            ``reply_reserve(model, limit)``: the model's output limit, at most
            a quarter of ``limit``; 0 without a model, or for a model whose
            output limit is not known). The request takes at most
            ``limit - reserve``.
        strategy: How to make room (default: ``DEFAULT_STRATEGY``): a
            strategy, or a spec such as ``"dedupe,truncate,drop-oldest"``
            (``parse_strategy``).
        provider: Whose rules and framing apply (default: the model's, or
            ``openai``).
        tokenizer: A tokenizer, a model or encoding name (``"gpt-4o"``,
            ``"o200k_base"``), or a ``TokenCounter`` to reuse: its cache makes
            re-fitting a grown conversation cost only the new messages.
        tools: Tools sent with the request (they take tokens): ``ToolSpec``
            objects or the tool dicts the SDKs take (default: the tools of a
            request body given as ``messages``).
        protected: Markers: a message whose text holds one is kept (a
            string alone is one marker).
        query: What the next request is about, for strategies that keep
            what is relevant to it (default: the final message's text).

    Returns:
        The fitted conversation and the report of every change;
        ``as_input()`` gives it back in the shape it came in.

    Raises:
        BudgetError: Pinned content alone exceeds the budget.
        InvalidMessageError: A message or a tool is malformed (the error
            names ``messages[i].field`` or ``tools[i].field``).
        ArgumentError: An argument of the wrong type or out of range (a
            negative ``limit`` or ``reserve``, a ``reserve`` above the limit,
            an unknown provider, a tokenizer that is not one, a bad strategy
            spec), naming it.
        ContextWindowError: Neither ``model`` nor ``limit`` given, or a
            counter for another provider.

    Example:
        >>> from contextwindow import Message
        >>> conv = [Message.user("Fix the login bug."),
        ...         Message.assistant("Looking. " * 50), Message.user("Status?")]
        >>> fitted = fit(conv, limit=30, tokenizer=get_tokenizer("gpt-4o"))
        >>> [m.text for m in fitted.messages]  # the task is dropped last
        ['Fix the login bug.', 'Status?']
        >>> [(c.kind, c.what, c.index, c.saved) for c in fitted.report.changes]
        [('dropped', 'assistant message', 1, 105)]
    """
    info = as_model(model, window_given=limit is not None)
    limit = check_int(limit, "limit", low=0, none=True)
    reserve = check_int(reserve, "reserve", low=0, none=True)
    markers = check_strs(protected, "protected")
    query = check_str(query, "query", none=True)
    if limit is None:
        if info is None:
            raise ContextWindowError("fit needs a model or a limit")
        limit = info.context_window
    if reserve is None:
        reserve = reply_reserve(info, limit)
    elif reserve > limit:
        raise ArgumentValueError(
            "reserve", f"{reserve:,}", f"at most the limit ({limit:,})"
        )
    counter = _counter(tokenizer, info, provider)
    read, last, shared = _read(messages, counter)
    # A request body's own tools go with it (``as_input`` writes them back).
    given = not isinstance(tools, list | tuple) or bool(tools)
    specs = _tool_specs(tools, counter) if given else read.shape.tools
    budget = Budget(limit - reserve, counter, specs, markers, query, read.messages)
    if last is not None:
        note_shared(budget, read.messages, last, shared)
    chosen = DEFAULT_STRATEGY if strategy is None else as_strategy(strategy)
    fitting = _fitting(chosen)
    fitted = fitting(read.messages, budget)
    if read.shape.kind == "neutral":
        return fitted
    return replace(fitted, shape=read.shape)


_TOOLS_KEY = ("contextwindow.fit", "tools")
"""The memo entry holding the tools of the last fit and what they read as."""


def _tool_specs(tools: Iterable[Any], counter: TokenCounter) -> tuple[ToolSpec, ...]:
    """``coerce_tools(tools)``, the last fit's read taken when they are equal.

    An agent passes the same tools to every fit, often thousands of tokens of
    schemas: the counter's memo keeps a copy of the last ones given (so one
    changed in place is read again) beside the specs they read as, and tools
    equal to that copy (compared at C speed) take those specs unread.
    """
    if isinstance(tools, Iterator):  # read once: kept as the list it yields
        listed: Any = list(tools)
    elif isinstance(tools, list | tuple):
        listed = tools
    else:  # one spec, or no list at all: read as given (its error names it)
        return coerce_tools(tools)
    kept = counter.memo.get(_TOOLS_KEY)
    if isinstance(kept, tuple):
        given, specs = cast("tuple[Any, tuple[ToolSpec, ...]]", kept)
        with suppress(Exception):  # an object that cannot be compared: read it
            if given == listed:
                return specs
    specs = coerce_tools(listed)
    with suppress(Exception):  # an object that cannot be copied is read each time
        counter.memo.put(_TOOLS_KEY, (copy.deepcopy(listed), specs))
    return specs


_FALLBACK = DropOldest()


def _with_fallback(chosen: Strategy) -> Strategy:
    """``chosen``'s stages and the fallback, as one pipeline.

    A pipeline's stages join the fallback's pipeline, so the input is
    validated once, not once per level of nesting; a ``CollapseRuns`` keeps
    bounding what that pipeline returns.
    """
    bound = chosen if isinstance(chosen, CollapseRuns) else None
    inner = bound.strategy if bound is not None else chosen
    stages = inner.stages if isinstance(inner, Pipeline) else (inner,)
    whole = Pipeline(*stages, _FALLBACK)
    return whole if bound is None else replace(bound, strategy=whole)


_DEFAULT_FITTING = _with_fallback(DEFAULT_STRATEGY)
"""What ``fit`` runs by default: built once, so its stages' memo keys stay."""


def _read(
    messages: object, counter: TokenCounter
) -> tuple[Coerced, Sequence[Message] | None, int]:
    """``coerce_messages(messages)``, the last fit's input taken as read.

    A list (or tuple) that starts with the very objects of the last input a
    pipeline was given with this counter (a re-fit of a grown conversation)
    is read by checking only the rest: those objects are ``Message`` objects.
    Returns the messages read, and the last input with how many leading
    objects the two share (``None, 0`` when not used).
    """
    if type(messages) in (list, tuple):  # not narrowed: `messages` stays `object`
        seq = cast("list[Any] | tuple[Any, ...]", messages)
        last = input_snapshot(counter.memo)
        if last is not None:
            k = identical_prefix(last, seq, COMPARED)
            if k and all(m.__class__ is Message for m in seq[k:]):
                listed = seq if type(seq) is list else list(seq)
                return Coerced(cast("list[Message]", listed), NEUTRAL), last, k
    return coerce_messages(messages, hint=counter.provider), None, 0


def _fitting(chosen: Strategy) -> Strategy:
    """``_with_fallback(chosen)``, built once per strategy.

    The last few built are kept (``FITTINGS_KEPT``), by the strategy: by
    equality, so a strategy made again with the same settings finds its
    pipeline (and its memo). Whatever holds state or a connection of its own
    compares by identity (``LLMSummarizer``): a strategy holding one is never
    taken for one holding another.
    """
    if chosen is DEFAULT_STRATEGY:
        return _DEFAULT_FITTING
    try:
        found = _FITTINGS.get(chosen)
    except TypeError:  # an unhashable strategy: built each time
        found = None
    if found is not None:
        return found
    built = _with_fallback(chosen)
    with suppress(TypeError):
        _FITTINGS.put(chosen, built)
    return built


FITTINGS_KEPT = 16
"""Strategies whose fitting pipeline ``fit`` keeps built (in a cache every
thread shares: an ``LRU``'s operations never fail for another thread's)."""
_FITTINGS: LRU[Strategy, Strategy] = LRU(FITTINGS_KEPT)


def reply_reserve(model: ModelInfo | str | None, limit: int) -> int:
    """The default room left for the reply: ``min(max output, limit // 4)``.

    A reply takes at most the model's output limit, and reserving more than a
    quarter of the window would starve the conversation (output limits near
    the whole window exist: a reply that long is rare, and ``reserve=`` says
    so when it is not). Without a model, or for one whose output limit is not
    known, nothing is reserved: a bare ``limit`` is what the request may take.

    Args:
        model: A ``ModelInfo``, a model name (an unknown one warns, as
            ``get_model`` does, and reserves nothing), or ``None``.
        limit: The request's window in tokens (an int >= 0).

    Raises:
        ArgumentError: ``model`` is not a model, or ``limit`` not an int >= 0.

    Example:
        >>> from contextwindow.models import get_model
        >>> reply_reserve(get_model("gpt-4o"), 128_000)  # its output limit
        16384
        >>> reply_reserve("gpt-4o", 4_000)  # a quarter of the limit
        1000
        >>> reply_reserve(None, 4_000)
        0
    """
    info = as_model(model)
    check_int(limit, "limit", low=0)
    if info is None or not info.max_output_tokens:
        return 0
    return min(info.max_output_tokens, limit // 4)


def _counter(
    tokenizer: Tokenizer | TokenCounter | str | None,
    info: ModelInfo | None,
    provider: Provider | None,
) -> TokenCounter:
    if provider is not None:
        check_provider(provider)
    if isinstance(tokenizer, TokenCounter):
        if provider is not None and provider != tokenizer.provider:
            raise ContextWindowError(
                f"the counter counts for {tokenizer.provider!r}, "
                f"but provider {provider!r} was asked for"
            )
        return tokenizer
    wire = provider or (provider_of(info) if info is not None else "openai")
    chosen = get_tokenizer(info) if tokenizer is None else as_tokenizer(tokenizer)
    return TokenCounter(chosen, wire, model=info)
