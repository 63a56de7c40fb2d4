r"""``TruncateToolInputs``: cut the long arguments of old tool calls, keep the calls.

Contract:

- A call's arguments are content when a string in them is long (a file a
  ``Write`` wrote, the strings an ``Edit`` swapped): once the call has run,
  what it carried is in the files and in later reads. Each string leaf of an
  old call's arguments longer than ``max_tokens`` is cut to its head and
  tail with a marker saying what the cut held (``tool_results.truncate``:
  its size, the names it held, the handle of the original message, which
  ``context_recall`` returns); every other argument, the call's id and name,
  and its results stay, so no exchange is broken and the arguments are
  still a JSON object (UTF-8 text: a lone surrogate escape in them stays an
  escape).
- The ``keep_recent`` latest calling messages, pinned messages and the final
  messages are never touched, nor a call whose arguments are not an object.
- Like every stage it works oldest first and stops once the conversation
  fits; each changed message is one ``truncated`` change.

Example:
    >>> import json
    >>> from contextwindow import Message, TokenCounter, ToolCall
    >>> from contextwindow.strategies import Budget
    >>> from contextwindow.testing import FakeTokenizer
    >>> body = "\n".join(f"line {i}" for i in range(60))
    >>> args = json.dumps({"file_path": "a/b.py", "content": body})
    >>> conv = [Message.user("write it"),
    ...         Message.assistant(tool_calls=[ToolCall("w1", "Write", args)]),
    ...         Message.tool("w1", "ok"), Message.assistant("done")]
    >>> strategy = TruncateToolInputs(keep_recent=0, max_tokens=8)
    >>> fitted = strategy(conv, Budget(0, TokenCounter(FakeTokenizer())))
    >>> new = fitted.messages[1].tool_calls[0].input
    >>> new["file_path"], new["content"].splitlines()[2][:26]
    ('a/b.py', '[... 112 tokens (56 lines)')
    >>> [(c.kind, c.index) for c in fitted.report.changes]
    [('truncated', 1)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from contextwindow._args import check_int
from contextwindow._json import escape_surrogates
from contextwindow.handles import handle_of
from contextwindow.messages import Message, Part, ToolCall, dump_json
from contextwindow.strategies._rescan import Rewrite, rewrite_results, scan_messages
from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    strategy_input,
)
from contextwindow.strategies.digest import Counted
from contextwindow.strategies.tool_results import truncate
from contextwindow.tokens.base import Tokenizer

__all__ = ["TruncateToolInputs"]


@dataclass(frozen=True, slots=True)
class TruncateToolInputs:
    """Cut long string arguments of old tool calls to head, tail and a marker.

    See the module's contract. Like Anthropic's ``clear_tool_inputs``
    context edit, but what was cut is named and recallable.

    Args:
        keep_recent: The latest calling messages left whole.
        max_tokens: Tokens a long argument keeps (head and tail, without
            the marker).

    Raises:
        ContextWindowError: ``keep_recent`` below 0 or ``max_tokens`` below 1.
    """

    keep_recent: int = 3
    """The latest calling messages left whole."""
    max_tokens: int = 60
    """Tokens a long argument keeps (without the marker)."""

    def __post_init__(self) -> None:
        check_int(self.keep_recent, "keep_recent", low=0)
        check_int(self.max_tokens, "max_tokens", low=1)

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Cut the long arguments of every old call, oldest first, until it fits.

        Incremental (``_rescan``): which calls are old moves only when a new
        call pushes an older one past ``keep_recent``, and the scan resumes
        from there.
        """
        messages = strategy_input(messages, budget)
        return rewrite_results(
            messages,
            budget,
            "TruncateToolInputs",
            "truncated",
            _Recent(self.keep_recent),
            self,
            self._scan,
        )

    def _scan(
        self,
        messages: Sequence[Message],
        budget: Budget,
        stage: str,
        kind: ChangeKind,
        rewrite: Rewrite,
        start: int,
        total: int,
        position: int,
        finals: tuple[int, ...],
    ) -> tuple[list[Message], list[Change], list[int], int]:
        """Cut from ``start`` while over budget (a ``_rescan.Scan``).

        Calls from ``rewrite.last`` on (the policy's boundary) are recent.
        """
        last = rewrite.last if isinstance(rewrite, _Old) else len(messages)
        tok = Counted(budget.counter.text)

        def cut(
            i: int, m: Message
        ) -> tuple[Message, Callable[[], tuple[str, list[int]]]] | None:
            if i >= last or m.role != "assistant":
                return None
            handle = handle_of(m)
            parts: list[Part] = []
            touched: list[str] = []
            for p in m.parts:
                new = (
                    _cut_call(p, self.max_tokens, tok, handle)
                    if isinstance(p, ToolCall)
                    else None
                )
                if new is not None:
                    touched.append(new.name)
                parts.append(p if new is None else new)
            if not touched:
                return None
            names = ", ".join(dict.fromkeys(touched))
            return m.with_parts(parts), lambda: (f"tool call: {names} (arguments)", [])

        return scan_messages(messages, budget, stage, kind, start, total, finals, cut)


def _calls(m: Message) -> bool:
    return m.role == "assistant" and any(isinstance(p, ToolCall) for p in m.parts)


def _recent_from(messages: Sequence[Message], keep_recent: int) -> int:
    """Where the ``keep_recent`` latest calling messages start (``len``: none kept)."""
    if not keep_recent:
        return len(messages)
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if _calls(messages[i]):
            seen += 1
            if seen == keep_recent:
                return i
    return 0  # fewer calls than that: every one is recent


def _results(messages: Sequence[Message], start: int, stop: int) -> int:
    """Tool results in ``messages[start:stop]``, as ``_rescan`` places them."""
    return sum(len(m.tool_results) for m in messages[start:stop] if m.role == "tool")


@dataclass(frozen=True, slots=True)
class _Old:
    """The scan's rewrite (unused: calls are cut, not results) and its boundary."""

    last: int
    """The first recent calling message."""

    def __call__(self, result: object, position: int, origin: object) -> None:
        return None


@dataclass(frozen=True, slots=True)
class _Recent:
    """The ``_rescan`` policy: the boundary of the recent calls, and its moves.

    What it keeps: the boundary and the tool results before it. A boundary
    that moved on lets the scan resume at the first result after the old
    one (its unit starts at or before the call that aged). One that moved
    back, or a conversation changed before it (a result rewritten by an
    earlier stage), has the results before the new boundary counted again,
    and the scan resumes at the earlier of the two boundaries (the calls
    before both are cut either way).
    """

    keep_recent: int

    local = True
    """Each decision depends on its message and the boundary alone
    (``_rescan.Policy``): a message rewritten in place is decided again alone."""

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        last = _recent_from(messages, self.keep_recent)
        return _Old(last), (last, _results(messages, 0, last))

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | None:
        old, before = cast("tuple[int, int]", kept)
        last = _recent_from(messages, self.keep_recent)
        if not self.keep_recent or last == old:
            return _Old(last), results, (last, before)
        if last < old or shared < old:
            first = _results(messages, 0, min(last, old))
            return (
                _Old(last),
                first,
                (last, first + _results(messages, min(last, old), last)),
            )
        return _Old(last), before, (last, before + _results(messages, old, last))


def _cut_call(
    call: ToolCall, max_tokens: int, tokenizer: Tokenizer, handle: str
) -> ToolCall | None:
    """``call`` with its long string arguments cut (``None``: none is long)."""
    args: Any = call.input
    if not isinstance(args, dict):
        return None
    given = cast("dict[str, Any]", args)
    changed = False
    new: dict[str, Any] = {}
    for key, value in given.items():
        if isinstance(value, str):
            cut = truncate(value, max_tokens, tokenizer, handle=handle)
            if cut is not None:
                new[key] = cut
                changed = True
                continue
        new[key] = value
    if not changed:
        return None
    try:  # JSON alone, as ``ToolCall`` takes it: never ``Infinity``
        text = dump_json(new)
    except (TypeError, ValueError):  # only a call that skipped the constructor
        return None
    # A lone surrogate the arguments held as an escape stays one (UTF-8 text).
    return replace(call, arguments=escape_surrogates(text))
