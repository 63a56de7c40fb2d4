"""``ExtractiveSummarizer``: a summary made of the messages' own sentences.

Contract:

- No network, no model, deterministic: the same messages give the same
  summary. It runs in pure Python in time linear in the text (a 170,000-token
  agent session takes a fraction of a second).
- The summary is the sentences of the messages' prose that cover the most
  of what was said per token (budgeted maximum coverage of informative
  words, chosen greedily; a sentence repeating covered words adds nothing),
  in their original order, each line naming its speaker, followed by the
  fact record (``contextwindow.summarizers.facts``) of every fact the chosen
  sentences do not already hold. Tool results are read for
  facts only: their sentences are file contents and logs, not prose.
- ``previous`` (an earlier summary's text) is folded in: its sentences are
  candidates ranked above new ones of the same score, and its fact record is
  carried forward ahead of the new facts.
- The summary stays within ``max_tokens`` as the summarizer's tokenizer counts
  (default ``HeuristicTokenizer``): the fact record takes up to ``fact_share``
  of it, the sentences the rest.

Example:
    >>> from contextwindow.messages import Message, ToolCall
    >>> conv = [
    ...     Message.user("Please add a --json flag to the export command."),
    ...     Message.assistant("The export command lives in src/cli/export.py. "
    ...                       "I will add the flag there."),
    ...     Message.assistant(tool_calls=[ToolCall("c1", "Bash",
    ...                       '{"command": "pytest tests/test_export.py"}')]),
    ...     Message.tool("c1", "5 passed in 0.31s"),
    ...     Message.assistant("Done. Both JSON and CSV output are covered by tests now."),
    ... ]
    >>> print(ExtractiveSummarizer().summarize(conv, max_tokens=120))
    user: Please add a --json flag to the export command.
    assistant: The export command lives in src/cli/export.py.
    assistant: Both JSON and CSV output are covered by tests now.
    <BLANKLINE>
    Facts from the summarized messages:
    - files: tests/test_export.py
    - commands: `pytest tests/test_export.py`
    - numbers: 5 passed; 0.31s
"""  # noqa: E501 -- doctest output lines cannot be wrapped

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from contextwindow._args import as_tokenizer, check_number
from contextwindow._memo import WhileAlive
from contextwindow.messages import Message, Text
from contextwindow.summarizers._patterns import CODE_FENCE, sentences, words
from contextwindow.summarizers.base import summary_input
from contextwindow.summarizers.facts import Facts, check_facts, extract_facts
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.heuristic import HeuristicTokenizer

__all__ = ["DEFAULT_MAX_TOKENS", "ExtractiveSummarizer"]

DEFAULT_MAX_TOKENS = 1000
"""The summary's size when ``max_tokens`` is not given."""

MAX_SENTENCE_CHARS = 400
"""A longer sentence is cut (at a word) before it is scored."""


@dataclass(frozen=True, slots=True)
class _Sentence:
    turn: int  # the message it came from (-1: a line of the previous summary)
    speaker: str
    text: str
    terms: tuple[str, ...]
    bonus: float


@dataclass(frozen=True, slots=True)
class ExtractiveSummarizer:
    """Summarise by choosing sentences, and keep every fact that fits.

    Args:
        tokenizer: Counts tokens for ``max_tokens`` (default: the heuristic).
        fact_share: The most of ``max_tokens`` the fact record takes (what it
            does not use goes to sentences).

    Raises:
        ContextWindowError: ``fact_share`` outside 0..1.
    """

    tokenizer: Tokenizer | None = field(default=None, compare=False)
    """Counts tokens for ``max_tokens`` (``None``: ``HeuristicTokenizer``)."""
    fact_share: float = 0.5
    """The most of ``max_tokens`` the fact record takes."""

    def __post_init__(self) -> None:
        check_number(self.fact_share, "fact_share", low=0, high=1)
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
        facts = extract_facts(messages)
        if previous:
            facts = Facts.parse(previous).merged(facts)
        room = limit - tok.count(
            facts.limited(int(limit * self.fact_share), tok).render()
        )
        body = _choose(_candidates(messages, previous), room, tok)
        left = max(0, limit - tok.count(body) - 2)
        return check_facts(body, facts, max_tokens=left, tokenizer=tok).text

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


def _candidates(messages: Sequence[Message], previous: str | None) -> list[_Sentence]:
    out: list[_Sentence] = []
    if previous:
        body = previous.split("Facts from the summarized messages:", 1)[0]
        for line in body.splitlines():
            speaker, sep, text = line.partition(": ")
            if not sep or " " in speaker or not text.strip():
                speaker, text = "", line.strip()
            if text:
                out.append(_sentence(-1, speaker, text, 1.5))
    for turn, m in enumerate(messages):
        if m.role not in ("user", "assistant"):
            continue
        speaker = m.name or m.role
        bonus = 1.2 if m.role == "user" else 1.0
        for text, terms in _SENTENCES.get(m, _read):
            out.append(_Sentence(turn, speaker, text, terms, bonus))
    return out


_SENTENCES = WhileAlive[Message, "tuple[tuple[str, tuple[str, ...]], ...]"]()
"""Each message's sentences with their words, read while it lives: a summary
made again as the cut moves reads the older history again."""


def _read(m: Message) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The sentences of ``m``'s text parts, each with its words."""
    return tuple(
        _shaped(s)
        for part in m.parts
        if isinstance(part, Text)
        for s in sentences(CODE_FENCE.sub(" ", part.text))
    )


def _sentence(turn: int, speaker: str, text: str, bonus: float) -> _Sentence:
    return _Sentence(turn, speaker, *_shaped(text), bonus)


def _shaped(text: str) -> tuple[str, tuple[str, ...]]:
    """A sentence with its whitespace collapsed and cut, and its words."""
    text = " ".join(text.split())
    if len(text) > MAX_SENTENCE_CHARS:
        text = text[: MAX_SENTENCE_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return text, tuple(words(text))


def _choose(found: Sequence[_Sentence], room: int, tok: Tokenizer) -> str:
    """The sentences covering the most, within ``room`` tokens, in order.

    Budgeted maximum coverage, greedily: each step takes the sentence whose
    words not yet covered weigh most per token (a word weighs its inverse
    document frequency among the sentences: rare words carry the details),
    times its bonus. Gains only fall as words get covered, so a stale gain
    is recomputed only when it reaches the top of the heap.
    """
    if room <= 0 or not found:
        return ""
    df: dict[str, int] = {}
    for s in found:
        for t in set(s.terms):
            df[t] = df.get(t, 0) + 1
    n = len(found)
    weight = {t: math.log((n + 1) / (d + 0.5)) for t, d in df.items()}
    cost = [tok.count(s.text) + tok.count(s.speaker) + 2 for s in found]
    covered: set[str] = set()

    def gain(k: int) -> float:
        s = found[k]
        new = sum(weight[t] for t in set(s.terms) if t not in covered)
        return s.bonus * new / cost[k]

    heap = [(-gain(k), k) for k in range(n)]
    heapq.heapify(heap)
    chosen: list[int] = []
    used = 0
    while heap:
        _, k = heapq.heappop(heap)
        if used + cost[k] > room:
            continue
        g = gain(k)
        if heap and g < -heap[0][0]:
            heapq.heappush(heap, (-g, k))  # stale: back in line with its gain
            continue
        if g <= 0:
            break
        chosen.append(k)
        used += cost[k]
        covered.update(found[k].terms)
    chosen.sort()
    lines: list[str] = []
    last = -1
    for k in chosen:
        s = found[k]
        # Sentences of one message share a line (and its label).
        if lines and last >= 0 and s.turn >= 0 and found[last].turn == s.turn:
            lines[-1] += " " + s.text
        else:
            lines.append(f"{s.speaker}: {s.text}" if s.speaker else s.text)
        last = k
    return "\n".join(lines)
