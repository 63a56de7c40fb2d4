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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from contextwindow._args import check_int, check_str
from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message, Part, ToolResult
from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    finish,
    pinned_flags,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.counting import TokenCounter

__all__ = ["ClearToolResults", "Deduplicate", "TruncateToolResults"]

Rewrite = Callable[[ToolResult, int], "str | None"]
"""Given a result and its position among all results, new text or ``None``."""


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
        [... 192 tokens (96 lines) cut ...]
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

        def rewrite(result: ToolResult, position: int) -> str | None:
            if position >= last:
                return None
            return truncate(result.text, self.max_tokens, tok)

        return _rewrite(messages, budget, "TruncateToolResults", "truncated", rewrite)


@dataclass(frozen=True, slots=True)
class ClearToolResults:
    """Replace old tool results with a short placeholder; the calls stay.

    Like Anthropic's ``clear_tool_uses`` context edit: the model still sees
    what it called and with which arguments, and can call again.

    Args:
        keep_recent: The most recent results left whole.
        placeholder: The text put in place of a result; ``{tokens}`` becomes
            the tokens it took (text and images), ``{name}`` the tool's name
            (the result's own, else its call's).

    Raises:
        ContextWindowError: ``keep_recent`` below 0, or a placeholder using
            other fields than ``{tokens}`` and ``{name}``.

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = [Message.user("look"),
        ...         Message.assistant(tool_calls=[ToolCall("c1", "ls")]),
        ...         Message.tool("c1", "a.txt " * 50), Message.assistant("done")]
        >>> fitted = ClearToolResults(keep_recent=0)(
        ...     conv, Budget(0, TokenCounter(FakeTokenizer())))
        >>> fitted.messages[2].text
        '[tool result cleared: 50 tokens]'
    """

    keep_recent: int = 3
    """The most recent results left whole."""
    placeholder: str = "[tool result cleared: {tokens} tokens]"
    """The text put in place of a result (``{tokens}``, ``{name}`` filled in)."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        _check_format("placeholder", self.placeholder, tokens="1,234", name="read")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Clear every old result."""
        counter = budget.counter
        last = _count_results(messages) - self.keep_recent

        def rewrite(result: ToolResult, position: int) -> str | None:
            if position >= last:
                return None
            n = counter.text(result.text) + sum(counter.image(i) for i in result.images)
            return self.placeholder.format(tokens=f"{n:,}", name=result.name or "")

        return _rewrite(messages, budget, "ClearToolResults", "cleared", rewrite)


@dataclass(frozen=True, slots=True)
class Deduplicate:
    """Point repeated identical tool outputs to their latest copy.

    When the same output (same content, same error flag) appears more than
    once, the latest copy stays whole and each earlier one becomes a short
    note naming the call that holds it.

    Args:
        note: The text put in place of an earlier copy; ``{call_id}`` becomes
            the id of the call whose result is the latest copy.

    Raises:
        ContextWindowError: A note using another field than ``{call_id}``.

    Example:
        >>> from contextwindow import Message, TokenCounter, ToolCall
        >>> from contextwindow.strategies import Budget
        >>> from contextwindow.testing import FakeTokenizer
        >>> conv = []
        >>> for i in (1, 2):
        ...     conv += [Message.user("status?"),
        ...              Message.assistant(tool_calls=[ToolCall(f"c{i}", "status")]),
        ...              Message.tool(f"c{i}", "all services up " * 20)]
        >>> fitted = Deduplicate()(conv, Budget(0, TokenCounter(FakeTokenizer())))
        >>> fitted.messages[2].text
        '[same output as the later result of call c2]'
    """

    note: str = "[same output as the later result of call {call_id}]"
    """The text put in place of an earlier copy (``{call_id}`` filled in)."""

    def __post_init__(self) -> None:
        _check_format("note", self.note, call_id="call_1")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Replace earlier copies of repeated outputs."""
        latest: dict[tuple[object, bool], str] = {}
        keys: list[tuple[object, bool]] = []
        for m in messages:
            for r in m.tool_results:
                key = (r.content, r.is_error)
                keys.append(key)
                latest[key] = r.call_id
        seen: dict[tuple[object, bool], int] = {}
        for position, output in enumerate(keys):
            seen[output] = position  # the last position holding each output

        def rewrite(result: ToolResult, position: int) -> str | None:
            key = keys[position]
            if seen[key] == position:
                return None
            return self.note.format(call_id=latest[key])

        return _rewrite(messages, budget, "Deduplicate", "deduplicated", rewrite)


# -- shared machinery ------------------------------------------------------------


def _check_format(field: str, template: str, **sample: str) -> None:
    """Fail now, not mid-fit, on a template that cannot be filled in."""
    check_str(template, field)
    try:
        template.format(**sample)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        names = " and ".join(f"{{{k}}}" for k in sample)
        raise ContextWindowError(
            f"{field} {template!r} may use only {names}: {exc!r}"
        ) from exc


def _count_results(messages: Sequence[Message]) -> int:
    return sum(len(m.tool_results) for m in messages)


def _rewrite(
    messages: Sequence[Message],
    budget: Budget,
    stage: str,
    kind: ChangeKind,
    rewrite: Rewrite,
) -> Fitted:
    """Apply ``rewrite`` to each tool result outside pinned messages."""
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
        for part in m.parts:
            if isinstance(part, ToolResult):
                fits = total <= budget.limit
                named = part
                if part.name is None and part.call_id in names:  # for {name}
                    named = replace(part, name=names[part.call_id])
                text = None if flags[i] or fits else rewrite(named, position)
                position += 1
                # A marker in the new text would pin the message for later stages.
                if text is not None and not any(k in text for k in budget.protected):
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
        new_msg = m.with_parts(parts)
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


def truncate(text: str, max_tokens: int, tokenizer: Tokenizer) -> str | None:
    r"""Keep about ``max_tokens`` tokens of ``text``: head and tail, and a marker.

    Returns:
        The truncated text, or ``None`` when ``text`` already fits.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> truncate("a b c d e f g h i j", 4, FakeTokenizer())
        'a b\n[... 6 tokens cut ...]\ni j'
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
    return f"{head}\n[... {what} cut ...]\n{tail}"


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
