"""Many writers, and writers killed mid-append, on every store processes share."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Sequence
from queue import Queue
from typing import Any

from contextwindow import Message
from contextwindow.store import StoredConversation

from ._workers import append_batches, append_loop, append_one_by_one
from .conftest import Backend

WRITERS = 8
EACH = 500
BATCH = 50
BODY = 20_000
"""A killed writer appends batches of 50 messages of 20,000 characters (1 MB),
so that a kill at a random moment lands inside an append."""

spawn = multiprocessing.get_context("spawn")


def check_log(
    log: StoredConversation, results: Sequence[tuple[int, list[int], int]], each: int
) -> None:
    """None lost, none duplicated, each writer's messages where its versions say."""
    ids = [m.id for m in log.messages]
    assert log.version == len(ids) == len(results) * each
    assert len(set(ids)) == len(ids), "a message was written twice"
    for worker, versions, _ in results:
        assert len(versions) == each
        assert versions == sorted(set(versions)), (
            f"worker {worker}: versions out of order"
        )
        for seq, version in enumerate(versions):
            assert ids[version - 1] == f"w{worker}-{seq}", (worker, seq, version)


class TestManyWriters:
    def test_processes(self, durable: Backend) -> None:
        """8 processes x 500 appends to one conversation: none lost, none duplicated."""
        barrier, results = spawn.Barrier(WRITERS), spawn.Queue()
        url = durable.url + ("?synchronous=NORMAL" if durable.name == "sqlite" else "")
        procs = [
            spawn.Process(
                target=append_one_by_one,
                args=(url, "shared", w, EACH, barrier, results),
            )
            for w in range(WRITERS)
        ]
        for p in procs:
            p.start()
        found = [results.get(timeout=300) for _ in procs]
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        check_log(durable.open().load("shared"), found, EACH)
        assert sum(conflicts for _, _, conflicts in found) > 0, "no race was exercised"

    def test_threads(self, backend: Backend) -> None:
        """8 threads sharing one store handle: the same guarantees, every backend."""
        each, store = 100, backend.open()
        barrier: Any = threading.Barrier(WRITERS)
        results: Queue[tuple[int, list[int], int]] = Queue()

        def run(worker: int) -> None:
            barrier.wait()
            results.put((worker, *append_loop(store, "shared", worker, each)))

        threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        found = [results.get(timeout=1) for _ in threads]
        check_log(store.load("shared"), found, each)


class TestKilledWriter:
    def test_sigkill_mid_append(self, durable: Backend) -> None:
        """A writer killed at random leaves every acknowledged append, whole."""
        store, rng = durable.open(), random.Random(7)
        acked: list[int] = []
        for round_ in range(3):
            receive, send = spawn.Pipe(duplex=False)
            child = spawn.Process(
                target=append_batches, args=(durable.url, "killed", BATCH, BODY, send)
            )
            child.start()
            send.close()
            for _ in range(2 + round_):
                assert receive.poll(120), "the writer acknowledged nothing"
                acked.append(receive.recv())
            time.sleep(rng.uniform(0, 0.05))
            assert child.pid is not None
            os.kill(child.pid, signal.SIGKILL)
            child.join(30)
            assert child.exitcode == -signal.SIGKILL
            while receive.poll():
                try:
                    acked.append(receive.recv())
                except EOFError:
                    break
            log = store.load("killed")
            assert log.version >= acked[-1]
            assert log.version % BATCH == 0, "a partial batch was written"
            for position, msg in enumerate(log.messages):
                assert msg.id == f"b{position // BATCH}-{position % BATCH}"
                assert isinstance(msg, Message)
                assert len(msg.text) > BODY
