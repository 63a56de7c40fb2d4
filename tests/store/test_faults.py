"""Fault injection: managers on stores that fail at every call site, retried.

Two workers manage one conversation, each through a ``FaultyStore`` that
fails where a generated plan says: before a write reaches the store, after
it was written with the reply lost, with a timeout after it was written, and
on every read (the read-back after a conflict among them). On PostgreSQL
and Redis the first worker also talks through a ``CuttingProxy`` that cuts
the connection after the server got an append, so the reply is lost on the
wire, not only in the wrapper. Every operation (push, push_many, prepare
with its threshold handlers) is retried by the caller until it succeeds.

Then: the log holds each pushed message exactly once; each worker's history
is the log's order (a prefix of it); a manager resumed from the store holds
the whole log; every request prepared passes ``problems``.
"""

from __future__ import annotations

import functools
import itertools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contextwindow import (
    ContextManager,
    Message,
    StoreError,
    ThresholdContext,
    ToolCall,
    problems,
)
from contextwindow.manager import CompactionPolicy
from contextwindow.store import open_store
from contextwindow.store._backend import RowStore
from contextwindow.store.base import Store
from contextwindow.testing import FakeTokenizer

from ._faults import FAULTS, CuttingProxy, Fault, FaultyStore
from .conftest import Backend, make_backend

T = TypeVar("T")

EXAMPLES = {"memory": 30, "sqlite": 20, "postgres": 12, "redis": 12}
"""Sessions per backend: explicit, since each runs many store calls (the CI
profile's 2,000 would take minutes here)."""
CUT = ("postgres", "redis")
"""The backends reached through the proxy. It cuts when the id of the
message a ``cut`` pushes goes by: in the append's parameters (the SQL text
itself is not resent once the driver has prepared the statement)."""
_ids = itertools.count()


@dataclass
class Session:
    """What one generated session does, and the faults it meets."""

    ops: list[tuple[str, int, int]]
    """``(kind, worker, size)``: ``user``, ``tools`` (a tool exchange pushed
    as one unit), ``text`` (an assistant reply), ``prepare`` or ``cut`` (a
    user turn the first worker pushes, its append cut on the wire)."""
    faults: list[list[Fault | None]]
    """Per worker, the fault for each store call in turn (then none)."""


OPS = st.tuples(
    st.sampled_from(["user", "tools", "text", "prepare", "prepare", "cut"]),
    st.integers(0, 1),
    st.integers(1, 60),
)
FAULT_SEQ = st.lists(st.sampled_from([None, None, *FAULTS]), max_size=40)
SESSIONS = st.builds(
    Session,
    st.lists(OPS, min_size=1, max_size=24),
    st.lists(FAULT_SEQ, min_size=2, max_size=2),
)


EVERY_FAULT = Session(
    [("user", 0, 5), ("user", 1, 5), ("tools", 0, 50), ("prepare", 0, 1)]
    + [("cut", 0, 1), ("tools", 0, 50), ("text", 1, 9), ("prepare", 1, 1)] * 3,
    [[*FAULTS, None, *FAULTS, None, None, *FAULTS] * 3, [None, *FAULTS] * 4],
)
"""A session that meets each fault at each of the first calls, whatever the
draw: a floor under the generated ones."""


class Plan:
    """A worker's faults in call order; none once they are spent."""

    def __init__(self, faults: list[Fault | None]) -> None:
        self._faults: Iterator[Fault | None] = iter(faults)

    def __call__(self, call: str) -> Fault | None:
        return next(self._faults, None)


def retried(what: Callable[[], T]) -> T:
    """Call ``what`` until it stops raising ``StoreError``, as a caller would."""
    for _ in range(200):
        try:
            return what()
        except StoreError:
            continue
    raise AssertionError("no progress after 200 tries")


@dataclass
class Run:
    """Two workers on one conversation, and what they were asked to do."""

    backend: Backend
    proxy: CuttingProxy | None
    cid: str = field(default_factory=lambda: f"f{next(_ids)}-{uuid.uuid4().hex[:6]}")
    pushed: list[str] = field(default_factory=list[str])
    injected: list[tuple[str, Fault]] = field(default_factory=list[tuple[str, Fault]])
    prepared: int = 0
    fired: list[float] = field(default_factory=list[float])
    serial: Iterator[int] = field(default_factory=itertools.count)

    def manager(self, store: Store) -> ContextManager:
        m = ContextManager(
            store=store,
            conversation_id=self.cid,
            token_limit=400,
            tokenizer=FakeTokenizer(),
            policy=CompactionPolicy(min_saving=0),
        )

        def squeeze(ctx: ThresholdContext) -> None:
            self.fired.append(ctx.threshold)
            ctx.compress_tool_results(1, 8)

        m.on_threshold(60)(squeeze)
        return m

    def messages(self, kind: str, worker: int, size: int) -> list[Message]:
        n = next(self.serial)
        tag = f"w{worker}m{n}"
        words = " ".join(f"{tag}x{i}" for i in range(size))
        if kind == "user":
            return [Message.user(words, id=tag)]
        if kind == "text":
            return [Message.assistant(words, id=tag)]
        call = ToolCall(f"call{tag}", "read", f'{{"path": "{tag}.txt"}}')
        return [
            Message.assistant(tool_calls=[call], id=f"{tag}a"),
            Message.tool(call.id, words, id=f"{tag}r"),
        ]


def inner_store(run: Run, worker: int) -> RowStore:
    if worker == 0 and run.proxy is not None:
        return open_store(_through(run.backend.url, run.proxy.port))
    return run.backend.open()


def _through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.replace(f"{parts.hostname}:{parts.port}", f"127.0.0.1:{port}")
    return parts._replace(netloc=netloc).geturl()


def play(run: Run, session: Session) -> None:
    inner = [inner_store(run, w) for w in (0, 1)]
    faulty = [FaultyStore(inner[w], Plan(session.faults[w])) for w in (0, 1)]
    try:
        workers = [retried(functools.partial(run.manager, f)) for f in faulty]
        for kind, w, size in session.ops:
            m = workers[w]
            if kind == "cut":  # the first worker's next append cut on the wire
                batch = run.messages("user", 0, size)
                if run.proxy is not None:
                    run.proxy.arm(batch[0].id.encode())
                run.pushed += [x.id for x in batch]
                retried(functools.partial(workers[0].push_many, batch))
                continue
            if kind == "prepare":
                p = retried(m.prepare)
                assert problems(p.conversation, "openai") == ()
                assert p.tokens <= 400
                run.prepared += 1
                continue
            batch = run.messages(kind, w, size)
            run.pushed += [x.id for x in batch]
            retried(functools.partial(m.push_many, batch))
        check(run, workers)
    finally:
        run.injected += faulty[0].injected + faulty[1].injected
        if run.proxy is not None:
            run.proxy.arm(b"\0never")  # disarm what no append consumed
        for s in inner:
            s.close()


def check(run: Run, workers: list[ContextManager]) -> None:
    reader = run.backend.open()
    log = [m.id for m in reader.load(run.cid).messages]
    assert len(log) == len(set(log)), f"a message twice in the log: {log}"
    assert sorted(log) == sorted(run.pushed), "the log lost or gained messages"
    for m in workers:
        history = [x.id for x in m.history]
        assert history == log[: len(history)], "a history out of the log's order"
    resumed = run.manager(reader)
    assert [x.id for x in resumed.history] == log
    p = resumed.prepare()
    assert problems(p.conversation, "openai") == ()


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def faulty_run(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[Session], Run]]:
    """Plays sessions on one backend (fresh storage, a proxy where it cuts)."""
    backend = make_backend(request.param, request, tmp_path)
    proxy = None
    if request.param in CUT:
        target = urlsplit(backend.url)
        assert target.hostname is not None
        assert target.port is not None
        proxy = CuttingProxy(target.hostname, target.port)

    def run(session: Session) -> Run:
        r = Run(backend, proxy)
        play(r, session)
        return r

    run.examples = EXAMPLES[request.param]  # type: ignore[attr-defined]  # read by the test
    yield run
    if proxy is not None:
        proxy.close()
    backend.close_all()


def test_every_message_once_in_one_order(
    faulty_run: Callable[[Session], Run],
) -> None:
    """Whatever fails and is retried: once each, one order, valid requests."""
    examples: int = faulty_run.examples  # type: ignore[attr-defined]  # set by the fixture
    seen: set[tuple[str, Fault]] = set()
    runs: list[Run] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @example(EVERY_FAULT)
    @given(SESSIONS)
    def sessions(session: Session) -> None:
        run = faulty_run(session)
        seen.update(run.injected)
        runs.append(run)

    sessions()
    # The sessions met every fault at the call sites that matter.
    assert {("append", fault) for fault in FAULTS} <= seen
    assert {call for call, _ in seen} >= {"load", "info", "update_meta"}
    if runs[0].proxy is not None:
        assert runs[0].proxy.cuts > 0
    assert sum(r.prepared for r in runs) > 0
