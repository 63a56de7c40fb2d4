"""How much two message sequences share at the front, at C speed.

Contract: ``common_prefix(a, b)`` is the length of the longest common prefix
of ``a`` and ``b`` under ``==`` (messages compare by content, ids excluded),
found by comparing slices, so an unchanged history costs C-level work, not a
Python loop per message. ``same_objects(a, b, k)`` says whether the first
``k`` elements are the very same objects (ids and all), and
``identical_prefix(a, b)`` how many leading elements are;
``shared_spans(old, new)`` where ``new`` holds runs of ``old``'s very objects
(its oldest dropped, runs replaced by one, elements appended). Nothing here
knows what a message is: any sequences of values work.

Example:
    >>> common_prefix([1, 2, 3, 4], [1, 2, 9])
    2
    >>> common_prefix([1, 2, 3], (1, 2, 3, 4))
    3
    >>> x, y = [object()], [object()]
    >>> same_objects(x, x, 1), same_objects(x, y, 1)
    (True, False)
    >>> identical_prefix(x + y, x + x), identical_prefix(x, x + y)
    (1, 1)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

__all__ = [
    "COVERED",
    "TRIED",
    "best_spans",
    "common_prefix",
    "identical_prefix",
    "identical_suffix",
    "last_span",
    "longest_prefix",
    "same_objects",
    "shared_spans",
]


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (by ``==``).

    Costs about what the common prefix holds, not what the sequences hold:
    an extension is one slice comparison; otherwise the mismatch is found by
    galloping from the front (slices of 1, 2, 4, ... elements) and halving,
    so two conversations that part early cost a few comparisons.
    """
    n = min(len(a), len(b))
    if not n or a[0] != b[0]:
        return 0
    # A list never equals a tuple: then compare the slices as lists.
    same = type(a) is type(b) and isinstance(a, list | tuple)

    def equal(lo: int, hi: int) -> bool:
        if same:
            return bool(a[lo:hi] == b[lo:hi])
        return list(a[lo:hi]) == list(b[lo:hi])

    last_a, last_b = a[n - 1], b[n - 1]
    if (last_a is last_b or last_a == last_b) and equal(1, n):
        return n  # the common case (an extension), at C speed
    # a[:1] == b[:1]: gallop over the rest.
    return 1 + _gallop(n - 1, lambda lo, hi: equal(1 + lo, 1 + hi))


def longest_prefix(
    new: Sequence[Any], olds: Sequence[Sequence[Any]]
) -> tuple[int, int]:
    """Which of ``olds`` shares the longest prefix with ``new``, and its length.

    Returns the first such one's index and the length (``-1, 0``: none shares
    one). An old one is compared only when it holds, at the length the best
    so far shares, what ``new`` does: to share more it must, so a list of
    versions that part at the same place costs one look each.

    Example:
        >>> longest_prefix([1, 2, 3], [[1, 9], [1, 2, 3, 4], [1, 2, 5]])
        (1, 3)
        >>> longest_prefix([1], [[2], []])
        (-1, 0)
    """
    best, which = 0, -1
    for k, old in enumerate(olds):
        if best >= len(old) or best >= len(new):
            continue
        a, b = new[best], old[best]
        if a is b or a == b:
            n = common_prefix(new, old)
            if n > best:
                best, which = n, k
    return which, best


def same_objects(
    a: Sequence[Any], b: Sequence[Any], k: int, compared: Iterator[int] | None = None
) -> bool:
    """Whether ``a[:k]`` and ``b[:k]`` hold the very same objects, in order.

    ``compared``: a counter (``itertools.count()``) that the ``__eq__`` of
    every element of ``a`` advances. Given one, the two are compared by
    ``==``, at C speed: ``==`` takes the very same object as equal without
    calling its ``__eq__``, so an equal comparison between two reads of the
    counter that follow each other met no pair of distinct objects (another
    thread's comparisons only make it say no, and then the objects are
    compared one by one). It holds unless an element of ``b`` is of a
    subclass of its partner's class with an ``__eq__`` of its own (Python
    asks that one first).

    Example:
        >>> from itertools import count
        >>> class Counted:
        ...     def __eq__(self, other):
        ...         next(seen)
        ...         return True  # equal to anything: only identity tells
        >>> seen = count()
        >>> x, y = [Counted(), Counted()], [Counted(), Counted()]
        >>> same_objects(x, list(x), 2, seen), same_objects(x, [y[0], x[1]], 2, seen)
        (True, False)
    """
    if len(a) < k or len(b) < k:
        return False
    if not k:
        return True
    if a[k - 1] is not b[k - 1]:
        return False
    if compared is not None and _same_by_eq(a, b, k, compared):
        return True
    if k == len(a) or k == len(b):  # no slice needed: ``map`` stops at the shorter
        return all(map(operator.is_, a, b))
    return all(map(operator.is_, islice(a, k), islice(b, k)))


def _same_by_eq(
    a: Sequence[Any], b: Sequence[Any], k: int, compared: Iterator[int]
) -> bool:
    """``same_objects`` by ``==`` and ``compared`` (no means: not known)."""
    head = _first(a, k)
    other = _first(b, k)
    if type(other) is not type(head):  # a list never equals a tuple
        other = list(other) if type(head) is list else tuple(other)
    before = next(compared)
    equal = head == other  # ``head`` on the left: its elements' ``__eq__`` counts
    return bool(equal) and next(compared) == before + 1


def _first(a: Sequence[Any], k: int) -> list[Any] | tuple[Any, ...]:
    """``a[:k]`` as a list or a tuple (``a`` itself when it is one, that long)."""
    if isinstance(a, list | tuple):
        given: list[Any] | tuple[Any, ...] = a  # pyright: ignore[reportUnknownVariableType]  # of Any, as given
        return given if len(given) == k else given[:k]
    return list(islice(a, k))


def identical_prefix(
    a: Sequence[Any], b: Sequence[Any], compared: Iterator[int] | None = None
) -> int:
    """How many leading elements ``a`` and ``b`` share as the very same objects.

    ``compared``: as for ``same_objects``.
    """
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and same_objects(a, b, n, compared):
        return n  # the common case (an extension)
    flags = list(map(operator.is_, a, b))
    return flags.index(False) if False in flags else n


def identical_suffix(a: Sequence[Any], i: int, b: Sequence[Any], j: int) -> int:
    """How many elements just before ``a[i]`` and ``b[j]`` are the very same objects.

    Example:
        >>> x, y, z = object(), object(), object()
        >>> identical_suffix([z, x, y, z], 3, [x, y, x], 2)
        2
    """

    def same(lo: int, hi: int) -> bool:
        return all(map(operator.is_, a[i - hi : i - lo], b[j - hi : j - lo]))

    return _gallop(min(i, j), same)


def _gallop(n: int, same: Callable[[int, int], bool]) -> int:
    """The largest ``k <= n`` whose first ``k`` elements are the same.

    ``same(lo, hi)`` says whether elements ``lo`` to ``hi`` are, given that
    those before ``lo`` are: tried on 1, 2, 4, ... elements, then halved.
    """
    lo, step = 0, 1
    while lo < n:
        hi = min(n, lo + step)
        if not same(lo, hi):
            break
        lo = hi
        step *= 2
    else:
        return n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if same(lo, mid):
            lo = mid
        else:
            hi = mid
    return lo


_LOOKS = 32
"""Shared spans ``shared_spans`` looks for, at most."""
_NEAR_END = 64
"""Elements appended since, at most, for ``shared_spans`` to find the old end."""
_PUT_IN = 4
"""New elements between two shared spans (a line put in), at most."""
_TAKEN_OUT = 256
"""Old elements between two shared spans (units dropped, runs collapsed)."""


def shared_spans(
    old: Sequence[Any], new: Sequence[Any], low: int = 0
) -> list[tuple[int, int, int]]:
    """Spans of ``new`` (from ``low``) holding the very objects of ``old``.

    Each ``(first, end, d)``: ``new[first:end]`` is ``old[first - d : end - d]``;
    in order. Found from the end: old's last element a little before new's
    end (elements appended since), then going back, runs of new elements put
    in and of old elements taken out, each of a bounded length. So a list
    made from another by dropping its oldest elements, replacing runs of
    them by one, and appending, is found in a few slice comparisons.

    Example:
        >>> a, b, c, d, e, f = (object() for _ in range(6))
        >>> shared_spans([a, b, c, d, e], [a, c, f, e, b])  # b, then d, out
        [(0, 1, 0), (1, 2, -1), (3, 4, -1)]
    """
    found = _end(old, new, low)
    if found is None:
        return []
    at, was = found  # new[at] is old[was]
    spans: list[tuple[int, int, int]] = []
    while len(spans) < _LOOKS:
        n = identical_suffix(new, at + 1, old, was + 1)
        first = max(low, at + 1 - n)
        spans.append((first, at + 1, at - was))
        if first <= low or was + 1 - n <= 0:
            break
        found = _before(old, new, first, was + 1 - n, low, _PUT_IN, _TAKEN_OUT)
        if found is None:
            break
        at, was = found
    spans.reverse()
    return spans


def best_spans(
    olds: Sequence[Sequence[Any]], new: Sequence[Any], low: int = 0
) -> tuple[int, list[tuple[int, int, int]]]:
    """Which of ``olds`` shares most of ``new`` (``shared_spans``), and its spans.

    Returns its index in ``olds`` and the spans (``-1, []``: none shares a
    span). Those whose last span is longest (a strategy's output keeps its
    input's newest elements) are tried first, and one covering ``COVERED`` of
    ``new[low:]`` ends the search: the others are not looked at.

    Example:
        >>> a, b, c, d = (object() for _ in range(4))
        >>> best_spans([[a, b], [b, c, d], [d]], [a, c, d])
        (1, [(1, 3, 0)])
    """
    ends = sorted(
        ((last_span(old, new, low), k) for k, old in enumerate(olds)), reverse=True
    )
    best: tuple[int, list[tuple[int, int, int]]] = (-1, [])
    covered = 0
    for end, k in ends:
        if not end:
            break
        spans = shared_spans(olds[k], new, low)
        held = sum(b - a for a, b, _ in spans)
        if held > covered:
            best, covered = (k, spans), held
        if covered >= COVERED * (len(new) - low):
            break
    return best


COVERED = 0.9
"""The share of a new sequence that shared spans with one old one make enough."""
TRIED = 4
"""Old sequences a caller gives ``best_spans``, at most (the newest first: a
pipeline's stages each leave their output among them)."""


def last_span(old: Sequence[Any], new: Sequence[Any], low: int = 0) -> int:
    """The length of the last of ``shared_spans(old, new, low)`` (0: none).

    A few comparisons and one gallop: enough to tell which of several old
    sequences a new one was made from before finding all of its spans.

    Example:
        >>> a, b, c, d, e, f = (object() for _ in range(6))
        >>> last_span([a, b, c, d, e], [a, c, f, e, b]), last_span([a], [b])
        (1, 0)
    """
    found = _end(old, new, low)
    if found is None:
        return 0
    at, was = found
    return min(identical_suffix(new, at + 1, old, was + 1), at + 1 - low)


def _end(old: Sequence[Any], new: Sequence[Any], low: int) -> tuple[int, int] | None:
    """Where old's last element is, a little before new's end; else one before it.

    Of old's last ``_PUT_IN`` elements (a final one may have been rewritten)
    the last that is one of new's last ``_NEAR_END`` (not before ``low``).
    """
    for q in range(len(old) - 1, max(0, len(old) - _PUT_IN) - 1, -1):
        target = old[q]
        for p in range(len(new) - 1, max(low, len(new) - _NEAR_END) - 1, -1):
            if new[p] is target:
                return p, q
    return None


def _before(
    old: Sequence[Any],
    new: Sequence[Any],
    first: int,
    first_old: int,
    low: int,
    put_in: int,
    taken_out: int,
) -> tuple[int, int] | None:
    """Where an element just before ``new[first]`` was, just before ``old[first_old]``.

    Its two places, else ``None``: of the ``put_in`` elements before
    ``new[first]`` (not before ``low``), the last that is one of the
    ``taken_out`` elements before ``old[first_old]``.
    """
    for p in range(first - 1, max(low, first - put_in) - 1, -1):
        target = new[p]
        for q in range(first_old - 1, max(0, first_old - taken_out) - 1, -1):
            if old[q] is target:
                return p, q
    return None
