"""The fact record: what a summary must not lose, found without an LLM.

Contract:

- ``extract_facts(messages)`` reads messages with regular expressions only
  (no network, no model, deterministic) and returns ``Facts``: file paths,
  commands run, URLs, identifiers, numbers with units (dates and times too),
  errors, decisions and open tasks, each with the ids of the messages it came
  from. Tool calls are read by their arguments (a ``Bash`` call's
  ``command``, a ``Read`` call's ``file_path``), tool results for paths,
  URLs, numbers and error lines only (file contents would drown the rest in
  identifiers), text for everything. A fact found twice is one fact with
  both sources.
- ``Facts`` keeps its facts in the order of their latest mention, oldest
  first, and is a value: ``merged`` and ``limited`` return new records.
- ``render()`` writes the record as a short block under ``FACTS_HEADER``;
  ``Facts.parse`` reads such a block back, so a summary's facts survive a
  trip through plain text (a provider's wire shape drops ``meta``).
- ``check_facts(summary, facts)`` says which facts a summary dropped and
  re-attaches them as one block; a fact counts as kept when the summary
  holds it verbatim (a path also relative to the record's common folder,
  a number ignoring spaces and case) or, for a sentence (task, decision,
  error), when most of its words are there. Checking its own output again
  re-attaches nothing.

Example:
    >>> from contextwindow.messages import Message, ToolCall
    >>> conv = [
    ...     Message.user("Fix the failing test in src/app.py please.", id="u1"),
    ...     Message.assistant(tool_calls=[ToolCall(
    ...         "c1", "Bash", '{"command": "cd /repo && pytest -q tests"}')], id="a1"),
    ...     Message.tool("c1", "FAILED tests/test_app.py::test_login - 3 failures",
    ...                  is_error=True, id="t1"),
    ... ]
    >>> facts = extract_facts(conv)
    >>> print(facts.render())
    Facts from the summarized messages:
    - task: Fix the failing test in src/app.py please.
    - error: FAILED tests/test_app.py::test_login - 3 failures
    - files: src/app.py, tests/test_app.py
    - commands: `pytest -q tests`
    - numbers: 3 failures
    >>> [f.sources for f in facts.of("path")]
    [('u1',), ('t1',)]
    >>> check = check_facts("The user wants src/app.py fixed.", facts)
    >>> [f.kind for f in check.dropped]
    ['task', 'command', 'error', 'path', 'number']
    >>> print(check.text)
    The user wants src/app.py fixed.
    <BLANKLINE>
    Facts from the summarized messages:
    - task: Fix the failing test in src/app.py please.
    - error: FAILED tests/test_app.py::test_login - 3 failures
    - files: tests/test_app.py
    - commands: `pytest -q tests`
    - numbers: 3 failures
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from contextwindow._args import as_tokenizer, check_int, check_messages, check_str
from contextwindow._args import shown as shown_value
from contextwindow.errors import ArgumentTypeError, ContextWindowError
from contextwindow.messages import Message
from contextwindow.summarizers._extract import facts_in
from contextwindow.summarizers._patterns import words
from contextwindow.tokens.base import Tokenizer

__all__ = [
    "FACTS_HEADER",
    "KINDS",
    "Fact",
    "FactCheck",
    "FactKind",
    "Facts",
    "check_facts",
    "extract_facts",
    "invented",
]

FactKind = Literal[
    "task", "decision", "error", "path", "command", "url", "identifier", "number"
]
"""What a fact is; also the order the record lists them in."""

KINDS: tuple[FactKind, ...] = get_args(FactKind)
"""Every kind, in the record's order."""

FACTS_HEADER = "Facts from the summarized messages:"
"""The line that opens a rendered record."""

_LABELS: dict[FactKind, str] = {
    "task": "task",
    "decision": "decision",
    "error": "error",
    "path": "files",
    "command": "commands",
    "url": "urls",
    "identifier": "identifiers",
    "number": "numbers",
}
_KIND_OF: dict[str, FactKind] = {label: kind for kind, label in _LABELS.items()}
_SENTENCE_KINDS: frozenset[FactKind] = frozenset(("task", "decision", "error"))
_WEIGHT: dict[FactKind, float] = {
    # What an agent most often needs again after a compaction: the files it
    # works on, what it ran, what broke, what it was asked.
    "path": 1.0,
    "command": 0.9,
    "error": 0.9,
    "task": 0.8,
    "decision": 0.7,
    "identifier": 0.5,
    "url": 0.5,
    "number": 0.4,
}
_KEPT_WORDS = 0.7
"""Share of a sentence's words a summary must hold for the sentence to count."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: its kind, its text, and the messages it came from.

    Example:
        >>> Fact("path", "src/app.py", ("m1", "m4")).mentions
        2
    """

    kind: FactKind
    """``task``, ``decision``, ``error``, ``path``, ``command``, ``url``,
    ``identifier`` or ``number``."""
    text: str
    """The fact as found (whitespace collapsed)."""
    sources: tuple[str, ...] = ()
    """Ids of the messages that mention it, in order; empty when read back
    from text."""

    @property
    def mentions(self) -> int:
        """How many messages mention it (1 when the sources are unknown)."""
        return max(1, len(self.sources))


@dataclass(frozen=True, slots=True)
class Facts:
    """A fact record, oldest mention first (see the module's contract).

    Example:
        >>> facts = Facts((Fact("path", "a.py"), Fact("command", "make test")))
        >>> (len(facts), [f.text for f in facts.of("command")])
        (2, ['make test'])
    """

    items: tuple[Fact, ...] = ()
    """The facts, in the order of their latest mention."""

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Fact]:
        return iter(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)

    def of(self, kind: FactKind) -> tuple[Fact, ...]:
        """The facts of one kind, in order."""
        return tuple(f for f in self.items if f.kind == kind)

    def keys(self) -> frozenset[tuple[str, str]]:
        """Each fact's ``(kind, text)``: what tells two facts apart."""
        return frozenset((f.kind, f.text) for f in self.items)

    def merged(self, later: Facts) -> Facts:
        """This record followed by ``later``.

        A fact in both moves to its later place and keeps the sources of both.

        Example:
            >>> old = Facts((Fact("path", "a.py", ("m1",)), Fact("path", "b.py")))
            >>> new = Facts((Fact("path", "a.py", ("m9",)),))
            >>> [(f.text, f.sources) for f in old.merged(new)]
            [('b.py', ()), ('a.py', ('m1', 'm9'))]
        """
        earlier = {(f.kind, f.text): f for f in self.items}
        moved = later.keys()
        out = [f for f in self.items if (f.kind, f.text) not in moved]
        for f in later.items:
            old = earlier.get((f.kind, f.text))
            if old is not None:
                f = Fact(f.kind, f.text, _union(old.sources, f.sources))
            out.append(f)
        return Facts(tuple(out))

    def missing_from(self, text: str) -> Facts:
        """The facts ``text`` does not mention (see the module's contract).

        Example:
            >>> facts = Facts((Fact("path", "/repo/src/a.py"),
            ...                Fact("path", "/repo/src/b.py"),
            ...                Fact("number", "42 ms")))
            >>> [f.text for f in facts.missing_from("Edited src/a.py; took 42MS.")]
            ['/repo/src/b.py']
        """
        # A path counts relative to the record's folder, or to any folder a
        # rendered record in ``text`` announces (``files (under /w/p/): ...``).
        roots = {r for r in (_root(self), *_UNDER.findall(text)) if r}
        folded = _fold(text)
        vocabulary: set[str] | None = None
        out: list[Fact] = []
        for f in self.items:
            if f.kind in _SENTENCE_KINDS:
                if f.text in text:
                    continue
                if vocabulary is None:
                    vocabulary = set(words(text))
                mine = set(words(f.text))
                if mine and len(mine & vocabulary) >= _KEPT_WORDS * len(mine):
                    continue
            elif f.kind == "number":
                if _fold(f.text) in folded:
                    continue
            elif f.text in text or (
                f.kind == "path"
                and any(
                    f.text.startswith(r) and f.text[len(r) :] in text for r in roots
                )
            ):
                continue
            out.append(f)
        return Facts(tuple(out))

    def limited(
        self, max_tokens: int, tokenizer: Tokenizer, *, keep: Facts | None = None
    ) -> Facts:
        """The facts worth most whose rendered record fits ``max_tokens``.

        Worth: the kind (paths, commands and errors first), how many messages
        mention the fact, and how recent its latest mention is. The facts
        kept stay in their order.

        Args:
            max_tokens: Most tokens the rendered record may take.
            tokenizer: Counts them.
            keep: Facts kept whatever their cost (an earlier summary's); the
                others fill the room they leave.

        Example:
            >>> from contextwindow.testing import FakeTokenizer
            >>> facts = Facts(tuple(Fact("path", f"f{i}.py") for i in range(50)))
            >>> [f.text for f in facts.limited(14, FakeTokenizer())]
            ['f47.py', 'f48.py', 'f49.py']
            >>> first = Facts((facts.items[0],))
            >>> [f.text for f in facts.limited(14, FakeTokenizer(), keep=first)]
            ['f0.py', 'f48.py', 'f49.py']
        """
        must: frozenset[tuple[str, str]] = keep.keys() if keep else frozenset()
        if not self.items or (max_tokens <= 0 and not must):
            return Facts()
        if tokenizer.count(self.render()) <= max_tokens:
            return self
        n = len(self.items)
        score = [
            math.inf
            if (f.kind, f.text) in must
            else _WEIGHT[f.kind] + math.log2(f.mentions) / 4 + 2.0 * (k + 1) / n
            for k, f in enumerate(self.items)
        ]
        order = sorted(range(n), key=lambda k: (-score[k], -k))
        used = tokenizer.count(FACTS_HEADER)
        chosen: set[int] = set()
        labelled: set[FactKind] = set()
        for k in order:
            f = self.items[k]
            # A separator per fact; a label per line (per kind, or per sentence).
            cost = tokenizer.count(f.text) + 1
            if f.kind in _SENTENCE_KINDS or f.kind not in labelled:
                cost += 3
            if used + cost <= max_tokens or score[k] == math.inf:
                chosen.add(k)
                labelled.add(f.kind)
                used += cost
        kept = Facts(tuple(f for k, f in enumerate(self.items) if k in chosen))
        # The estimate is close; drop the least worth until the render fits.
        ranked = [k for k in reversed(order) if k in chosen and score[k] < math.inf]
        while ranked and tokenizer.count(kept.render()) > max_tokens:
            chosen.discard(ranked.pop(0))
            kept = Facts(tuple(f for k, f in enumerate(self.items) if k in chosen))
        return kept

    def render(self) -> str:
        """The record as text: one line per sentence, one per kind of the rest.

        Paths under one common folder are written relative to it, once.

        Example:
            >>> facts = Facts((Fact("path", "/w/p/a.py"), Fact("path", "/w/p/b.py"),
            ...                Fact("command", "make"), Fact("number", "5 May, 2023")))
            >>> print(facts.render())
            Facts from the summarized messages:
            - files (under /w/p/): a.py, b.py
            - commands: `make`
            - numbers: 5 May, 2023
        """
        if not self.items:
            return ""
        lines = [FACTS_HEADER]
        root = _root(self)
        for kind in KINDS:
            found = [f.text for f in self.items if f.kind == kind]
            if not found:
                continue
            label = _LABELS[kind]
            if kind in _SENTENCE_KINDS:
                lines += [f"- {label}: {text}" for text in found]
            elif kind == "path" and root:
                inside = [p[len(root) :] for p in found if p.startswith(root)]
                outside = [p for p in found if not p.startswith(root)]
                lines.append(f"- {label} (under {root}): {', '.join(inside)}")
                if outside:
                    lines.append(f"- {label}: {', '.join(outside)}")
            elif kind in ("command", "identifier"):
                lines.append(f"- {label}: " + ", ".join(f"`{t}`" for t in found))
            else:
                sep = "; " if kind == "number" else ", "
                lines.append(f"- {label}: {sep.join(found)}")
        return "\n".join(lines)

    @classmethod
    def parse(cls, text: str) -> Facts:
        r"""Read back the record ``render`` wrote into ``text`` (no sources).

        Example:
            >>> facts = Facts((Fact("task", "Ship it."), Fact("path", "/w/a.py"),
            ...                Fact("path", "/w/b.py"), Fact("command", "ls -la")))
            >>> Facts.parse("A summary.\\n\\n" + facts.render()) == facts
            True
        """
        _, block = _split(text)
        out: list[Fact] = []
        for line in block.splitlines()[1:]:
            m = _LINE.match(line)
            if m is None:
                continue
            label, root, rest = m.group(1), m.group(2) or "", m.group(3)
            kind = _KIND_OF.get(label)
            if kind is None:
                continue
            if kind in _SENTENCE_KINDS:
                values = [rest]
            elif kind in ("command", "identifier"):
                values = re.findall(r"`([^`]+)`", rest)
            else:
                values = rest.split("; " if kind == "number" else ", ")
            out += [Fact(_KIND_OF[label], root + v) for v in values if v]
        return cls(tuple(out))

    def to_json(self) -> list[list[Any]]:
        """The record as JSON values (for ``Message.meta``): ``[kind, text, ids]``."""
        return [[f.kind, f.text, list(f.sources)] for f in self.items]

    @classmethod
    def from_json(cls, value: object) -> Facts:
        """Read ``to_json``'s form back; entries of another shape are skipped.

        Example:
            >>> facts = Facts((Fact("url", "https://x.org", ("m1",)),))
            >>> Facts.from_json(facts.to_json()) == facts
            True
        """
        out: list[Fact] = []
        items: Sequence[Any] = (
            cast("Sequence[Any]", value) if isinstance(value, list) else ()
        )
        for item in items:
            entry: Sequence[Any] = (
                cast("Sequence[Any]", item) if isinstance(item, list) else ()
            )
            if len(entry) != 3:
                continue
            kind, text, ids = entry
            if kind in KINDS and isinstance(text, str) and isinstance(ids, list):
                sources = tuple(
                    i for i in cast("Sequence[Any]", ids) if isinstance(i, str)
                )
                out.append(Fact(kind, text, sources))
        return cls(tuple(out))


_LINE = re.compile(r"- (\w+)(?: \(under (.+?)\))?: (.*)")
_UNDER = re.compile(r"^- files \(under (.+?)\): ", re.M)


@dataclass(frozen=True, slots=True)
class FactCheck:
    """A summary checked against the facts of what it summarises.

    Example:
        >>> facts = Facts((Fact("path", "a.py"), Fact("path", "b.py")))
        >>> check = check_facts("Edited a.py.", facts)
        >>> (check.kept_share, [f.text for f in check.dropped])
        (0.5, ['b.py'])
        >>> print(check.text)
        Edited a.py.
        <BLANKLINE>
        Facts from the summarized messages:
        - files: b.py
    """

    text: str
    """The summary with the dropped facts re-attached (as room allows)."""
    summary: str
    """The summary as the summarizer wrote it."""
    facts: Facts
    """The facts it was checked against."""
    dropped: Facts
    """The facts ``summary`` does not mention."""
    attached: Facts
    """The dropped facts that were re-attached (all, unless room ran out)."""
    invented: Facts = Facts()
    """Paths, URLs and identifiers the summary names that what it summarises
    does not (``invented``): reported, never re-attached or kept."""

    @property
    def kept_share(self) -> float:
        """The share of facts the summary kept on its own (1.0 with no facts)."""
        if not self.facts:
            return 1.0
        return 1 - len(self.dropped) / len(self.facts)


def check_facts(
    summary: str,
    facts: Facts,
    *,
    max_tokens: int | None = None,
    tokenizer: Tokenizer | None = None,
    keep: Facts | None = None,
) -> FactCheck:
    """Find the facts ``summary`` dropped and re-attach them as one record.

    A record already in ``summary`` (from a summarizer that attaches its own)
    is kept, merged with the dropped facts and written once, at the end; of
    it only the facts of ``facts`` or ``keep`` count: a line naming anything
    else (a model that wrote a record of its own) is left out, so the record
    holds only what the summarised messages said.

    Example:
        >>> facts = Facts((Fact("path", "a.py"),))
        >>> forged = "Done. " + Facts((Fact("path", "/etc/x.sh"),)).render()
        >>> print(check_facts(forged, facts).text)
        Done.
        <BLANKLINE>
        Facts from the summarized messages:
        - files: a.py

    Args:
        summary: The summary text.
        facts: The facts of what it summarises.
        max_tokens: Most tokens the re-attached facts may add to the summary
            (``None``: no limit); the facts worth most are kept
            (``Facts.limited``).
        tokenizer: Counts tokens for ``max_tokens`` (required with it).
        keep: Facts re-attached whatever ``max_tokens`` says (an earlier
            summary's, so that rolling a summary forward loses none).

    Raises:
        ContextWindowError: ``max_tokens`` without a ``tokenizer``.
    """
    check_str(summary, "summary")
    for name, value in (("facts", facts), ("keep", keep)):
        if not isinstance(value, Facts) and not (name == "keep" and value is None):
            takes = "a Facts (extract_facts)" + (" or None" if name == "keep" else "")
            raise ArgumentTypeError(name, shown_value(value), takes)
    check_int(max_tokens, "max_tokens", low=0, none=True)
    if tokenizer is not None:
        tokenizer = as_tokenizer(tokenizer)
    if max_tokens is not None and tokenizer is None:
        raise ContextWindowError("check_facts: max_tokens needs a tokenizer")
    body, block = _split(summary)
    # A record already there (the summarizer attached its own): its facts
    # count as kept, and take their sources from ``facts`` where known. Only
    # those of ``facts`` (and ``keep``): a model's text dressed as a record
    # ("Facts from the summarized messages: - files: /etc/x.sh") is no fact.
    known_keys = facts.keys() | keep.keys() if keep else facts.keys()
    shown = Facts(
        tuple(f for f in Facts.parse(block) if (f.kind, f.text) in known_keys)
    )
    known = {(f.kind, f.text): f for f in facts}
    carried = Facts(tuple(known.get((f.kind, f.text), f) for f in shown))
    listed = shown.keys()
    dropped = Facts(
        tuple(f for f in facts.missing_from(body) if (f.kind, f.text) not in listed)
    )
    # In the order of ``facts`` (latest mention last), whoever wrote them.
    place = {(f.kind, f.text): k for k, f in enumerate(facts)}
    joined = carried.merged(dropped).items
    record = Facts(tuple(sorted(joined, key=lambda f: place.get((f.kind, f.text), -1))))
    if max_tokens is not None and tokenizer is not None:
        must = carried.merged(keep) if keep else carried
        room = max_tokens + (tokenizer.count(block) if block else 0)
        record = record.limited(room, tokenizer, keep=must)
    text = body.rstrip()
    if record:
        text = f"{text}\n\n{record.render()}" if text else record.render()
    gone = dropped.keys()
    attached = Facts(tuple(f for f in record if (f.kind, f.text) in gone))
    return FactCheck(text, summary, facts, dropped, attached)


INVENTED_KINDS: frozenset[FactKind] = frozenset(("path", "url", "identifier"))
"""The kinds of fact a summary may be caught inventing: names, which a
source either holds verbatim or does not (sentences and numbers are
rephrased)."""


def invented(summary: str, source: str) -> Facts:
    """The paths, URLs and identifiers ``summary`` names that ``source`` does not.

    A check, not a filter: a model that writes ``src/app/client.py`` where the
    messages said ``src/app/server.py`` is caught here. Only the summary's
    text before a fact record is read (the record is checked on its own).

    Example:
        >>> source = "Fix src/app/server.py; commit 8f2c91d broke it."
        >>> said = "The fix went into src/app/client.py, commit 8f2c91d."
        >>> [f.text for f in invented(said, source)]
        ['src/app/client.py']
    """
    body, _ = _split(summary)
    found = extract_facts([Message.user(body)]) if body.strip() else Facts()
    return Facts(
        tuple(
            Fact(f.kind, f.text)
            for f in found
            if f.kind in INVENTED_KINDS and f.text not in source
        )
    )


def _split(text: str) -> tuple[str, str]:
    """``text`` before the record, and the record (``""`` when there is none)."""
    at = text.find(FACTS_HEADER)
    if at < 0:
        return text, ""
    return text[:at], text[at:]


# -- extraction --------------------------------------------------------------------


def extract_facts(messages: Iterable[Message]) -> Facts:
    """The fact record of ``messages`` (see the module's contract).

    Example:
        >>> conv = [Message.user("We decided to use SQLite instead of Redis.", id="u1"),
        ...         Message.assistant("See https://sqlite.org/wal.html, 30% faster.",
        ...                           id="a1")]
        >>> [(f.kind, f.text) for f in extract_facts(conv)]
        [('decision', 'We decided to use SQLite instead of Redis.'), ('url', 'https://sqlite.org/wal.html'), ('number', '30%')]
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    messages = check_messages(messages)
    found: dict[tuple[FactKind, str], list[str]] = {}
    last: dict[tuple[FactKind, str], int] = {}
    position = 0
    for m in messages:
        for kind, text in facts_in(m):
            key = (kind, text)
            ids = found.setdefault(key, [])
            if not ids or ids[-1] != m.id:
                ids.append(m.id)
            last[key] = position
            position += 1
    order = sorted(found, key=lambda k: last[k])
    return Facts(tuple(Fact(k[0], k[1], tuple(found[k])) for k in order))


def _root(facts: Facts) -> str:
    """The folder most absolute paths share (at least two, two levels deep)."""
    paths = [f.text for f in facts.items if f.kind == "path" and f.text.startswith("/")]
    if len(paths) < 2:
        return ""
    counts: dict[str, int] = {}
    for p in paths:
        parts = p.split("/")[1:-1]
        for depth in range(2, len(parts) + 1):
            prefix = "/" + "/".join(parts[:depth]) + "/"
            counts[prefix] = counts.get(prefix, 0) + 1
    # The deepest folder holding at least half of the paths (and two).
    need = max(2, (len(paths) + 1) // 2)
    best = [p for p, n in counts.items() if n >= need]
    return max(best, key=lambda p: (p.count("/"), counts[p]), default="")


def _fold(text: str) -> str:
    return "".join(text.split()).lower()


def _union(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))
