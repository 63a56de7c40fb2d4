"""Relevance: how much each unit of a conversation has to do with a query.

``SelectRelevant`` (in ``contextwindow.strategies``) keeps the older units its
scorer ranks highest. ``BM25Scorer`` works offline with no model;
``EmbeddingScorer`` blends in the meaning of the texts through any
``Embedder``, such as ``MiniLMEmbedder`` (the optional extra ``embeddings``).

Example:
    >>> docs = ["We flew to Lisbon in May.", "The build is green.",
    ...         "Lisbon was sunny, we ate pasteis."]
    >>> scores = BM25Scorer(context=())(docs, "When did they fly to Lisbon?")
    >>> max(range(3), key=scores.__getitem__)
    0
"""

from __future__ import annotations

from contextwindow.relevance._text import STOPWORDS, terms
from contextwindow.relevance.base import Scorer, document, when
from contextwindow.relevance.bm25 import BM25Scorer, TermCache
from contextwindow.relevance.embeddings import (
    Embedder,
    EmbeddingScorer,
    MiniLMEmbedder,
    VectorCache,
)

__all__ = [
    "STOPWORDS",
    "BM25Scorer",
    "Embedder",
    "EmbeddingScorer",
    "MiniLMEmbedder",
    "Scorer",
    "TermCache",
    "VectorCache",
    "document",
    "terms",
    "when",
]
