"""``NamesSummarizer``: a summary that names what the messages held, and nothing else.

Contract:

- No network, no model, deterministic: the same messages give the same
  summary. It is the digest every marker keeps (``strategies.digest``) of
  the messages it replaces: the paths, code identifiers and numbers of 3+
  digits of their text, tool calls' arguments and tool results (not the
  tools' names: the request's tool schemas hold them), paths first, then
  identifiers, then numbers, each in the order met, a JSON object's keys
  last (they are the schema). No prose: where a budget leaves room for
  little but the conversation's newest turns, a list of the names the older
  ones held keeps more of what later turns need per token than their
  sentences do (``benchmarks/fact_retention.py``).
- Reasoning (``Thinking``) is not read: a path it guesses is no fact.
- ``previous`` (an earlier summary's text) is read first, so a summary
  rolled forward names what the earlier one named before the new names.
- The summary stays within ``max_tokens`` as the summarizer's tokenizer
  counts (default ``HeuristicTokenizer``), never cutting a name; it is empty
  when the messages name nothing.
- Nothing is kept between calls: ``Summarize`` keeps the summary it made
  for the messages it replaced, and makes one again only when its cut moves
  (by a step of its budget), by then over what earlier stages left of those
  messages (placeholders and digests, mostly); a cache of every message's
  names cost more memory than the scans it saved (``benchmarks/memory.py``,
  ``fit_speed.py``).

Example:
    >>> from contextwindow.messages import Message, ToolCall
    >>> conv = [
    ...     Message.user("Since v2.3 src/cli/export.py fails for user 4821:"),
    ...     Message.assistant(tool_calls=[ToolCall("c1", "Bash",
    ...                       '{"command": "pytest tests/test_export.py"}')]),
    ...     Message.tool("c1", "FAILED test_export_json: no 'user_id'"),
    ... ]
    >>> print(NamesSummarizer().summarize(conv, max_tokens=60))
    Named: src/cli/export.py, tests/test_export.py, test_export_json, user_id, 4821
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

from contextwindow._args import as_tokenizer
from contextwindow.handles import find_handles, output_of
from contextwindow.messages import Message, Text, ToolCall, ToolResult
from contextwindow.strategies.digest import Scan, ordered, pick, scan
from contextwindow.summarizers.base import summary_input
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.heuristic import HeuristicTokenizer

__all__ = ["DEFAULT_MAX_TOKENS", "NamesSummarizer"]

DEFAULT_MAX_TOKENS = 1000
"""The summary's size when ``max_tokens`` is not given."""

PREFIX = "Named: "
"""What the summary's line starts with."""


@dataclass(frozen=True, slots=True)
class NamesSummarizer:
    """Summarise by naming the paths, identifiers and numbers the messages held.

    Args:
        tokenizer: Counts tokens for ``max_tokens`` (default: the heuristic).
    """

    tokenizer: Tokenizer | None = field(default=None, compare=False)
    """Counts tokens for ``max_tokens`` (``None``: ``HeuristicTokenizer``)."""

    def __post_init__(self) -> None:
        if self.tokenizer is not None:
            object.__setattr__(self, "tokenizer", as_tokenizer(self.tokenizer))

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Return the summary of ``messages`` (see the module's contract)."""
        messages = summary_input(messages, previous, max_tokens)
        tok = self.tokenizer or _HEURISTIC
        limit = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
        # Handles of markers are no facts (ten hex digits may all be digits).
        handles: set[str] = set()

        def scans() -> Iterable[Scan]:
            # One text at a time: only the names merged so far are held.
            texts = ("\n".join(_texts(m)) for m in messages)
            for text in chain([previous] if previous else [], texts):
                handles.update(find_handles(text))
                yield scan(text)

        merged = ordered(scans())
        named = (n for n in merged if n not in handles)
        listed = pick(named, max(0, limit - tok.count(PREFIX)), tok)
        return PREFIX + listed if listed else ""

    async def asummarize(
        self,
        messages: Sequence[Message],
        *,
        previous: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """``summarize``, for async callers (it does no I/O, so it does not wait)."""
        return self.summarize(messages, previous=previous, max_tokens=max_tokens)


_HEURISTIC = HeuristicTokenizer()


def _texts(m: Message) -> Iterable[str]:
    for p in m.parts:
        if isinstance(p, Text):
            yield p.text
        elif isinstance(p, ToolCall):
            yield p.arguments
        elif isinstance(p, ToolResult):
            yield output_of(p)  # of a cut's marker, what it named
