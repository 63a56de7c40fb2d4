"""Strategies that shrink old tool results and keep their calls.

Contract: ``TruncateToolResults``, ``ClearToolResults`` and ``Deduplicate``
rewrite the content of tool results only; every call, every result's
``call_id``, ``name`` and ``is_error``, and every message and its id stay, so
no exchange is ever broken. Results in pinned messages are never touched, and
a result is rewritten only when that saves tokens and brings in no protected
marker (which would pin the message for the stages after). They work oldest
first and stop as soon as the conversation fits the budget, so they lose no
more than they must (a budget of 0 applies them everywhere). Each changed
message is one change in the report.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from contextwindow._args import check_int, check_number, check_str
from contextwindow.errors import ContextWindowError
from contextwindow.handles import handle_of, original_sizes, with_origin
from contextwindow.messages import Message, Part, ToolResult
from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    finish,
    pinned_flags,
    relocate,
)
from contextwindow.strategies.collapse import (
    MAX_CUT_SHARE,
    MAX_NAMED,
    collapse_runs,
    cut_share,
    is_marker,
    named_in,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = [
    "ClearToolResults",
    "Deduplicate",
    "Origin",
    "TruncateToolResults",
    "rewrite_results",
]


class Origin(NamedTuple):
    """What a rewrite knows of a result's original (``contextwindow.handles``)."""

    handle: str
    """The handle of the original message."""
    tokens: int
    """Tokens the original result took (text and images)."""


Rewrite = Callable[[ToolResult, int, Origin], "str | None"]
"""Given a result, its position among all results and its original, new text
or ``None``."""


@dataclass(frozen=True, slots=True)
class TruncateToolResults:
    r"""Cut old tool results to their head and tail, with a marker of the cut.

    Args:
        keep_recent: The most recent results left whole.
        max_tokens: Tokens of text a truncated result keeps (head and tail,
            half each, cut at line ends where one is near), plus the marker.

    Raises:
        ContextWindowError: ``keep_recent`` below 0 or ``max_tokens`` below 1.

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> log = "\n".join(f"line {i}" for i in range(100))
        >>> conv = [Message.user("run it"),
        ...         Message.assistant(tool_calls=[ToolCall("c1", "run")]),
        ...         Message.tool("c1", log), Message.assistant("done")]
        >>> strategy = TruncateToolResults(keep_recent=0, max_tokens=8)
        >>> fitted = strategy(conv, Budget(100, TokenCounter(FakeTokenizer())))
        >>> print(fitted.messages[2].text)
        line 0
        line 1
        [... 192 tokens (96 lines) cut; recall 07cf12edf0 ...]
        line 98
        line 99
    """

    keep_recent: int = 3
    """The most recent results left whole."""
    max_tokens: int = 500
    """Tokens of text a truncated result keeps (without the marker)."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_int(self.max_tokens, "max_tokens", low=1)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Truncate every old result longer than ``max_tokens``."""
        tok = _Cached(budget.counter)
        last = _count_results(messages) - self.keep_recent

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            if position >= last:
                return None
            return truncate(result.text, self.max_tokens, tok, handle=origin.handle)

        return rewrite_results(
            messages, budget, "TruncateToolResults", "truncated", rewrite
        )


@dataclass(frozen=True, slots=True)
class ClearToolResults:
    """Replace old tool results with a short placeholder; the calls stay.

    Like Anthropic's ``clear_tool_uses`` context edit: the model still sees
    what it called and with which arguments, and can call again. Once cut
    exchanges (bare calls and their markers) take more than ``max_share`` of
    the request, clearing no longer pays: the oldest runs of them become one
    line each, naming the tools and the paths and commands they touched
    (``strategies.collapse``).

    Args:
        keep_recent: The most recent results left whole.
        placeholder: The text put in place of a result; ``{tokens}`` becomes
            the tokens the original took (text and images; before any other
            stage truncated it), ``{name}`` the tool's name (the result's
            own, else its call's), ``{handle}`` the original's handle, which
            ``context_recall`` brings back, ``{names}`` the paths, code
            identifiers and numbers it held (``collapse.named_in``), as
            ``, naming a.py, 8080`` (empty when none).
        max_share: The share of the request cut exchanges may take before
            runs of them collapse (1 never collapses).

    Raises:
        ContextWindowError: ``keep_recent`` below 0, a placeholder using
            other fields than ``{tokens}``, ``{name}``, ``{handle}`` and
            ``{names}``, or
            ``max_share`` outside [0, 1].

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.user("look"),
        ...         Message.assistant(tool_calls=[ToolCall("c1", "ls")]),
        ...         Message.tool("c1", "a.txt " * 50), Message.assistant("done")]
        >>> budget = Budget(0, TokenCounter(FakeTokenizer()))
        >>> fitted = ClearToolResults(keep_recent=0, max_share=1)(conv, budget)
        >>> fitted.messages[2].text
        '[tool result cleared: 50 tokens; recall fea8ab1d03]'
        >>> fitted = ClearToolResults(keep_recent=0)(conv, budget)  # a flood
        >>> [m.text for m in fitted.messages][1:]
        ['[1 earlier tool call, results cut: ls; recall 59f151410b+2]', 'done']
        >>> [c.kind for c in fitted.report.changes]
        ['cleared', 'collapsed']
    """

    keep_recent: int = 3
    """The most recent results left whole."""
    placeholder: str = "[tool result cleared: {tokens} tokens{names}; recall {handle}]"
    """The text put in place of a result (``{tokens}``, ``{name}``,
    ``{handle}``, ``{names}`` filled in)."""
    max_share: float = MAX_CUT_SHARE
    """The share of the request cut exchanges may take before runs collapse."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_number(self.max_share, "max_share", low=0, high=1)
        _check_format(
            "placeholder",
            self.placeholder,
            tokens="1,234",
            name="read",
            handle="0123456789",
            names="",
        )

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Clear every old result."""
        last = _count_results(messages) - self.keep_recent

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            if position >= last:
                return None
            named = named_in(result.text)
            return self.placeholder.format(
                tokens=f"{origin.tokens:,}",
                name=result.name or "",
                handle=origin.handle,
                names=f", naming {', '.join(named)}" if named else "",
            )

        step = rewrite_results(messages, budget, "ClearToolResults", "cleared", rewrite)
        if self.max_share >= 1 or cut_share(step.messages, budget) <= self.max_share:
            return step
        later = collapse_runs(step.messages, budget, self.max_share, "ClearToolResults")
        report = step.report.then(relocate(later.report, messages, step.messages))
        return Fitted(later.messages, replace(report, stages=step.report.stages))


@dataclass(frozen=True, slots=True)
class Deduplicate:
    """Point repeated tool outputs to their latest copy.

    When the same output (same content, same error flag) appears more than
    once, the latest copy stays whole and each earlier one becomes a short
    note naming the call that holds it. With ``near``, outputs that differ
    only in volatile values (``VOLATILE``: dates, clock times, durations,
    UUIDs, long hex ids) count as the same too, and the note says so; the
    original stays recallable by its handle.

    Args:
        note: The text put in place of an earlier copy; ``{call_id}`` becomes
            the id of the call whose result is the latest copy, ``{handle}``
            the original's handle, ``{but}`` what differs (empty for an
            exact copy).
        near: Whether near-duplicates count (outputs of at least
            ``NEAR_MIN_CHARS`` characters).

    Raises:
        ContextWindowError: A note using other fields than ``{call_id}``,
            ``{handle}`` and ``{but}``.

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = []
        >>> for i in (1, 2, 3):
        ...     conv += [Message.user("status?"),
        ...              Message.assistant(tool_calls=[ToolCall(f"c{i}", "status")]),
        ...              Message.tool(f"c{i}", f"12:0{i}:00 " + "all up " * 40)]
        >>> fitted = Deduplicate()(conv, Budget(0, TokenCounter(FakeTokenizer())))
        >>> print(fitted.messages[2].text)  # doctest: +ELLIPSIS
        [same output as the later result of call c3, but for timestamps and ids; ...
    """

    note: str = (
        "[same output as the later result of call {call_id}{but}; recall {handle}]"
    )
    """The text put in place of an earlier copy (``{call_id}``, ``{handle}``,
    ``{but}`` filled in)."""
    near: bool = True
    """Whether outputs differing only in volatile values count as the same."""

    def __post_init__(self) -> None:
        _check_format("note", self.note, call_id="call_1", handle="0123456789", but="")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Replace earlier copies of repeated outputs."""
        latest: dict[tuple[object, bool], str] = {}
        keys: list[tuple[object, bool]] = []
        exact: list[object] = []
        for m in messages:
            for r in m.tool_results:
                key = (self._key(r), r.is_error)
                keys.append(key)
                exact.append(r.content)
                latest[key] = r.call_id
        seen: dict[tuple[object, bool], int] = {}
        for position, output in enumerate(keys):
            seen[output] = position  # the last position holding each output

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            key = keys[position]
            last = seen[key]
            if last == position:
                return None
            but = "" if exact[last] == result.content else NEAR_NOTE
            return self.note.format(call_id=latest[key], handle=origin.handle, but=but)

        return rewrite_results(messages, budget, "Deduplicate", "deduplicated", rewrite)

    def _key(self, result: ToolResult) -> object:
        content = result.content
        if self.near and isinstance(content, str) and len(content) >= NEAR_MIN_CHARS:
            return ("near", VOLATILE.sub("\x00", content))
        return content


VOLATILE = re.compile(
    r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?"
    r"|\b\d\d?:\d\d:\d\d(?:[.,]\d+)?\b"
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b"
    r"|\b\d+(?:\.\d+)?(?:ms|s|sec|seconds)\b",
    re.IGNORECASE,
)
"""Values that differ between runs of the same command: dates and times,
clock times, UUIDs, long hex ids, durations (``0.04s``, ``12ms``)."""

NEAR_MIN_CHARS = 80
"""Shorter outputs are compared exactly (a short output is mostly its values)."""

NEAR_NOTE = ", but for timestamps and ids"
"""What a near-duplicate's note adds (its ``{but}``)."""


# -- shared machinery ------------------------------------------------------------


def _check_format(field: str, template: str, **sample: str) -> None:
    """Fail now, not mid-fit, on a template that cannot be filled in."""
    check_str(template, field)
    try:
        template.format(**sample)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        fields = [f"{{{k}}}" for k in sample]
        names = " and ".join(
            [", ".join(fields[:-1]), fields[-1]] if fields[1:] else fields
        )
        raise ContextWindowError(
            f"{field} {template!r} may use only {names}: {exc!r}"
        ) from exc


def _count_results(messages: Sequence[Message]) -> int:
    return sum(len(m.tool_results) for m in messages)


def rewrite_results(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    rewrite: Rewrite,
) -> Fitted:
    """Apply ``rewrite`` to each tool result outside pinned messages.

    A rewritten message keeps its original's handle and sizes
    (``handles.with_origin``), whatever stage rewrote it first.
    """
    flags = pinned_flags(messages, budget.protected, budget.provider)
    counter = budget.counter
    total = budget.count(messages)
    out: list[Message] = []
    changes: list[Change] = []
    names: dict[str, str] = {}  # call id -> tool name, for the report
    position = 0
    for i, m in enumerate(messages):
        if m.role != "tool":
            if m.role == "assistant":
                names.update((c.id, c.name) for c in m.tool_calls)
            out.append(m)
            continue
        parts: list[Part] = []
        touched: list[str] = []
        sizes = [_size(counter, r) for r in m.tool_results]
        known = original_sizes(m)
        first = known if known is not None and len(known) == len(sizes) else sizes
        handle = handle_of(m)
        j = 0
        for part in m.parts:
            if isinstance(part, ToolResult):
                fits = total <= budget.limit
                named = part
                if part.name is None and part.call_id in names:  # for {name}
                    named = replace(part, name=names[part.call_id])
                origin = Origin(handle, first[j])
                j += 1
                # A marker is already the least a result can say: left alone.
                skip = flags[i] or fits or is_marker(part)
                text = None if skip else rewrite(named, position, origin)
                position += 1
                # A marker in the new text would pin the message for later stages.
                if text is not None and not any(
                    mark in text for mark in budget.protected
                ):
                    new = _with_text(part, text)
                    saved = counter.part(part) - counter.part(new)
                    if saved > 0:
                        total -= saved
                        parts.append(new)
                        touched.append(
                            part.name or names.get(part.call_id) or part.call_id
                        )
                        continue
            parts.append(part)
        if not touched:
            out.append(m)
            continue
        new_msg = with_origin(m.with_parts(parts), m, sizes)
        out.append(new_msg)
        changes.append(
            Change(
                kind,
                stage,
                (m.id,),
                i,
                counter.message(m),
                counter.message(new_msg),
                f"tool result: {_names(touched)}",
            )
        )
    return finish(stage, messages, out, changes, budget)


def _size(counter: TokenCounter, result: ToolResult) -> int:
    """Tokens of a result's content (text and images), as placeholders state them."""
    return counter.text(result.text) + sum(counter.image(i) for i in result.images)


def _names(names: Sequence[str]) -> str:
    """``Read x8, Bash``: each name once, in order, with its count."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in counts.items())


def _with_text(result: ToolResult, text: str) -> ToolResult:
    """The result with its text replaced; its images are dropped too."""
    return replace(result, content=text)


class _Cached:
    """A counter's tokenizer, counting through the counter's text cache."""

    __slots__ = ("_counter",)

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter

    @property
    def name(self) -> str:
        return self._counter.tokenizer.name

    @property
    def exact(self) -> bool:
        return self._counter.tokenizer.exact

    def count(self, text: str) -> int:
        return self._counter.text(text)


# -- truncation --------------------------------------------------------------------

NEAR_LINE_END = 0.25
"""A cut moves to a line end when one lies within this share of the kept span."""


def truncate(
    text: str, max_tokens: int, tokenizer: Tokenizer, *, handle: str | None = None
) -> str | None:
    r"""Keep about ``max_tokens`` tokens of ``text``: head and tail, and a marker.

    Args:
        text: The text to cut.
        max_tokens: Tokens of text kept (head and tail), without the marker.
        tokenizer: Counts them.
        handle: The original's handle; when given, the marker names it and
            the paths, identifiers and numbers the cut held
            (``collapse.named_in``, up to ``MAX_NAMED``).

    Returns:
        The truncated text, or ``None`` when ``text`` already fits.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> truncate("a b c d e f g h i j", 4, FakeTokenizer())
        'a b\n[... 6 tokens cut ...]\ni j'
        >>> truncate("a b c d e f g h i j", 4, FakeTokenizer(), handle="0123456789")
        'a b\n[... 6 tokens cut; recall 0123456789 ...]\ni j'
    """
    total = tokenizer.count(text)
    if total <= max_tokens:
        return None
    half = max(1, max_tokens // 2)
    per_token = len(text) / total  # characters per token, to size the first try
    head = _prefix(text, max_tokens - half, per_token, tokenizer)
    tail = _suffix(text[len(head) :], half, per_token, tokenizer)
    middle = text[len(head) : len(text) - len(tail)]
    # Not a count of ``middle``, which is most of the text: BPE counts add up
    # across a cut to within a token or two.
    cut = max(total - tokenizer.count(head) - tokenizer.count(tail), 0)
    lines = middle.strip("\n").count("\n") + 1
    what = f"{cut:,} tokens ({lines:,} lines)" if lines > 1 else f"{cut:,} tokens"
    back = f"; recall {handle}" if handle else ""
    if handle:  # what the cut named, when the original can be recalled
        inside = set(named_in(head + "\n" + tail, 10**6))
        gone = [n for n in named_in(middle, 10**6) if n not in inside][:MAX_NAMED]
        back = f", naming {', '.join(gone)}{back}" if gone else back
    return f"{head}\n[... {what} cut{back} ...]\n{tail}"


def _prefix(text: str, tokens: int, per_token: float, tokenizer: Tokenizer) -> str:
    """The longest prefix of about ``tokens`` tokens, ending at a line end if near."""
    size = max(1, int(tokens * per_token))
    while size > 1 and tokenizer.count(text[:size]) > tokens:
        size = size * 9 // 10
    head = text[:size]
    nl = head.rfind("\n")
    if nl >= 0 and nl >= size * (1 - NEAR_LINE_END):
        head = head[:nl]
    return head


def _suffix(text: str, tokens: int, per_token: float, tokenizer: Tokenizer) -> str:
    """The longest suffix of about ``tokens`` tokens, starting a line if near."""
    size = min(max(1, int(tokens * per_token)), len(text))
    while size > 1 and tokenizer.count(text[-size:]) > tokens:
        size = size * 9 // 10
    tail = text[len(text) - size :]
    nl = tail.find("\n")
    if 0 <= nl <= size * NEAR_LINE_END:
        tail = tail[nl + 1 :]
    return tail
