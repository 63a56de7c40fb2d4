"""``fit``: one call that makes a conversation fit a model's window, validly.

Contract:

- The output fits ``limit - reserve`` tokens (as ``TokenCounter.messages``
  counts a request: framing, reply priming, tool schemas) and is valid for the
  provider, or ``fit`` raises ``BudgetError`` listing the pinned content that
  alone exceeds the budget. Never a silent overflow.
- The input is first repaired by ``ensure_valid`` (reported). When it then
  fits, it comes back unchanged. Otherwise the strategy runs; if its output
  still does not fit, ``DropOldest`` finishes the job (reported as a stage).
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
    >>> fitted.report.tokens_before, fitted.report.tokens_after
    (12793, 3830)
    >>> fitted.report.stages  # doctest: +NORMALIZE_WHITESPACE
    ('CompactLossless', 'Deduplicate', 'StaleReads', 'TruncateToolResults',
     'ClearToolResults')
    >>> fitted.report.totals()
    {'compacted': (29, 29), 'cleared': (23, 8875), 'collapsed': (11, 59)}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message, Provider, ToolSpec, check_provider
from contextwindow.models import ModelInfo, get_model, get_tokenizer
from contextwindow.strategies.base import Budget, Fitted, Strategy
from contextwindow.strategies.drop import DropOldest
from contextwindow.strategies.lossless import CompactLossless
from contextwindow.strategies.pipeline import Pipeline
from contextwindow.strategies.stale import StaleReads
from contextwindow.strategies.tool_results import (
    ClearToolResults,
    Deduplicate,
    TruncateToolResults,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = ["DEFAULT_STRATEGY", "fit", "provider_of"]

DEFAULT_STRATEGY: Strategy = Pipeline(
    CompactLossless(),
    Deduplicate(),
    StaleReads(),
    TruncateToolResults(),
    ClearToolResults(),
    DropOldest(),
)
"""What ``fit`` does by default, cheapest loss first: tool output and
arguments are compacted without loss, repeated tool outputs (also but for
timestamps and ids) point to their latest copy, file reads a later read or
write supersedes become markers, then old tool results are truncated, then
cleared (runs of cleared exchanges collapse to one line once they would take
more than ``MAX_CUT_SHARE`` of the request), then the oldest units are
dropped; each stage runs only while the conversation does not fit. Every
marker names the handle of its original (``contextwindow.recall``)."""


def provider_of(model: ModelInfo) -> Provider:
    """The wire shape a model is served in: ``anthropic`` for Claude, else ``openai``.

    Example:
        >>> provider_of(get_model("claude-sonnet-4-5"))
        'anthropic'
        >>> provider_of(get_model("gpt-4o"))
        'openai'
    """
    if model.provider == "anthropic" or "claude" in model.name.lower():
        return "anthropic"
    return "openai"


def fit(
    messages: Sequence[Message],
    *,
    model: str | ModelInfo | None = None,
    limit: int | None = None,
    reserve: int = 0,
    strategy: Strategy | None = None,
    provider: Provider | None = None,
    tokenizer: Tokenizer | TokenCounter | None = None,
    tools: Iterable[ToolSpec] = (),
    protected: Iterable[str] = (),
    query: str | None = None,
) -> Fitted:
    """Fit ``messages`` into a model's window (see the module's contract).

    Args:
        messages: The conversation, in the neutral form.
        model: The model: its window is the default ``limit``, its tokenizer
            the default, its provider the default ``provider``.
        limit: Most tokens the request may take (default: the model's window).
        reserve: Tokens kept free within ``limit`` (for the reply, say).
        strategy: How to make room (default: ``DEFAULT_STRATEGY``).
        provider: Whose rules and framing apply (default: the model's, or
            ``openai``).
        tokenizer: A tokenizer, or a ``TokenCounter`` to reuse: its cache makes
            re-fitting a grown conversation cost only the new messages.
        tools: Tool schemas sent with the request (they take tokens).
        protected: Markers: a message whose text holds one is kept (a
            string alone is one marker).
        query: What the next request is about, for strategies that keep
            what is relevant to it (default: the final message's text).

    Returns:
        The fitted conversation and the report of every change.

    Raises:
        BudgetError: Pinned content alone exceeds the budget.
        ContextWindowError: Neither ``model`` nor ``limit`` given, a negative
            ``limit`` or ``reserve``, a ``reserve`` above the limit, an unknown
            provider, or a counter for another provider.

    Example:
        >>> conv = [Message.user("Fix the login bug."),
        ...         Message.assistant("Looking. " * 50), Message.user("Status?")]
        >>> fitted = fit(conv, limit=30, tokenizer=get_tokenizer("gpt-4o"))
        >>> [m.text for m in fitted.messages]  # the task is dropped last
        ['Fix the login bug.', 'Status?']
        >>> [(c.kind, c.what, c.index, c.saved) for c in fitted.report.changes]
        [('dropped', 'assistant message', 1, 105)]
    """
    info = get_model(model) if isinstance(model, str) else model
    if limit is None:
        if info is None:
            raise ContextWindowError("fit needs a model or a limit")
        limit = info.context_window
    if limit < 0 or reserve < 0:
        raise ContextWindowError(
            f"limit and reserve must be >= 0, got {limit:,} and {reserve:,}"
        )
    if reserve > limit:
        raise ContextWindowError(
            f"reserve ({reserve:,}) is larger than the limit ({limit:,})"
        )
    counter = _counter(tokenizer, info, provider)
    budget = Budget(limit - reserve, counter, tuple(tools), _markers(protected), query)
    chosen = DEFAULT_STRATEGY if strategy is None else strategy
    # A pipeline's stages join the fallback's pipeline, so the input is
    # validated once, not once per level of nesting.
    stages = chosen.stages if isinstance(chosen, Pipeline) else (chosen,)
    return Pipeline(*stages, _FALLBACK)(messages, budget)


_FALLBACK = DropOldest()


def _markers(protected: Iterable[str]) -> tuple[str, ...]:
    # A lone string is one marker, not a marker per character.
    return (protected,) if isinstance(protected, str) else tuple(protected)


def _counter(
    tokenizer: Tokenizer | TokenCounter | None,
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
    return TokenCounter(tokenizer or get_tokenizer(info), wire)
