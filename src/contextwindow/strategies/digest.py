r"""What a cut text held, in a few tokens: the digest a marker keeps.

Contract:

- ``names(text)`` finds the facts a model may need again from a tool's
  output: file paths, code identifiers (``snake_case``, ``CamelCase``,
  ``Module.function``) and numbers of 3+ digits; paths first, then each kind
  in the order met, a JSON object's keys last (``"user_id":`` is the schema;
  the values are what the output said). The line numbers of numbered output
  (Claude Code's ``Read``: ``   120→``; ``cat -n``: ``   120\t``) are not
  names: what they said is the span of lines (``line_span``), which a marker
  states as ``lines 120-340`` so the model can read them again.
- ``digest(text, max_tokens, tokenizer, kept=...)`` is the comma-joined
  names of ``text`` not in ``kept`` (what the marker's text keeps anyway),
  in that order, as many as fit ``max_tokens`` (each name counted with its
  separator), never cut inside a name, never a marker's handle. It is a
  pure function of its arguments: the same text gives the same digest, so
  a marker is the same string however often the conversation is fitted.
- ``digest_tokens(tokens)`` sizes a digest for an original of ``tokens``:
  ``DIGEST_SHARE`` of it, between ``DIGEST_MIN_TOKENS`` and
  ``DIGEST_MAX_TOKENS``, so a marker stays small beside what it replaced.
  Paths may take more (``path_tokens``: up to ``PATH_SHARE`` of the original,
  ``PATH_MAX_TOKENS`` at most): the fact a model most often needs again, and
  short beside the output that named it. A listing (``is_listing``: its
  distinct paths take ``LISTING_SHARE`` of its characters: a ``Glob``, a ``find``,
  a search's file list) is little but its paths: ``path_room`` gives them
  the whole ``PATH_MAX_TOKENS`` (or the original's size, when smaller).

Example:
    >>> from contextwindow.testing import FakeTokenizer
    >>> text = "   120→def run_all(): Repo.all(8080)\n   121→# a/b.py"
    >>> names(text)
    ['a/b.py', 'run_all', 'Repo.all', '8080']
    >>> line_span(text)
    (120, 121)
    >>> digest(text, 5, FakeTokenizer(), kept="a/b.py")
    'run_all, Repo.all, 8080'
    >>> digest(text, 3, FakeTokenizer())
    'a/b.py, run_all'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Container, Iterable

from contextwindow._lru import Generations
from contextwindow.handles import find_handles
from contextwindow.tokens.base import Tokenizer

__all__ = [
    "DIGEST_MAX_TOKENS",
    "DIGEST_MIN_TOKENS",
    "DIGEST_SHARE",
    "Counted",
    "digest",
    "digest_tokens",
    "is_listing",
    "line_span",
    "names",
    "ordered",
    "path_room",
    "pick",
    "scan",
]

_PATHS = (
    r"(?:~|\.{1,2})?/?(?:[\w.@-]{1,255}/){1,64}[\w@-][\w.@-]{0,255}\.[A-Za-z]\w{0,7}\b"
)
"""A file path: a folder and a name with an extension. Names of at most 255
characters (a file system's), at most 64 folders deep (a deeper one is not
named): each place a path is tried costs at most that, so a scan stays linear
in its text."""

_PATH_START = r"(?<![\w.@-])(?<![\w.@-]/)"
"""Where a path is tried: not inside a word, nor after a folder's slash (a path
met there starts before it). Tried after every slash, the 40,000 characters of
``a/a/a/...`` took 31 s to scan (each try went on to the end of the run); the
same names on every text of the shared data."""

NAMED = re.compile(
    _PATH_START
    + _PATHS  # paths
    + r"|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b"  # snake_case
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b"  # CamelCase
    r"|\b[A-Z][A-Za-z0-9]*\.[a-z_][a-z0-9_]*\b"  # Module.function
    r"|(?<![\w.])\d{3,}(?![\w.])(?![ \t]*→)(?!\t)"  # numbers, not line numbers
)
"""The facts a digest names (the kinds ``benchmarks/fact_retention.py`` counts)."""

LINE_NUMBER = re.compile(r"^[ \t]*(\d+)(?:→|\t)", re.MULTILINE)
"""A numbered line's number: ``Read``'s ``   120→``, ``cat -n``'s ``   120\t``."""

DIGEST_SHARE = 0.1
"""The share of an original's tokens its digest may take (chosen on the
Claude Code sessions of ``benchmarks/fact_retention.py``: 0.05 kept fewer
facts at 50 % and 25 %, 0.2 no more)."""

DIGEST_MIN_TOKENS = 24
"""A digest may always take this many tokens (a dozen short names)."""

DIGEST_MAX_TOKENS = 300
"""No digest takes more, however large its original."""

PATH_SHARE = 0.25
"""The share of an original's tokens its paths may take in a digest."""

PATH_MAX_TOKENS = 600
"""Paths take no more, however large the original."""

LISTING_SHARE = 0.5
"""A text whose paths take at least this share of its characters is a listing
(chosen on the Claude Code sessions of ``benchmarks/fact_retention.py``: from
0.3 to 0.7 the same results are listings, and keep the same facts)."""

_PATH = re.compile(_PATH_START + _PATHS)

_KEY = re.compile(r'"\s*:')
"""What follows a JSON object's key: a name met so is its schema, not a value."""


def names(text: str) -> list[str]:
    """Paths, code identifiers and 3+-digit numbers in ``text``: paths first.

    Example:
        >>> names("see lib/a.ex and Repo.all at port 8080; lib/a.ex again")
        ['lib/a.ex', 'Repo.all', '8080']
    """
    if len(text) < SCAN_MIN_CHARS:
        return ordered([_scan(text)])
    return list(_kept(text)[1])


Scan = tuple[tuple[str, ...], frozenset[str]]
"""What ``scan`` finds in a text: its names in the order met, and those met
as a JSON object's key."""


SCAN_MIN_CHARS = 1_000
"""A text at least this long has what ``scan`` found kept; a shorter one costs
less to scan again than to look up."""

SCANS_KEPT_CHARS = 8_000_000
"""The characters of the texts whose scans a generation keeps (``Generations``:
the texts scanned last always kept, at most twice as many held, process-wide).
A re-fit of a long coding session makes the markers of thousands of its tool
results again (a rescan past a repointed note, say); the texts are the
conversation's own, held while it is, and a scan is a few names."""

_SCANS: Generations[str, tuple[Scan, tuple[str, ...]]] = Generations(
    SCANS_KEPT_CHARS, len
)
_scans_lock = threading.Lock()


def scan(text: str) -> Scan:
    """The names of ``text`` in the order met (each once), and its JSON keys.

    Kept for a long text (``SCAN_MIN_CHARS``): the same text asks no regular
    expression again.

    Example:
        >>> scan('{"user_id": 1234, "file": "a/b.py", "user_id": 5678}')
        (('user_id', '1234', 'a/b.py', '5678'), frozenset({'user_id'}))
    """
    if len(text) < SCAN_MIN_CHARS:
        return _scan(text)
    return _kept(text)[0]


def _kept(text: str) -> tuple[Scan, tuple[str, ...]]:
    """A long text's scan and its names in ``names``' order, found once."""
    with _scans_lock:
        found = _SCANS.get(text)
    if found is None:
        seen = _scan(text)
        found = (seen, tuple(ordered([seen])))
        with _scans_lock:
            _SCANS.put(text, found)
    return found


def _scan(text: str) -> Scan:
    seen: dict[str, None] = {}
    keys: set[str] = set()
    for m in NAMED.finditer(text):
        name = m.group(0)
        seen[name] = None
        if _KEY.match(text, m.end()) and text[m.start() - 1 : m.start()] == '"':
            keys.add(name)
    return tuple(seen), frozenset(keys)


def ordered(scans: Iterable[tuple[Iterable[str], Iterable[str]]]) -> list[str]:
    """The names of texts scanned one by one, as ``names`` orders those of them joined.

    Paths first, then identifiers, then numbers, each in the order met; a
    name met as a JSON key anywhere goes after the rest of its kind.

    Example:
        >>> ordered([scan("port 8080 in run_all"), scan("a/b.py and 8080")])
        ['a/b.py', 'run_all', '8080']
    """
    seen: dict[str, int] = {}
    keys: set[str] = set()
    for found, keyed in scans:
        for name in found:
            seen.setdefault(name, len(seen))
        keys.update(keyed)
    return sorted(
        seen, key=lambda n: ("/" not in n, n in keys, n[0].isdigit(), seen[n])
    )


def line_span(text: str) -> tuple[int, int] | None:
    r"""The first and last line numbers of numbered output (``None``: not numbered).

    Output is numbered when at least two lines start with a line number and
    they go up.

    Example:
        >>> line_span("     7→a\n     8→b\n     9→c")
        (7, 9)
        >>> line_span("plain text") is None
        True
    """
    found = LINE_NUMBER.findall(text)
    if len(found) < 2:
        return None
    first, last = int(found[0]), int(found[-1])
    return (first, last) if first < last else None


def span_text(span: tuple[int, int] | None) -> str:
    """``lines 7-9`` for a span (empty for ``None``).

    Example:
        >>> span_text((7, 9))
        'lines 7-9'
    """
    return f"lines {span[0]}-{span[1]}" if span else ""


def digest_tokens(tokens: int) -> int:
    """The tokens a digest of an original of ``tokens`` may take.

    Example:
        >>> digest_tokens(100), digest_tokens(2_000), digest_tokens(50_000)
        (24, 200, 300)
    """
    return max(DIGEST_MIN_TOKENS, min(DIGEST_MAX_TOKENS, int(tokens * DIGEST_SHARE)))


def digest(
    text: str,
    max_tokens: int,
    tokenizer: Tokenizer,
    *,
    kept: Container[str] | str = "",
    paths: int = 0,
) -> str:
    """The names of ``text`` not in ``kept``, comma-joined, within ``max_tokens``.

    Args:
        text: What was cut.
        max_tokens: Tokens the digest may take (names and separators).
        tokenizer: Counts them.
        kept: Names the marker's text keeps anyway: a text (its names) or a
            container of names.
        paths: Tokens paths may take besides ``max_tokens`` (``path_tokens``).

    Returns:
        The digest (empty when nothing is left to name).
    """
    inside: Container[str] = set(names(kept)) if isinstance(kept, str) else kept
    # The handles of markers inside the text are no facts (one of ten hex
    # digits is all digits, and would pass for a number).
    handles = set(find_handles(text))
    return pick(
        (n for n in names(text) if n not in inside and n not in handles),
        max_tokens,
        tokenizer,
        paths=paths,
    )


def pick(
    named: Iterable[str], max_tokens: int, tokenizer: Tokenizer, *, paths: int = 0
) -> str:
    """As many of ``named`` (in ``names``' order) as fit ``max_tokens``, comma-joined.

    ``paths``: tokens paths may take besides ``max_tokens``. A name is never
    cut; a long one that does not fit is passed over for shorter ones.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> pick(["a/b.py", "run_all", "8080"], 3, FakeTokenizer())
        'a/b.py, run_all'
    """
    out: list[str] = []
    used = 0
    room = max_tokens + paths  # paths come first: they may use both
    for n in named:
        if room == max_tokens + paths and "/" not in n:
            room = max_tokens  # the paths are done: the rest has its own share
            if used >= room:
                break
        cost = tokenizer.count(n) + (1 if out else 0)  # the ", " before it
        if used + cost > room:
            if cost > room // 4:
                continue  # a long name: a shorter one may still fit
            if "/" in n:
                continue
            break
        out.append(n)
        used += cost
    # The names were counted one by one; BPE may split the joined text
    # otherwise, so the whole is counted once and trimmed while over.
    joined = ", ".join(out)
    while out and tokenizer.count(joined) > max_tokens + paths:
        out.pop()
        joined = ", ".join(out)
    return joined


def is_listing(text: str) -> bool:
    r"""Whether ``text`` is little but paths.

    Its distinct paths take at least ``LISTING_SHARE`` of its characters.

    Example:
        >>> is_listing("src/a.py\nsrc/b.py\ntests/test_a.py\n")
        True
        >>> is_listing("def run():\n    return open('src/a.py').read()\n" * 3)
        False
    """
    if not text:
        return False
    found = sum(len(m) for m in dict.fromkeys(_PATH.findall(text)))
    return found >= LISTING_SHARE * len(text)


def path_room(text: str, tokens: int) -> int:
    r"""The tokens the paths of ``text`` (``tokens`` long) may take besides its digest.

    ``path_tokens(tokens)``, but a listing's paths may take up to
    ``PATH_MAX_TOKENS`` (the original's size, when smaller): a listing is
    its paths.

    Example:
        >>> path_room("src/a.py\nsrc/b.py\n", 8), path_tokens(8)
        (8, 0)
    """
    if is_listing(text):
        return min(tokens, PATH_MAX_TOKENS)
    return path_tokens(tokens)


def path_tokens(tokens: int) -> int:
    """The tokens the paths of an original of ``tokens`` may take besides its digest.

    Paths may take ``PATH_SHARE`` of the original, up to ``PATH_MAX_TOKENS``
    in all: a path is what a model most often needs again, and costs little.

    Example:
        >>> path_tokens(100), path_tokens(2_000), path_tokens(50_000)
        (1, 300, 300)
    """
    room = min(PATH_MAX_TOKENS, int(tokens * PATH_SHARE))
    return max(0, room - digest_tokens(tokens))


class Counted:
    """A text-counting function as a ``Tokenizer`` (``digest`` takes one).

    Given a ``TokenCounter``'s cached ``text``, each name is counted once.

    Example:
        >>> Counted(len).count("abc")
        3
    """

    __slots__ = ("_count",)

    name = "counted"
    exact = True

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count

    def count(self, text: str) -> int:
        """The count of ``text``."""
        return self._count(text)
