"""The bounded caches (least recently used out first, or a generation at a
time) and their users."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextwindow import Message, TokenCounter, fit
from contextwindow._lru import LRU, Generations
from contextwindow.fitting import FITTINGS_KEPT
from contextwindow.relevance.bm25 import TermCache
from contextwindow.relevance.embeddings import VectorCache
from contextwindow.strategies import SlidingWindow


class Counting:
    """A tokenizer that records every text it counts."""

    name = "counting"
    exact = False

    def __init__(self) -> None:
        self.seen: list[str] = []

    def count(self, text: str) -> int:
        self.seen.append(text)
        return len(text.split())


ops = st.lists(
    st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 6), st.integers()),
    max_size=60,
)


class TestLRU:
    @given(size=st.integers(1, 4), steps=ops)
    def test_matches_a_reference_model(
        self, size: int, steps: list[tuple[str, int, int]]
    ) -> None:
        """Same answers as a list kept in recency order, cut to ``size``."""
        cache: LRU[int, int] = LRU(size)
        model: list[tuple[int, int]] = []
        for op, key, value in steps:
            hit = next((v for k, v in model if k == key), None)
            if op == "get":
                assert cache.get(key) == hit
                if hit is not None:
                    model = [(k, v) for k, v in model if k != key] + [(key, hit)]
            else:
                cache.put(key, value)
                model = [(k, v) for k, v in model if k != key] + [(key, value)]
                model = model[-size:]
            assert len(cache) == len(model)
            assert all(k in cache for k, _ in model)

    def test_bad_size(self) -> None:
        """A size below 1 is refused, naming it."""
        from contextwindow.errors import ContextWindowError

        with pytest.raises(ContextWindowError, match="at least 1, got 0"):
            LRU(0)


class EvictedAfterLookup(OrderedDict[int, int]):
    """What another thread does between an LRU's lookup and its reordering."""

    def __getitem__(self, key: int) -> int:
        value = super().__getitem__(key)
        del self[key]  # evicted meanwhile
        return value


class EvictedAfterStore(OrderedDict[int, int]):
    """What another thread does between an LRU's store and its reordering."""

    def __setitem__(self, key: int, value: int) -> None:
        super().__setitem__(key, value)
        self.clear()  # emptied meanwhile


class TestLRUShared:
    def test_an_entry_evicted_after_its_lookup_is_returned(self) -> None:
        """A lookup whose entry another thread evicts meanwhile gives the value."""
        cache: LRU[int, int] = LRU(4)
        cache._data = EvictedAfterLookup({1: 10})
        assert cache.get(1) == 10
        assert cache.get(1) is None

    def test_an_entry_evicted_after_its_store_is_no_error(self) -> None:
        """A store whose entry another thread evicts meanwhile does not fail."""
        cache: LRU[int, int] = LRU(1)
        cache._data = EvictedAfterStore()
        cache.put(1, 10)
        assert len(cache) == 0

    def test_threads_sharing_fits_strategy_cache(self) -> None:
        """fit from many threads, over more strategies than it keeps, never fails."""
        conv = [Message.user(f"q {i} " + "word " * 5) for i in range(9)]
        strategies = [SlidingWindow(n) for n in range(2, 2 + 3 * FITTINGS_KEPT)]
        errors: list[BaseException] = []

        def work(k: int) -> None:
            try:
                for r in range(300):
                    fit(
                        conv,
                        limit=10_000,
                        strategy=strategies[(k * 7 + r) % len(strategies)],
                    )
            except BaseException as exc:  # any failure is reported
                errors.append(exc)

        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
        assert errors == []


class TestUsers:
    def test_counter_keeps_what_it_used_last(self) -> None:
        """A message counted again stays cached; the one unused since goes."""
        tok = Counting()
        counter = TokenCounter(tok, cache_size=2)
        # Fresh but equal objects each time: looked up by content, not identity.
        for t in ("alpha one", "beta two", "alpha one", "gamma three"):
            counter.message(Message.user(t))
        tok.seen.clear()
        counter.message(Message.user("alpha one"))
        assert "alpha one" not in tok.seen  # still cached: used after beta
        counter.message(Message.user("beta two"))
        assert "beta two" in tok.seen  # evicted by gamma

    def test_text_cache_keeps_what_it_used_last(self) -> None:
        """The counter's text cache keeps the texts used last too."""
        tok = Counting()
        counter = TokenCounter(tok, cache_size=2)
        for t in ("one", "two", "one", "three"):
            counter.text(t)
        tok.seen.clear()
        counter.text("one")
        counter.text("two")
        assert tok.seen == ["two"]

    def test_term_cache(self) -> None:
        """TermCache keeps the entry used last."""
        cache = TermCache(2)
        first = cache.get("dogs run")
        cache.get("cats sleep")
        assert cache.get("dogs run") is first
        cache.get("birds sing")
        assert cache.get("dogs run") is first
        assert len(cache) == 2

    def test_vector_cache(self) -> None:
        """VectorCache embeds only what it no longer holds."""
        asked: list[str] = []

        class Letters:
            def embed(self, texts: Sequence[str]) -> list[list[float]]:
                asked.extend(texts)
                return [[t.count("a"), t.count("b")] for t in texts]

        cache = VectorCache(2)
        cache.get(Letters(), ["a", "b"])
        cache.get(Letters(), ["a"])
        cache.get(Letters(), ["ab"])  # "b" goes
        asked.clear()
        out = cache.get(Letters(), ["a", "b", "a"])
        assert asked == ["b"]
        assert out == [(1.0, 0.0), (0.0, 1.0), (1.0, 0.0)]

    def test_default_cache_grows_with_the_conversation(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """By default the cache holds what is counted; a cache_size given is kept."""
        from contextwindow.tokens import counting

        monkeypatch.setattr(counting, "DEFAULT_CACHE_SIZE", 4)
        texts = [f"message number {i}" for i in range(10)]
        for size, recounted in ((None, []), (4, texts)):
            tok = Counting()
            counter = TokenCounter(tok, cache_size=size)
            counter.messages([Message.user(t) for t in texts])
            tok.seen.clear()
            counter.messages([Message.user(t) for t in texts])  # equal, not the same
            assert [t for t in tok.seen if t in texts] == recounted


class TestGenerations:
    @given(size=st.integers(1, 4), steps=ops)
    def test_keeps_the_last_used(
        self, size: int, steps: list[tuple[str, int, int]]
    ) -> None:
        """The ``size`` keys used last are kept with their values; at most
        twice as many are held, and nothing is held that was never stored."""
        cache: Generations[int, int] = Generations(size)
        stored: dict[int, int] = {}
        used: list[int] = []  # keys in order of last use
        for op, key, value in steps:
            if op == "get":
                found = cache.get(key)
                if found is not None:
                    assert found == stored[key]
                    used = [k for k in used if k != key] + [key]
            else:
                cache.put(key, value)
                stored[key] = value
                used = [k for k in used if k != key] + [key]
            for k in used[-size:]:
                assert k in cache
                assert cache.get(k) == stored[k]
                used = [u for u in used if u != k] + [k]
            assert len(cache) <= 2 * size
            assert all(k in stored for k in range(7) if k in cache)

    def test_drops_a_generation_whole(self) -> None:
        """An entry not used while a whole generation filled goes."""
        cache: Generations[str, int] = Generations(2)
        for k in ("a", "b", "c", "d"):
            cache.put(k, 1)
        assert "a" not in cache
        assert "b" not in cache
        assert cache.get("c") == 1
        assert "d" in cache
        cache.pop("d")
        assert "d" not in cache
        assert len(cache) == 1
        cache.clear()
        assert len(cache) == 0

    def test_bad_size(self) -> None:
        """A size below 1 is refused, naming it."""
        from contextwindow.errors import ContextWindowError

        with pytest.raises(ContextWindowError, match="at least 1, got 0"):
            Generations(0)
