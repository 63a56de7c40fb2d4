"""Each provider's rules for a conversation, checked and repaired in one place.

Contract:

- ``problems(messages, provider)`` lists every rule the conversation breaks for
  that provider, each with the message index and field, and changes nothing.
- ``ensure_valid(messages, provider)`` returns a conversation with no problem,
  and the problems it repaired. It is idempotent
  (``ensure_valid(ensure_valid(m).messages)`` repairs nothing) and never mutates
  its input. Every strategy's output goes through it, and it repairs a broken
  history on its own.
- Repairs remove as little as they can and never invent content: a tool result
  answering no pending call is dropped; a tool call no result answers is
  removed from its message; a message left with nothing a provider accepts is
  dropped. The one addition is a short user turn, ``CONTINUED``, placed before
  a conversation that would otherwise open on the assistant's turn where the
  provider requires a user turn first.

The rules (``tool`` messages are written as user turns for Anthropic, and
reasoning travels inside the assistant message that follows it):

============================  ======  =========  =========
rule                          openai  responses  anthropic
============================  ======  =========  =========
no orphan tool result         yes     yes        yes
no unanswered tool call       yes     yes        yes
assistant turn has content    yes     yes        yes
user turn has content         no*     no*        yes
no blank text block           no      no         yes
first turn is the user's      no      no         yes
============================  ======  =========  =========

"Content" is a tool call, an image, a tool result, non-blank text or an
``Opaque`` part (a document, a file, a refusal, audio) that the writer for
the provider keeps (its own, or one with an equivalent there: an audio
reply has none in Anthropic's shape): reasoning alone is not a turn (OpenAI
rejects a reasoning item with nothing after it). (*) A user turn whose
parts are all opaque ones the writer leaves out would be written as an
empty list, which OpenAI rejects: it is dropped for every provider.
Anthropic merges consecutive turns of one role, so once the first turn is the
user's, roles alternate after merging. Tool-call arguments need no rule: a
``ToolCall`` holds JSON alone (no ``NaN``), and Anthropic's writer sends
arguments that are not a JSON object (an array, a number, a freeform tool's
string) as ``{"input": <the value>}``, so every call can be written.

One more Anthropic rule is kept, not checked: with thinking enabled, the
assistant turn that opens the tool loop a conversation ends in must open
with its ``thinking`` (or ``redacted_thinking``) block, sent back complete
and unmodified. Claude thinks at the start of a turn, after a user message
that is not only tool results, so in a long loop only that first assistant
message holds one. ``problems`` cannot tell from a conversation alone that a
thinking block is missing there (a loop whose opener was dropped looks like
one that never used thinking, and there is no repair: a signature cannot be
made up), so the strategies keep what the rule needs instead:
``thinking_turn`` names it, and ``strategies.base.final_indices`` pins it.

Example:
    >>> from contextwindow.messages import Message, ToolCall
    >>> broken = [
    ...     Message.assistant("Hello!"),
    ...     Message.tool("t9", "stale output"),
    ...     Message.user("hi"),
    ...     Message.assistant(tool_calls=[ToolCall("t1", "ls")]),
    ... ]
    >>> for p in problems(broken, "anthropic"):
    ...     print(p.path, "-", p.reason)
    messages[0].role - the first turn after the system prompt must be a user turn
    messages[1].parts[0].call_id - tool result answers no pending tool call
    messages[3].parts - tool call has no result
    >>> fixed = ensure_valid(broken, "anthropic").messages
    >>> [(m.role, m.text) for m in fixed]
    [('user', '(continued)'), ('assistant', 'Hello!'), ('user', 'hi')]
    >>> problems(fixed, "anthropic")
    ()
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from contextwindow._args import check_int
from contextwindow._lru import LRU
from contextwindow.formats._coerce import neutral
from contextwindow.formats._opaque import kept
from contextwindow.handles import with_origin
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Part,
    Provider,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    check_provider,
    fresh_units,
    units,
)

__all__ = [
    "CONTINUED",
    "Problem",
    "Valid",
    "ensure_valid",
    "neutral_ensure_valid",
    "neutral_problems",
    "problems",
    "thinking_turn",
]

CONTINUED = "(continued)"
"""The text of the user turn placed before a conversation that must not open on
the assistant's turn (Anthropic). Its id is ``CONTINUED_ID``, so the same
repair gives the same message every time (a stable prefix for prompt caches)."""
CONTINUED_ID = "contextwindow-continued"

Fix = Literal["drop_message", "drop_parts", "insert_user"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule, where it is, and how ``ensure_valid`` repairs it.

    Example:
        >>> from contextwindow.messages import Message
        >>> p = problems([Message.tool("x", "out")], "openai")[0]
        >>> (p.index, p.path, p.fix)
        (0, 'messages[0].parts[0].call_id', 'drop_message')
    """

    index: int
    """The index of the message at fault (for ``insert_user``: the message the
    user turn goes before)."""
    path: str
    """The field at fault, e.g. ``messages[4].parts[1].call_id``."""
    reason: str
    """What rule it breaks."""
    fix: Fix
    """``drop_message``, ``drop_parts`` (the faulty parts leave the message) or
    ``insert_user`` (``CONTINUED`` goes before the message)."""


@dataclass(frozen=True, slots=True)
class Valid:
    """What ``ensure_valid`` returns.

    Example:
        >>> from contextwindow.messages import Message
        >>> v = ensure_valid([Message.user("hi")], "openai")
        >>> (len(v.messages), v.problems)
        (1, ())
    """

    messages: tuple[Message, ...]
    """The conversation, valid for the provider."""
    problems: tuple[Problem, ...]
    """What was repaired, with indices into the input."""
    before: tuple[Message | None, ...] = ()
    """For each problem: the input message it touched (``None`` for an insert)."""
    after: tuple[Message | None, ...] = ()
    """For each problem: the message that replaced it (``None`` when dropped)."""


def problems(
    messages: Sequence[Message], provider: Provider, *, start: int = 0
) -> tuple[Problem, ...]:
    """Every rule of ``provider`` that ``messages`` break, in message order.

    Args:
        messages: The conversation, in the neutral form.
        provider: ``openai``, ``responses`` or ``anthropic``.
        start: Check only ``messages[start:]``: the caller knows
            ``messages[:start]`` is valid and that a unit starts at
            ``start`` (a manager that appended to a checked view). Cost
            then grows with the tail, not the history.

    Raises:
        ContextWindowError: An unknown provider.

    Example:
        >>> from contextwindow.messages import Message, ToolCall
        >>> calls = [ToolCall("a", "f"), ToolCall("b", "g")]
        >>> conv = [Message.user("hi"), Message.assistant(tool_calls=calls),
        ...         Message.tool("a", "1")]
        >>> [(p.path, p.reason) for p in problems(conv, "openai")]
        [('messages[1].parts[1]', 'tool call has no result')]
    """
    check_provider(provider)
    check_int(start, "start", low=0)
    return neutral_problems(
        neutral(messages, hint=provider, start=start), provider, start=start
    )


def neutral_problems(
    messages: Sequence[Message], provider: Provider, *, start: int = 0
) -> tuple[Problem, ...]:
    """``problems`` for ``Message`` objects: the core's, unchecked, call."""
    check_provider(provider)
    if not start:
        return _problems(messages, provider, 0, opened=False)
    # A turn before ``start`` was checked already: the first-turn rule is met.
    opened = any(m.role != "system" for m in itertools.islice(messages, start))
    return _problems(messages[start:], provider, start, opened=opened)


def _problems(
    messages: Sequence[Message], provider: Provider, offset: int, *, opened: bool
) -> tuple[Problem, ...]:
    """The problems of ``messages``, indexed as if they began at ``offset``."""
    anthropic = provider == "anthropic"
    found: list[Problem] = []
    unanswered: dict[int, list[int]] = {}
    # A tail (``offset``) is a sequence of its own that nothing asks about
    # again: grouped, not remembered (the units cache would hold a copy).
    for unit in units(messages) if not offset else fresh_units(messages):
        if unit.kind == "orphan_results":
            found.extend(
                _orphan(messages, i, offset) for i in range(unit.start, unit.stop)
            )
        elif unit.unanswered:
            calls = [k for k, p in enumerate(messages[unit.start].parts) if _is_call(p)]
            unanswered[unit.start] = [calls[pos] for pos in unit.unanswered]
    dropped = {p.index - offset for p in found}
    for i, m in enumerate(messages):
        role = m.role
        if (
            not anthropic
            and role != "assistant"
            # Checked inline: a usual user turn does not open on an opaque part.
            and not (m.parts and type(m.parts[0]) is Opaque and _emptied(m, provider))
        ):
            continue  # OpenAI's rules for other turns are all about units
        if i in dropped:  # an orphan: dropped whole, so nothing more to strip
            continue
        gone = unanswered.get(i, ())
        # The common cases, checked without building lists.
        if not gone and (
            role == "system"
            or (_clean(m.parts, provider) if anthropic else _content(m.parts, provider))
        ):
            continue
        at = i + offset
        if role in ("assistant", "user"):
            kept = [p for k, p in enumerate(m.parts) if k not in gone]
            if not _content(kept, provider):
                thinking = any(isinstance(p, Thinking) for p in kept)
                what = "reasoning only" if thinking else "no content"
                reason = "tool call has no result" if gone else f"{m.role} turn: {what}"
                found.append(
                    Problem(at, f"messages[{at}].parts", reason, "drop_message")
                )
                dropped.add(i)
                continue
        found.extend(
            Problem(
                at,
                f"messages[{at}].parts[{k}]",
                "tool call has no result",
                "drop_parts",
            )
            for k in gone
        )
        if anthropic and m.role != "system":
            found.extend(
                Problem(
                    at,
                    f"messages[{at}].parts[{k}].text",
                    "blank text block",
                    "drop_parts",
                )
                for k, p in enumerate(m.parts)
                if isinstance(p, Text) and not _not_blank(p.text)
            )
    if anthropic and not opened:
        first = next(
            (
                i
                for i, m in enumerate(messages)
                if m.role != "system" and i not in dropped
            ),
            None,
        )
        if first is not None and messages[first].role == "assistant":
            at = first + offset
            found.append(
                Problem(
                    at,
                    f"messages[{at}].role",
                    "the first turn after the system prompt must be a user turn",
                    "insert_user",
                )
            )
    found.sort(key=lambda p: p.index)
    return tuple(found)


def ensure_valid(
    messages: Sequence[Message], provider: Provider, *, start: int = 0
) -> Valid:
    """Repair ``messages`` so that ``provider`` accepts them (see the module).

    Args:
        messages: The conversation; never mutated.
        provider: ``openai``, ``responses`` or ``anthropic``.
        start: As for ``problems``: ``messages[:start]`` is known valid and a
            unit starts there, so only the rest is checked.

    Returns:
        The valid conversation and the problems repaired. A valid input comes
        back as the same messages, in a tuple.

    Raises:
        ContextWindowError: An unknown provider.

    Example:
        >>> from contextwindow.messages import Message, ToolCall
        >>> conv = [Message.user("hi"),
        ...         Message.assistant("Let me look.", tool_calls=[ToolCall("a", "ls")])]
        >>> v = ensure_valid(conv, "openai")
        >>> v.messages[1].tool_calls, v.messages[1].text
        ((), 'Let me look.')
    """
    check_provider(provider)
    check_int(start, "start", low=0)
    return neutral_ensure_valid(
        neutral(messages, hint=provider, start=start), provider, start=start
    )


def neutral_ensure_valid(
    messages: Sequence[Message], provider: Provider, *, start: int = 0
) -> Valid:
    """``ensure_valid`` for ``Message`` objects: the core's, unchecked, call."""
    found = neutral_problems(messages, provider, start=start)
    if not found:
        return Valid(tuple(messages), ())
    drop = {p.index for p in found if p.fix == "drop_message"}
    strip: dict[int, set[int]] = {}
    for p in found:
        if p.fix == "drop_parts":
            strip.setdefault(p.index, set()).add(_part_index(p.path))
    insert = next((p.index for p in found if p.fix == "insert_user"), None)
    first = found[0].index  # problems come in message order
    out: list[Message] = list(messages[:first])
    replaced: dict[int, Message | None] = {}
    placeholder = _PLACEHOLDER
    for i in range(first, len(messages)):
        m = messages[i]
        if i == insert:
            out.append(placeholder)
        if i in drop:
            replaced[i] = None
            continue
        gone = strip.get(i)
        if gone:
            m = _stripped(m, gone)
            replaced[i] = m
        out.append(m)
    return Valid(
        tuple(out),
        found,
        tuple(None if p.fix == "insert_user" else messages[p.index] for p in found),
        tuple(
            placeholder if p.fix == "insert_user" else replaced[p.index] for p in found
        ),
    )


def thinking_turn(
    messages: Sequence[Message], provider: Provider | None
) -> tuple[int, ...]:
    """What Anthropic needs kept as it is while a loop that opened with thinking runs.

    The conversation ends inside a tool loop when its last message with
    content is tool results, or tool calls awaiting them (a reply without a
    call ends the turn), and after its last user message that is not only
    tool results (the task) every message is an assistant message, tool
    results or a system message (those go to the top-level ``system``).
    When the loop's first assistant message opens with a signed or
    redacted ``Thinking`` part (and calls a tool: it opened the loop),
    Anthropic wants that message back unmodified, still opening the loop.
    Kept with it: the task, so that the loop still starts there (without
    it, the loop would start after an earlier user message, and whatever
    assistant message followed that one would have to open with thinking).

    Args:
        messages: The conversation, in the neutral form.
        provider: The rule is Anthropic's: for any other provider, ``()``.

    Returns:
        The indices, in order: the task's (left out when the loop opens the
        conversation, or when the task is the ``CONTINUED`` turn a repair
        puts first and puts back), then the opener's; ``()`` when the
        conversation does not end inside such a loop. A user message that
        a repair drops (one with no content) is not a task.

    Example:
        >>> from contextwindow.messages import Message, Thinking, ToolCall
        >>> opener = Message.assistant(
        ...     [Thinking("Read a.py first.", signature="c2lnbmVk")],
        ...     tool_calls=[ToolCall("t1", "read")])
        >>> conv = [Message.user("Fix the bug."), opener,
        ...         Message.tool("t1", "def f(): ..."),
        ...         Message.assistant(tool_calls=[ToolCall("t2", "test")]),
        ...         Message.tool("t2", "1 failed")]
        >>> thinking_turn(conv, "anthropic"), thinking_turn(conv, "openai")
        ((0, 1), ())
        >>> thinking_turn([*conv, Message.user("Thanks!")], "anthropic")
        ()
        >>> thinking_turn([*conv, Message.assistant("Fixed.")], "anthropic")
        ()
    """
    if provider != "anthropic":
        return ()
    n = len(messages)
    end = n - 1
    # Past what the provider does not see as a turn: system messages, and
    # messages a repair drops for holding nothing (an empty reply).
    while end >= 0 and (
        messages[end].role == "system" or not _content(messages[end].parts, provider)
    ):
        end -= 1
    if end < 0 or not _in_loop(messages[end]):
        return ()  # a reply with no call ends the turn: the next opens anew
    task = end
    # Back to the task: the cost grows with the loop, one role test a message.
    while task >= 0:
        m = messages[task]
        if m.role == "user" and not _results_only(m) and _content(m.parts, provider):
            break
        task -= 1
    opener = task + 1
    while opener < n and messages[opener].role != "assistant":
        opener += 1  # system messages; results a repair drops as orphans
    if opener == n or not _opens_thinking(messages[opener]):
        return ()
    head = (task,) if task >= 0 and messages[task].id != CONTINUED_ID else ()
    return (*head, opener)


def _in_loop(m: Message) -> bool:
    """A last message that leaves the turn open: results, or calls awaiting them."""
    if m.role == "assistant":
        return any(isinstance(p, ToolCall) for p in m.parts)
    return m.role == "tool" or (m.role == "user" and _results_only(m))


def _results_only(m: Message) -> bool:
    """A user message holding tool results and nothing else (a loop's step)."""
    return bool(m.parts) and all(isinstance(p, ToolResult) for p in m.parts)


def _opens_thinking(m: Message) -> bool:
    """``m`` opens with a checked thinking block and calls a tool: a loop's opener.

    Checked: signed, or redacted. A reply with no call ended its turn: one
    that stands before a loop only because what was between went (its task
    dropped) opened none.
    """
    first = m.parts[0] if m.parts else None
    return (
        isinstance(first, Thinking)
        and (first.redacted or bool(first.signature))
        and any(isinstance(p, ToolCall) for p in m.parts)
    )


# -- helpers -----------------------------------------------------------------------

_PLACEHOLDER = Message.user(CONTINUED, id=CONTINUED_ID)
"""The user turn put first where one must open the conversation: one object,
so that a conversation repaired again is the same messages (messages are
immutable)."""

STRIPPED_KEPT = 4096
"""Messages whose repaired form (parts dropped) is kept, by identity."""

_STRIPPED: LRU[tuple[int, frozenset[int]], tuple[Message, Message]] = LRU(STRIPPED_KEPT)
_stripped_lock = threading.Lock()


def _stripped(m: Message, gone: set[int]) -> Message:
    """``m`` without the parts at ``gone``: the same object for the same message.

    A history repaired at every fit (a transcript holding blank text blocks,
    which Anthropic refuses) then comes out as the very messages it came out
    as before, so that what is kept for it by identity (the strategies'
    memos, the counter's running totals) still holds. It keeps the record of
    its original (``handles.with_origin``), so that ``context_recall`` of a
    marker standing for it finds the original in the history.
    """
    key = (id(m), frozenset(gone))
    with _stripped_lock:
        hit = _STRIPPED.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    # The original's handle goes with it: a marker or a run's line that
    # stands for this message later names what the history holds.
    new = with_origin(
        m.with_parts(p for k, p in enumerate(m.parts) if k not in gone), m
    )
    with _stripped_lock:
        _STRIPPED.put(key, (m, new))
    return new


def _is_call(part: Part) -> bool:
    return isinstance(part, ToolCall)


_CONTENT = (ToolCall, Image, ToolResult)
"""Parts that are content whatever they hold. An ``Opaque`` part (a
document, a file, a refusal, audio) is content where the provider's writer
keeps it (``formats._opaque.kept``): an audio reply has no Anthropic
equivalent, so a turn holding only one is empty there."""


def _has_content(part: Part) -> bool:
    """Content whoever writes it (an ``Opaque`` part is not: see ``_content``)."""
    if isinstance(part, Text):
        return _not_blank(part.text)
    return isinstance(part, _CONTENT)


def _content(parts: Sequence[Part], provider: Provider) -> bool:
    """Some part is content for ``provider``."""
    # ``map`` over the usual parts first: this runs on every assistant turn.
    return any(map(_has_content, parts)) or any(
        isinstance(p, Opaque) and kept(p, provider) for p in parts
    )


def _emptied(m: Message, provider: Provider) -> bool:
    """A user turn of opaque parts that the writer for ``provider`` all leaves out.

    It would be written as an empty content list, which OpenAI rejects too.
    """
    return m.role == "user" and all(
        isinstance(p, Opaque) and not kept(p, provider) for p in m.parts
    )


def _clean(parts: Sequence[Part], provider: Provider) -> bool:
    """Some content, and no blank text part."""
    content = False
    for p in parts:
        if isinstance(p, Text):
            if not _not_blank(p.text):
                return False
            content = True
        elif isinstance(p, _CONTENT) or (isinstance(p, Opaque) and kept(p, provider)):
            content = True
    return content


def _not_blank(text: str) -> bool:
    # Not ``text.strip()``: that copies a long text to look at its first
    # characters; ``isspace`` stops at the first one that is not blank.
    return bool(text) and not text.isspace()


def _orphan(messages: Sequence[Message], i: int, offset: int) -> Problem:
    first = next(
        (k for k, p in enumerate(messages[i].parts) if isinstance(p, ToolResult)), None
    )
    at = i + offset
    path = (
        f"messages[{at}].parts"
        if first is None
        else f"messages[{at}].parts[{first}].call_id"
    )
    return Problem(at, path, "tool result answers no pending tool call", "drop_message")


def _part_index(path: str) -> int:
    # "messages[3].parts[1]" or "messages[3].parts[1].text"
    return int(path.split(".parts[", 1)[1].split("]", 1)[0])
