"""Stores named by URL: ``open_store(url)`` and ``split_url(url)``.

Contract:

- ``sqlite:///chats.db`` is a file relative to the working folder,
  ``sqlite:////var/lib/chats.db`` an absolute one (SQLAlchemy's rule: the
  path is what follows the third slash); ``sqlite://`` and
  ``sqlite:///:memory:`` are in memory; ``?synchronous=NORMAL`` trades
  durability across a power cut for speed, ``?mode=ro`` opens the file
  read-only and ``?immutable=1`` read-only on media nothing writes to (see
  ``SQLiteStore``); ``open_store(url, readonly=True)`` is ``?mode=ro``.
  Reading never creates: a read-only store of a missing file is an error.
- ``postgresql://`` (or ``postgres://``) URLs go to ``PostgresStore`` as they
  are; ``redis://``, ``rediss://`` and ``unix://`` to ``RedisStore``, with an
  optional ``?prefix=`` for its keys; ``memory://`` is a new ``MemoryStore``.
- A ``#fragment`` names a conversation: ``split_url`` takes it off
  (percent-decoded, so an id may hold any character) and ``open_store``
  ignores it. Anything else raises ``StoreError`` listing the schemes.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, unquote, unquote_plus

from contextwindow._args import check_bool, check_str
from contextwindow._redact import STORE_SCHEMES, display_url
from contextwindow.errors import StoreError
from contextwindow.store._backend import RowStore
from contextwindow.store.memory import MemoryStore
from contextwindow.store.postgres import PostgresStore
from contextwindow.store.redis import RedisStore
from contextwindow.store.sqlite import SQLiteStore

__all__ = ["SCHEMES", "is_store_url", "open_store", "split_url"]

SCHEMES: tuple[str, ...] = STORE_SCHEMES
"""The URL schemes ``open_store`` knows."""


def is_store_url(text: str) -> bool:
    """Whether ``text`` is a URL ``open_store`` reads (rather than a file name).

    Example:
        >>> is_store_url("sqlite:///a.db#c1"), is_store_url("chat.json")
        (True, False)
    """
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def split_url(url: str) -> tuple[str, str | None]:
    """The store's URL and the conversation id after ``#`` (``None`` if none).

    Example:
        >>> split_url("redis://localhost:6379/0#team%2Fchat-7")
        ('redis://localhost:6379/0', 'team/chat-7')
        >>> split_url("sqlite:///a.db")
        ('sqlite:///a.db', None)
    """
    check_str(url, "url", secret=True)  # a URL may hold a password
    base, sep, fragment = url.partition("#")
    return base, (unquote(fragment) or None) if sep else None


def open_store(url: str, *, readonly: bool = False) -> RowStore:
    """The store a URL names (see the module's contract).

    Args:
        url: The store's URL; a ``#fragment`` is ignored.
        readonly: Only to read (a SQLite file is opened read-only, and must
            exist); the other stores create nothing when read.

    Raises:
        StoreError: An unknown scheme, a missing driver, or a store that
            cannot be opened.

    Example:
        >>> open_store("sqlite:///:memory:")
        SQLiteStore(':memory:')
        >>> open_store("mysql://db/chats")
        Traceback (most recent call last):
        ...
        contextwindow.errors.StoreError: url: unknown store URL 'mysql://...' ...
    """
    check_str(url, "url", secret=True)
    check_bool(readonly, "readonly")
    base, _ = split_url(url)
    scheme = base.partition("://")[0].lower()
    if not is_store_url(base):
        # Only the scheme is shown: what is not a store URL may be anything
        # (a key passed by mistake, a DSN that keeps its password elsewhere).
        schemes = ", ".join(SCHEMES)
        if "://" not in base:
            raise StoreError(
                f"url: not a store URL (expected scheme://...; schemes: {schemes})"
            )
        raise StoreError(
            f"url: unknown store URL {display_url(base)!r} (schemes: {schemes})"
        )
    shown = display_url(base)
    if scheme == "memory":
        return MemoryStore()
    if scheme == "sqlite":
        path, _, options_text = base.partition("://")[2].partition("?")
        path = path[1:] if path.startswith("/") else path
        options = dict(parse_qsl(options_text, keep_blank_values=True))
        sync = options.pop("synchronous", "FULL").upper()
        mode = options.pop("mode", "ro" if readonly else "rwc")
        immutable = options.pop("immutable", "0")
        if (
            options
            or sync not in ("FULL", "NORMAL")
            or mode not in ("ro", "rwc")
            or immutable not in ("0", "1")
        ):
            raise StoreError(
                f"{shown!r}: a sqlite URL takes only ?synchronous=FULL|NORMAL, "
                "?mode=ro and ?immutable=1"
            )
        if "\0" in unquote(path):
            raise StoreError(
                f"{shown!r}: a sqlite URL's path cannot hold a NUL character"
            )
        if not path and (readonly or mode == "ro"):
            raise StoreError(
                f"{shown!r}: no database path given (sqlite:///chats.db reads "
                "chats.db; a new in-memory database holds nothing to read)"
            )
        return SQLiteStore(
            unquote(path) or ":memory:",
            synchronous="NORMAL" if sync == "NORMAL" else "FULL",
            readonly=readonly or mode == "ro",
            immutable=immutable == "1",
        )
    if scheme in ("postgresql", "postgres"):
        return PostgresStore(base)
    # The query is cut by hand: urlunsplit would write unix:///tmp/r.sock
    # as unix:/tmp/r.sock, and urlsplit raises on a broken host ([::1).
    head, _, query_text = base.partition("?")
    head = scheme + head[len(scheme) :]  # REDIS:// as redis-py reads it
    items = [i for i in query_text.split("&") if i]
    prefixes = [
        unquote_plus(i.partition("=")[2]) for i in items if _name(i) == "prefix"
    ]
    rest = "&".join(i for i in items if _name(i) != "prefix")
    plain = f"{head}?{rest}" if rest else head
    return RedisStore(plain, prefix=prefixes[-1]) if prefixes else RedisStore(plain)


def _name(item: str) -> str:
    """The parameter a query item (``name=value``) sets."""
    return unquote_plus(item.partition("=")[0])
