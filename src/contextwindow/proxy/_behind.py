"""A store whose appends are committed later, while the upstream answers.

Contract:

- ``WriteBehind(store)`` is a ``Store``. Its ``append`` writes nothing: it
  queues the batch for its conversation and returns the version the store
  will have once the batch is in (a batch whose ``expected_version`` does
  not follow the queued ones raises ``ConflictError`` at once).
  ``commit(cid)`` writes the queued batches of ``cid`` to the store, in
  order, each with its own ``expected_version``: the store's check still
  makes every append exactly-once. The proxy commits while the upstream
  answers and ends its response to the client only after the commit
  returned, so a client's next request, on any replica, finds the log
  moved; an fsync costs the response the part of it the upstream did not
  already take.
- ``later(cid, write)`` queues any other write (``write(store)``, called by
  ``commit`` after the batches queued before it): the manager's view and
  state go this way (``manager._persist``), so a request that compacts
  waits for no disk either.
- Any other call on a conversation (``version``, ``load``, ``save_view``,
  ...) commits its queued batches and writes first, so every reader, this replica
  included, sees the appends in order. A commit that fails (a conflict with
  another writer, a store down) drops the conversation's queued batches
  (the store has none of them, so none is written twice) and marks it:
  ``failed(cid)`` says so once, and the manager that queued them must read
  the conversation again. The client's next request brings those messages
  again (agents resend their history), and they are appended then.

Example:
    >>> from contextwindow.messages import Message
    >>> from contextwindow.store.memory import MemoryStore
    >>> store = MemoryStore()
    >>> behind = WriteBehind(store)
    >>> behind.append("c", [Message.user("hi")], expected_version=0)
    1
    >>> store.version("c"), behind.pending("c")
    (0, 1)
    >>> behind.commit("c")
    >>> store.version("c"), behind.pending("c")
    (1, 0)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextwindow.errors import ConflictError
from contextwindow.messages import Message
from contextwindow.store.base import (
    ConversationInfo,
    Store,
    StoredConversation,
    StoredView,
)

__all__ = ["WriteBehind"]


@dataclass(frozen=True, slots=True)
class _Batch:
    messages: tuple[Message, ...]
    expected: int
    tokens: tuple[Mapping[str, int], ...] | None

    @property
    def end(self) -> int:
        return self.expected + len(self.messages)


class WriteBehind:
    """``store`` with its appends queued until ``commit`` (see the module)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._queued: dict[str, list[_Batch | Callable[[Store], object]]] = {}
        self._failed: set[str] = set()
        self._committing: dict[str, tuple[threading.Lock, int]] = {}
        """Per conversation being committed: its gate, and the committers
        holding or awaiting it."""

    # -- the queue ---------------------------------------------------------------

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int,
        tokens: Sequence[Mapping[str, int]] | None = None,
    ) -> int:
        batch = _Batch(
            tuple(messages),
            expected_version,
            None if tokens is None else tuple(tokens),
        )
        with self._lock:
            queue = self._queued.setdefault(conversation_id, [])
            end = next((b.end for b in reversed(queue) if isinstance(b, _Batch)), None)
            if end is not None and end != expected_version:
                raise ConflictError(expected_version, end)
            queue.append(batch)
        return batch.end

    def later(self, conversation_id: str, write: Callable[[Store], object]) -> None:
        """Queue ``write(store)`` for ``conversation_id``'s next commit."""
        with self._lock:
            self._queued.setdefault(conversation_id, []).append(write)

    def queued(self, conversation_id: str) -> bool:
        """Whether anything is queued for ``conversation_id``."""
        with self._lock:
            return bool(self._queued.get(conversation_id))

    def pending(self, conversation_id: str) -> int:
        """Messages queued for ``conversation_id``."""
        with self._lock:
            queue = self._queued.get(conversation_id, ())
            return sum(len(b.messages) for b in queue if isinstance(b, _Batch))

    def failed(self, conversation_id: str) -> bool:
        """Whether a commit of ``conversation_id`` failed since last asked."""
        with self._lock:
            if conversation_id in self._failed:
                self._failed.discard(conversation_id)
                return True
            return False

    def commit(self, conversation_id: str) -> None:
        """Write what is queued for ``conversation_id``, in order.

        Raises:
            ConflictError: Another writer moved the log; the queue is dropped.
            StoreError: The store failed; the queue is dropped.
        """
        with self._lock:
            if conversation_id not in self._queued:
                return
            # One gate per conversation while anyone holds or awaits it: a
            # gate dropped while another committer waits on it would let a
            # third in beside that one, and both write the same batch.
            gate, users = self._committing.get(conversation_id, (None, 0))
            if gate is None:
                gate = threading.Lock()
            self._committing[conversation_id] = (gate, users + 1)
        try:
            with gate:  # one committer per conversation, so batches go in order
                self._drain(conversation_id)
        finally:
            with self._lock:
                gate, users = self._committing[conversation_id]
                if users == 1:
                    del self._committing[conversation_id]
                else:
                    self._committing[conversation_id] = (gate, users - 1)

    def _drain(self, conversation_id: str) -> None:
        """Write the queue of ``conversation_id`` (its gate held)."""
        while True:
            with self._lock:
                queue = self._queued.get(conversation_id)
                if not queue:
                    self._queued.pop(conversation_id, None)
                    return
                batch = queue[0]
            try:
                if isinstance(batch, _Batch):
                    self.store.append(
                        conversation_id,
                        batch.messages,
                        expected_version=batch.expected,
                        tokens=batch.tokens,
                    )
                else:
                    batch(self.store)
            except BaseException:
                with self._lock:
                    self._queued.pop(conversation_id, None)
                    self._failed.add(conversation_id)
                raise
            with self._lock:
                queue.pop(0)

    def _settled(self, conversation_id: str) -> None:
        """Commit what is queued; a failure is left to ``failed`` to report."""
        try:
            self.commit(conversation_id)
        except Exception:
            return  # recorded: failed() reports it

    # -- the store ---------------------------------------------------------------

    def version(self, conversation_id: str) -> int:
        self._settled(conversation_id)
        return self.store.version(conversation_id)

    def load(
        self, conversation_id: str, *, since: int = 0, view: bool = True
    ) -> StoredConversation:
        self._settled(conversation_id)
        return self.store.load(conversation_id, since=since, view=view)

    def save_view(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        version: int,
        sources: Mapping[str, Sequence[str]] | None = None,
        report: Mapping[str, Any] | None = None,
    ) -> StoredView:
        self.commit(conversation_id)
        return self.store.save_view(
            conversation_id, messages, version=version, sources=sources, report=report
        )

    def load_view(self, conversation_id: str) -> StoredView | None:
        self._settled(conversation_id)
        return self.store.load_view(conversation_id)

    def create(
        self, conversation_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> ConversationInfo:
        self.commit(conversation_id)
        return self.store.create(conversation_id, meta=meta)

    def info(self, conversation_id: str) -> ConversationInfo | None:
        self._settled(conversation_id)
        return self.store.info(conversation_id)

    def update_meta(
        self,
        conversation_id: str,
        meta: Mapping[str, Any],
        *,
        replace: bool = False,
    ) -> ConversationInfo:
        self.commit(conversation_id)
        return self.store.update_meta(conversation_id, meta, replace=replace)

    def list_conversations(self) -> list[ConversationInfo]:
        with self._lock:
            queued = list(self._queued)
        for cid in queued:
            self._settled(cid)
        return self.store.list_conversations()

    def delete(self, conversation_id: str) -> bool:
        with self._lock:
            self._queued.pop(conversation_id, None)
        return self.store.delete(conversation_id)

    def close(self) -> None:
        with self._lock:
            queued = list(self._queued)
        for cid in queued:
            self._settled(cid)
        self.store.close()
