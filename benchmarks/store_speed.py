"""Store speed: appends per second, and loading and preparing 10,000 messages.

Usage::

    python benchmarks/store_speed.py [--backends memory,sqlite,postgres,redis]

The conversation is ``fit_speed.conversation()``: 10,000 tau-bench messages
(one system prompt, then every trajectory, tool calls with fresh ids). For
each store, on fresh storage:

- single: the first 2,000 messages appended one per call, each naming the
  version the previous returned (what an agent loop does per message);
- batched: all 10,000 appended 100 per call;
- load: ``store.load(cid)`` of the 10,000 messages (every row decoded and
  checked: digest, JSON, wire form, positions);
- resume + prepare: a new ``ContextManager(store=..., conversation_id=...)``
  on a conversation a manager wrote (so each message's count is stored), with
  a window of 25 % of its tokens, and its first ``prepare``: the load, the
  compaction down to the window with the default strategy, the saved view.
  ``again``: the same on a conversation whose compacted view is saved, as a
  worker picking a conversation up mid-way finds it;
- fit alone: ``fit`` of the loaded messages to the same limit with a warm
  ``TokenCounter``, for comparison.

There is no peer library to compare with, so each figure is set against its
floor on the same server in the same run: for appends, a plain ``INSERT`` per
message (SQLite, PostgreSQL) or ``RPUSH`` (Redis) of the same JSON bodies, no
version check, no encoding (batched: one ``executemany`` / one ``RPUSH`` of
100); for load, fetching the same bodies raw and ``json.loads`` of each, which
any reader must pay. Times are the best of 3 (load: of 5), ours and the
floor's taken in turns.

The servers are the machine's own, started by this script
(``contextwindow.store.servers``) with their default durability: SQLite
``synchronous=FULL`` (and ``NORMAL`` for comparison), PostgreSQL with
``fsync`` on; Redis keeps no snapshot and no append-only file (``--save ''``,
as in the tests), so its figures show the protocol, not a disk.
"""

from __future__ import annotations

import argparse
import gc
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from _data import best_of
from fit_speed import conversation

from contextwindow import ContextManager, fit
from contextwindow.messages import Message
from contextwindow.store import open_store
from contextwindow.store._backend import RowStore
from contextwindow.store.servers import local_postgres, local_redis
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.wire import message_to_dict

SINGLE = 2_000
BATCH = 100
SHARE = 0.25

Floor = Callable[[list[str]], None]


def bodies(conv: list[Message]) -> list[str]:
    return [
        json.dumps(message_to_dict(m), ensure_ascii=False, separators=(",", ":"))
        for m in conv
    ]


# -- floors: the same bodies, written and read with nothing of ours ------------


@contextmanager
def sqlite_floor(
    path: Path, sync: str
) -> Iterator[tuple[Floor, Floor, Callable[[], list[str]]]]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {sync}")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, body TEXT NOT NULL)")

    def single(texts: list[str]) -> None:
        conn.execute("DELETE FROM t")
        for text in texts:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (body) VALUES (?)", (text,))
            conn.execute("COMMIT")

    def batched(texts: list[str]) -> None:
        conn.execute("DELETE FROM t")
        for k in range(0, len(texts), BATCH):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO t (body) VALUES (?)", [(x,) for x in texts[k : k + BATCH]]
            )
            conn.execute("COMMIT")

    def read() -> list[str]:
        return [r[0] for r in conn.execute("SELECT body FROM t ORDER BY k")]

    yield single, batched, read
    conn.close()


@contextmanager
def postgres_floor(url: str) -> Iterator[tuple[Floor, Floor, Callable[[], list[str]]]]:
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE TABLE floor (k BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)")

    def single(texts: list[str]) -> None:
        conn.execute("TRUNCATE floor")
        for text in texts:
            conn.execute("INSERT INTO floor (body) VALUES (%s)", (text,))

    def batched(texts: list[str]) -> None:
        conn.execute("TRUNCATE floor")
        for k in range(0, len(texts), BATCH):
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO floor (body) VALUES (%s)",
                    [(x,) for x in texts[k : k + BATCH]],
                )

    def read() -> list[str]:
        return [r[0] for r in conn.execute("SELECT body FROM floor ORDER BY k")]

    yield single, batched, read
    conn.close()


@contextmanager
def redis_floor(url: str) -> Iterator[tuple[Floor, Floor, Callable[[], list[str]]]]:
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)

    def single(texts: list[str]) -> None:
        client.delete("floor")
        for text in texts:
            client.rpush("floor", text)

    def batched(texts: list[str]) -> None:
        client.delete("floor")
        for k in range(0, len(texts), BATCH):
            client.rpush("floor", *texts[k : k + BATCH])

    def read() -> list[str]:
        found: list[str] = client.lrange("floor", 0, -1)
        return found

    yield single, batched, read
    client.close()


# -- ours ------------------------------------------------------------------------

_serial = iter(range(10**6))


def ours_single(store: RowStore, conv: list[Message]) -> None:
    cid, version = f"single-{next(_serial)}", 0
    for m in conv:
        version = store.append(cid, [m], expected_version=version)


def ours_batched(store: RowStore, conv: list[Message]) -> str:
    cid, version = f"batched-{next(_serial)}", 0
    for k in range(0, len(conv), BATCH):
        version = store.append(cid, conv[k : k + BATCH], expected_version=version)
    return cid


def paired(
    ours: Callable[[], object], floor: Callable[[], object] | None, n: int
) -> tuple[float, float | None]:
    """Best of ``n`` for each, taken in turns, so that a disk or a neighbour
    slowing down for a while slows both alike."""
    mine: list[float] = []
    theirs: list[float] = []
    for _ in range(n):
        mine.append(best_of(ours, 1))
        if floor is not None:
            theirs.append(best_of(floor, 1))
    return min(mine), (min(theirs) if theirs else None)


def measure(
    name: str,
    store: RowStore,
    floor: tuple[Floor, Floor, Callable[[], list[str]]] | None,
    conv: list[Message],
    texts: list[str],
    counter: TokenCounter,
    limit: int,
) -> dict[str, Any]:
    single, batched, read = floor if floor is not None else (None, None, None)
    row: dict[str, Any] = {"store": name}

    def put(key: str, ours: float, theirs: float | None, count: int = 0) -> None:
        row[key] = count / ours if count else ours
        if theirs is not None:
            row[f"floor_{key}"] = count / theirs if count else theirs

    put(
        "single",
        *paired(
            lambda: ours_single(store, conv[:SINGLE]),
            single and (lambda: single(texts[:SINGLE])),
            3,
        ),
        SINGLE,
    )
    put(
        "batched",
        *paired(
            lambda: ours_batched(store, conv), batched and (lambda: batched(texts)), 3
        ),
        len(conv),
    )
    cid = ours_batched(store, conv)
    loaded = store.load(cid)
    assert [message_to_dict(m) for m in loaded.messages] == [
        message_to_dict(m) for m in conv
    ]
    put(
        "load",
        *paired(
            lambda: store.load(cid),
            read and (lambda: [json.loads(t) for t in read()]),
            5,
        ),
    )
    fresh = [managed(store, conv) for _ in range(3)]
    row["prepare"] = min(best_of(lambda c=c: resume(store, c, limit), 1) for c in fresh)
    row["again"] = best_of(lambda: resume(store, fresh[0], limit), 3)
    row["fit"] = best_of(lambda: fit(loaded.messages, limit=limit, tokenizer=counter))
    return row


def managed(store: RowStore, conv: list[Message]) -> str:
    """The conversation as a manager writes it (100 a push): counts stored."""
    cid = f"managed-{next(_serial)}"
    m = ContextManager("gpt-4o", token_limit=10**8, store=store, conversation_id=cid)
    for k in range(0, len(conv), BATCH):
        m.push_many(conv[k : k + BATCH])
    return cid


def resume(store: RowStore, cid: str, limit: int) -> None:
    """A new worker picks the conversation up and prepares its next request."""
    m = ContextManager("gpt-4o", token_limit=limit, store=store, conversation_id=cid)
    assert m.prepare().tokens <= limit


def show(rows: list[dict[str, Any]]) -> None:
    def cost(row: dict[str, Any], key: str, rate: bool) -> str:
        """Ours as a multiple of the floor's cost (time per message or per load)."""
        floor = row.get(f"floor_{key}")
        if floor is None:
            return ""
        return f" ({floor / row[key] if rate else row[key] / floor:.1f}x)"

    print(
        f"\n{'store':<15}{'single/s':>16}{'batched msg/s':>19}"
        f"{'load 10k':>17}{'resume+prepare':>16}{'again':>9}{'fit alone':>11}"
    )
    for row in rows:
        print(
            f"{row['store']:<15}"
            f"{row['single']:>9,.0f}{cost(row, 'single', True):>7}"
            f"{row['batched']:>11,.0f}{cost(row, 'batched', True):>8}"
            f"{row['load'] * 1000:>8.0f} ms{cost(row, 'load', False):>6}"
            f"{row['prepare'] * 1000:>13.0f} ms{row['again'] * 1000:>6.0f} ms"
            f"{row['fit'] * 1000:>8.0f} ms"
        )
    print("\n(N.Nx): our cost per message, or per load, as a multiple of the floor's.")
    for row in rows:
        if "floor_single" in row:
            print(
                f"  floor {row['store']:<13} "
                f"plain insert {row['floor_single']:>7,.0f}/s, "
                f"batched {row['floor_batched']:>7,.0f} msg/s, "
                f"fetch + json.loads {row['floor_load'] * 1000:.0f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backends", default="memory,sqlite,sqlite-normal,postgres,redis"
    )
    chosen = parser.parse_args().backends.split(",")
    conv = conversation()
    texts = bodies(conv)
    tokenizer = BPETokenizer("o200k_base")
    total = TokenCounter(tokenizer).messages(conv)
    limit = int(total * SHARE)
    print(
        f"{len(conv):,} messages, {sum(map(len, texts)) / 1e6:.1f} MB of JSON bodies, "
        f"{total:,} o200k tokens; fit to {limit:,}"
    )
    rows = []
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for name in chosen:
            t0 = time.perf_counter()
            floor = None
            if name == "memory":
                store = open_store("memory://")
            elif name.startswith("sqlite"):
                sync = "NORMAL" if name == "sqlite-normal" else "FULL"
                store = open_store(f"sqlite:///{tmp / name}.db?synchronous={sync}")
                floor = stack.enter_context(
                    sqlite_floor(tmp / f"{name}-floor.db", sync)
                )
            elif name == "postgres":
                url = stack.enter_context(local_postgres())
                store = open_store(url)
                floor = stack.enter_context(postgres_floor(url))
            else:
                url = stack.enter_context(local_redis())
                store = open_store(url)
                floor = stack.enter_context(redis_floor(url))
            # Each store gets its own warm counter, and starts with no garbage
            # of the previous one's runs to collect.
            counter = TokenCounter(tokenizer)
            counter.messages(conv)
            gc.collect()
            rows.append(measure(name, store, floor, conv, texts, counter, limit))
            store.close()
            print(f"  {name}: {time.perf_counter() - t0:.0f} s")
    show(rows)


if __name__ == "__main__":
    main()
