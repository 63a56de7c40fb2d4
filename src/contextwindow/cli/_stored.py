"""Stored conversations as the commands read them: transcripts, and listings.

Contract: a store is opened for one command, only to read (a SQLite file
read-only: nothing is created or changed), and closed before it returns.
``URL#ID`` is one conversation, ``URL`` every conversation of the store (by
id). A conversation becomes a ``Transcript`` of format ``store``, titled by
its id, whose model is the ``model`` key of its metadata and whose shape
(the provider its framing and validity rules default to) is its
``provider`` key, else ``openai``. With ``view`` the messages are the saved
view followed by what the log gained after it was made: what a manager
would send next.
"""

from __future__ import annotations

from typing import Any

from contextwindow._redact import display_url
from contextwindow.errors import StoreError
from contextwindow.messages import PROVIDERS
from contextwindow.store import (
    ConversationInfo,
    StoredConversation,
    StoredView,
    open_store,
    split_url,
)
from contextwindow.transcripts import Transcript

__all__ = ["list_conversations", "stored_transcripts", "stored_view"]


def stored_transcripts(url: str, *, view: bool = False) -> list[Transcript]:
    """The conversation ``URL#ID`` names, or all of the store's."""
    base, cid = split_url(url)
    store = open_store(base, readonly=True)
    try:
        ids = [cid] if cid is not None else [i.id for i in store.list_conversations()]
        if not ids:
            raise StoreError(f"{display_url(base)} holds no conversations")
        return [_transcript(store.load(i, view=view), view) for i in ids]
    finally:
        store.close()


def stored_view(url: str) -> tuple[Transcript, StoredView | None]:
    """The log of the conversation ``URL#ID`` names, and its saved view if any."""
    base, cid = split_url(url)
    if cid is None:
        raise StoreError(f"{display_url(url)}: name one conversation, as URL#ID")
    store = open_store(base, readonly=True)  # reading creates no file
    try:
        conv = store.load(cid, view=True)
    finally:
        store.close()
    return _transcript(conv, False), conv.view


def list_conversations(url: str) -> list[ConversationInfo]:
    """Every conversation of the store ``url`` names (its ``#ID`` ignored)."""
    store = open_store(split_url(url)[0], readonly=True)
    try:
        return store.list_conversations()
    finally:
        store.close()


def _transcript(conv: StoredConversation, view: bool) -> Transcript:
    messages = conv.messages
    if view:
        if conv.view is None:
            raise StoreError(f"conversation {conv.id!r} has no saved view")
        messages = conv.current_view
    model = conv.meta.get("model")
    provider = conv.meta.get("provider")
    meta: dict[str, Any] = {
        "version": conv.version,
        "view_version": conv.info.view_version,
        "shape": provider if provider in PROVIDERS else "openai",
    }
    return Transcript(
        messages, "store", conv.id, model if isinstance(model, str) else None, meta=meta
    )
