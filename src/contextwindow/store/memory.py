"""``MemoryStore``: the ``Store`` protocol in this process's memory.

Contract: it keeps the same rows as the durable stores (bodies in the wire
form, digests, token counts) and checks them the same way on reading, so a
test written against it holds for the others; it is safe across threads (one
lock) and forgets everything when the process ends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextwindow.errors import ConflictError, StoreError
from contextwindow.store._backend import RowStore, Snapshot, ViewHead
from contextwindow.store._codec import (
    InfoRow,
    LogRow,
    ViewRow,
    decode_info,
    encode_meta,
)

__all__ = ["MemoryStore"]


@dataclass
class _Conversation:
    version: int
    created: float
    updated: float
    meta: str
    log: list[LogRow] = field(default_factory=list[LogRow])
    view: tuple[ViewHead, list[ViewRow]] | None = None

    def row(self, cid: str) -> InfoRow:
        view = None if self.view is None else self.view[0][0]
        return (cid, self.version, self.created, self.updated, self.meta, view)


class MemoryStore(RowStore):
    """Conversations kept in memory, for tests and short-lived programs.

    Example:
        >>> from contextwindow import Message
        >>> store = MemoryStore()
        >>> store.append("c1", [Message.user("hi")], expected_version=0)
        1
        >>> [(c.id, c.version) for c in store.list_conversations()]
        [('c1', 1)]
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, _Conversation] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    def _append(self, cid: str, expected: int, rows: list[LogRow], now: float) -> int:
        with self._lock:
            conv = self._data.get(cid)
            actual = 0 if conv is None else conv.version
            if actual != expected:
                raise ConflictError(expected, actual)
            if conv is None:
                conv = self._data[cid] = _Conversation(0, now, now, "{}")
            conv.log.extend(rows)
            conv.version += len(rows)
            conv.updated = now
            return conv.version

    def _snapshot(self, cid: str, since: int, view: bool) -> Snapshot | None:
        with self._lock:
            conv = self._data.get(cid)
            if conv is None:
                return None
            saved = conv.view if view else None
            return Snapshot(
                conv.row(cid),
                conv.log[since:],
                None if saved is None else saved[0],
                () if saved is None else list(saved[1]),
            )

    def _rows_at(self, cid: str, positions: Sequence[int]) -> list[Sequence[Any]]:
        with self._lock:
            conv = self._data.get(cid)
            log = [] if conv is None else conv.log
            return [log[p] for p in positions if p < len(log)]

    def _index(self, cid: str, upto: int) -> tuple[int, list[tuple[int, str, str]]]:
        with self._lock:
            conv = self._get(cid)
            return conv.version, [(r[0], r[1], r[5]) for r in conv.log[:upto]]

    def _get(self, cid: str) -> _Conversation:
        conv = self._data.get(cid)
        if conv is None:
            raise StoreError(f"no conversation {cid!r} in {self!r}")
        return conv

    def _write_view(
        self,
        cid: str,
        version: int,
        rows: list[ViewRow],
        report: str | None,
        now: float,
    ) -> None:
        with self._lock:
            conv = self._get(cid)
            if conv.view is not None and conv.view[0][0] > version:
                raise ConflictError(version, conv.view[0][0])
            conv.view = ((version, now, report), rows)
            conv.updated = now

    def _read_view(self, cid: str) -> tuple[ViewHead, Sequence[Sequence[Any]]] | None:
        with self._lock:
            conv = self._data.get(cid)
            return None if conv is None else conv.view

    def _create(self, cid: str, meta: str, now: float) -> InfoRow:
        with self._lock:
            if cid in self._data:
                raise StoreError(f"conversation {cid!r} already exists in {self!r}")
            conv = self._data[cid] = _Conversation(0, now, now, meta)
            return conv.row(cid)

    def _info(self, cid: str) -> InfoRow | None:
        with self._lock:
            conv = self._data.get(cid)
            return None if conv is None else conv.row(cid)

    def _version(self, cid: str) -> object:
        with self._lock:
            conv = self._data.get(cid)
            return 0 if conv is None else conv.version

    def _update_meta(
        self, cid: str, meta: Mapping[str, Any], replace: bool, now: float
    ) -> InfoRow:
        with self._lock:
            conv = self._data.get(cid)
            if conv is None:
                conv = self._data[cid] = _Conversation(0, now, now, "{}")
            old: Mapping[str, Any] = {}
            if not replace:
                old = decode_info(cid, conv.row(cid)).meta
            conv.meta = encode_meta(cid, {**old, **meta})
            conv.updated = now
            return conv.row(cid)

    def _list(self) -> list[InfoRow]:
        with self._lock:
            return [conv.row(cid) for cid, conv in self._data.items()]

    def _delete(self, cid: str) -> bool:
        with self._lock:
            return self._data.pop(cid, None) is not None
