from __future__ import annotations

import gc
import math
import random
import tracemalloc
from typing import Any

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow.errors import ArgumentError, ArgumentTypeError, ContextWindowError
from contextwindow.relevance import BM25Scorer, TermCache, terms
from contextwindow.relevance import bm25 as bm25_module
from contextwindow.relevance._text import _term
from contextwindow.relevance.bm25 import (
    _spread,
    _spread_dense,
    _spread_sparse,
    _window_sums,
)


def bm25(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Textbook Okapi BM25 (Lucene's idf), written out independently."""
    toks = [terms(d) for d in docs]
    avg = sum(map(len, toks)) / len(toks)
    out = []
    for t in toks:
        s = 0.0
        for q in terms(query):
            df = sum(q in d for d in toks)
            if not df:
                continue
            idf = math.log(1 + (len(toks) - df + 0.5) / (df + 0.5))
            f = t.count(q)
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(t) / avg))
        out.append(s)
    return out


DOCS = [
    "Lisbon trip booked for May, flights at 9.",
    "The build failed on the linter again.",
    "Hotel in Alfama, three nights in Lisbon.",
    "Lunch was a sandwich.",
    "Linter config updated; the build passes.",
]


class TestBM25Scorer:
    def test_plain_scores_are_bm25_scaled_to_the_best(self) -> None:
        """Without context: BM25 divided by the best score."""
        got = BM25Scorer(context=())(DOCS, "Which hotel in Lisbon?")
        want = bm25(DOCS, "Which hotel in Lisbon?")
        assert got == pytest.approx([w / max(want) for w in want])
        assert got[2] == 1.0
        assert got[3] == 0.0

    def test_parameters_change_the_scores(self) -> None:
        """k1 and b are BM25's."""
        for k1, b in ((0.5, 0.0), (2.0, 1.0)):
            got = BM25Scorer(k1=k1, b=b, context=())(DOCS, "lisbon flights build")
            want = bm25(DOCS, "lisbon flights build", k1, b)
            assert got == pytest.approx([w / max(want) for w in want])

    def test_context_lifts_the_neighbours_of_a_hit(self) -> None:
        """A window score adds to each document: neighbours of a hit score > 0."""
        docs = ["We adopted a puppy!", "What is her name?", "Luna.", "Taxes.", "Rain."]
        plain = BM25Scorer(context=())(docs, "the puppy's name")
        near = BM25Scorer(context=((1, 1.0),))(docs, "the puppy's name")
        assert plain[2] == 0.0 < near[2]
        assert near[2] > near[4], "the window fades with distance"
        assert near[0] == pytest.approx(plain[0] + 1.0)  # its window is the best

    def test_window_scores_are_bm25_of_pooled_neighbours(self) -> None:
        """A window level is BM25 over documents of pooled neighbour texts."""
        scorer = BM25Scorer(context=((1, 0.5),))
        got = scorer(DOCS, "lisbon build")
        plain = bm25(DOCS, "lisbon build")
        pooled = [" ".join(DOCS[max(0, i - 1) : i + 2]) for i in range(len(DOCS))]
        window = bm25(pooled, "lisbon build")
        want = [
            p / max(plain) + 0.5 * w / max(window)
            for p, w in zip(plain, window, strict=True)
        ]
        assert got == pytest.approx(want)

    def test_nothing_in_common_scores_zero(self) -> None:
        """A query of stopwords, unknown words, or no documents: all zeros."""
        scorer = BM25Scorer()
        assert scorer(DOCS, "what is it?") == [0.0] * 5
        assert scorer(DOCS, "zebra quartz") == [0.0] * 5
        assert scorer([], "lisbon") == []

    def test_zero_weight_levels_are_skipped(self) -> None:
        """A window of weight 0 adds nothing."""
        assert BM25Scorer(context=((3, 0.0),))(DOCS, "linter") == BM25Scorer(
            context=()
        )(DOCS, "linter")

    def test_repeated_query_terms_weigh_more(self) -> None:
        """A term asked twice counts twice."""
        once = BM25Scorer(context=())(DOCS, "lisbon build")
        twice = BM25Scorer(context=())(DOCS, "lisbon lisbon build")
        assert twice[0] / twice[1] > once[0] / once[1]

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"k1": -1.0},
            {"b": 1.5},
            {"b": -0.1},
            {"context": ((0, 1.0),)},
            {"context": ((2, -1.0),)},
        ],
    )
    def test_bad_configuration_fails_at_construction(
        self, kwargs: dict[str, Any]
    ) -> None:
        """k1 < 0, b outside [0, 1], a width < 1 or a negative weight."""
        with pytest.raises(ContextWindowError):
            BM25Scorer(**kwargs)

    def test_equal_configurations_compare_equal(self) -> None:
        """The cache takes no part in equality, hashing or repr."""
        a, b = BM25Scorer(), BM25Scorer()
        a(DOCS, "lisbon")
        assert a == b
        assert hash(a) == hash(b)
        assert repr(a) == "BM25Scorer(k1=1.2, b=0.75, context=((2, 1.0), (8, 0.3)))"
        listed: Any = [[1, 0.5]]  # lists from JSON, say
        assert BM25Scorer(context=listed).context == ((1, 0.5),)


class TestIncrementalIndex:
    def test_one_new_document_is_tokenised_once(self) -> None:
        """After an append only the new text is counted; old entries are reused."""
        scorer = BM25Scorer()
        first = scorer(DOCS, "lisbon")
        assert len(scorer.cache) == len(DOCS)
        entries = [scorer.cache.get(d) for d in DOCS]
        grown = [*DOCS, "Flights to Lisbon moved to 10."]
        scorer(grown, "lisbon")
        assert len(scorer.cache) == len(DOCS) + 1
        assert all(scorer.cache.get(d) is e for d, e in zip(DOCS, entries, strict=True))
        assert scorer(DOCS, "lisbon") == first, "a cache never changes a result"

    def test_the_cache_is_bounded(self) -> None:
        """The oldest entry goes first once the cache is full."""
        cache = TermCache(2)
        a = cache.get("alpha")
        cache.get("beta")
        cache.get("gamma")
        assert len(cache) == 2
        assert cache.get("alpha") is not a
        assert cache.get("alpha") == a
        with pytest.raises(ContextWindowError):
            TermCache(0)


class TestTermCacheMemory:
    def test_the_cache_is_bounded_by_memory(self) -> None:
        """Oldest out until what the entries hold fits max_bytes."""
        cache = TermCache(max_bytes=20_000)
        docs = [
            f"doc {i} " + " ".join(f"w{i}x{j}" for j in range(50)) for i in range(40)
        ]
        for d in docs:
            cache.get(d)
        assert 0 < cache.held <= cache.max_bytes == 20_000
        assert 1 < len(cache) < len(docs)
        assert cache.get(docs[-1]) is cache.get(docs[-1])  # the newest is kept

    def test_what_it_charges_is_what_it_holds(self) -> None:
        """The charge covers the memory the entries really keep (tracemalloc)."""
        rng = random.Random(0)
        docs = [
            " ".join(f"w{rng.randrange(10**9)}" for _ in range(300)) for _ in range(60)
        ]
        gc.collect()
        tracemalloc.start()
        try:
            cache = TermCache(max_bytes=400_000)
            for text in docs:
                cache.get(text)
            docs.clear()  # only the cache holds the texts now (``text`` is the last)
            _term.cache_clear()  # and the terms in its tables
            gc.collect()
            with_entries = tracemalloc.get_traced_memory()[0]
            held = cache.held
            cache = TermCache()
            gc.collect()
            freed = with_entries - tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert held <= 400_000
        assert freed <= held * 1.25, (freed, held)

    def test_a_document_over_the_bound_is_counted_not_kept(self) -> None:
        """One text larger than max_bytes is scored, and nothing is evicted for it."""
        cache = TermCache(max_bytes=2_000)
        small = cache.get("a small note")
        big = cache.get("word " * 1_000)
        assert big == ({"word": 1_000}, 1_000)
        assert len(cache) == 1
        assert cache.get("a small note") is small

    @pytest.mark.parametrize("bad", [0, -1, 1.5, "1000", True, None])
    def test_bad_bounds_are_named(self, bad: object) -> None:
        """size and max_bytes: ints >= 1, named."""
        with pytest.raises(ArgumentError, match=r"^max_bytes: expected an int >= 1"):
            TermCache(max_bytes=bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", ["nope", {}, None, 5])
    def test_a_scorer_cache_that_is_no_term_cache_is_named(self, bad: object) -> None:
        """BM25Scorer(cache=...) is checked when built, not an AttributeError later."""
        with pytest.raises(ArgumentTypeError, match=r"^cache: expected a TermCache"):
            BM25Scorer(cache=bad)  # type: ignore[arg-type]  # the wrong type on purpose


def test_window_sums() -> None:
    """Each position sums its neighbours within the width, clipped at the ends."""
    prefix = [0, 1, 3, 6, 10]  # the running sum of [1, 2, 3, 4]
    assert _window_sums(prefix, 4, 1) == [3, 6, 9, 7]
    assert _window_sums(prefix, 4, 10) == [10, 10, 10, 10]
    assert _window_sums([0], 0, 2) == []
    assert _spread([0, 1, 2, 3], [1, 2, 3, 4], 1, 4) == ([0, 1, 2, 3], [3, 6, 9, 7])
    assert _spread([1], [5], 10, 3) == ([0, 1, 2], [5, 5, 5])


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.dictionaries(st.integers(0, n - 1), st.integers(1, 5)),
            st.integers(1, 10),
            st.integers(0, n),
        )
    )
)
def test_both_ways_of_spreading_count_each_window(
    case: tuple[int, dict[int, int], int, int],
) -> None:
    """The loop and the running sums give each window's count, by definition:
    the term's count in the documents ``width`` either side, where not 0,
    for the documents from ``first`` on."""
    n, postings, width, first = case
    where = sorted(postings)
    tf = [postings[p] for p in where]
    expected: tuple[list[int], list[int]] = ([], [])
    for i in range(first, n):
        c = sum(f for p, f in postings.items() if abs(p - i) <= width)
        if c:
            expected[0].append(i)
            expected[1].append(c)
    assert _spread_dense(where, tf, width, n, first) == expected
    assert _spread_sparse(where, tf, width, n, first) == expected
    assert _spread(where, tf, width, n, first) == expected


def test_kept_window_counts_never_change_a_score() -> None:
    """An index grown, cut back and queried again scores as a fresh one.

    The index keeps each query term's window counts for the documents
    whose window lies before the last; a wrong one would move a score.
    """
    rng = random.Random(7)
    words = [
        "lisbon",
        "build",
        "linter",
        "hotel",
        "flight",
        "lunch",
        "alfama",
        "config",
        "nights",
        "may",
    ]
    pool = [" ".join(rng.choices(words, k=rng.randrange(1, 8))) for _ in range(120)]
    scorer = BM25Scorer(context=((1, 0.5), (3, 1.0)))
    index = scorer.index()
    docs: list[str] = []
    for step in range(300):
        roll = rng.random()
        if roll < 0.7:
            docs.append(rng.choice(pool))
            index.append(docs[-1])
        elif docs:
            keep = max(0, len(docs) - rng.randrange(1, 12))
            del docs[keep:]
            index.truncate(keep)
        query = " ".join(rng.choices(words, k=rng.randrange(1, 4)))
        n = len(docs) - (rng.random() < 0.3 and len(docs) > 0)
        fresh = scorer(docs[:n], query)
        assert index.scores(query, n) == fresh, f"step {step}"


WORDS = ["lisbon", "build", "linter", "hotel", "flight", "lunch", "alfama", "may"]


def loop_and_arrays(index: Any, query: str, n: int) -> tuple[list[float], list[float]]:
    """``index.scores(query, n)`` by the loops and by the numpy path."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTEXTWINDOW_NO_NUMPY", "1")
        loops = index.scores(query, n)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25_module, "VECTOR_FROM", 1)
        arrays = index.scores(query, n)
    return loops, arrays


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=1, max_size=40),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
    st.lists(
        st.tuples(st.integers(1, 9), st.sampled_from([0.0, 0.3, 1.0, 2.5])),
        max_size=2,
    ),
    st.floats(0.0, 3.0),
    st.floats(0.0, 1.0),
)
def test_the_numpy_path_gives_the_loops_floats_bit_for_bit(
    docs: list[list[str]],
    query: list[str],
    context: list[tuple[int, float]],
    k1: float,
    b: float,
) -> None:
    """Every score equal, not close: the same operations in the same order."""
    assert numpy.__version__  # installed with the test extra: never skipped
    index = BM25Scorer(k1=k1, b=b, context=tuple(context)).index()
    for d in docs:
        index.append(" ".join(d))
    for n in {len(docs), max(1, len(docs) // 2)}:
        loops, arrays = loop_and_arrays(index, " ".join(query), n)
        assert arrays == loops
        assert all(type(x) is float for x in arrays)


def test_the_numpy_path_follows_an_index_grown_and_cut_back() -> None:
    """The arrays it keeps (postings, lengths) follow appends and truncations."""
    rng = random.Random(11)
    pool = [" ".join(rng.choices(WORDS, k=rng.randrange(1, 8))) for _ in range(80)]
    scorer = BM25Scorer(context=((1, 0.5), (3, 1.0)))
    index = scorer.index()
    docs: list[str] = []
    for step in range(250):
        if rng.random() < 0.7 or not docs:
            docs.append(rng.choice(pool))
            index.append(docs[-1])
        else:
            keep = max(0, len(docs) - rng.randrange(1, 12))
            del docs[keep:]
            index.truncate(keep)
        if not docs:
            continue
        query = " ".join(rng.choices(WORDS, k=rng.randrange(1, 4)))
        loops, arrays = loop_and_arrays(index, query, len(docs))
        assert arrays == loops == scorer(docs, query), f"step {step}"
