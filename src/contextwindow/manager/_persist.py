"""A manager's conversation kept in a ``Store``: the log, the view, its own state.

Contract:

- Every push is appended to the store before the manager changes anything,
  with the version the manager last saw and each message's token count. When
  another worker appended first (``ConflictError``), its messages are read
  back, and they join the history and the view before ours; then the append
  is tried again. So concurrent managers of one conversation lose and
  duplicate nothing, and each ends up with the log's order. Messages an
  append wrote but the manager never took in (an interrupt came between the
  two) are read back before its next change, and pushing one of them again
  is recognised by id: each is in the log, and in the history, once.
- Every change to the view (a compaction, a handler's edit, a repair) is saved
  as the view, made from the log at the manager's version, with pointers from
  summaries to the messages they replace. A view saved later by another
  worker wins.
- What ``prepare`` needs to act the same after a restart is kept in the
  conversation's metadata under ``contextwindow``: the thresholds that have
  fired, the compactions of the current turn, the size at which a compaction
  was last refused. A new manager on the same conversation resumes exactly:
  its next request is the one the old manager would have prepared.
- The log is append-only: a manager with a store cannot replace or clear its
  history (``StoreError`` says so and names the way out).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from contextwindow.errors import ConflictError, StoreError
from contextwindow.messages import Message
from contextwindow.store.base import Store

__all__ = ["STATE_KEY", "Persistence", "Resumed"]

STATE_KEY = "contextwindow"
"""The metadata key under which a manager keeps its state."""

MAX_RETRIES = 100
"""Appends tried again after a conflict before giving up (a conflict means
another writer made progress, so this bounds only pathological contention)."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """A conversation read back from a store."""

    log: tuple[Message, ...]
    """Every message of the log, as it was appended."""
    view: tuple[Message, ...] | None
    """The saved view (``None`` when none was saved)."""
    view_version: int
    """The log version the saved view was made from (0 without one): what
    the log gained after it joins the view as pushes do."""
    version: int
    tokens: tuple[int | None, ...]
    """Each log message's stored count for the manager's counter, if any."""
    state: Mapping[str, Any]


class Persistence:
    """One conversation of one store, as a manager writes it."""

    __slots__ = ("_key", "_saved_state", "conversation_id", "store", "version")

    def __init__(self, store: Store, conversation_id: str, key: str) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self._key = key
        """The name of the counts a manager stores (tokenizer and provider)."""
        self.version = 0
        self._saved_state: Mapping[str, Any] | None = None

    def resume(self) -> Resumed | None:
        """The stored conversation, or ``None`` when there is none yet."""
        if self.store.info(self.conversation_id) is None:
            return None
        conv = self.store.load(self.conversation_id)
        saved = conv.view
        view = None if saved is None else saved.messages
        cut = 0 if saved is None else saved.version
        self.version = conv.version
        raw = conv.meta.get(STATE_KEY)
        state: Mapping[str, Any] = (
            cast("Mapping[str, Any]", raw) if isinstance(raw, Mapping) else {}
        )
        self._saved_state = state
        tokens = tuple(e.tokens.get(self._key) for e in conv.entries)
        return Resumed(conv.messages, view, cut, conv.version, tokens, state)

    def start(self, meta: Mapping[str, Any]) -> None:
        """Create the conversation with ``meta`` (model, provider)."""
        self.store.update_meta(self.conversation_id, meta)

    def append(
        self, messages: Sequence[Message], counts: Sequence[int]
    ) -> list[Message]:
        """Append ``messages``; return what other writers appended before them.

        The version moves only when this returns, together with the messages
        it returns: after any failure it is where it was, so what other
        writers appended is read again by the next append, never skipped.
        Messages of ours found in the log (an earlier try was written, and
        its reply lost) are recognised by id, not read back as another's.
        """
        cid = self.conversation_id
        others: list[Message] = []
        version = self.version
        pending = list(messages)
        tokens = [{self._key: n} for n in counts]
        for _ in range(MAX_RETRIES):
            try:
                version = self.store.append(
                    cid, pending, expected_version=version, tokens=tokens
                )
            except ConflictError:
                tail = self.store.load(cid, since=version, view=False).messages
                k, done = _ours(cid, version, tail, pending)
                if 0 < done < len(pending) and k + done < len(tail):
                    raise StoreError(
                        f"conversation {cid!r}: messages[:{done}] are in the log "
                        f"from position {version + k}, apart from the rest of "
                        "this batch; push the rest alone"
                    ) from None
                others.extend(tail[:k])
                version += k + done
                del pending[:done], tokens[:done]
                if pending:
                    continue
            self.version = version
            return others
        raise StoreError(
            f"conversation {cid!r}: could not append after "
            f"{MAX_RETRIES} conflicts with other writers"
        )

    def unseen(self, seen: int) -> list[Message]:
        """The log's messages from position ``seen`` up to this manager's version.

        What an append wrote, but the manager did not take in (an interrupt
        between the two): they join the history before anything else does.
        """
        if seen >= self.version:
            return []
        tail = self.store.load(self.conversation_id, since=seen, view=False)
        return list(tail.messages[: self.version - seen])

    def save_view(
        self,
        view: Sequence[Message],
        sources: Mapping[str, Sequence[str]],
        report: Mapping[str, Any],
    ) -> None:
        """Save the view, made from the log at this manager's version."""
        cid, version, view = self.conversation_id, self.version, tuple(view)

        def write(store: Store) -> None:
            # Another worker may have saved a view of a later version: it wins.
            with contextlib.suppress(ConflictError):
                store.save_view(
                    cid, view, version=version, sources=sources or None, report=report
                )

        self._write(write)

    def save_state(self, state: Mapping[str, Any]) -> None:
        """Keep the manager's state in the metadata, when it changed."""
        if state != self._saved_state:
            cid, meta = self.conversation_id, {STATE_KEY: dict(state)}
            self._write(lambda store: store.update_meta(cid, meta))
            self._saved_state = dict(state)

    def _write(self, write: Callable[[Store], object]) -> None:
        """``write(store)``, now or queued with the store's appends.

        A store that queues its appends (the proxy's ``WriteBehind``) takes
        the write with them, through its ``later``.
        """
        later = getattr(self.store, "later", None)
        if later is not None:
            later(self.conversation_id, write)
        else:
            write(self.store)


def _ours(
    cid: str, since: int, tail: Sequence[Message], pending: Sequence[Message]
) -> tuple[int, int]:
    """Where ``pending`` begins in ``tail`` (read from ``since``), and how much of it.

    ``(len(tail), 0)`` when none of it is there. A message of ``pending`` is
    in the log when its id is; the same id with other content is damage.
    """
    first = pending[0].id
    k = next((i for i, m in enumerate(tail) if m.id == first), len(tail))
    done = 0
    for got, mine in zip(tail[k:], pending, strict=False):
        if got.id != mine.id:
            break
        if got != mine:
            raise StoreError(
                f"conversation {cid!r}: message {since + k + done} has id "
                f"{mine.id!r}, as a message pushed again now, but other content"
            )
        done += 1
    return k, done
