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
  text, as much as the cap holds, and says where the rest starts; a line
  longer than a page is read a piece at a time (``start_char``): so every
  line of an original of any size, even one line of minified JSON, can be
  read, page by page. The notes saying so fit within the cap, which is at
  least ``MIN_RECALL_TOKENS``. A page counts about what it holds, never
  the rest of the original, so reading a large one costs what it holds.
- Every cut is found again: a run's line gives the stretch of history its
  messages lie in, also where the view it was made in had left a message
  out between them (a repair drops an unanswered call, an orphan result,
  an empty turn; a run's line in ``view`` anchors one a transform made),
  those messages included. A summary is known in ``view`` by its record,
  or by its header where the view's shape lost the record (the provider
  dicts ``Fitted.as_input()`` gives). An image, which text cannot bring
  back, is said by a label of its size and type
  (``[image 1024x768, image/png]``).
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
from contextwindow._images import decode_base64, image_size, parse_data_uri
from contextwindow.errors import ArgumentTypeError
from contextwindow.formats._coerce import neutral
from contextwindow.formats._opaque import opaque_text, read_opaque
from contextwindow.handles import (
    HANDLE_PATTERN,
    find_handles,
    handle_of,
    originals,
    run_originals,
)
from contextwindow.messages import (
    Image,
    Message,
    Opaque,
    Provider,
    Text,
    ToolCall,
    ToolResult,
    ToolSpec,
    check_provider,
)
from contextwindow.strategies.tool_results import head_and_tail
from contextwindow.summarizers.record import (
    is_summary,
    summary_handle,
    summary_header,
    summary_originals,
)
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.heuristic import HeuristicTokenizer
from contextwindow.validity import neutral_ensure_valid

__all__ = [
    "DEFAULT_RECALL_TOKENS",
    "MIN_RECALL_TOKENS",
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
            "start_char": {
                "type": "integer",
                "description": "Read line start_line on from this character "
                "(1 is the first): the rest of a line too long for one page.",
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
    or a label: ``[document 'Terms', PDF, 12 pages]``). An image, in a
    message or in a result, is a label of its size and its type (or its
    URL), ``[image 1024x768, image/png]``: the text says that an image was
    there, and what it was, where the image itself cannot go back.

    Example:
        >>> print(render([Message.user("hi"), Message.assistant("hello")]))
        user: hi
        assistant: hello
        >>> shot = Image("data:image/png;base64,iVBORw0KGgo=", width=1024, height=768)
        >>> print(render([Message.tool("c1", (Text("screen 0:"), shot))]))
        screen 0:
        [image 1024x768, image/png]
    """
    if len(messages) == 1 and messages[0].role == "tool":
        return "\n".join(
            p.text if isinstance(p, Text) else _output(p)
            for p in messages[0].parts
            if isinstance(p, (Text, ToolResult))
        )
    blocks: list[str] = []
    for m in messages:
        lines: list[str] = []
        for p in m.parts:
            if isinstance(p, Text) and p.text:
                lines.append(p.text)
            elif isinstance(p, ToolCall):
                lines.append(f"called {p.name} {p.arguments}")
            elif isinstance(p, ToolResult):
                lines.append(f"result of {p.call_id}: {_output(p)}")
            elif isinstance(p, Opaque):
                lines.append(opaque_text(p))
            elif isinstance(p, Image):
                lines.append(_image_label(p))
        blocks.append(f"{m.role}: " + "\n".join(lines))
    return "\n".join(blocks)


def _output(result: ToolResult) -> str:
    """A result's text (``ToolResult.text``), with labels for what holds no text.

    An image, and an opaque part that holds no text (a PDF), get a label.
    """
    if isinstance(result.content, str):
        return result.content
    out: list[str] = []
    for p in result.content:
        if isinstance(p, Text):
            out.append(p.text)
        elif isinstance(p, Image):
            out.append(_image_label(p))
        else:
            out.append(read_opaque(p).text or opaque_text(p))
    return "\n".join(out)


_URL_CHARS = 200
"""The most characters of an image's URL its label shows."""


def _image_label(image: Image) -> str:
    """What a recall says of an image: its size, and its type or its URL.

    The size is the one the part gives, else the one its ``data:`` URI's
    header says; a URL is shown (up to ``_URL_CHARS`` characters) so that
    the image can be fetched again, a ``data:`` URI's bytes never.

    Example:
        >>> _image_label(Image("https://example.com/cat.png", width=800, height=600))
        '[image 800x600, https://example.com/cat.png]'
        >>> _image_label(Image("data:image/png;base64,iVBORw0KGgo="))
        '[image, image/png]'
    """
    parsed = parse_data_uri(image.url)
    size = (image.width, image.height) if image.width and image.height else None
    if size is None and parsed is not None:
        data = parsed[1]
        size = image_size(decode_base64(data, 64)) or image_size(decode_base64(data))
    what = [f"image {size[0]}x{size[1]}" if size else "image"]
    if image.url.startswith("data:"):
        what.append(image.media_type or "data")
    elif len(image.url) > _URL_CHARS:
        what.append(image.url[:_URL_CHARS] + "...")
    else:
        what.append(image.url)
    return f"[{', '.join(what)}]"


def context_recall(
    history: Sequence[Message],
    handle: str,
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    tokenizer: Tokenizer | None = None,
    view: Sequence[Message] = (),
    start_line: int | None = None,
    start_char: int | None = None,
) -> str | None:
    r"""The original text a handle names, within ``max_tokens``; ``None`` if unknown.

    Args:
        history: The full history (what ``fit`` was given, a manager's log).
        handle: A marker's handle (the marker's words around it are read
            too: ``recall 3f2a9c1b0d``), a message id, or a summary's id.
        max_tokens: The most tokens returned, the notes saying what was cut
            included (head and tail beyond it); at least
            ``MIN_RECALL_TOKENS`` (a smaller cap is raised to it: the notes
            alone take a few dozen), at most ``MAX_RECALL_TOKENS``.
        tokenizer: Counts them (default: the heuristic).
        view: The conversation sent (where summaries live), for a summary's
            handle or id, in any shape: ``fitted.messages``, or the provider
            dicts ``fitted.as_input()`` gave (a summary then known by its
            header).
        start_line: Read from this line (1 is the first) on, as many lines
            as ``max_tokens`` holds, saying where the rest starts.
        start_char: Read line ``start_line`` (default 1) from this character
            on (1 is the first): a line too long for one page (a minified
            JSON reply) is read a piece at a time, each saying where the
            next starts.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> lines = "\n".join(f"line {i}" for i in range(1, 201))
        >>> history = [Message.tool("c1", lines)]
        >>> h, tok = history[0].id, FakeTokenizer()
        >>> cut = context_recall(history, h, max_tokens=100, tokenizer=tok)
        >>> [note for note in cut.splitlines() if note.startswith("[")]
        ['[... 320 tokens cut: lines 22-181 of 200; recall with start_line=22 to read them ...]']
        >>> page = context_recall(history, h, max_tokens=100, tokenizer=tok,
        ...                       start_line=22).splitlines()
        >>> page[0], page[1], page[-2], page[-1]
        ('[lines 22-63 of 200]', 'line 22', 'line 63', '[lines 64-200 follow: recall with start_line=64]')

        One line of minified JSON, longer than a page, is read a piece at a time:

        >>> sku = ",".join(f"SKU-{i:05d}" for i in range(3000))
        >>> one = [Message.tool("c1", sku)]
        >>> context_recall(one, one[0].id, max_tokens=200).splitlines()[1]
        '[... 17,178 tokens cut: lines 1-1 of 1; recall with start_line=1, start_char=121 to read them ...]'
        >>> piece = context_recall(one, one[0].id, max_tokens=200, start_char=121)
        >>> print(piece.replace(sku[140:330], " ... "))
        [line 1 of 1, characters 121-340 of 29,999]
        SKU-00012,SKU-00013, ... SKU-00033,
        [line 1 goes on: recall with start_line=1, start_char=341]
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    history = neutral(history, name="history")
    view = neutral(view, name="view")
    check_str(handle, "handle")
    check_int(max_tokens, "max_tokens", low=1)
    if start_line is not None:
        check_int(start_line, "start_line", low=1)
    if start_char is not None:
        check_int(start_char, "start_char", low=1)
    tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
    wanted = handle.strip()
    found = _found(history, view, wanted)
    if not found:
        # A model may paste the marker's words with it ("recall 3f2a9c1b0d").
        named = set(find_handles(wanted))
        if len(named) == 1:
            found = _found(history, view, named.pop())
    if not found:
        return None
    text = render(found)
    tok = tokenizer or HeuristicTokenizer()
    cap = max(MIN_RECALL_TOKENS, min(max_tokens, MAX_RECALL_TOKENS))
    line, char = start_line or 1, start_char or 1
    if line > 1 or char > 1:
        return _page(text, line, char, cap, tok)
    return _whole(text, cap, tok)


def _found(
    history: Sequence[Message], view: Sequence[Message], wanted: str
) -> list[Message]:
    """What ``wanted`` names: a marker's or a run's handle, an id, a summary's.

    A run is looked for in the history, then across what a repair of it
    leaves out, then from its line in ``view`` (``run_originals``: whatever
    the view left out between its messages). A summary is found in
    ``view`` by its ``meta``, or, where the view's shape lost it (provider
    dicts), by its header, and then its originals by content: its handle
    is that of the messages it replaced, as a run's.
    """
    found = originals(history, wanted) or _across_repairs(history, wanted)
    if found:
        return found
    run = "+" in wanted
    for k, m in enumerate(view):
        if is_summary(m):
            if wanted in (m.id, summary_handle(m)):
                return summary_originals(history, m)
        elif run and handle_of(m) == wanted:
            after = view[k + 1] if k + 1 < len(view) else None
            found = run_originals(history, m, after)
            if found:
                return found
        elif not run:
            header = summary_header(m)
            if header is not None and header[0] == wanted:
                span = f"{wanted}+{header[1]}"
                return originals(history, span) or _across_repairs(history, span)
    return []


_PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "responses")
"""Whose repairs a run may have been made across (they differ: Anthropic's
drops blank turns the others keep)."""


def _across_repairs(history: Sequence[Message], handle: str) -> list[Message]:
    """The stretch of ``history`` a run's handle (``h+n``) names across repairs.

    A run is made of the messages of a view, and a view is repaired
    (``validity.ensure_valid``): an unanswered call, an orphan result or an
    empty turn in the history is not in it, so the run is no window of the
    history but one of what the repair kept. Each provider's repair of the
    history is tried; ``[]`` when none holds it. Costs one repair of the
    history per provider, only for a run's handle that ``originals`` did not
    find.
    """
    m = HANDLE_PATTERN.fullmatch(handle)
    if m is None or m.group(2) is None:
        return []
    tried: set[tuple[int, ...]] = set()
    for provider in _PROVIDERS:
        kept = _kept(history, neutral_ensure_valid(history, provider).messages)
        if len(kept) == len(history) or kept in tried:
            continue  # nothing left out: ``originals`` looked there
        tried.add(kept)
        found = originals(history, handle, kept=kept)
        if found:
            return found
    return []


def _kept(history: Sequence[Message], repaired: Sequence[Message]) -> tuple[int, ...]:
    """Where in ``history`` each message of its repair ``repaired`` is.

    A repair keeps the messages it does not change, and the id of one it
    strips (a call no result answers, a blank text block), in order; the
    turn it may put first (``CONTINUED``) is in no history.
    """
    out: list[int] = []
    k, n = 0, len(history)
    for r in repaired:
        j = k
        while j < n and history[j] is not r and history[j].id != r.id:
            j += 1
        if j < n:
            out.append(j)
            k = j + 1
    return tuple(out)


MIN_RECALL_TOKENS = 100
"""The least ``max_tokens`` a recall takes (a smaller one is raised to it):
the notes saying what was cut and where to read on take up to about 40."""

_WHOLE_NOTE = (
    "\n[... 99,999,999 tokens cut: lines 9,999,999-9,999,999 of 9,999,999; recall "
    "with start_line=9999999, start_char=99999999 to read them ...]\n"
)
_PAGE_NOTES = (
    "[line 9,999,999 of 9,999,999, characters 99,999,999-99,999,999 of "
    "99,999,999]\n\n[line 9,999,999 goes on: recall with start_line=9999999, "
    "start_char=99999999]"
)
"""The longest notes a recall adds: their tokens come out of the cap."""


def _whole(text: str, cap: int, tok: Tokenizer) -> str:
    """``text``, or its head and tail and which lines lie between (to page on)."""
    if tok.count(text) <= cap:
        return text
    found = head_and_tail(text, max(1, cap - tok.count(_WHOLE_NOTE)), tok)
    if found is None:  # pragma: no cover -- it was over the cap, and is over less
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
        # The middle may start inside a line (a line longer than the head):
        # then reading on starts at its character, not again at the line.
        char = start - (text.rfind(nl, 0, start) + 1) + 1
        at = f"start_line={first}" + (f", start_char={char}" if char > 1 else "")
        what += f": lines {first:,}-{last:,} of {n:,}; recall with {at} to read them"
    return f"{head.rstrip(nl)}{nl}[... {what} ...]{nl}{tail.lstrip(nl)}"


def _page(text: str, start: int, char: int, cap: int, tok: Tokenizer) -> str:
    """``text`` from line ``start`` (its character ``char``) on, within ``cap``.

    As many whole lines as the cap holds; when not even the first does, as
    much of it as does, saying where the rest of it starts. What is counted
    is at most about twice what the page holds (``_fitting``), never the
    rest of the text: reading a large original page by page costs what its
    pages hold, not their number times its size.
    """
    lines = text.split("\n")
    n = len(lines)
    if start > n:
        return f"[the original has {n:,} lines; start_line {start:,} is past its end]"
    whole = lines[start - 1]
    if char > max(1, len(whole)):
        return (
            f"[line {start:,} has {len(whole):,} characters; "
            f"start_char {char:,} is past its end]"
        )
    first = whole[char - 1 :]
    room = max(1, cap - tok.count(_PAGE_NOTES))
    # Where the page starts in ``text``: the lines before it, each with its "\n".
    at = sum(map(len, lines[: start - 1])) + start - 1 + char - 1
    size = _fitting(text, at, room, tok)
    held = 0  # the whole lines the page holds
    if size >= len(first):
        stop = at + size
        held = text.count("\n", at, stop)
        if stop == len(text) or text[stop] == "\n":
            held += 1  # its last line ends where the page does
    # Counted as the page will show them (a tokenizer may count a shorter
    # text as more): the most lines that fit, the first one, or a piece of it.
    while (
        held and tok.count("\n".join([first, *lines[start : start + held - 1]])) > room
    ):
        held -= 1
    if not held:
        if size >= len(first):
            size = _fitting(first, 0, room, tok)
        return _piece(whole, start, n, char, _at_word(first, size))
    end = start + held - 1
    where = f", line {start:,} from character {char:,}" if char > 1 else ""
    body = "\n".join([first, *lines[start:end]])
    page = f"[lines {start:,}-{end:,} of {n:,}{where}]\n" + body
    if end < n:
        page += f"\n[lines {end + 1:,}-{n:,} follow: recall with start_line={end + 1}]"
    return page


def _piece(line: str, at: int, n: int, char: int, size: int) -> str:
    """Characters ``char`` on of line ``at``, ``size`` of them, and where on."""
    last = char - 1 + size
    page = (
        f"[line {at:,} of {n:,}, characters {char:,}-{last:,} of {len(line):,}]\n"
        f"{line[char - 1 : last]}\n"
    )
    if last < len(line):
        return page + (
            f"[line {at:,} goes on: recall with start_line={at}, start_char={last + 1}]"
        )
    if at < n:
        return (
            page + f"[lines {at + 1:,}-{n:,} follow: recall with start_line={at + 1}]"
        )
    return page + "[the end of the original]"


def _fitting(text: str, at: int, room: int, tok: Tokenizer) -> int:
    """How many characters of ``text`` from ``at`` on fit ``room`` tokens.

    At least one, where there is one (a page always moves on). Grown from a
    guess, doubling, then narrowed: each count is of at most about twice
    what fits, so the cost is that of the page, not of the text after it.
    """
    left = len(text) - at
    if left <= 0:
        return 0
    hi = min(left, max(64, room * 4))
    while hi < left and tok.count(text[at : at + hi]) <= room:
        hi = min(left, hi * 2)
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tok.count(text[at : at + mid]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _at_word(text: str, size: int) -> int:
    """``size``, moved back to a word's start when it cuts a word near one."""
    lo = min(size, len(text))
    if lo < len(text) and not text[lo].isspace():
        space = max(text.rfind(" ", 0, lo), text.rfind(",", 0, lo))
        if space >= lo * 3 // 4:
            lo = space + 1
    return lo


def answer_recall(
    history: Sequence[Message],
    call: ToolCall,
    *,
    tokenizer: Tokenizer | None = None,
    view: Sequence[Message] = (),
) -> Message:
    """The tool message answering one ``context_recall`` call.

    A call without a string ``handle``, with a bad ``max_tokens``,
    ``start_line`` or ``start_char``, or naming nothing the history holds
    gets an error result saying so. A ``null`` field is taken as absent
    (models send one for what they leave out; OpenAI's strict mode sends
    every field).
    """
    if not isinstance(call, ToolCall):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
        raise ArgumentTypeError("call", shown(call), "a ToolCall")
    history = neutral(history, name="history")
    view = neutral(view, name="view")
    tokenizer = None if tokenizer is None else as_tokenizer(tokenizer)
    args: Any = call.input
    given = cast("dict[str, Any]", args) if isinstance(args, dict) else {}
    handle = given.get("handle")
    limit = given.get("max_tokens")
    if limit is None:  # absent, or null: models send null for what they leave out
        limit = DEFAULT_RECALL_TOKENS
    start = given.get("start_line")
    char = given.get("start_char")
    if not isinstance(handle, str) or not handle.strip():
        return _error(call, "context_recall needs a 'handle' (a string)")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return _error(call, "max_tokens must be a positive integer")
    if start is not None and (
        not isinstance(start, int) or isinstance(start, bool) or start < 1
    ):
        return _error(call, "start_line must be a positive integer (1 is the first)")
    if char is not None and (
        not isinstance(char, int) or isinstance(char, bool) or char < 1
    ):
        return _error(call, "start_char must be a positive integer (1 is the first)")
    text = context_recall(
        history,
        handle,
        max_tokens=limit,
        tokenizer=tokenizer,
        view=view,
        start_line=start,
        start_char=char,
    )
    if text is None:
        return _error(call, f"no original for handle {handle.strip()[:40]!r}")
    return Message.tool(call.id, text, name=RECALL_TOOL)


def _error(call: ToolCall, why: str) -> Message:
    return Message.tool(call.id, why, is_error=True, name=RECALL_TOOL)
