"""What a report shows, computed from a conversation: pure data, no HTML.

Contract: ``gather`` only counts and compares; it prints nothing and reads
nothing. Every figure is in tokens as the given counter counts a request
(framing included), so that the report agrees with ``inspect`` and ``fit``.
The alignment of an original conversation with what is sent (a fit's output,
or a stored view) lists every original message once, in order, and every
message that is sent once, each paired with its original when it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from contextwindow.formats._opaque import opaque_text
from contextwindow.inspection import Inspection
from contextwindow.messages import (
    Image,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from contextwindow.store.base import StoredView
from contextwindow.strategies.base import Change, Fitted
from contextwindow.tokens import TokenCounter

__all__ = ["Compaction", "Page", "Row", "Side", "gather", "message_text"]

THRESHOLDS = (60, 80, 90)
"""The usage thresholds drawn on the usage chart (the manager's defaults)."""
TEXT_CHARS = 20_000
"""Most characters of one message's text the page holds (the rest is counted)."""
_USAGE_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction the transcript records: where, why, and the tokens before."""

    index: int
    """The first message after it."""
    trigger: str
    """``auto`` or ``manual`` (or what the transcript says)."""
    pre_tokens: int | None
    """The tokens the provider counted just before it, when recorded."""


@dataclass(frozen=True, slots=True)
class Side:
    """One conversation as the page lists it: per message size, preview, text."""

    roles: tuple[str, ...]
    tokens: tuple[int, ...]
    previews: tuple[str, ...]
    texts: tuple[str, ...]
    total: int
    """Tokens of the whole request."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the side-by-side comparison."""

    before: int | None
    """Index of the original message (``None`` for one that is new)."""
    after: int | None
    """Index of the message sent (``None`` when it is not sent)."""
    fate: str
    """``kept``, the kind of the last change made to the message
    (``compacted``, ``stale``, ``truncated``, ``cleared``, ``deduplicated``,
    ``collapsed``, ``summarized``, ``dropped``, ``repaired``, ``rewritten``),
    ``added``, or ``later`` (a stored view: logged after the view was made,
    sent as it is)."""


@dataclass(frozen=True, slots=True)
class Page:
    """Everything one report shows."""

    title: str
    subtitle: str
    inspection: Inspection
    original: Side
    usage: tuple[int, ...]
    """Per message: the request's tokens if it were sent after this message
    (the live context: counting restarts after each recorded compaction)."""
    reported: tuple[tuple[int, int], ...]
    """(message index, input tokens the provider reported for the request that
    produced it), where the transcript records them."""
    compactions: tuple[Compaction, ...]
    after: Side | None = None
    """What is sent: a fit's output or a stored view (``None``: neither)."""
    after_label: str = ""
    """``fitted`` or ``saved view``."""
    rows: tuple[Row, ...] = ()
    changes: tuple[Change, ...] = ()
    """Every change of the fit (or of the view's saved report)."""
    limit: int | None = None
    """The budget of a fit."""


def message_text(
    m: Message, limit: int = TEXT_CHARS, names: Mapping[str, str] | None = None
) -> str:
    """A message's content as plain text: texts, calls, results, thinking.

    A tool result is headed by its tool's name: its own, or the one ``names``
    gives for its call id, else the call id.

    Example:
        >>> m = Message.assistant("Reading.", tool_calls=[ToolCall("c1", "read", "{}")])
        >>> print(message_text(m))
        Reading.
        → read({})
    """
    out: list[str] = []
    for p in m.parts:
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, ToolCall):
            out.append(f"→ {p.name}({p.arguments})")
        elif isinstance(p, ToolResult):
            head = "← error" if p.is_error else "←"
            tool = p.name or (names or {}).get(p.call_id) or p.call_id
            out.append(f"{head} {tool}\n{p.text}")
        elif isinstance(p, Thinking):
            out.append("[thinking, redacted]" if p.redacted else f"[thinking] {p.text}")
        elif isinstance(p, Image):
            out.append(f"[image {p.url[:60]}]")
        else:  # an Opaque part: Message takes only the six kinds
            out.append(opaque_text(p))
    text = "\n".join(out)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit:,} more characters)"
    return text


def _preview(text: str, width: int = 90) -> str:
    flat = " ".join(text[: width * 4].split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def side(
    messages: Sequence[Message], counter: TokenCounter, tools: Sequence[ToolSpec]
) -> Side:
    """Sizes, previews and texts of ``messages``."""
    names: dict[str, str] = {}
    texts_: list[str] = []
    for m in messages:
        for c in m.tool_calls:
            names[c.id] = c.name  # a result names the call it answers
        texts_.append(message_text(m, names=names))
    texts = tuple(texts_)
    return Side(
        roles=tuple(m.role for m in messages),
        tokens=tuple(counter.message(m) for m in messages),
        previews=tuple(_preview(t) for t in texts),
        texts=texts,
        total=counter.messages(list(messages), tools=tools),
    )


def _usage(sizes: Sequence[int], base: int, starts: set[int]) -> tuple[int, ...]:
    out: list[int] = []
    run = base
    for i, n in enumerate(sizes):
        if i in starts:
            run = base
        run += n
        out.append(run)
    return tuple(out)


def _reported(messages: Sequence[Message]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        usage = m.meta.get("usage")
        if isinstance(usage, Mapping):
            u = cast("Mapping[str, Any]", usage)
            total = sum(int(u.get(k) or 0) for k in _USAGE_KEYS)
            if total and (not out or out[-1] != (i, total)):
                out.append((i, total))
    return tuple(out)


def _compactions(raw: Sequence[Mapping[str, Any]]) -> tuple[Compaction, ...]:
    out: list[Compaction] = []
    for c in raw:
        pre = c.get("pre_tokens")
        out.append(
            Compaction(
                int(c["index"]),
                str(c.get("trigger") or "compaction"),
                int(pre) if isinstance(pre, (int, float)) else None,
            )
        )
    return tuple(out)


def gather(
    messages: Sequence[Message],
    inspection: Inspection,
    counter: TokenCounter,
    *,
    title: str,
    subtitle: str = "",
    tools: Sequence[ToolSpec] = (),
    compactions: Sequence[Mapping[str, Any]] = (),
    fitted: Fitted | None = None,
    view: StoredView | None = None,
) -> Page:
    """Gather a report's data (see the module's contract)."""
    original = side(messages, counter, tools)
    base = counter.messages([], tools=tools)
    comps = _compactions(compactions)
    page = Page(
        title=title,
        subtitle=subtitle,
        inspection=inspection,
        original=original,
        usage=_usage(original.tokens, base, {c.index for c in comps}),
        reported=_reported(messages),
        compactions=comps,
    )
    if fitted is not None:
        after = side(fitted.messages, counter, tools)
        rows = align_fit(messages, fitted.messages, fitted.report.changes)
        return _with(
            page, after, "fitted", rows, fitted.report.changes, fitted.report.limit
        )
    if view is not None:
        sent = view.messages + tuple(messages[view.version :])
        after = side(sent, counter, tools)
        return _with(
            page, after, "saved view", align_view(len(messages), view), (), None
        )
    return page


def _with(
    page: Page,
    after: Side,
    label: str,
    rows: tuple[Row, ...],
    changes: tuple[Change, ...],
    limit: int | None,
) -> Page:
    return Page(
        page.title,
        page.subtitle,
        page.inspection,
        page.original,
        page.usage,
        page.reported,
        page.compactions,
        after,
        label,
        rows,
        changes,
        limit,
    )


def align_fit(
    before: Sequence[Message], after: Sequence[Message], changes: Sequence[Change]
) -> tuple[Row, ...]:
    """Pair a fit's output with its input by message id (a changed message keeps it).

    Example:
        >>> a, b, c = Message.user("a"), Message.assistant("b"), Message.user("c")
        >>> drop = Change("dropped", "DropOldest", (b.id,), 1, 5, 0, "reply")
        >>> [(r.before, r.after, r.fate) for r in align_fit([a, b, c], [a, c], [drop])]
        [(0, 0, 'kept'), (1, None, 'dropped'), (2, 1, 'kept')]
    """
    fate_of: dict[str, str] = {}
    for ch in changes:
        for i in ch.ids:
            # The last change is where the message ended (cleared, then dropped).
            fate_of[i] = ch.kind
    index: dict[str, int] = {}
    for pos, m in enumerate(before):
        index.setdefault(m.id, pos)
    rows: list[Row] = []
    nxt = 0  # the next original not yet listed
    for j, m in enumerate(after):
        k = index.get(m.id)
        if k is None or k < nxt:
            # New to the conversation: a summary, or a turn a repair inserted.
            new = "repaired" if fate_of.get(m.id) == "repaired" else "added"
            rows.append(Row(None, j, new))
            continue
        for gone in range(nxt, k):
            rows.append(Row(gone, None, fate_of.get(before[gone].id, "dropped")))
        changed = m != before[k]
        fate = fate_of.get(m.id, "rewritten") if changed else "kept"
        rows.append(Row(k, j, fate))
        nxt = k + 1
    for gone in range(nxt, len(before)):
        rows.append(Row(gone, None, fate_of.get(before[gone].id, "dropped")))
    return tuple(rows)


def align_view(logged: int, view: StoredView) -> tuple[Row, ...]:
    """Pair a stored view with the log by the origins the view records.

    Args:
        logged: Messages in the log.
        view: The saved view.
    """
    covered: dict[int, str] = {}
    rows: list[Row] = []
    nxt = 0
    for j, e in enumerate(view.entries):
        if e.kind == "new":
            for o in e.origins:
                covered.setdefault(o, "summarized")
            rows.append(Row(None, j, "added"))
            continue
        k = e.origins[0] if e.origins else None
        if k is None or k < nxt:
            rows.append(Row(None, j, e.kind))
            continue
        for gone in range(nxt, k):
            rows.append(Row(gone, None, covered.get(gone, "dropped")))
        rows.append(Row(k, j, "kept" if e.kind == "original" else "rewritten"))
        nxt = k + 1
    for gone in range(nxt, min(view.version, logged)):
        rows.append(Row(gone, None, covered.get(gone, "dropped")))
    start = len(view.entries)
    for k in range(max(nxt, view.version), logged):
        rows.append(Row(k, start + k - view.version, "later"))
    return tuple(rows)
