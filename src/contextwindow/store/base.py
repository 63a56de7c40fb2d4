"""The ``Store`` protocol and the values it reads back.

A store keeps, per conversation, an append-only log of messages (what really
happened), the latest compacted view sent to the model (with pointers to the
originals), and metadata. Every store in this package (``MemoryStore``,
``SQLiteStore``, ``PostgresStore``, ``RedisStore``) behaves the same; the shared
test suite runs against each.

Contract:

- **Versions.** A conversation's version is the number of messages in its log;
  a conversation that does not exist has version 0. ``append`` names the
  version it expects: a stale one raises ``ConflictError(expected, actual)``
  and writes nothing. An append is atomic: the whole batch or none of it, and
  it returns the new version (the old one plus the batch's length). So
  concurrent writers never lose or duplicate a message, and the message at
  position ``p`` is the one whose append returned a version above ``p``.
- **Retries.** Appends are idempotent by message id: when the log already
  holds the batch (the same ids, the same bodies) at ``expected_version``,
  an earlier try was written and its reply lost; the append returns
  ``expected_version`` plus the batch's length and writes nothing. The same
  id there with another body is a ``StoreError``. So a caller may retry any
  append that failed, whatever the failure.
- **Ids.** A conversation id is printable text (no control character, lone
  surrogate or separator but the space) of 1 to 256 characters; every store
  refuses others alike, with a ``StoreError`` saying why.
- **Creation.** ``append`` with ``expected_version=0`` creates a conversation
  that does not exist yet (so does ``update_meta``); ``create`` is the explicit
  form and refuses an existing id. ``delete`` removes the log, the view and the
  metadata at once.
- **Reading.** ``load`` returns the log in order (from ``since``), the version,
  the metadata and the latest view, all from one consistent snapshot. A
  conversation that does not exist raises ``StoreError`` (``info`` returns
  ``None`` for it); a corrupt row, a gap in the log or an unknown schema
  version raises ``StoreError`` naming the conversation, the position and what
  is wrong. A store never returns a silently shortened conversation.
- **Bodies.** Messages are kept in ``contextwindow.wire``'s JSON form, so
  they come back equal, with their ``id`` and ``meta``. Each body carries a
  digest that reads check. Per message the store also keeps its ``id``,
  ``agent``, the time of its append, and the token counts the caller passes
  (an opaque mapping such as ``{"o200k_base/openai": 12}``), which the
  digest covers too: a changed count is damage, never trusted.
- **Views.** ``save_view`` keeps one view per conversation (the latest): the
  compacted messages a manager sends, made from the log at some version. A
  view message equal to a log message is kept as a pointer to it (no second
  copy); one with a log message's id but other content (a truncated tool
  result) is kept whole and points to that original; a new one (a summary)
  points to the originals its caller names in ``sources``.
- **Layers.** Stores know messages and nothing of strategies, tokenizers or
  managers: a report is stored as the JSON object the caller passes.

For a manager (``ContextManager(store=..., conversation_id=...)``):

- resume: ``conv = store.load(cid)`` when ``store.info(cid)`` is not
  ``None``; the history is ``conv.messages``, the version ``conv.version``,
  and with a view the messages to send are ``conv.view.messages`` followed by
  ``conv.messages[conv.view.version:]`` (what came after the compaction);
- push: ``version = store.append(cid, [msg], expected_version=version,
  tokens=[{"o200k_base/openai": n}])``; on ``ConflictError`` another worker
  wrote first: ``tail = store.load(cid, since=version, view=False)``, add
  ``tail.messages`` to the history, take ``tail.version`` and append again
  (messages of its own found in the tail, written by a try whose reply was
  lost, are acknowledged there, not added twice);
- compaction: ``store.save_view(cid, view, version=version, sources={s.id:
  ids_it_summarises}, report=report_as_json)``; the model name and the like
  go in ``store.update_meta(cid, {"model": ...})``.

Example:
    >>> from contextwindow.store import MemoryStore
    >>> store = MemoryStore()
    >>> v = store.append("chat-1", [Message.user("hi", id="u1")], expected_version=0)
    >>> v = store.append("chat-1", [Message.assistant("hello")], expected_version=v)
    >>> conv = store.load("chat-1")
    >>> conv.version, [m.text for m in conv.messages], conv.messages[0].id
    (2, ['hi', 'hello'], 'u1')
    >>> store.append("chat-1", [Message.user("again?")], expected_version=1)
    Traceback (most recent call last):
    ...
    contextwindow.errors.ConflictError: expected version 1, store is at 2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from contextwindow.messages import Message

__all__ = [
    "ConversationInfo",
    "Store",
    "StoredConversation",
    "StoredMessage",
    "StoredView",
    "ViewKind",
    "ViewMessage",
]


def _no_meta() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """What a store knows about a conversation besides its messages.

    Example:
        >>> ConversationInfo("c1", 0, 1.0, 1.0).view_version is None
        True
    """

    id: str
    """The conversation id."""
    version: int
    """Messages in the log."""
    created: float
    """When it was created, in seconds since the epoch (UTC)."""
    updated: float
    """When it last changed (append, metadata, view), in seconds since the epoch."""
    meta: Mapping[str, Any] = field(default_factory=_no_meta, compare=False)
    """What callers put there (``update_meta``): a model name, a title ..."""
    view_version: int | None = None
    """The log version the saved view was made from; ``None`` without a view."""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message of a log, with what the store keeps beside it.

    Example:
        >>> e = StoredMessage(0, Message.user("hi", agent="ada"), 1.0)
        >>> e.message.agent, e.tokens
        ('ada', {})
    """

    position: int
    """Its place in the log, from 0; the append that wrote it returned a
    version above it."""
    message: Message
    """The message, with its ``id``, ``agent`` and ``meta``."""
    time: float
    """When it was appended, in seconds since the epoch (UTC)."""
    tokens: Mapping[str, int] = field(default_factory=dict[str, int])
    """Token counts the caller passed with it, by counter name."""


ViewKind = Literal["original", "rewritten", "new"]
"""How a view message relates to the log: the log's message itself, a log
message with other content (same id), or a message the log does not hold."""


@dataclass(frozen=True, slots=True)
class ViewMessage:
    """One message of a saved view, and where it came from.

    Example:
        >>> ViewMessage(Message.user("hi"), "original", (0,)).origins
        (0,)
    """

    message: Message
    """The message as the view holds it."""
    kind: ViewKind
    """``original``, ``rewritten`` or ``new`` (see ``ViewKind``)."""
    origins: tuple[int, ...] = ()
    """Log positions it stands for: its own for an original or a rewrite,
    those named in ``save_view(sources=...)`` for a new one (a summary)."""


@dataclass(frozen=True, slots=True)
class StoredView:
    """The compacted view last saved for a conversation.

    Example:
        >>> view = StoredView(3, (ViewMessage(Message.user("sum"), "new", (0, 1)),))
        >>> [m.text for m in view.messages], len(view.summaries)
        (['sum'], 1)
    """

    version: int
    """The log version it was made from: log messages from this position on
    came later and are not in it."""
    entries: tuple[ViewMessage, ...]
    """Its messages, in order, with their origins."""
    report: Mapping[str, Any] | None = field(default=None, compare=False)
    """The JSON object passed to ``save_view`` (a compaction report), if any."""
    time: float = 0.0
    """When it was saved, in seconds since the epoch (UTC)."""

    @property
    def messages(self) -> tuple[Message, ...]:
        """The view's messages, in order."""
        return tuple(e.message for e in self.entries)

    @property
    def summaries(self) -> tuple[ViewMessage, ...]:
        """The entries the log does not hold (``new``): summaries and the like."""
        return tuple(e for e in self.entries if e.kind == "new")


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """A conversation read back from a store: one consistent snapshot.

    Example:
        >>> info = ConversationInfo("c1", 1, 1.0, 1.0, {"model": "gpt-4o"})
        >>> entry = StoredMessage(0, Message.user("hi"), 1.0)
        >>> conv = StoredConversation(info, (entry,))
        >>> conv.id, conv.version, conv.meta["model"], [m.text for m in conv.messages]
        ('c1', 1, 'gpt-4o', ['hi'])
    """

    info: ConversationInfo
    """Id, version, times, metadata."""
    entries: tuple[StoredMessage, ...]
    """The log from position ``since`` to ``version - 1``, in order."""
    view: StoredView | None = None
    """The latest saved view (``None`` when there is none or none was asked)."""
    since: int = 0
    """The position of the first entry."""

    @property
    def id(self) -> str:
        """The conversation id."""
        return self.info.id

    @property
    def version(self) -> int:
        """Messages in the whole log (not only those loaded)."""
        return self.info.version

    @property
    def meta(self) -> Mapping[str, Any]:
        """The conversation's metadata."""
        return self.info.meta

    @property
    def messages(self) -> tuple[Message, ...]:
        """The loaded messages, in log order."""
        return tuple(e.message for e in self.entries)

    @property
    def current_view(self) -> tuple[Message, ...]:
        """What a manager works from: the saved view, then what came after it.

        The log itself when no view is saved.

        Example:
            >>> info = ConversationInfo("c1", 2, 1.0, 1.0)
            >>> log = (StoredMessage(0, Message.user("a"), 1.0),
            ...        StoredMessage(1, Message.user("b"), 1.0))
            >>> cut = ViewMessage(Message.user("A"), "rewritten", (0,))
            >>> view = StoredView(1, (cut,))
            >>> [m.text for m in StoredConversation(info, log, view).current_view]
            ['A', 'b']
        """
        log = self.messages
        if self.view is None:
            return log
        return self.view.messages + log[self.view.version - self.since :]


class Store(Protocol):
    """Durable conversations: an append-only log, the latest view, metadata.

    See the module's contract. Implementations: ``MemoryStore``,
    ``SQLiteStore`` (the default), ``PostgresStore`` and ``RedisStore``;
    ``open_store(url)`` picks one from a URL.
    """

    def append(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        expected_version: int,
        tokens: Sequence[Mapping[str, int]] | None = None,
    ) -> int:
        """Append ``messages`` atomically if the log is at ``expected_version``.

        Args:
            conversation_id: The conversation; created when
                ``expected_version`` is 0 and it does not exist.
            messages: The messages, in order.
            expected_version: The version the caller last saw.
            tokens: Token counts per message (as many as ``messages``).

        Returns:
            The new version.

        Raises:
            ConflictError: The log is at another version; nothing was written.
            StoreError: The store failed, or a message cannot be stored.
            ArgumentTypeError: ``messages`` is not a list of messages (one
                ``Message`` alone included), or ``tokens`` not a list of
                mappings; nothing was written.
        """
        ...

    def version(self, conversation_id: str) -> int:
        """The conversation's version (0 when it does not exist), cheaply."""
        ...

    def load(
        self, conversation_id: str, *, since: int = 0, view: bool = True
    ) -> StoredConversation:
        """The log from position ``since``, the metadata and (``view``) the view.

        Raises:
            StoreError: No such conversation, or what was read is corrupt.
        """
        ...

    def save_view(
        self,
        conversation_id: str,
        messages: Sequence[Message],
        *,
        version: int,
        sources: Mapping[str, Sequence[str]] | None = None,
        report: Mapping[str, Any] | None = None,
    ) -> StoredView:
        """Save the compacted view made from the log at ``version``.

        Args:
            conversation_id: The conversation (it must exist).
            messages: The view, in order.
            version: The log version it was made from (at most the current).
            sources: For messages the log does not hold (summaries): their id
                to the ids of the log messages they stand for.
            report: A JSON object kept with the view (a compaction report).

        Returns:
            The view as ``load_view`` will read it.

        Raises:
            ConflictError: A view of a later version is already saved.
            StoreError: No such conversation, ``version`` above the log's, a
                source naming no log message, or a report that is not JSON.
            ArgumentTypeError: ``messages`` is not a list of messages.
        """
        ...

    def load_view(self, conversation_id: str) -> StoredView | None:
        """The latest saved view, or ``None``; ``StoreError`` if corrupt."""
        ...

    def create(
        self, conversation_id: str, *, meta: Mapping[str, Any] | None = None
    ) -> ConversationInfo:
        """Create an empty conversation; ``StoreError`` if it exists."""
        ...

    def info(self, conversation_id: str) -> ConversationInfo | None:
        """What the store knows of a conversation, or ``None`` if there is none."""
        ...

    def update_meta(
        self,
        conversation_id: str,
        meta: Mapping[str, Any],
        *,
        replace: bool = False,
    ) -> ConversationInfo:
        """Merge ``meta`` into the metadata (``replace``: instead of it).

        Creates the conversation when it does not exist.

        Raises:
            ArgumentTypeError: ``meta`` is not a mapping.
            StoreError: A key that is not a ``str`` or a value that is not
                JSON; nothing was written.
        """
        ...

    def list_conversations(self) -> list[ConversationInfo]:
        """Every conversation, by id."""
        ...

    def delete(self, conversation_id: str) -> bool:
        """Remove a conversation (log, view, metadata); whether it existed."""
        ...

    def close(self) -> None:
        """Release connections; the store is not used afterwards."""
        ...
