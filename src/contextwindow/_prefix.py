"""How much two message sequences share at the front, at C speed.

Contract: ``common_prefix(a, b)`` is the length of the longest common prefix
of ``a`` and ``b`` under ``==`` (messages compare by content, ids excluded),
found by comparing slices, so an unchanged history costs C-level work, not a
Python loop per message. ``same_objects(a, b, k)`` says whether the first
``k`` elements are the very same objects (ids and all), and
``identical_prefix(a, b)`` how many leading elements are. Nothing here knows
what a message is: any sequences of values work.

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
from collections.abc import Sequence
from itertools import islice
from typing import Any

__all__ = ["common_prefix", "identical_prefix", "same_objects"]


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
    lo, step = 1, 1  # a[:lo] == b[:lo]
    while True:
        hi = min(n, lo + step)
        if not equal(lo, hi):
            break
        lo = hi
        if lo == n:
            return n
        step *= 2
    # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if equal(lo, mid):
            lo = mid
        else:
            hi = mid
    return lo


def same_objects(a: Sequence[Any], b: Sequence[Any], k: int) -> bool:
    """Whether ``a[:k]`` and ``b[:k]`` hold the very same objects, in order."""
    if len(a) < k or len(b) < k:
        return False
    if not k:
        return True
    if a[k - 1] is not b[k - 1]:
        return False
    if k == len(a) or k == len(b):  # no slice needed: ``map`` stops at the shorter
        return all(map(operator.is_, a, b))
    return all(map(operator.is_, islice(a, k), islice(b, k)))


def identical_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements ``a`` and ``b`` share as the very same objects."""
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and same_objects(a, b, n):
        return n  # the common case (an extension)
    flags = list(map(operator.is_, a, b))
    return flags.index(False) if False in flags else n
