"""``BM25Scorer``: Okapi BM25 over units and over windows of neighbouring units.

Contract:

- Offline and model-free: documents and the query become terms through
  ``contextwindow.relevance.terms`` (stopwords dropped, Porter stems).
- The score of a document is its own BM25 score plus, for each ``(width,
  weight)`` of ``context``, ``weight`` times the BM25 score of the window of
  documents ``width`` either side of it (their terms pooled, as one
  passage). Each level is divided by its best score first, so the weights
  compare like with like. Context matters in conversations: the turn that
  answers a question rarely repeats all of its words, but its neighbours do.
- Statistics (document frequency, average length) are those of the
  documents given, the conversation itself; nothing is trained.
- Term counts are cached per document text (bounded, least recently used first out), so
  scoring a conversation again after one new message tokenises that one
  message. The cache never changes a result. It holds copies of
  conversation texts and outlives them (a scorer is often built once per
  process), so it is bounded by the memory its entries hold
  (``DEFAULT_CACHE_BYTES``), not only by their number.
- ``index()`` gives a ``BM25Index``: the documents' term statistics as an
  inverted index (each term's documents and counts) that grows and shrinks at
  its end. ``index.scores(query, n)`` equals ``scorer(documents[:n], query)``
  to the last bit (the same sums, in the same order), and costs what the
  query's terms occur in (their documents and the windows around them), not
  a pass over every document per term (a call builds one for its documents):
  a conversation that grew by a few
  units is re-indexed by those units, and a new query costs its own terms.
  The index also keeps, for the last ``SPREAD_CACHE`` query terms, their
  counts in the window around each document whose window ends before the
  last document: those stay while documents are added (``truncate`` drops
  the ones it reaches), so a term asked again is spread over the new
  windows only. Scoring its postings stays a pass over them.
- With numpy installed (the ``fast`` extra) and at least ``VECTOR_FROM``
  documents, ``scores`` runs the same arithmetic on arrays (each query term's
  window counts by a cumulative sum, its share added to every document, 0 where
  it is absent): the very same floats, from the same operations in the same
  order (``tests/relevance/test_bm25.py`` holds both ways to each other, bit
  for bit), 10-15x faster per query on 10,000 documents once its arrays are made.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import threading
from bisect import bisect_left
from collections import Counter, OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, islice, repeat
from operator import add, mul, sub
from types import ModuleType
from typing import Any, cast

from contextwindow._args import check_int, check_items, check_number, shown
from contextwindow.errors import ArgumentTypeError
from contextwindow.relevance._text import terms

__all__ = ["BM25Index", "BM25Scorer", "TermCache"]

DEFAULT_CACHE_SIZE = 100_000
"""Documents whose term counts a ``TermCache`` keeps, at most."""

DEFAULT_CACHE_BYTES = 32 * 2**20
"""Memory a ``TermCache``'s entries hold, at most (32 MiB)."""

Stats = tuple[dict[str, int], int]
"""A document's term counts and its length in terms."""

SPREAD_CACHE = 256
"""``(term, width)`` pairs whose window counts a ``BM25Index`` keeps (least
recently used out first): at most this many lists of one entry per document.
As many query terms' postings are kept as arrays for the numpy path."""

VECTOR_FROM = 256
"""Documents from which ``BM25Index.scores`` takes the numpy path, when numpy
is installed (below, building the arrays costs more than the loops)."""


class TermCache:
    """Term counts per document text, bounded (least recently used out first).

    Args:
        size: The most documents kept.
        max_bytes: The most memory the entries hold: each is charged the
            ``sys.getsizeof`` of its text, of its table of counts and of
            each term in it (a term shared with other tables is charged to
            each: the bound errs on the safe side; the counts are small
            ints, shared), and the oldest go until the rest fit. A document
            charged more than that on its own is counted, not kept.

    Raises:
        ArgumentError: ``size`` or ``max_bytes`` not an int of at least 1.

    Example:
        >>> cache = TermCache()
        >>> cache.get("Dogs chase cats; cats run.")
        ({'dog': 1, 'chase': 1, 'cat': 2, 'run': 1}, 5)
        >>> len(cache), cache.get("Dogs chase cats; cats run.") is cache.get(
        ...     "Dogs chase cats; cats run.")
        (1, True)
        >>> small = TermCache(max_bytes=800)
        >>> for text in ("a long text " * 20, "another one " * 20):
        ...     _ = small.get(text)
        >>> len(small), small.held <= 800
        (1, True)
    """

    __slots__ = ("_entries", "_held", "_lock", "_max_bytes", "_size")

    def __init__(
        self, size: int = DEFAULT_CACHE_SIZE, *, max_bytes: int = DEFAULT_CACHE_BYTES
    ) -> None:
        self._size: int = check_int(size, "size", low=1)
        self._max_bytes: int = check_int(max_bytes, "max_bytes", low=1)
        # An OrderedDict, as ``_lru.LRU`` keeps one (O(1) at both ends), with
        # each entry's charge beside it: eviction must know what it frees.
        self._entries: OrderedDict[str, tuple[Stats, int]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held(self) -> int:
        """The memory charged to the entries now (see ``max_bytes``)."""
        return self._held

    @property
    def max_bytes(self) -> int:
        """The most memory the entries may hold."""
        return self._max_bytes

    def get(self, text: str) -> Stats:
        """The term counts and length of ``text``, computed once."""
        entries = self._entries
        with self._lock:
            found = entries.get(text)
            if found is not None:
                entries.move_to_end(text)
                return found[0]
        words = terms(text)
        stats: Stats = (dict(Counter(words)), len(words))
        counts = stats[0]
        cost = (
            sys.getsizeof(text)
            + sys.getsizeof(counts)
            + sum(map(sys.getsizeof, counts))
        )
        if cost > self._max_bytes:
            return stats
        with self._lock:
            old = entries.pop(text, None)
            if old is not None:  # stored by another thread meanwhile
                self._held -= old[1]
            entries[text] = (stats, cost)
            self._held += cost
            while len(entries) > self._size or self._held > self._max_bytes:
                self._held -= entries.popitem(last=False)[1][1]
        return stats


@dataclass(frozen=True, slots=True)
class BM25Scorer:
    """Rank documents by BM25, with the context of their neighbours.

    Args:
        k1: Term-frequency saturation (BM25's ``k1``).
        b: Length normalisation (BM25's ``b``).
        context: ``(width, weight)`` pairs: windows of ``width`` documents
            either side, and how much their score counts against the
            document's own (which counts 1). ``()``: plain BM25.

    Raises:
        ContextWindowError: ``k1`` or ``b`` out of range, a width below 1
            or a negative weight in ``context``, or a ``cache`` that is not a
            ``TermCache``.

    Example:
        >>> docs = ["We adopted a puppy!", "Congrats! What is her name?",
        ...         "Luna. She loves the park.", "The printer jammed.",
        ...         "Lunch was fine.", "Rain again today."]
        >>> ask = "What is the puppy's name?"
        >>> [round(s, 2) for s in BM25Scorer(context=())(docs, ask)]
        [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
        >>> [round(s, 2) for s in BM25Scorer()(docs, ask)]  # the answer's neighbours
        [2.3, 2.21, 1.13, 0.62, 0.3, 0.3]
    """

    k1: float = 1.2
    """Term-frequency saturation."""
    b: float = 0.75
    """Length normalisation, from 0 (none) to 1 (full)."""
    context: tuple[tuple[int, float], ...] = ((2, 1.0), (8, 0.3))
    """Windows of neighbours, as ``(width, weight)``: by default the two
    units either side count as much as the unit itself, and the eight either
    side (a conversation's topic) a third as much."""
    cache: TermCache = field(
        default_factory=TermCache, compare=False, hash=False, repr=False
    )
    """Term counts per document text (shared by every call)."""

    def __post_init__(self) -> None:
        check_number(self.k1, "k1", low=0)
        check_number(self.b, "b", low=0, high=1)
        pairs = check_items(self.context, "context", _context_pair)
        object.__setattr__(self, "context", tuple(pairs))
        if not isinstance(self.cache, TermCache):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("cache", shown(self.cache), "a TermCache")

    def __call__(self, documents: Sequence[str], query: str, /) -> list[float]:
        """One score per document (0: no query term in it or around it)."""
        index = self.index()
        for d in documents:
            index.append(d)
        return index.scores(query, len(documents))

    def index(self) -> BM25Index:
        """An empty inverted index scoring as this scorer does."""
        return BM25Index(self)


class BM25Index:
    """A ``BM25Scorer``'s statistics of a list of documents, grown at its end.

    Args:
        scorer: Whose settings and term cache it uses.

    Example:
        >>> scorer = BM25Scorer()
        >>> docs = ["We adopted a puppy!", "Congrats! What is her name?",
        ...         "Luna. She loves the park.", "The printer jammed."]
        >>> index = scorer.index()
        >>> for d in docs:
        ...     index.append(d)
        >>> index.scores("the puppy's name?", 4) == scorer(docs, "the puppy's name?")
        True
        >>> index.truncate(2); len(index)
        2
    """

    __slots__ = ("_arrays", "_docs", "_postings", "_prefix", "_spreads", "scorer")

    def __init__(self, scorer: BM25Scorer) -> None:
        self.scorer = scorer
        self._docs: list[dict[str, int]] = []
        self._prefix: list[int] = [0]
        """Running sum of the documents' lengths in terms."""
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        """Each term's documents (in order) and its count in each."""
        self._spreads: OrderedDict[tuple[str, int], _Spread] = OrderedDict()
        """A query term's count in the window around each document, for
        the documents whose window lies before the last (see ``_spread``)."""
        self._arrays: OrderedDict[str, _Arrays] = OrderedDict()
        """Query terms' postings as arrays, for the numpy path (``""``: the
        running sum of lengths)."""

    def __len__(self) -> int:
        return len(self._docs)

    def append(self, document: str) -> None:
        """Index one more document, at the end."""
        counts, length = self.scorer.cache.get(document)
        i = len(self._docs)
        self._docs.append(counts)
        self._prefix.append(self._prefix[-1] + length)
        postings = self._postings
        for term, f in counts.items():
            row = postings.get(term)
            if row is None:
                postings[term] = ([i], [f])
            else:
                row[0].append(i)
                row[1].append(f)

    def truncate(self, n: int) -> None:
        """Forget every document from the ``n``-th on."""
        if n < len(self._docs):
            for (_, width), spread in self._spreads.items():
                spread.cut(max(0, n - width))
        postings = self._postings
        arrays = self._arrays
        while len(self._docs) > n:
            for term in self._docs.pop():
                where, counts = postings[term]
                where.pop()
                counts.pop()
                kept = arrays.get(term)
                if kept is not None:
                    kept.cut(len(where))
                if not where:
                    del postings[term]
            self._prefix.pop()
        lengths = arrays.get("")
        if lengths is not None:
            lengths.cut(len(self._prefix))

    def scores(self, query: str, n: int) -> list[float]:
        """``scorer(documents[:n], query)``, from the index (see the module)."""
        n = min(n, len(self._docs))
        total = [0.0] * n
        wanted = Counter(terms(query))
        if not n or not wanted:
            return total
        postings = self._postings
        present = [t for t in wanted if (row := postings.get(t)) and row[0][0] < n]
        if not present:
            return total
        np = _numpy() if n >= VECTOR_FROM else None
        if np is not None:
            return self._vector_scores(np, present, wanted, n)
        counts: dict[str, tuple[list[int], list[int]]] = {}
        for term in present:
            row = postings[term]
            k = bisect_left(row[0], n)
            counts[term] = (row[0][:k], row[1][:k]) if k < len(row[0]) else row
        for width, weight in ((0, 1.0), *self.scorer.context):
            if not weight:
                continue
            level = self._level(counts, wanted, n, width)
            # Some document holds a query term, so the best score is > 0.
            scale = weight / max(level)
            total = [t + scale * x for t, x in zip(total, level, strict=True)]
        return total

    def _level(
        self,
        counts: dict[str, tuple[list[int], list[int]]],
        wanted: Counter[str],
        n: int,
        width: int,
    ) -> list[float]:
        """The BM25 of every document (``width`` 0) or of every window around one."""
        prefix = self._prefix
        if width:
            lens = _window_sums(prefix, n, width)
        else:
            lens = list(map(sub, prefix[1 : n + 1], prefix[:n]))
        average = sum(lens) / n or 1.0
        k1, b = self.scorer.k1, self.scorer.b
        # k1 * (1 - b + b * length / average), at C speed, in that order
        # (``average.__rtruediv__(x)`` is ``x / average``: typeshed leaves
        # ``operator.truediv`` untyped).
        scaled = map(average.__rtruediv__, map(mul, repeat(b), lens))
        norm = list(map(mul, repeat(k1), map(add, repeat(1 - b), scaled)))
        out = [0.0] * n
        for term, row in counts.items():
            parts = self._spread(term, row, width, n) if width else (row,)
            df = sum(len(where) for where, _ in parts)
            idf = wanted[term] * math.log(1 + (n - df + 0.5) / (df + 0.5))
            gain = idf * (k1 + 1)
            for where, tf in parts:
                # The hot loop: plain arithmetic, which the interpreter
                # specialises, is faster here than chained maps.
                for i, f in zip(where, tf, strict=True):
                    out[i] += gain * f / (f + norm[i])
        return out

    def _vector_scores(
        self,
        np: Any,
        present: list[str],
        wanted: Counter[str],
        n: int,
    ) -> list[float]:
        """``scores`` on numpy arrays: each step the loops' own, on every document.

        A document without the term adds +0.0, which leaves its sum as it
        was; the others add what the loop adds, term by term in the same
        order, so every float is the loop's.
        """
        k1, b = self.scorer.k1, self.scorer.b
        prefix = self._array("", self._prefix, None, np)[0][: n + 1]
        rows: list[tuple[int, Any, Any]] = []
        for term in present:
            where, tf = self._array(term, *self._postings[term], np)
            k = int(np.searchsorted(where, n))
            rows.append((wanted[term], where[:k], tf[:k]))
        positions = np.arange(n)
        total = np.zeros(n)
        for width, weight in ((0, 1.0), *self.scorer.context):
            if not weight:
                continue
            if width:
                hi = np.minimum(positions + (width + 1), n)
                lens = prefix[hi] - prefix[np.maximum(positions - width, 0)]
            else:
                lens = prefix[1:] - prefix[:-1]
            average = int(lens.sum()) / n or 1.0
            norm = k1 * ((1 - b) + (b * lens) / average)
            # Where no norm is 0, 0 / (0 + norm) is +0.0: else only where the
            # term is (as the loops do), for 0 / 0 would be NaN.
            positive = bool(norm.min() > 0)
            level = np.zeros(n)
            for times, where, tf in rows:
                f = _window_counts(np, where, tf, n, width)
                df = int(np.count_nonzero(f))
                idf = times * math.log(1 + (n - df + 0.5) / (df + 0.5))
                gain = idf * (k1 + 1)
                below = f + norm
                if positive:
                    f *= gain
                    f /= below
                else:
                    held = f != 0
                    f *= gain
                    f = np.divide(f, below, out=np.zeros(n), where=held)
                level += f
            scale = weight / float(level.max())
            total = total + scale * level
        return cast("list[float]", total.tolist())

    def _array(
        self, term: str, where: list[int], tf: list[int] | None, np: Any
    ) -> tuple[Any, Any]:
        """A term's postings as arrays (``""``: the running lengths), kept.

        Only what changed since they were last made is converted.
        """
        kept = self._arrays.get(term)
        if kept is None:
            kept = _Arrays(np)
            self._arrays[term] = kept
        self._arrays.move_to_end(term)
        if len(self._arrays) > SPREAD_CACHE:
            self._arrays.popitem(last=False)
        return kept.of(np, where, tf)

    def _spread(
        self, term: str, row: tuple[list[int], list[int]], width: int, n: int
    ) -> tuple[tuple[list[int], list[int]], ...]:
        """``_spread`` of the term's postings in the first ``n`` documents.

        In parts, in order. The counts around a document whose window ends
        before the last of ``n`` documents stay while documents are added,
        so they are kept (``SPREAD_CACHE`` pairs) and only the windows that
        reach the new documents are counted again.
        """
        where, tf = self._postings[term]
        key = (term, width)
        kept = self._spreads.get(key)
        if kept is None or kept.stable > max(0, n - width):
            kept = _Spread()
        lo = kept.stable
        a, z = bisect_left(where, lo - width), bisect_left(where, n)
        tail_where, tail_tf = _spread(where[a:z], tf[a:z], width, n, lo)
        stable = max(lo, n - width)
        k = bisect_left(tail_where, stable)
        kept.where += tail_where[:k]
        kept.tf += tail_tf[:k]
        kept.stable = stable
        self._spreads[key] = kept
        self._spreads.move_to_end(key)
        if len(self._spreads) > SPREAD_CACHE:
            self._spreads.popitem(last=False)
        return (kept.where, kept.tf), (tail_where[k:], tail_tf[k:])


class _Spread:
    """A term's window counts for the documents before ``stable`` (positions)."""

    __slots__ = ("stable", "tf", "where")

    def __init__(self) -> None:
        self.where: list[int] = []
        self.tf: list[int] = []
        self.stable = 0

    def cut(self, stable: int) -> None:
        """Forget the windows from ``stable`` on (their documents changed)."""
        if stable < self.stable:
            k = bisect_left(self.where, stable)
            del self.where[k:], self.tf[k:]
            self.stable = stable


def _window_counts(np: Any, where: Any, tf: Any, n: int, width: int) -> Any:
    """A term's count in the window ``width`` either side of each document.

    As floats: counts are small integers, so every sum is exact, and a float
    count is what the loops' ``gain * f`` makes of an int. Document ``p``
    stands at ``p + width + 1``, a 0 first, so that the running sum gives each
    window's count by one subtraction.
    """
    f = np.zeros(n + 2 * width + 1)
    f[where + (width + 1)] = tf
    if not width:
        return f[1:]
    sums = np.cumsum(f)
    return sums[2 * width + 1 :] - sums[:n]


class _Arrays:
    """A term's postings (or the running lengths) as arrays, kept current.

    ``valid``: how many leading entries are those of the lists now; a
    ``truncate`` lowers it, and ``of`` converts only the entries after it.
    """

    __slots__ = ("tf", "valid", "where")

    def __init__(self, np: Any) -> None:
        self.where: Any = np.zeros(0, dtype=np.int64)
        self.tf: Any = np.zeros(0, dtype=np.int64)
        self.valid = 0

    def cut(self, valid: int) -> None:
        """The lists now hold ``valid`` entries at most, as before."""
        self.valid = min(self.valid, valid)

    def of(self, np: Any, where: list[int], tf: list[int] | None) -> tuple[Any, Any]:
        """The arrays of ``where`` and ``tf``, its last entries converted."""
        n, v = len(where), self.valid
        if v != n or len(self.where) != n:
            new = np.array(where[v:], dtype=np.int64)
            self.where = np.concatenate((self.where[:v], new))
            if tf is not None:
                new = np.array(tf[v:], dtype=np.int64)
                self.tf = np.concatenate((self.tf[:v], new))
            self.valid = n
        return self.where, self.tf


_NUMPY: list[ModuleType | None] = []
"""numpy, once looked for (``[None]`` when it is not installed)."""


def _numpy() -> ModuleType | None:
    """The numpy module, if installed and ``CONTEXTWINDOW_NO_NUMPY`` is unset."""
    if os.environ.get("CONTEXTWINDOW_NO_NUMPY"):
        return None
    if not _NUMPY:
        try:
            _NUMPY.append(importlib.import_module("numpy"))
        except ImportError:
            _NUMPY.append(None)
    return _NUMPY[0]


def _window_sums(prefix: list[int], n: int, width: int) -> list[int]:
    """For each document, the length of the window ``width`` either side of it.

    Example:
        >>> _window_sums([0, 1, 1, 1, 3, 3], 5, 1)
        [1, 1, 2, 2, 2]
    """
    span = 2 * width + 1
    if n <= span:
        return [
            prefix[min(n, i + width + 1)] - prefix[max(0, i - width)] for i in range(n)
        ]
    head = [prefix[i + width + 1] for i in range(width)]
    middle = list(map(sub, prefix[span : n + 1], prefix[: n + 1 - span]))
    tail = [prefix[n] - prefix[i - width] for i in range(n - width, n)]
    return [*head, *middle, *tail]


def _spread(
    where: list[int], tf: list[int], width: int, n: int, first: int = 0
) -> tuple[list[int], list[int]]:
    """A term's count in the window ``width`` either side of each document.

    Only where it is not 0, from the term's postings, for the documents from
    ``first`` on (the postings given must hold every one from ``first -
    width`` on).

    Example:
        >>> _spread([0, 3], [1, 2], 1, 5)
        ([0, 1, 2, 3, 4], [1, 1, 2, 2, 2])
        >>> _spread([0, 3], [1, 2], 1, 5, first=2)
        ([2, 3, 4], [2, 2, 2])
    """
    if len(where) * (2 * width + 1) * _DENSE_RATIO > n - first:
        return _spread_dense(where, tf, width, n, first)
    return _spread_sparse(where, tf, width, n, first)


def _spread_sparse(
    where: list[int], tf: list[int], width: int, n: int, first: int = 0
) -> tuple[list[int], list[int]]:
    """``_spread``, by a step per position some posting's window reaches.

    Example:
        >>> _spread_sparse([0, 3], [1, 2], 1, 5) == _spread([0, 3], [1, 2], 1, 5)
        True
    """
    out_where: list[int] = []
    out_tf: list[int] = []
    m = len(where)
    lo = hi = s = 0
    done = first - 1  # the last position given
    for p in where:
        start = max(p - width, done + 1, 0)
        end = min(p + width, n - 1)
        for i in range(start, end + 1):
            while hi < m and where[hi] <= i + width:
                s += tf[hi]
                hi += 1
            while where[lo] < i - width:
                s -= tf[lo]
                lo += 1
            out_where.append(i)
            out_tf.append(s)
        done = max(done, end)
    return out_where, out_tf


_DENSE_RATIO = 2
"""How much more a step of ``_spread_sparse`` costs than a position of
``_spread_dense``'s passes at C speed (chosen by timing ``SelectRelevant``'s
re-fits in ``benchmarks/fit_speed.py``: 2 beat 0.5, 1, 4, 8 and 16): the way
that does less is taken."""


def _spread_dense(
    where: list[int], tf: list[int], width: int, n: int, first: int = 0
) -> tuple[list[int], list[int]]:
    """``_spread``, by running sums over every position from ``first`` on.

    Example:
        >>> _spread_dense([0, 3], [1, 2], 1, 5) == _spread([0, 3], [1, 2], 1, 5)
        True
    """
    if first >= n:
        return [], []
    base = first - width  # the first position a window from ``first`` reaches
    counts = [0] * (n + width - base)  # zeros past both ends
    a = bisect_left(where, base)  # earlier postings reach no window asked for
    at = map(sub, islice(where, a, None), repeat(base))
    deque(map(counts.__setitem__, at, islice(tf, a, None)), maxlen=0)
    sums = [0, *accumulate(counts)]
    span = 2 * width + 1
    # Position i's window is counts[i - width - base : i + width + 1 - base].
    window = list(map(sub, sums[span : span + n - first], sums[: n - first]))
    return list(compress(range(first, n), window)), list(filter(None, window))


def _context_pair(pair: object, name: str) -> tuple[int, float]:
    """One ``(width, weight)`` context window: a width >= 1, a weight >= 0."""
    takes = "a (width >= 1, weight >= 0) pair"
    if not isinstance(pair, (tuple, list)):
        raise ArgumentTypeError(name, shown(pair), takes)
    items = cast("Sequence[object]", pair)
    if len(items) != 2:
        raise ArgumentTypeError(name, shown(items), takes)
    width: int = check_int(items[0], f"{name}[0]", low=1)
    weight: float = check_number(items[1], f"{name}[1]", low=0)
    return (width, weight)
