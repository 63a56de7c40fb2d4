"""``RowStore``: the ``Store`` protocol, once, over a backend's row operations.

Contract: a backend implements the abstract methods below; each runs
atomically (one transaction, one Lua script, one lock) and moves rows in the
forms of ``_codec`` without interpreting them, except for the version check
of ``_append`` and ``_write_view``. Everything else (argument checks,
encoding, decoding and validation, resolving a view's pointers, recognising
a retried append) happens here, so every backend behaves the same.

Appends are idempotent by message id: when the version check fails and the
log already holds the batch's messages (same ids, same bodies) at the
expected place, the append was made before and its reply was lost; it is
acknowledged (the version after the batch) and nothing is written again.
Rows below a version never change, so reading them after the failed check
is as sound as reading them inside it.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from contextwindow._args import check_bool
from contextwindow.errors import ConflictError, StoreError
from contextwindow.messages import Message
from contextwindow.store._codec import (
    InfoRow,
    LogRow,
    ViewRow,
    body_part,
    check_id,
    decode_info,
    decode_log,
    decode_row,
    decode_view,
    encode_json,
    encode_log,
    encode_meta,
    encode_view,
    message_list,
)
from contextwindow.store.base import (
    ConversationInfo,
    StoredConversation,
    StoredView,
    ViewKind,
    ViewMessage,
)

__all__ = ["RowStore", "Snapshot", "ViewHead"]

ViewHead = tuple[int, float, str | None]
"""A view's ``(version, time, report)``."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one consistent read of a conversation returns, as raw rows."""

    info: InfoRow
    log: Sequence[Sequence[Any]]
    """Log rows from the asked position on, in order."""
    view: ViewHead | None = None
    view_rows: Sequence[Sequence[Any]] = ()


_MAX_COUNT = 2**63 - 1
"""The largest version or position a backend holds (SQL's BIGINT)."""


def _count(value: object, name: str) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 0 <= value <= _MAX_COUNT
    ):
        raise StoreError(
            f"{name} must be a non-negative integer below 2**63, got {value!r}"
        )
    return value


class RowStore(ABC):
    """The shared implementation of ``Store``; subclasses move rows."""

    # -- what a backend implements ---------------------------------------------

    @abstractmethod
    def _append(self, cid: str, expected: int, rows: list[LogRow], now: float) -> int:
        """Check the version, write the rows and the new version.

        Creates the conversation when ``expected`` is 0 and it is missing.
        """

    @abstractmethod
    def _snapshot(self, cid: str, since: int, view: bool) -> Snapshot | None:
        """The info row, log rows from ``since`` and (``view``) the view."""

    @abstractmethod
    def _rows_at(self, cid: str, positions: Sequence[int]) -> list[Sequence[Any]]:
        """The log rows at ``positions`` (those that exist), in any order."""

    @abstractmethod
    def _index(self, cid: str, upto: int) -> tuple[int, list[tuple[int, str, str]]]:
        """The version, and ``(position, id, digest)`` of positions below ``upto``.

        Raises ``StoreError`` when the conversation does not exist.
        """

    @abstractmethod
    def _write_view(
        self,
        cid: str,
        version: int,
        rows: list[ViewRow],
        report: str | None,
        now: float,
    ) -> None:
        """Replace the view; ``ConflictError`` if a later one is saved."""

    @abstractmethod
    def _read_view(
        self, cid: str
    ) -> tuple[ViewHead, Sequence[Sequence[Any]]] | None: ...

    @abstractmethod
    def _create(self, cid: str, meta: str, now: float) -> InfoRow:
        """Create; ``StoreError`` when the id exists."""

    @abstractmethod
    def _info(self, cid: str) -> InfoRow | None: ...

    @abstractmethod
    def _version(self, cid: str) -> object: ...

    @abstractmethod
    def _update_meta(
        self, cid: str, meta: Mapping[str, Any], replace: bool, now: float
    ) -> InfoRow: ...

    @abstractmethod
    def _list(self) -> list[InfoRow]: ...

    @abstractmethod
    def _delete(self, cid: str) -> bool: ...

    def close(self) -> None:  # noqa: B027  # a store without connections closes nothing
        """Release connections; the store is not used afterwards."""

    # -- the protocol ------------------------------------------------------------

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int,
        tokens: Sequence[Mapping[str, int]] | None = None,
    ) -> int:
        """Append ``messages`` atomically if the log is at ``expected_version``.

        See ``Store.append``.
        """
        cid = check_id(conversation_id)
        expected = _count(expected_version, "expected_version")
        now = time.time()
        rows = encode_log(cid, message_list(messages), tokens, expected, now)
        try:
            return self._append(cid, expected, rows, now)
        except ConflictError as exc:
            if exc.actual_version >= expected + len(rows) > expected and (
                self._holds(cid, rows)
            ):
                return expected + len(rows)
            raise

    def _holds(self, cid: str, rows: Sequence[LogRow]) -> bool:
        """Whether the log holds ``rows`` at their positions (a retried append).

        Raises ``StoreError`` when a row's place holds its id with another body:
        an id names one message.
        """
        positions = [r[0] for r in rows]
        found = {
            r[0]: r for r in self._rows_at(cid, positions) if isinstance(r[0], int)
        }
        for row in rows:
            there = found.get(row[0])
            if there is None or there[1] != row[1]:
                return False
            if body_part(there[5]) != body_part(row[5]):
                raise StoreError(
                    f"conversation {cid!r}: message {row[0]} has id {row[1]!r}, "
                    "as a message appended again now, but other content"
                )
        return True

    def version(self, conversation_id: str) -> int:
        """The conversation's version (0 when it does not exist)."""
        cid = check_id(conversation_id)
        value = self._version(cid)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise StoreError(f"conversation {cid!r}: version: corrupt value {value!r}")
        return value

    def load(
        self, conversation_id: str, *, since: int = 0, view: bool = True
    ) -> StoredConversation:
        """The log from ``since``, the metadata and the view. See ``Store.load``."""
        cid = check_id(conversation_id)
        start = _count(since, "since")
        check_bool(view, "view")
        snap = self._snapshot(cid, start, view)
        if snap is None:
            raise StoreError(f"no conversation {cid!r} in {self!r}")
        info = decode_info(cid, snap.info)
        if start > info.version:
            raise StoreError(
                f"conversation {cid!r} is at version {info.version}, "
                f"below since={start} (deleted and written again?)"
            )
        entries = decode_log(cid, snap.log, start, info.version)
        stored = None
        if view and snap.view is not None:
            known = {
                e.position: (e.message, str(row[5]))
                for e, row in zip(entries, snap.log, strict=True)
            }
            stored = self._decode_view(cid, snap.view, snap.view_rows, known)
        return StoredConversation(info, entries, stored, start)

    def load_view(self, conversation_id: str) -> StoredView | None:
        """The latest saved view, or ``None``. See ``Store.load_view``."""
        cid = check_id(conversation_id)
        found = self._read_view(cid)
        if found is None:
            return None
        return self._decode_view(cid, found[0], found[1], {})

    def _decode_view(
        self,
        cid: str,
        head: ViewHead,
        rows: Sequence[Sequence[Any]],
        known: dict[int, tuple[Message, str]],
    ) -> StoredView:
        refs = {r[1] for r in rows if len(r) == 6 and r[1] is not None}
        missing = sorted(p for p in refs if isinstance(p, int) and p not in known)
        for row in self._rows_at(cid, missing) if missing else ():
            entry = decode_row(cid, row)
            known[entry.position] = (entry.message, str(row[5]))
        return decode_view(cid, head, rows, known.get)

    def save_view(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        version: int,
        sources: Mapping[str, Sequence[str]] | None = None,
        report: Mapping[str, Any] | None = None,
    ) -> StoredView:
        """Save the compacted view made at ``version``. See ``Store.save_view``."""
        cid = check_id(conversation_id)
        messages = message_list(messages)
        at = _count(version, "version")
        report_text = None
        if report is not None:
            if not isinstance(report, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # callers may pass anything
                raise StoreError(f"conversation {cid!r}: a report must be a mapping")
            report_text = encode_json(cid, "the report", dict(report))
        log_version, index = self._index(cid, at)
        if at > log_version:
            raise StoreError(
                f"conversation {cid!r}: a view of version {at}, "
                f"but the log is at version {log_version}"
            )
        rows = encode_view(cid, messages, index, sources)
        now = time.time()
        self._write_view(cid, at, rows, report_text, now)
        entries = tuple(
            ViewMessage(m, cast(ViewKind, r[2]), tuple(json.loads(r[3])))
            for m, r in zip(messages, rows, strict=True)
        )
        return StoredView(at, entries, None if report is None else dict(report), now)

    def create(
        self, conversation_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> ConversationInfo:
        """Create an empty conversation; ``StoreError`` if it exists."""
        cid = check_id(conversation_id)
        row = self._create(cid, encode_meta(cid, meta or {}), time.time())
        return decode_info(cid, row)

    def info(self, conversation_id: str) -> ConversationInfo | None:
        """What the store knows of a conversation, or ``None``."""
        cid = check_id(conversation_id)
        row = self._info(cid)
        return None if row is None else decode_info(cid, row)

    def update_meta(
        self,
        conversation_id: str,
        meta: Mapping[str, Any],
        *,
        replace: bool = False,
    ) -> ConversationInfo:
        """Merge ``meta`` into the metadata (``replace``: instead of it)."""
        cid = check_id(conversation_id)
        check_bool(replace, "replace")
        encode_meta(cid, meta)  # refuse what is not JSON before touching the store
        return decode_info(cid, self._update_meta(cid, meta, replace, time.time()))

    def list_conversations(self) -> list[ConversationInfo]:
        """Every conversation, by id."""
        infos = [decode_info(str(row[0]), row) for row in self._list()]
        return sorted(infos, key=lambda i: i.id)

    def delete(self, conversation_id: str) -> bool:
        """Remove a conversation; whether it existed."""
        return self._delete(check_id(conversation_id))

    def __enter__(self) -> RowStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
