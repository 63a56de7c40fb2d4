"""``contextwindow._prefix``: shared prefixes, suffixes, spans, against brute force."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow._prefix import (
    common_prefix,
    identical_prefix,
    identical_suffix,
    longest_prefix,
    same_objects,
    shared_spans,
)
from contextwindow.messages import COMPARED, Message

from ._support import edited

OBJECTS = [object() for _ in range(64)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 3), max_size=20), st.lists(st.integers(0, 3), max_size=20)
)
def test_common_prefix_as_brute_force(a: list[int], b: list[int]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert common_prefix(a, b) == n
    assert common_prefix(tuple(a), b) == n


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 2), max_size=12),
    st.lists(st.lists(st.integers(0, 2), max_size=12), max_size=6),
)
def test_longest_prefix_as_brute_force(new: list[int], olds: list[list[int]]) -> None:
    shared = [common_prefix(new, old) for old in olds]
    best = max(shared, default=0)
    which = shared.index(best) if best else -1
    assert longest_prefix(new, olds) == (which, best)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_identical_prefix_and_suffix_as_brute_force(data: st.DataObject) -> None:
    pick = st.lists(st.sampled_from(OBJECTS[:3]), max_size=16)
    a, b = data.draw(pick), data.draw(pick)
    i = data.draw(st.integers(0, len(a)))
    j = data.draw(st.integers(0, len(b)))
    n = 0
    while n < min(i, j) and a[i - 1 - n] is b[j - 1 - n]:
        n += 1
    assert identical_suffix(a, i, b, j) == n
    m = 0
    while m < min(len(a), len(b)) and a[m] is b[m]:
        m += 1
    assert identical_prefix(a, b) == m


# Equal in content, distinct objects (ids differ): only identity tells them apart.
TWINS = [Message.user(t) for t in "aab"] + [Message.user(t) for t in "aab"]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_identity_by_equality_and_the_counter_as_brute_force(
    data: st.DataObject,
) -> None:
    pick = st.lists(st.sampled_from(TWINS), max_size=16)
    a, b = data.draw(pick), data.draw(pick)
    as_tuple = data.draw(st.booleans())
    known = tuple(a) if as_tuple else a
    m = 0
    while m < min(len(a), len(b)) and a[m] is b[m]:
        m += 1
    assert identical_prefix(known, b, COMPARED) == m
    k = data.draw(st.integers(0, len(a)))
    assert same_objects(known, b, k, COMPARED) == (
        len(b) >= k and all(x is y for x, y in zip(a[:k], b[:k], strict=True))
    )


def test_shared_spans_hold_the_very_objects() -> None:
    """Each span is in order, within ``new``, after ``low``, and holds old's
    objects at the stated shift; an edit that drops the oldest, puts one in
    for a run and appends is covered whole, but for what was put in."""
    rng = random.Random(11)
    for _ in range(2000):
        old = rng.sample(OBJECTS, rng.randrange(1, 60))
        new = edited(old, rng, object, span=10)
        low = rng.randrange(len(new) + 1)
        at = low
        for first, end, d in shared_spans(old, new, low):
            assert at <= first < end <= len(new)
            assert all(new[x] is old[x - d] for x in range(first, end))
            at = end
    # The common case, exactly: oldest dropped, a run made one, appended.
    old = OBJECTS[:50]
    line, extra = object(), object()
    new = [*old[:1], *old[6:20], line, *old[25:], extra]
    assert shared_spans(old, new) == [(0, 1, 0), (1, 15, -5), (16, 41, -9)]
    covered = sum(end - first for first, end, _ in shared_spans(old, new))
    assert covered == len(new) - 2
