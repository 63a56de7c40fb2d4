r"""``context_recall``: a tool the model calls to get back what was compacted.

Contract:

- Every marker a strategy leaves (a cleared, truncated, deduplicated or stale
  result, a collapsed run) names a handle (``contextwindow.handles``); a
  summary names one too (``[Summary of 12 earlier messages; recall
  9c3e5a0b1d]``: its sources, the summary found in ``view``), and is known
  by its id; a dropped message by its id (the report's ``Change.ids``).
  ``context_recall(history, handle)`` answers from the full history, which
  the strategies never change: the originals' text, within a token cap
  (head and tail beyond it, with a marker saying which lines were cut and
  how to read them). With ``start_line`` it reads on from that line of the
  text, as much as the cap holds, and says where the rest starts: so every
  line of an original of any size can be read, page by page.
- ``recall_tool(provider)`` is the tool's schema in the shape of OpenAI Chat
  Completions, Anthropic Messages or OpenAI Responses; ``RECALL_SPEC`` is the
  neutral ``ToolSpec`` (its tokens count like any tool's).
- ``answer_recall(history, call)`` turns one call of the tool into the tool
  message answering it; a bad argument or an unknown handle is an error result
  the model can read, never an exception.

Example:
    >>> from contextwindow import Message, ToolCall, fit
    >>> from contextwindow.handles import find_handles
    >>> from contextwindow.strategies import TruncateToolResults
    >>> from contextwindow.testing import FakeTokenizer
    >>> ports = "\n".join(f"port {i} = {8000 + i}" for i in range(300))
    >>> history = [Message.user("read it"),
    ...            Message.assistant(tool_calls=[ToolCall("c1", "read")]),
    ...            Message.tool("c1", ports), Message.user("and?")]
    >>> fitted = fit(history, limit=150, tokenizer=FakeTokenizer(),
    ...              strategy=TruncateToolResults(keep_recent=0, max_tokens=20))
    >>> marker = fitted.messages[2].text
    >>> (handle,) = find_handles(marker)
    >>> call = ToolCall("r1", "context_recall", f'{{"handle": "{handle}"}}')
    >>> answer = answer_recall(history, call, tokenizer=FakeTokenizer())
    >>> (len(marker) < len(ports) // 4, answer.text == ports)
    (True, True)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from contextwindow._args import as_tokenizer, check_int, check_str, shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.formats._coerce import neutral
from contextwindow.formats._opaque import opaque_text
from contextwindow.handles import originals
from contextwindow.messages import (
    Message,
    Opaque,
    Provider,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    check_provider,
)
from contextwindow.strategies.tool_results import head_and_tail, truncate
from contextwindow.summarizers.record import (
    is_summary,
    recall,
    summary_handle,
    summary_sources,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.heuristic import HeuristicTokenizer

__all__ = [
    "DEFAULT_RECALL_TOKENS",
    "RECALL_SPEC",
    "RECALL_TOOL",
    "answer_recall",
    "context_recall",
    "recall_tool",
    "render",
]

RECALL_TOOL = "context_recall"
"""The tool's name."""

DEFAULT_RECALL_TOKENS = 4000
"""The most tokens one recall returns unless the call asks for fewer or more."""

MAX_RECALL_TOKENS = 32000
"""The most tokens one recall may return, whatever the call asks."""

RECALL_SPEC = ToolSpec(
    RECALL_TOOL,
    "Get back the original of content compacted out of this conversation. "
    "Markers such as '[tool result cleared: 2,637 tokens; recall 3f2a9c1b0d]' "
    "name a handle; so does a summary ('[Summary of 12 earlier messages; "
    "recall 9c3e5a0b1d]': the messages it replaced).",
    {
        "type": "object",
        "properties": {
            "handle": {
                "type": "string",
                "description": "The handle a marker names (e.g. 3f2a9c1b0d or "
                "3f2a9c1b0d+12), or a message id.",
            },
            "max_tokens": {
                "type": "integer",
                "description": "The most tokens to return (default "
                f"{DEFAULT_RECALL_TOKENS}, at most {MAX_RECALL_TOKENS}).",
            },
            "start_line": {
                "type": "integer",
                "description": "Read on from this line of the original (1 is "
                "the first): the lines a cut left out.",
            },
        },
        "required": ["handle"],
    },
)
"""The neutral schema of ``context_recall``."""


def recall_tool(provider: Provider = "openai") -> dict[str, Any]:
    """The schema of ``context_recall`` in ``provider``'s shape.

    Raises:
        ContextWindowError: An unknown provider.

    Example:
        >>> recall_tool("anthropic")["input_schema"]["required"]
        ['handle']
        >>> recall_tool("openai")["function"]["name"]
        'context_recall'
        >>> recall_tool("responses")["type"], recall_tool("responses")["name"]
        ('function', 'context_recall')
    """
    check_provider(provider)
    spec = RECALL_SPEC
    params = json.loads(json.dumps(dict(spec.parameters)))  # a copy to own
    if provider == "anthropic":
        return {
            "name": spec.name,
            "description": spec.description,
            "input_schema": params,
        }
    if provider == "responses":
        return {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": params,
        }
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": params,
        },
    }


def render(messages: Sequence[Message]) -> str:
    """The originals as text, for the model.

    A lone tool message's output as it was; else one block per message (role,
    text, calls with their arguments, results, and opaque content as its text
    or a label: ``[document 'Terms', PDF, 12 pages]``).

    Example:
        >>> print(render([Message.user("hi"), Message.assistant("hello")]))
        user: hi
        assistant: hello
    """
    if len(messages) == 1 and messages[0].role == "tool":
        return messages[0].text
    blocks: list[str] = []
    for m in messages:
        lines: list[str] = []
        for p in m.parts:
            if isinstance(p, Text) and p.text:
                lines.append(p.text)
            elif isinstance(p, ToolCall):
                lines.append(f"called {p.name} {p.arguments}")
            elif isinstance(p, ToolResult):
                lines.append(f"result of {p.call_id}: {p.text}")
            elif isinstance(p, Opaque):
                lines.append(opaque_text(p))
        blocks.append(f"{m.role}: " + "\n".join(lines))
    return "\n".join(blocks)


def context_recall(
    history: Sequence[Message],
    handle: str,
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    tokenizer: Tokenizer | None = None,
    view: Sequence[Message] = (),
    start_line: int | None = None,
) -> str | None:
    r"""The original text a handle names, within ``max_tokens``; ``None`` if unknown.

    Args:
        history: The full history (what ``fit`` was given, a manager's log).
        handle: A marker's handle, a message id, or a summary's id.
        max_tokens: The most tokens returned (head and tail beyond it).
        tokenizer: Counts them (default: the heuristic).
        view: The conversation sent (where summaries live), for a summary's id.
        start_line: Read from this line (1 is the first) on, as many lines
            as ``max_tokens`` holds, saying where the rest starts.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> history = [Message.tool("c1", "\n".join(f"line {i}" for i in range(1, 9)))]
        >>> h = history[0].id
        >>> print(context_recall(history, h, max_tokens=8, tokenizer=FakeTokenizer()))
        line 1
        line 2
        [... 8 tokens cut: lines 3-6 of 8; recall with start_line=3 to read them ...]
        line 7
        line 8
        >>> print(context_recall(history, h, max_tokens=6, tokenizer=FakeTokenizer(),
        ...                      start_line=3))
        [lines 3-5 of 8]
        line 3
        line 4
        line 5
        [lines 6-8 follow: recall with start_line=6]
    """
    history = neutral(history, name="history")
    view = neutral(view, name="view")
    check_str(handle, "handle")
    check_int(max_tokens, "max_tokens", low=1)
    if start_line is not None:
        check_int(start_line, "start_line", low=1)
    tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
    found = originals(history, handle)
    if not found:
        wanted = handle.strip()
        for m in view:
            if is_summary(m) and wanted in (m.id, summary_handle(m)):
                found = recall(history, summary_sources(m))
                break
    if not found:
        return None
    text = render(found)
    tok = tokenizer or HeuristicTokenizer()
    cap = max(1, min(max_tokens, MAX_RECALL_TOKENS))
    if start_line is not None and start_line > 1:
        return _page(text, start_line, cap, tok)
    return _whole(text, cap, tok)


def _whole(text: str, cap: int, tok: Tokenizer) -> str:
    """``text``, or its head and tail and which lines lie between (to page on)."""
    found = head_and_tail(text, cap, tok)
    if found is None:
        return text
    head, middle, tail, cut = found
    nl = "\n"
    # The lines of ``text`` whose content the middle holds (whole or in
    # part), 1 the first: from its first character that ends no line before.
    start = len(head) + len(middle) - len(middle.lstrip(nl))
    stop = len(head) + len(middle.rstrip(nl))
    first = text.count(nl, 0, start) + 1
    last = text.count(nl, 0, stop) + 1
    what = f"{cut:,} tokens cut"
    if middle.strip(nl) and first <= last:
        n = text.count(nl) + 1
        what += (
            f": lines {first:,}-{last:,} of {n:,}; "
            f"recall with start_line={first} to read them"
        )
    return f"{head.rstrip(nl)}{nl}[... {what} ...]{nl}{tail.lstrip(nl)}"


def _page(text: str, start: int, cap: int, tok: Tokenizer) -> str:
    """``text`` from line ``start`` on, as many whole lines as ``cap`` holds."""
    lines = text.split("\n")
    n = len(lines)
    if start > n:
        return f"[the original has {n:,} lines; start_line {start:,} is past its end]"
    rest = lines[start - 1 :]
    # The most lines within the cap (at least one, cut if it alone is over).
    lo, hi = 1, len(rest)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tok.count("\n".join(rest[:mid])) <= cap:
            lo = mid
        else:
            hi = mid - 1
    shown = "\n".join(rest[:lo])
    one = truncate(shown, cap, tok) if lo == 1 else None
    end = start + lo - 1
    page = f"[lines {start:,}-{end:,} of {n:,}]\n{shown if one is None else one}"
    if end < n:
        page += f"\n[lines {end + 1:,}-{n:,} follow: recall with start_line={end + 1}]"
    return page


def answer_recall(
    history: Sequence[Message],
    call: ToolCall,
    *,
    tokenizer: Tokenizer | None = None,
    view: Sequence[Message] = (),
) -> Message:
    """The tool message answering one ``context_recall`` call.

    A call without a string ``handle``, with a bad ``max_tokens`` or
    ``start_line``, or naming nothing the history holds gets an error result
    saying so.
    """
    if not isinstance(call, ToolCall):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("call", shown(call), "a ToolCall")
    history = neutral(history, name="history")
    view = neutral(view, name="view")
    tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
    args: Any = call.input
    given = cast("dict[str, Any]", args) if isinstance(args, dict) else {}
    handle = given.get("handle")
    limit = given.get("max_tokens", DEFAULT_RECALL_TOKENS)
    start = given.get("start_line")
    if not isinstance(handle, str) or not handle.strip():
        return _error(call, "context_recall needs a 'handle' (a string)")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return _error(call, "max_tokens must be a positive integer")
    if start is not None and (
        not isinstance(start, int) or isinstance(start, bool) or start < 1
    ):
        return _error(call, "start_line must be a positive integer (1 is the first)")
    text = context_recall(
        history,
        handle,
        max_tokens=limit,
        tokenizer=tokenizer,
        view=view,
        start_line=start,
    )
    if text is None:
        return _error(call, f"no original for handle {handle.strip()[:40]!r}")
    return Message.tool(call.id, text, name=RECALL_TOOL)


def _error(call: ToolCall, why: str) -> Message:
    return Message.tool(call.id, why, is_error=True, name=RECALL_TOOL)
