"""``LRU``: a bounded mapping that forgets the least recently used entry first.

Contract: every operation costs O(1) however long the cache has run. A plain
``dict`` evicted with ``del d[next(iter(d))]`` does not: each deletion leaves
a dead slot at the front that the next ``iter`` walks over again, so eviction
grows slower the longer it runs (60 times slower past a few hundred
thousand evictions). ``OrderedDict`` keeps its order in a linked list:
``move_to_end`` and ``popitem(last=False)`` touch only the ends. The cache
of the relevance caches, the memo and the adapters.

Shared between threads (the module-level caches are: ``fit``'s built
strategies, the opaque payloads' counts), no operation fails because
another thread changed the cache meanwhile: an entry evicted between a
lookup and its reordering is still returned, a store whose entry another
thread already evicted stays stored or not. Only the order is then
approximate, and a cache is never needed for correctness. The happy path
takes no lock.

``Generations``: the same promise made with two plain dictionaries, for the
token counter's caches, which hold an entry per message: the ``size`` most
recently used entries are always kept, at most twice as many are held, and
an entry takes half the memory of an ``OrderedDict``'s (no list node), and a
hit among the newest costs one lookup, with no reordering. None of its
operations can fail for a key another thread removed either.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar, cast, overload

from contextwindow.errors import ContextWindowError

__all__ = ["LRU", "Generations"]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")


class LRU(Generic[K, V]):
    """At most ``size`` entries; a lookup or a store makes an entry the newest.

    Args:
        size: The most entries kept (at least 1).

    Raises:
        ContextWindowError: ``size`` below 1.

    Example:
        >>> cache: LRU[str, int] = LRU(2)
        >>> cache.put("a", 1)
        >>> cache.put("b", 2)
        >>> cache.get("a")  # "a" is now the newest
        1
        >>> cache.put("c", 3)  # "b" goes
        >>> ("b" in cache, cache.get("b"), len(cache))
        (False, None, 2)
    """

    __slots__ = ("_data", "_max")

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ContextWindowError(f"cache size must be at least 1, got {size}")
        self._max = size
        self._data: OrderedDict[K, V] = OrderedDict()

    @property
    def size(self) -> int:
        """The most entries kept."""
        return self._max

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value kept for ``key`` (now the newest), else ``default``.

        Raises:
            TypeError: ``key`` is not hashable.
        """
        data = self._data
        try:
            value = data[key]
        except KeyError:
            return default
        try:  # noqa: SIM105 -- suppress() would cost a context manager per hit
            data.move_to_end(key)
        except KeyError:  # evicted by another thread since: found all the same
            pass
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key`` as the newest entry, evicting the oldest.

        Raises:
            TypeError: ``key`` is not hashable.
        """
        data = self._data
        data[key] = value
        try:  # noqa: SIM105 -- suppress() would cost a context manager per store
            data.move_to_end(key)
        except KeyError:  # evicted by another thread since: nothing to order
            pass
        while len(data) > self._max:
            try:
                data.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break

    def pop(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not kept).

        Raises:
            TypeError: ``key`` is not hashable.
        """
        self._data.pop(key, None)

    def grow(self, size: int) -> None:
        """Keep up to ``size`` entries from now on (never fewer than before)."""
        self._max = max(self._max, size)

    def clear(self) -> None:
        """Forget every entry."""
        self._data.clear()


_MISSING = object()


class Generations(Generic[K, V]):
    """The ``size`` most recently used entries kept, at most ``2 * size`` held.

    Entries are stored in the young generation; when it holds ``size`` of
    them it becomes the old one and the old one is dropped whole. An entry
    found in the old generation moves to the young one. So every entry used
    (looked up or stored) since the young generation began, or in the
    ``size`` uses before, is kept: at least the ``size`` last used. Each
    operation costs O(1); there is no order to keep.

    Args:
        size: Entries a generation holds (at least 1), or with ``weigh``
            the weight of its keys.
        weigh: Each key's weight (a text's length, say), to bound what the
            keys hold rather than how many there are; ``None``: each counts 1.

    Raises:
        ContextWindowError: ``size`` below 1.

    Example:
        >>> cache: Generations[str, int] = Generations(2)
        >>> cache.put("a", 1)
        >>> cache.put("b", 2)  # the young generation is full: now the old one
        >>> cache.get("a")  # back in the young generation
        1
        >>> cache.put("c", 3)  # full again: "b", in the old one, goes
        >>> ("b" in cache, cache.get("b"), len(cache))
        (False, None, 2)
    """

    __slots__ = ("_max", "_old", "_weigh", "_weight", "_young")

    def __init__(self, size: int, weigh: Callable[[K], int] | None = None) -> None:
        if size < 1:
            raise ContextWindowError(f"cache size must be at least 1, got {size}")
        self._max = size
        self._weigh = weigh
        self._weight = 0  # the young generation's, with ``weigh``
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    @property
    def size(self) -> int:
        """The entries a generation holds: the fewest recent entries kept."""
        return self._max

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def __contains__(self, key: object) -> bool:
        return key in self._young or key in self._old

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value kept for ``key`` (now among the newest), else ``default``.

        Raises:
            TypeError: ``key`` is not hashable.
        """
        value = self._young.get(key, _MISSING)
        if value is _MISSING:
            value = self._old.pop(key, _MISSING)
            if value is _MISSING:
                return default
            self._store(key, cast("V", value))  # only put stores
        return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key`` among the newest entries.

        Raises:
            TypeError: ``key`` is not hashable.
        """
        self._old.pop(key, None)
        self._store(key, value)

    def _store(self, key: K, value: V) -> None:
        young = self._young
        if self._weigh is None:
            young[key] = value
            full = len(young) >= self._max
        else:
            if key not in young:
                self._weight += self._weigh(key)
            young[key] = value
            full = self._weight >= self._max
        if full:
            self._old = young
            self._young = {}
            self._weight = 0

    def pop(self, key: K) -> None:
        """Forget ``key`` (nothing happens when it is not kept).

        Raises:
            TypeError: ``key`` is not hashable.
        """
        if self._young.pop(key, _MISSING) is not _MISSING and self._weigh is not None:
            self._weight -= self._weigh(key)
        self._old.pop(key, None)

    def grow(self, size: int) -> None:
        """Hold generations of up to ``size`` entries from now on (never fewer)."""
        self._max = max(self._max, size)

    def clear(self) -> None:
        """Forget every entry."""
        self._young = {}
        self._old = {}
        self._weight = 0
