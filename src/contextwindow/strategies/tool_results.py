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

import hashlib
import re
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from contextwindow._args import check_bool, check_int, check_number, check_str
from contextwindow._lru import LRU
from contextwindow.errors import ContextWindowError
from contextwindow.messages import Message, ToolResult
from contextwindow.strategies._rescan import (
    Origin,
    Resumed,
    Rewrite,
    rewrite_results,
    share_rewrites,
)
from contextwindow.strategies.base import (
    REWRITE_STEP,
    Budget,
    Fitted,
    Report,
    known_valid,
    note_valid,
    relocate,
    step_size,
    strategy_input,
)
from contextwindow.strategies.collapse import (
    MAX_CUT_SHARE,
    collapse_runs,
    cut_share,
)
from contextwindow.strategies.digest import (
    digest,
    digest_tokens,
    line_span,
    path_room,
    path_tokens,
    span_text,
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
        messages = strategy_input(messages, budget)
        tok = _Cached(budget.counter)

        def rewrite(result: ToolResult, origin: Origin) -> str | None:
            return truncate(result.text, self.max_tokens, tok, handle=origin.handle)

        policy = _Older(self.keep_recent, rewrite)
        return rewrite_results(
            messages, budget, "TruncateToolResults", "truncated", policy, self
        )


@dataclass(frozen=True, slots=True)
class ClearToolResults:
    """Replace old tool results with a short placeholder; the calls stay.

    Like Anthropic's ``clear_tool_uses`` context edit: the model still sees
    what it called and with which arguments, and can call again. Once cut
    exchanges (bare calls and their markers) take more than ``max_share`` of
    the request, clearing no longer pays: the oldest runs of them become one
    line each, naming the tools and the paths and commands they touched
    (``strategies.collapse``). The lines free more than clearing needed, so
    it then clears fewer of the newest results (as if the budget were larger
    by whole steps of it, ``REFILL_STEP``, by bisection, ``REFILL_TRIES``
    times), and puts back cleared results the room still holds, a step at a
    time: the request is about as full as the budget allows, and what is
    cleared stays put while the conversation grows by less than a step.

    Args:
        keep_recent: The most recent results left whole.
        placeholder: The text put in place of a result; ``{tokens}`` becomes
            the tokens the original took (text and images; before any other
            stage truncated it), ``{name}`` the tool's name (the result's
            own, else its call's), ``{handle}`` the original's handle, which
            ``context_recall`` brings back, ``{names}`` what it held
            (``held``: the lines of numbered output, then the paths, code
            identifiers and numbers, within ``digest.digest_tokens``), as
            ``, lines 1-80, naming a.py, 8080`` (empty when none).
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
        messages = strategy_input(messages, budget)
        tok = _Cached(budget.counter)
        found = budget.memo.get(_HELD_KEY)  # only this method puts it
        known: LRU[tuple[str, int], str] = (
            cast("LRU[tuple[str, int], str]", found)
            if isinstance(found, LRU)
            else LRU(HELD_ENTRIES)
        )
        budget.memo.put(_HELD_KEY, known)

        def rewrite(result: ToolResult, origin: Origin) -> str | None:
            # A result is offered again at each step of the refill below,
            # and at each re-fit that rescans it: what it held is read once.
            key = (result.text, origin.tokens)
            names = known.get(key)
            if names is None:
                names = held(result.text, tok, origin.tokens)
                known.put(key, names)
            return self.placeholder.format(
                tokens=f"{origin.tokens:,}",
                name=result.name or "",
                handle=origin.handle,
                names=names,
            )

        policy = _Older(self.keep_recent, rewrite)
        step = rewrite_results(
            messages, budget, "ClearToolResults", "cleared", policy, self
        )
        share = cut_share(step.messages, budget, "ClearToolResults", edits=True)
        if self.max_share >= 1 or share <= self.max_share:
            return step
        # The lanes below clear fewer of the same results the same way: their
        # outputs hold this one's objects (``share_rewrites``).
        share_rewrites(budget, "ClearToolResults", step.messages)
        best = self._collapsed(messages, step, budget, share)
        # Collapsing freed more than clearing needed: clear less, as if the
        # budget were larger by whole steps of it (``REFILL_STEP``) of what
        # is left, while the result still fits. The same steps are tried
        # again when the conversation grows by a little: each try keeps a
        # memo of its own (its lane), so that each resumes.
        unit = step_size(budget, REFILL_STEP)
        lo, hi = 0, (budget.limit - best.report.tokens_after) // unit + 1
        for attempt in range(REFILL_TRIES):
            if hi - lo <= 1:
                break
            k = (lo + hi) // 2
            given = replace(budget, limit=budget.limit + k * unit)
            less = rewrite_results(
                messages, given, "ClearToolResults", "cleared", policy, (self, attempt)
            )
            tried = self._collapsed(messages, less, given, lane=f"+{attempt}")
            if tried.report.tokens_after > budget.limit:
                hi = k
            else:
                best, lo = tried, k
        return Fitted(best.messages, replace(best.report, limit=budget.limit))

    def _collapsed(
        self,
        messages: Sequence[Message],
        step: Fitted,
        budget: Budget,
        share: float | None = None,
        lane: str = "",
    ) -> Fitted:
        """``step`` with its runs collapsed, and cleared results put back.

        ``share`` is ``step``'s ``cut_share`` when the caller has it already;
        ``lane``: whose memo (see ``collapse_runs``).
        """
        if share is None:
            share = cut_share(
                step.messages, budget, "ClearToolResults" + lane, edits=True
            )
        if share <= self.max_share:
            return step
        later = collapse_runs(
            step.messages,
            budget,
            self.max_share,
            "ClearToolResults",
            edits=True,
            lane=lane,
        )
        report = step.report.then(relocate(later.report, messages, step.messages))
        out, report = _restore(messages, step.messages, later.messages, report, budget)
        return Fitted(out, replace(report, stages=step.report.stages))


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
        check_bool(self.near, "near")

    def __call__(self, messages: Sequence[Message], budget: Budget, /) -> Fitted:
        """Replace earlier copies of repeated outputs."""
        messages = strategy_input(messages, budget)
        return rewrite_results(
            messages, budget, "Deduplicate", "deduplicated", _Copies(self), self
        )

    def _key(self, result: ToolResult) -> object:
        content = result.content
        if self.near and isinstance(content, str) and len(content) >= NEAR_MIN_CHARS:
            # A digest, not the text: the memo keeps one key per result.
            masked = VOLATILE.sub("\x00", content).encode()
            return ("near", hashlib.blake2b(masked, digest_size=16).digest())
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


HELD_ENTRIES = 512
"""Results whose placeholder names ``ClearToolResults`` keeps (``held``)."""

_HELD_KEY = "contextwindow.clear.held"

REFILL_TRIES = 4
"""Times ``ClearToolResults`` clears less to fill the room its runs' lines freed."""

REFILL_STEP = 0.02
"""The share of the budget ``ClearToolResults`` clears less by, in whole steps:
the same steps are tried again at each re-fit of a growing conversation.
Chosen on the shared data: at 1 % and 3 % the tries moved with each turn of
the 10,000-message tau-bench case at 50 % (the request rebuilt, 1.4 s a
re-fit at 1 %); at 5 % the Claude Code sessions at 25 % held 4 % fewer
tokens and 2 points fewer identifiers."""


# -- shared machinery ------------------------------------------------------------


def _restore(
    given: Sequence[Message],
    cleared: Sequence[Message],
    collapsed: Sequence[Message],
    report: Report,
    budget: Budget,
) -> tuple[tuple[Message, ...], Report]:
    """Put back, newest first, the cleared results the collapsed runs made room for.

    Clearing stopped once the conversation fitted; collapsing runs then freed
    more. The cleared messages still standing (not in a run) get their
    originals back, a step of ``REWRITE_STEP`` of the budget at a time (by
    where they start), newest first, while a whole step fits: the request holds
    more, and fewer markers, and what is put back stays put while the
    conversation grows by less than a step. Their ``cleared`` changes go.
    Only the cleared messages are looked at, newest first, until a step does
    not fit.
    """
    counter = budget.counter
    room = budget.limit - budget.count(collapsed)
    if room <= 0 or len(cleared) != len(given):
        return tuple(collapsed), report  # (a repair moved messages: none put back)
    # Only what clearing rewrote: a message a repair changed stays repaired.
    # Clearing rewrites in place: a change's index is its message's in both.
    wheres = sorted(
        {c.index for c in report.changes if c.kind == "cleared"}, reverse=True
    )
    was_cleared = {c.ids[0] for c in report.changes if c.kind == "cleared"}
    # Where each message object stands in the output (one in a run does not).
    standing = dict(zip(map(id, collapsed), range(len(collapsed)), strict=True))
    starts = counter.running(given)
    unit = step_size(budget, REWRITE_STEP)
    back: list[tuple[int, Message]] = []  # put back: where, the original
    step: list[tuple[int, Message]] = []  # of the step being gathered
    extra = 0  # what the step's originals add
    step_of = -1
    for j in wheres:
        if j >= len(given):
            continue
        new, old = cleared[j], given[j]
        at = standing.get(id(new))
        if at is None or new is old or new.id != old.id or new.id not in was_cleared:
            continue
        if starts[j] // unit != step_of:
            # A step with nothing to put back changes nothing: only those
            # holding cleared messages are looked at.
            if extra > room:
                break
            room -= extra
            back += step
            step, extra, step_of = [], 0, starts[j] // unit
        step.append((at, old))
        extra += counter.message(old) - counter.message(new)
    else:
        if extra <= room:
            back += step
    if not back:
        return tuple(collapsed), report
    out = list(collapsed)
    for at, old in back:
        out[at] = old
    restored = tuple(out)
    if known_valid(budget, collapsed):
        # Each original stands where its cleared form stood, its call before
        # it: the rules hold as they held.
        note_valid(budget, restored)
    ids = {old.id for _, old in back}
    kept = tuple(
        c for c in report.changes if not (c.kind == "cleared" and c.ids[0] in ids)
    )
    return restored, replace(report, changes=kept, tokens_after=budget.count(restored))


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


class _Older:
    """Rewrite every result but the ``keep_recent`` latest (Truncate, Clear).

    A result's new text depends on the result and its message alone, so
    when the conversation grows, the decisions stand up to the first result
    the grown conversation no longer keeps whole.
    """

    __slots__ = ("keep_recent", "text")

    local = True
    """Each decision depends on its result alone (``_rescan.Policy``)."""

    def __init__(
        self, keep_recent: int, text: Callable[[ToolResult, Origin], str | None]
    ) -> None:
        self.keep_recent = keep_recent
        self.text = text

    def _rewrite(self, results: int) -> Rewrite:
        last = results - self.keep_recent
        text = self.text

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            return None if position >= last else text(result, origin)

        return rewrite

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        return self._rewrite(results), results

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | None:
        if not isinstance(kept, int):
            return None
        since = max(min(kept, results) - self.keep_recent, 0)
        return self._rewrite(results), since, results


@dataclass(slots=True)
class _Seen:
    """What ``Deduplicate`` knows of the results it saw, by position."""

    keys: list[tuple[object, bool]]
    """Each result's output key (content, or content but for volatile values)."""
    exact: list[object]
    """Each result's content."""
    calls: list[str]
    """Each result's call id."""
    last: dict[tuple[object, bool], int]
    """The last position holding each key."""
    prev: array[int]
    """Each position's previous copy (-1: none)."""


class _Copies:
    """Deduplicate's rule: every copy of an output but the latest is a note.

    When the conversation grows, an earlier output repeated by a new result
    changes its decision (and so do its other copies, whose note names the
    latest call): those copies alone are decided again (``Resumed.points``),
    each by itself, so an output repeated since the start of a long session
    (an empty one, ``No files found``) costs its copies, not a rescan of all
    that follows the first. So do the earlier copies of an output whose
    latest copy lay in messages that changed.
    """

    __slots__ = ("strategy",)

    def __init__(self, strategy: Deduplicate) -> None:
        self.strategy = strategy

    def _add(self, seen: _Seen, messages: Sequence[Message], start: int) -> list[int]:
        """Add the results of ``messages[start:]``.

        Returns the earlier copies of the outputs the new results repeat
        (whose notes name a new latest call).
        """
        new = len(seen.keys)
        key_of = self.strategy._key  # pyright: ignore[reportPrivateUsage]  # its own rule
        repeated: dict[tuple[object, bool], int] = {}  # key: its latest copy before
        for i in range(start, len(messages)):
            for r in messages[i].tool_results:
                key = (key_of(r), r.is_error)
                position = len(seen.keys)
                seen.keys.append(key)
                seen.exact.append(r.content)
                seen.calls.append(r.call_id)
                latest = seen.last.get(key, -1)
                seen.prev.append(latest)
                if latest >= 0:
                    repeated.setdefault(key, latest)
                seen.last[key] = position
        copies: list[int] = []
        for at in repeated.values():
            _copies(seen.prev, at, new, copies)
        return copies

    def _rewrite(self, seen: _Seen) -> Rewrite:
        keys, exact, calls, lasts = seen.keys, seen.exact, seen.calls, seen.last
        note = self.strategy.note

        def rewrite(result: ToolResult, position: int, origin: Origin) -> str | None:
            key = keys[position]
            last = lasts[key]
            if last == position:
                return None
            but = "" if exact[last] == result.content else NEAR_NOTE
            return note.format(call_id=calls[last], handle=origin.handle, but=but)

        return rewrite

    def fresh(
        self, messages: Sequence[Message], results: int
    ) -> tuple[Rewrite, object]:
        seen = _Seen([], [], [], {}, array("q"))
        self._add(seen, messages, 0)
        return self._rewrite(seen), seen

    def resume(
        self,
        kept: object,
        messages: Sequence[Message],
        results: int,
        shared: int,
        extends: bool,
    ) -> tuple[Rewrite, int, object] | Resumed | None:
        if not isinstance(kept, _Seen):
            return None
        old = kept
        # The results of the shared messages are kept; of those, only the
        # copies of a key whose latest copy changes (one after them, cut off
        # or repeated by a new result) are decided again, each alone; the
        # scan starts at the first result after them.
        before = results - sum(len(m.tool_results) for m in messages[shared:])
        if not 0 <= before <= len(old.keys):
            return None
        keys = old.keys[:before]
        points: list[int] = []
        if before == len(old.keys):  # all of the old conversation (an append)
            last = dict(old.last)
        else:
            last = {key: position for position, key in enumerate(keys)}
            for at in old.last.values():
                if at >= before:  # its copies before are the latest again, or not
                    _copies(old.prev, at, before, points)
        seen = _Seen(
            keys, old.exact[:before], old.calls[:before], last, old.prev[:before]
        )
        copies = self._add(seen, messages, shared)
        if len(seen.keys) != results:
            return None
        return Resumed(self._rewrite(seen), before, seen, sorted({*points, *copies}))


def _copies(prev: array[int], at: int, before: int, out: list[int]) -> None:
    """Add to ``out`` the copies before position ``before`` of ``at``'s output.

    ``prev`` links each position to its previous copy.
    """
    while at >= before:
        at = prev[at]
    while at >= 0:
        out.append(at)
        at = prev[at]


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


def held(text: str, tokenizer: Tokenizer, tokens: int | None = None) -> str:
    r"""What a cleared result held, for its placeholder's ``{names}``.

    The lines of numbered output and the digest of its names, within
    ``digest_tokens`` of ``tokens`` (the original's size; default: the
    text's): ``, lines 1-514, naming a.py, run_all``
    (empty when there is nothing to name).

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> held("     1→import os\n     2→os.path(a/b.py)", FakeTokenizer())
        ', lines 1-2, naming a/b.py'
        >>> held("ok", FakeTokenizer())
        ''
    """
    span = span_text(line_span(text))
    size = tokenizer.count(text) if tokens is None else tokens
    named = digest(text, digest_tokens(size), tokenizer, paths=path_room(text, size))
    return (f", {span}" if span else "") + (f", naming {named}" if named else "")


# -- truncation --------------------------------------------------------------------

NEAR_LINE_END = 0.25
"""A cut moves to a line end when one lies within this share of the kept span
(else to the end of a word, a path or a number, when one lies as near)."""

NEAR_WORD_CHARS = 24
"""A cut may always move this far to a word's end (within half the span)."""

_BREAK = re.compile(r"""[ \t\n\r,;"'{}\[\]()<>=]""")
"""A character that ends a word, a path or a number."""


def truncate(
    text: str, max_tokens: int, tokenizer: Tokenizer, *, handle: str | None = None
) -> str | None:
    r"""Keep about ``max_tokens`` tokens of ``text``: head and tail, and a marker.

    Args:
        text: The text to cut.
        max_tokens: Tokens of text kept (head and tail), without the marker.
        tokenizer: Counts them.
        handle: The original's handle; when given, the marker names it and
            the paths, identifiers and numbers the cut held that head and
            tail do not (``digest``, within ``digest_tokens`` of the cut).
            Numbered output (``Read``'s) says which lines were cut.

    Returns:
        The truncated text, or ``None`` when ``text`` already fits.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> truncate("a b c d e f g h i j", 4, FakeTokenizer())
        'a b\n[... 6 tokens cut ...]\ni j'
        >>> truncate("a b c d e f g h i j", 4, FakeTokenizer(), handle="0123456789")
        'a b\n[... 6 tokens cut; recall 0123456789 ...]\ni j'
    """
    found = head_and_tail(text, max_tokens, tokenizer)
    if found is None:
        return None
    head, middle, tail, cut = found
    lines = middle.strip("\n").count("\n") + 1
    span = line_span(middle)
    if span is not None:  # numbered output: which lines, to read them again
        what = f"{cut:,} tokens ({span_text(span)})"
    elif lines > 1:
        what = f"{cut:,} tokens ({lines:,} lines)"
    else:
        what = f"{cut:,} tokens"
    back = f"; recall {handle}" if handle else ""
    if handle:  # what the cut named, when the original can be recalled
        gone = digest(
            middle,
            digest_tokens(cut),
            tokenizer,
            kept=head + "\n" + tail,
            paths=path_tokens(cut),
        )
        back = f", naming {gone}{back}" if gone else back
    return f"{head}\n[... {what} cut{back} ...]\n{tail}"


def head_and_tail(
    text: str, max_tokens: int, tokenizer: Tokenizer
) -> tuple[str, str, str, int] | None:
    """``text`` as head, middle and tail, head and tail within ``max_tokens``.

    Each ends (or starts) at a line end when one is near. Returns the three
    pieces and the tokens of the middle (what ``truncate`` cuts), or ``None``
    when ``text`` fits whole.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> head_and_tail("a b c d e f g h i j", 4, FakeTokenizer())
        ('a b', ' c d e f g h ', 'i j', 6)
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
    return head, middle, tail, cut


def _prefix(text: str, tokens: int, per_token: float, tokenizer: Tokenizer) -> str:
    """The longest prefix of about ``tokens`` tokens, ending at a line end if near."""
    size = max(1, int(tokens * per_token))
    while size > 1 and tokenizer.count(text[:size]) > tokens:
        size = size * 9 // 10
    head = text[:size]
    nl = head.rfind("\n")
    if nl >= 0 and nl >= size * (1 - NEAR_LINE_END):
        return head[:nl]
    if size < len(text) and not _BREAK.match(text, size):
        # Not inside a word, a path or a number: a piece of one would pass
        # for another name, and the digest would name the piece.
        ends = [m.end() for m in _BREAK.finditer(head, size - _near(size))]
        if ends:
            head = head[: ends[-1]]
    return head


def _near(size: int) -> int:
    """How far a cut of a span of ``size`` characters may move to a word's end.

    ``NEAR_LINE_END`` of the span, at least ``NEAR_WORD_CHARS`` (a short
    span's share is shorter than a name), at most half of it.
    """
    return min(size // 2, max(int(size * NEAR_LINE_END), NEAR_WORD_CHARS))


def _suffix(text: str, tokens: int, per_token: float, tokenizer: Tokenizer) -> str:
    """The longest suffix of about ``tokens`` tokens, starting a line if near."""
    size = min(max(1, int(tokens * per_token)), len(text))
    while size > 1 and tokenizer.count(text[-size:]) > tokens:
        size = size * 9 // 10
    tail = text[len(text) - size :]
    nl = tail.find("\n")
    if 0 <= nl <= size * NEAR_LINE_END:
        return tail[nl + 1 :]
    if size < len(text) and not _BREAK.match(text, len(text) - size - 1):
        found = _BREAK.search(tail, 0, _near(size) + 1)
        if found is not None:
            tail = tail[found.start() :]
    return tail
