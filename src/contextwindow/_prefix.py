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
from typing import Any

__all__ = ["common_prefix", "identical_prefix", "same_objects"]


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (by ``==``)."""
    n = min(len(a), len(b))
    if not n or a[0] != b[0]:
        return 0
    if type(a) is not type(b) or not isinstance(a, list | tuple):
        # A list never equals a tuple: compare lists (a copy at C speed).
        a, b = list(a), list(b)
    if a[:n] == b[:n]:  # the common case (an extension), at C speed
        return n
    lo, hi = 1, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
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
    return all(map(operator.is_, a[:k], b[:k]))


def identical_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements ``a`` and ``b`` share as the very same objects."""
    n = min(len(a), len(b))
    if n and a[n - 1] is b[n - 1] and same_objects(a, b, n):
        return n  # the common case (an extension)
    flags = list(map(operator.is_, a[:n], b[:n]))
    return flags.index(False) if False in flags else n
