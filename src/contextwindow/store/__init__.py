"""Durable conversations: the ``Store`` protocol and its implementations.

``SQLiteStore`` (standard library, one file) is the default; ``PostgresStore``
(``pip install 'contextwindow[postgres]'``) and ``RedisStore`` (``pip install
'contextwindow[redis]'``) serve many workers. Their drivers are imported when
a store is made, never by importing this package. ``open_store(url)`` picks
one from a URL; ``split_url`` separates a ``#conversation-id``.

Example:
    >>> store = open_store("memory://")
    >>> split_url("sqlite:///chats.db#support-42")
    ('sqlite:///chats.db', 'support-42')
"""

from __future__ import annotations

from contextwindow.store.base import (
    ConversationInfo,
    Store,
    StoredConversation,
    StoredMessage,
    StoredView,
    ViewKind,
    ViewMessage,
)
from contextwindow.store.memory import MemoryStore
from contextwindow.store.postgres import PostgresStore
from contextwindow.store.redis import RedisStore
from contextwindow.store.sqlite import SQLiteStore
from contextwindow.store.urls import SCHEMES, open_store, split_url

__all__ = [
    "SCHEMES",
    "ConversationInfo",
    "MemoryStore",
    "PostgresStore",
    "RedisStore",
    "SQLiteStore",
    "Store",
    "StoredConversation",
    "StoredMessage",
    "StoredView",
    "ViewKind",
    "ViewMessage",
    "open_store",
    "split_url",
]
