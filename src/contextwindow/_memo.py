"""A small, bounded store of what a computation decided last time.

Contract: ``Memo`` maps hashable keys to values and holds at most
``max_entries`` of them (an ``LRU``): putting one more evicts the least
recently used. It knows nothing of what it holds: a strategy keeps there what
it decided for the conversation it last saw (keyed by itself and the budget's
settings), so that a call on that conversation grown by a few messages
re-decides only where something changed. A value is never needed for
correctness: a missing or evicted entry only means working from scratch. A
key that cannot be hashed keeps nothing. Not thread-safe, like the
``TokenCounter`` that carries it.

``WhileAlive`` keeps what a pure function computed from an object for as
long as that object (or an equal one it was computed for) lives: unbounded
but for what callers keep alive, thread-safe, process-wide (the
summarizers keep what they read of each message there).

Example:
    >>> memo = Memo(max_entries=2)
    >>> memo.put("a", 1); memo.put("b", 2); memo.get("a")
    1
    >>> memo.put("c", 3)  # evicts "b", the least recently used
    >>> memo.get("b"), memo.get("c"), len(memo)
    (None, 3, 2)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar
from weakref import WeakKeyDictionary

from contextwindow._lru import LRU

__all__ = ["DEFAULT_MEMO_ENTRIES", "Memo", "WhileAlive"]

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_MEMO_ENTRIES = 128
"""Entries a memo holds: a few per stage of a few pipelines and budgets. The
default pipeline keeps up to about 60 on a coding session (``ClearToolResults``
and ``collapse_runs`` keep a set per refill lane); at 32 they pushed each other
out, and each re-fit was a fit from scratch
(``tests/strategies/test_refit_resumes.py``)."""


class Memo:
    """A bounded least-recently-used map (see the module's contract).

    Args:
        max_entries: The most entries held (at least 1).

    Raises:
        ContextWindowError: ``max_entries`` below 1.
    """

    __slots__ = ("_data",)

    def __init__(self, max_entries: int = DEFAULT_MEMO_ENTRIES) -> None:
        self._data: LRU[Hashable, object] = LRU(max_entries)

    def get(self, key: Hashable) -> object | None:
        """The value kept under ``key`` (``None`` if none), now most recent."""
        try:
            return self._data.get(key)
        except TypeError:  # an unhashable key holds nothing
            return None

    def put(self, key: Hashable, value: object) -> None:
        """Keep ``value`` under ``key``, evicting the least recently used."""
        try:
            self._data.put(key, value)
        except TypeError:  # an unhashable key (a budget holding a list): not kept
            return

    def pop(self, key: Hashable) -> None:
        """Forget what ``key`` holds (nothing if none)."""
        try:
            self._data.pop(key)
        except TypeError:
            return

    def clear(self) -> None:
        """Forget everything."""
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


class WhileAlive(Generic[K, V]):
    """What was computed from an object, kept while the object lives.

    Keyed by equality (an equal object finds it), held by a weak reference:
    an entry goes with the last object it was computed for, so nothing
    bounds it but what the caller keeps alive. For a pure function of the
    key only. Thread-safe.

    Args:
        keep_empty: Whether an empty result is kept too (``False``: it is
            computed again each time, where an entry and its weak reference
            cost more than that, as for keys that mostly give nothing), or
            which keys' empty results are (those costly to compute again).

    Example:
        >>> from contextwindow.messages import Message
        >>> read = WhileAlive[Message, int]()
        >>> m = Message.user("four words right here")
        >>> read.get(m, lambda m: len(m.text.split())), len(read)
        (4, 1)
        >>> del m
        >>> len(read)
        0
    """

    __slots__ = ("_data", "_keep_empty", "_lock")

    def __init__(self, *, keep_empty: bool | Callable[[K], bool] = True) -> None:
        self._data: WeakKeyDictionary[K, V] = WeakKeyDictionary()
        self._lock = threading.Lock()
        self._keep_empty = keep_empty

    def get(self, key: K, compute: Callable[[K], V]) -> V:
        """``compute(key)``, computed once while ``key`` (or one equal) lives.

        A key that cannot be hashed or weakly referenced is computed each time.
        """
        try:
            with self._lock:
                found = self._data.get(key)
        except TypeError:
            return compute(key)
        if found is None:
            found = compute(key)
            keep = self._keep_empty
            if found or (keep if isinstance(keep, bool) else keep(key)):
                with self._lock:
                    self._data[key] = found
        return found

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        """Whether something is kept for ``key`` (or an object equal to it)."""
        try:
            with self._lock:
                return key in self._data
        except TypeError:
            return False
