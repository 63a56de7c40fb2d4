"""What is in a context: tokens by role, by tool, the largest messages, usage.

Contract: ``inspect_messages`` is pure (no printing, no I/O); it returns an
``Inspection`` value that the CLI renders as a table or as JSON. Every count is
labelled exact or approximate through ``Inspection.exact``: exact only when
the tokenizer is the model's own (``counted_as``), so a tiktoken encoding
given for a model it is not the encoding of (``o200k_base`` for Claude or
GPT-4) is approximate, and its name says why.

Example:
    >>> from contextwindow.messages import Message
    >>> ins = inspect_messages([Message.user("Hello there!")], model="gpt-4o")
    >>> (ins.tokens, ins.context_window, ins.exact)
    (10, 128000, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any

from contextwindow._args import as_tokenizer, check_int, check_str, shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.formats._coerce import coerce_messages, coerce_tools
from contextwindow.formats._opaque import opaque_text
from contextwindow.messages import Message, Opaque, Provider, ToolSpec, Unit, units
from contextwindow.models import (
    ModelInfo,
    get_model,
    get_tokenizer,
)
from contextwindow.tokens import BPETokenizer, TokenCounter, Tokenizer

__all__ = ["Inspection", "MessageSize", "RoleStats", "ToolStats", "inspect_messages"]

PREVIEW_CHARS = 72


@dataclass(frozen=True, slots=True)
class RoleStats:
    """Messages and tokens of one role."""

    role: str
    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ToolStats:
    """Calls to one tool and what they cost."""

    name: str
    calls: int
    call_tokens: int
    result_tokens: int
    errors: int

    @property
    def tokens(self) -> int:
        """Call and result tokens together."""
        return self.call_tokens + self.result_tokens


@dataclass(frozen=True, slots=True)
class MessageSize:
    """One message's size, for the "largest messages" list."""

    index: int
    role: str
    tokens: int
    preview: str


@dataclass(frozen=True, slots=True)
class Inspection:
    """The anatomy of a conversation against a model's window."""

    model: str
    """The model's canonical name (or what was asked, for an unknown model)."""
    context_window: int
    """The model's context window in tokens."""
    max_output_tokens: int | None
    """The model's output limit, when known."""
    tokenizer: str
    """The tokenizer's name; for one that is not the model's own, with why
    its counts are approximate (``counted_as``)."""
    exact: bool
    """Whether the counts are the model's real counts."""
    provider: Provider
    """Whose message framing was counted."""
    messages: int
    """Number of messages."""
    units: int
    """Number of atomic units (tool exchanges count once)."""
    incomplete_units: int
    """Units a provider would reject (orphan results, unanswered calls)."""
    tokens: int
    """Tokens of the whole request: messages, framing and tool schemas."""
    tool_schema_tokens: int
    """Tokens of the tool schemas sent with the request."""
    by_role: tuple[RoleStats, ...]
    """Per role, in order of first appearance."""
    by_tool: tuple[ToolStats, ...]
    """Per tool name, largest first."""
    largest: tuple[MessageSize, ...]
    """The largest messages, largest first."""
    meta: dict[str, Any] = field(default_factory=dict[str, Any])
    """Extra facts from the transcript (e.g. compactions)."""

    @property
    def usage(self) -> float:
        """Share of the context window used, 0.0 to 1.0 (or more)."""
        return self.tokens / self.context_window if self.context_window else 0.0

    @property
    def remaining(self) -> int:
        """Tokens left in the window (negative when over)."""
        return self.context_window - self.tokens

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with ``usage`` and ``remaining`` included."""
        d = asdict(self)
        d["usage"] = round(self.usage, 6)
        d["remaining"] = self.remaining
        for t, stats in zip(d["by_tool"], self.by_tool, strict=True):
            t["tokens"] = stats.tokens
        return d


def inspect_messages(
    messages: Sequence[Message] | Iterable[Any],
    *,
    model: str | None = None,
    tokenizer: Tokenizer | None = None,
    provider: Provider = "openai",
    tools: Iterable[ToolSpec | Any] = (),
    top: int = 5,
    meta: dict[str, Any] | None = None,
    live_from: int | None = None,
) -> Inspection:
    """Count a conversation by role, tool and message, against a model's window.

    Args:
        messages: The conversation.
        model: The model whose window and tokenizer apply (default ``gpt-4o``).
        tokenizer: Override the model's tokenizer. A tiktoken encoding that
            is not the model's own counts approximately for it, and is
            labelled so (``counted_as``).
        provider: Whose framing to count (``openai``, ``anthropic``,
            ``responses``).
        tools: Tool schemas sent with the request (default: the tools of a
            request body given as ``messages``).
        top: How many of the largest messages to list.
        meta: Extra facts to carry into the result.
        live_from: Index where the live context starts (e.g. after the last
            compaction recorded in a transcript); its message count and tokens
            go into ``meta`` as ``live_messages`` and ``live_tokens``.

    Returns:
        The inspection.
    """
    asked = check_str(model, "model", empty=False, none=True) or "gpt-4o"
    check_int(top, "top", low=0)
    check_int(live_from, "live_from", low=0, none=True)
    if meta is not None and not isinstance(meta, dict):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("meta", shown(meta), "a dict or None")
    info: ModelInfo = get_model(asked)  # an unknown one warns, keeping its name
    tok = get_tokenizer(info) if tokenizer is None else as_tokenizer(tokenizer)
    counter = TokenCounter(tok, provider, model=info)
    read = coerce_messages(messages, hint=provider)
    messages = read.messages
    if isinstance(tools, list | tuple) and not tools:  # none given: a body's own
        tools = read.shape.tools
    tools = coerce_tools(tools)
    # Running totals first: the counter's cache grows to hold the conversation.
    run = counter.running(messages)
    sizes = [b - a for a, b in pairwise(run)]
    schema_tokens = counter.tools(tools)
    # The counter's total, as ``count_messages`` gives it: with tools, OpenAI's
    # system-message adjustment too, so the schemas' share is not their sum.
    total = counter.messages(messages, tools=tools)
    extra = dict(meta or {})
    if live_from is not None:
        live = messages[live_from:]
        extra["live_messages"] = len(live)
        extra["live_tokens"] = counter.messages(live, tools=tools)

    roles: dict[str, list[int]] = {}
    for m, n in zip(messages, sizes, strict=True):
        acc = roles.setdefault(m.role, [0, 0])
        acc[0] += 1
        acc[1] += n

    groups = units(messages)
    tools_acc = _tool_stats(messages, sizes, groups, tok)
    order = sorted(range(len(messages)), key=lambda i: (-sizes[i], i))[: max(top, 0)]
    largest = tuple(
        MessageSize(i, messages[i].role, sizes[i], _preview(messages[i])) for i in order
    )
    label, exact = counted_as(tok, info)
    return Inspection(
        model=info.name,
        context_window=info.context_window,
        max_output_tokens=info.max_output_tokens,
        tokenizer=label,
        exact=exact,
        provider=provider,
        messages=len(messages),
        units=len(groups),
        incomplete_units=sum(1 for u in groups if not u.complete),
        tokens=total,
        tool_schema_tokens=schema_tokens,
        by_role=tuple(RoleStats(r, a[0], a[1]) for r, a in roles.items()),
        by_tool=tools_acc,
        largest=largest,
        meta=extra,
    )


def counted_as(tokenizer: Tokenizer, model: ModelInfo) -> tuple[str, bool]:
    """How counts by ``tokenizer`` are labelled for ``model``: a name, and exact.

    A tiktoken encoding (``BPETokenizer``) is exact for the models the
    registry counts exactly with it, the OpenAI models of that encoding; for
    any other model it is an approximation, and the name says so. Any other
    tokenizer (a Hugging Face ``tokenizer.json``, one of the user's) says
    itself whether it is exact: which model's it is cannot be told from it.
    Shared with the CLI (``fit``), so every report labels alike.

    Example:
        >>> from contextwindow.models import get_model
        >>> counted_as(BPETokenizer("o200k_base"), get_model("gpt-4o"))
        ('o200k_base', True)
        >>> counted_as(BPETokenizer("o200k_base"), get_model("claude-sonnet-4-5"))
        ("o200k_base (not claude-sonnet-4-5's tokenizer)", False)
        >>> counted_as(BPETokenizer("o200k_base"), get_model("gpt-4"))
        ("o200k_base (not gpt-4's tokenizer: cl100k_base)", False)
    """
    name = tokenizer.name
    if not tokenizer.exact:
        return name, False
    # The encoding ``get_tokenizer`` counts an exact model with.
    own = (model.encoding or "o200k_base") if model.exact else None
    if not isinstance(tokenizer, BPETokenizer) or name == own:
        return name, True
    real = f": {own}" if own else ""
    return f"{name} (not {model.name}'s tokenizer{real})", False


def _tool_stats(
    messages: Sequence[Message],
    sizes: Sequence[int],
    groups: Sequence[Unit],
    tok: Tokenizer,
) -> tuple[ToolStats, ...]:
    """Attribute call and result tokens to tool names, pairing within units."""
    acc: dict[str, list[int]] = {}

    def bucket(name: str) -> list[int]:
        return acc.setdefault(name, [0, 0, 0, 0])

    for u in groups:
        if u.kind != "tool_exchange":
            continue
        head = messages[u.start]
        calls = head.tool_calls
        # The assistant message's tokens go to its calls, by argument size.
        weights = [max(1, tok.count(c.name) + tok.count(c.arguments)) for c in calls]
        for c, share in zip(calls, _split(sizes[u.start], weights), strict=True):
            b = bucket(c.name)
            b[0] += 1
            b[1] += share
        names = {c.id: c.name for c in calls}
        for j in range(u.start + 1, u.stop):
            results = messages[j].tool_results
            weights = [max(1, tok.count(r.text)) for r in results]
            for r, share in zip(results, _split(sizes[j], weights), strict=True):
                b = bucket(r.name or names.get(r.call_id, "?"))
                b[2] += share
                b[3] += r.is_error
    stats = [ToolStats(n, a[0], a[1], a[2], a[3]) for n, a in acc.items()]
    stats.sort(key=lambda s: (-s.tokens, s.name))
    return tuple(stats)


def _split(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights``; the parts sum to ``total``."""
    whole = sum(weights)
    parts = [total * w // whole for w in weights]
    if parts:
        parts[-1] += total - sum(parts)
    return parts


def _preview(msg: Message) -> str:
    # A document-only turn: its text or label (``formats._opaque``).
    text = msg.text or " ".join(
        opaque_text(p) for p in msg.parts if isinstance(p, Opaque)
    )
    if not text and msg.tool_calls:
        c = msg.tool_calls[0]
        text = f"{c.name}({c.arguments})"
    text = " ".join(text.split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return text
