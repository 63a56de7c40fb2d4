"""What the child processes of the concurrency tests run (importable under spawn)."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from contextwindow import ConflictError, Message
from contextwindow.store import open_store
from contextwindow.store._backend import RowStore


def message(worker: int, seq: int) -> Message:
    """The ``seq``-th message of ``worker``: its id says whose and which."""
    return Message.user(
        f"worker {worker} says {seq}", id=f"w{worker}-{seq}", agent=f"w{worker}"
    )


def append_loop(
    store: RowStore, cid: str, worker: int, count: int
) -> tuple[list[int], int]:
    """Append ``count`` messages one at a time: read the version, append with it,
    and on ``ConflictError`` try again from the version the store reports.

    Returns the version each append returned, in order, and how many attempts
    lost a race.
    """
    versions: list[int] = []
    conflicts = 0
    for seq in range(count):
        version = store.version(cid)
        while True:
            try:
                version = store.append(
                    cid, [message(worker, seq)], expected_version=version
                )
                break
            except ConflictError as exc:
                conflicts += 1
                version = exc.actual_version
        versions.append(version)
    return versions, conflicts


def append_one_by_one(
    url: str, cid: str, worker: int, count: int, barrier: Any, results: Any
) -> None:
    """A process's ``append_loop`` on its own store, started with the others;
    puts ``(worker, versions, conflicts)`` on ``results``."""
    store = open_store(url)
    barrier.wait()
    versions, conflicts = append_loop(store, cid, worker, count)
    store.close()
    results.put((worker, versions, conflicts))


def append_batches(url: str, cid: str, batch: int, size: int, acks: Connection) -> None:
    """Append batches of ``batch`` messages of ``size`` characters until killed,
    sending each acknowledged version through ``acks``."""
    store = open_store(url)
    version = store.version(cid)
    filler = "x" * size
    while True:
        start = version // batch
        msgs = [
            Message.user(f"{filler} {start}.{i}", id=f"b{start}-{i}")
            for i in range(batch)
        ]
        version = store.append(cid, msgs, expected_version=version)
        acks.send(version)
