"""Real servers and stores for the store tests.

PostgreSQL and Redis are started once per session on loopback
(``tests/servers.py``, shared by every folder). Without their binaries the
tests that need them skip, except under CI (``CI=true``), where a missing
server fails the run. Each test gets fresh storage: a new
SQLite file, a new PostgreSQL schema (first on the connection's search path),
a new Redis key prefix.

``Backend`` is how a test reaches a kind of store: ``open()`` gives another
handle on the same storage (a worker, a new process), ``url`` names it for
``open_store`` and for child processes, and ``tamper`` reaches under the
store to damage it the way a bad disk, a bad migration or a hand edit would.
"""

from __future__ import annotations

import itertools
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from hypothesis import HealthCheck, given, settings

from contextwindow.messages import Message
from contextwindow.store import MemoryStore, open_store
from contextwindow.store._backend import RowStore
from contextwindow.testing import conversations
from contextwindow.wire import to_dicts

BACKENDS = ("memory", "sqlite", "postgres", "redis")
DURABLE = ("sqlite", "postgres", "redis")
"""The stores other processes can share (a ``MemoryStore`` lives in one)."""

_serial = itertools.count()
# One server serves every folder, and this module may be imported twice (as
# ``store.conftest`` and ``tests.store.conftest``): names carry a random tag.
_TAG = secrets.token_hex(3)


class Tamper:
    """Damage a store's rows from underneath it (no digest is fixed up
    unless asked)."""

    def set_body(self, cid: str, position: int, body: str, *, digest: bool) -> None:
        raise NotImplementedError

    def set_tokens(
        self, cid: str, position: int, text: str, *, digest: bool = False
    ) -> None:
        """Change a row's counts; ``digest``: make its digest match them."""
        raise NotImplementedError

    def drop(self, cid: str, position: int) -> None:
        raise NotImplementedError

    def set_version(self, cid: str, version: int) -> None:
        raise NotImplementedError

    def future_schema(self) -> None:
        raise NotImplementedError

    def past_schema(self) -> None:
        """Make the rows and the schema what the release before digests
        covered token counts wrote."""
        raise NotImplementedError


def _digest(body: str, tokens: str = "{}") -> str:
    from contextwindow.store._codec import row_digest

    return row_digest(body, tokens)


@dataclass
class _SQLTamper(Tamper):
    """Statements against the SQL tables, through a connection of our own."""

    execute: Callable[[str, tuple[Any, ...]], list[Any]]
    dialect: str

    def _q(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgres" else sql

    def set_body(self, cid: str, position: int, body: str, *, digest: bool) -> None:
        self.execute(
            self._q(
                "UPDATE cw_messages SET body = ? "
                "WHERE conversation = ? AND position = ?"
            ),
            (body, cid, position),
        )
        if digest:
            self.execute(
                self._q(
                    "UPDATE cw_messages SET digest = ? "
                    "WHERE conversation = ? AND position = ?"
                ),
                (_digest(body), cid, position),
            )

    def set_tokens(
        self, cid: str, position: int, text: str, *, digest: bool = False
    ) -> None:
        self.execute(
            self._q(
                "UPDATE cw_messages SET tokens = ? "
                "WHERE conversation = ? AND position = ?"
            ),
            (text, cid, position),
        )
        if digest:
            ((body,),) = self.execute(
                self._q(
                    "SELECT body FROM cw_messages "
                    "WHERE conversation = ? AND position = ?"
                ),
                (cid, position),
            )
            self.execute(
                self._q(
                    "UPDATE cw_messages SET digest = ? "
                    "WHERE conversation = ? AND position = ?"
                ),
                (_digest(body, text), cid, position),
            )

    def drop(self, cid: str, position: int) -> None:
        self.execute(
            self._q("DELETE FROM cw_messages WHERE conversation = ? AND position = ?"),
            (cid, position),
        )

    def set_version(self, cid: str, version: int) -> None:
        self.execute(
            self._q("UPDATE cw_conversations SET version = ? WHERE id = ?"),
            (version, cid),
        )

    def past_schema(self) -> None:
        self.execute(
            self._q("DELETE FROM cw_migrations WHERE name = ?"),
            ("0002_counts_in_digest",),
        )
        self.execute("UPDATE cw_messages SET digest = substr(digest, 1, 32)", ())
        if self.dialect == "sqlite":
            self.execute("PRAGMA user_version = 1", ())

    def future_schema(self) -> None:
        if self.dialect == "sqlite":
            self.execute("PRAGMA user_version = 99", ())
        else:
            self.execute("INSERT INTO cw_migrations VALUES (%s, 0)", ("9999_future",))


@dataclass
class _RedisTamper(Tamper):
    client: Any
    prefix: str

    def _k(self, kind: str, cid: str) -> str:
        return f"{self.prefix}{kind}:{cid}"

    def set_body(self, cid: str, position: int, body: str, *, digest: bool) -> None:
        self.client.lset(self._k("body", cid), position, body)
        if digest:
            head = json.loads(self.client.lindex(self._k("head", cid), position))
            head[5] = _digest(body)
            self.client.lset(self._k("head", cid), position, json.dumps(head))

    def set_tokens(
        self, cid: str, position: int, text: str, *, digest: bool = False
    ) -> None:
        head = json.loads(self.client.lindex(self._k("head", cid), position))
        head[4] = text
        if digest:
            body = self.client.lindex(self._k("body", cid), position)
            head[5] = _digest(body, text)
        self.client.lset(self._k("head", cid), position, json.dumps(head))

    def drop(self, cid: str, position: int) -> None:
        for kind in ("head", "body"):
            key = self._k(kind, cid)
            self.client.lset(key, position, "__gone__")
            self.client.lrem(key, 1, "__gone__")

    def set_version(self, cid: str, version: int) -> None:
        self.client.hset(self._k("conv", cid), "version", version)

    def future_schema(self) -> None:
        self.client.set(f"{self.prefix}schema", 99)

    def past_schema(self) -> None:
        self.client.set(f"{self.prefix}schema", 1)
        for cid in self.client.smembers(f"{self.prefix}ids"):
            key = self._k("head", cid)
            for k, text in enumerate(self.client.lrange(key, 0, -1)):
                head = json.loads(text)
                head[5] = head[5][:32]
                self.client.lset(key, k, json.dumps(head))


@dataclass
class Backend:
    """One kind of store with fresh storage (see the module docstring)."""

    name: str
    url: str
    tamper: Tamper | None = None
    _memory: MemoryStore | None = None
    _opened: list[RowStore] = field(default_factory=list)

    def open(self) -> RowStore:
        """Another handle on the same storage."""
        store = self._memory if self._memory is not None else open_store(self.url)
        self._opened.append(store)
        return store

    def close_all(self) -> None:
        for store in self._opened:
            store.close()


def _sqlite_backend(tmp_path: Path) -> Backend:
    path = tmp_path / "store.db"

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with sqlite3.connect(path) as conn:
            return conn.execute(sql, params).fetchall()

    return Backend("sqlite", f"sqlite:///{path}", _SQLTamper(execute, "sqlite"))


def _postgres_backend(server: str) -> Backend:
    # A schema per test, first on the search path: much cheaper than a database.
    name = f"t{_TAG}_{next(_serial)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    url = f"{server}?options=-csearch_path%3D{name}"

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        with psycopg.connect(url, autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    return Backend("postgres", url, _SQLTamper(execute, "postgres"))


def _redis_backend(server: str) -> Backend:
    prefix = f"t{_TAG}_{next(_serial)}:"
    client = redis.Redis.from_url(server, decode_responses=True)
    return Backend("redis", f"{server}?prefix={prefix}", _RedisTamper(client, prefix))


def make_backend(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Fresh storage of one kind; servers start on first use."""
    if name == "memory":
        return Backend("memory", "memory://", None, MemoryStore())
    if name == "sqlite":
        return _sqlite_backend(tmp_path)
    if name == "postgres":
        return _postgres_backend(request.getfixturevalue("postgres_server"))
    return _redis_backend(request.getfixturevalue("redis_server"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each kind of store in turn, with fresh storage."""
    b = make_backend(request.param, request, tmp_path)
    yield b
    b.close_all()


@pytest.fixture(params=DURABLE)
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Each kind of store other processes share, with fresh storage."""
    b = make_backend(request.param, request, tmp_path)
    yield b
    b.close_all()


@pytest.fixture
def store(backend: Backend) -> RowStore:
    """A store of each kind in turn."""
    return backend.open()


@pytest.fixture(scope="session")
def pool() -> list[list[Message]]:
    """Distinct generated conversations (an eighth of the profile's examples,
    at least 25), smallest first, drawn once for every store test."""
    n = max(25, settings().max_examples // 8)
    found: dict[str, list[Message]] = {}

    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(conversations())
    def draw(conv: list[Message]) -> None:
        found.setdefault(json.dumps(to_dicts(conv)), conv)

    draw()
    return sorted(found.values(), key=len)
