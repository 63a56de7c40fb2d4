"""Pools of generated values, and running one invariant over a whole pool.

Why pools: drawing one conversation from ``contextwindow.testing.conversations()``
costs about 17 ms of hypothesis draws on the 2-core CI machine (17 s per
1,000), so 1,000 conversations for each of some sixty checks, one ``@given``
each, would take a quarter of an hour. Instead hypothesis draws each pool once
per session (``conftest.py``): ``convs``, as many distinct conversations as
the profile's ``max_examples`` (1,000 under ``CI``, 200 otherwise; a large
pool is drawn in two processes at once), and
``loose_messages``, an eighth as many ``messages_strategy()`` messages that
the partition test strings into as many random lists. Every invariant is a
test of its own that checks every value of its pool; the slow variants (exact
BPE counts) and the checks beyond the core invariants use ``some_convs``,
every fourth conversation. Choices a check makes on top of a value (which
message to drop, how to corrupt a dict) come from a ``random.Random`` seeded
with the value's position, so a run is repeatable for a given pool; under
``CI`` (hypothesis derandomizes there) the pools themselves are the same on
every run.

There is no shrinking: pools are sorted smallest first and a check stops at
its first failure, so the value reported is the smallest failing one in the
pool, printed in the wire form (``contextwindow.wire.from_dicts`` reads it).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from collections.abc import Callable, Container, Hashable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, seed, settings
from hypothesis.strategies import SearchStrategy

from contextwindow.messages import Message
from contextwindow.testing import conversations
from contextwindow.wire import from_dicts, to_dicts

T = TypeVar("T")

MAX_SHOWN = 6000
"""Characters of a failing value shown in the assertion message."""


def pool_size() -> int:
    """How many values a pool holds: the loaded profile's ``max_examples``."""
    n: int = settings().max_examples
    return n


def collect(
    strategy: SearchStrategy[T],
    n: int,
    key: Callable[[T], Hashable],
    *,
    salt: int = 0,
    skip: Container[Hashable] = (),
) -> list[T]:
    """Draw ``n`` values with distinct ``key`` from ``strategy`` (a few rounds at most).

    Hypothesis runs a collecting "test" that never fails; each round asks for
    the values still missing (later rounds ask for more: hypothesis starts each
    run with the simplest values, already found). Under a derandomized profile
    (hypothesis's CI default) each round, and each ``salt``, gets its own fixed
    seed, so the pool is the same on every run. Values whose key is in ``skip``
    do not count. Health checks are off: this generates, it tests nothing.
    """
    found: dict[Hashable, T] = {}
    for round_ in range(5):
        missing = n - len(found)
        if missing <= 0:
            break

        @settings(
            max_examples=missing if round_ == 0 else max(2 * missing, 50),
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def draw(value: T) -> None:
            k = key(value)
            if k not in skip:
                found.setdefault(k, value)

        if (salt or round_) and settings().derandomize:  # else: replays round 0
            draw = seed(100 * salt + round_)(draw)
        draw()
    return list(found.values())[:n]


def conversation_texts(salt: int, n: int) -> list[str]:
    """``n`` distinct conversations in the wire form, as JSON text: one share
    of the pool, drawn in a worker process (texts cross process boundaries)."""
    return [dump(c) for c in collect(conversations(), n, dump, salt=salt)]


def more_texts(n: int, seen: list[str]) -> list[str]:
    """``n`` more conversations as JSON text, none of ``seen`` (a worker's top-up)."""
    more = collect(conversations(), n, dump, salt=3, skip=set(seen))
    return [dump(c) for c in more]


def conversation_pool(n: int) -> list[list[Message]]:
    """``n`` distinct conversations from ``conversations()``, smallest first.

    A large pool is drawn in two processes at once (the CI machine has two
    cores), then topped up in one of them if the shares overlap: all of it in
    fresh processes, so it is the same whatever ran in this one before.
    """
    if n < 1000 or (os.cpu_count() or 1) < 2:
        texts = conversation_texts(0, n)
    else:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(2, mp_context=spawn) as workers:
            shares = workers.map(conversation_texts, (1, 2), (n - n // 2, n // 2))
            texts = list(dict.fromkeys(t for share in shares for t in share))
            if len(texts) < n:
                # Topped up in a worker too: hypothesis's draws in this process
                # depend on what ran in it before (the package's doctests), and
                # the pool must be the same whatever the tests run with it.
                texts += workers.submit(more_texts, n - len(texts), texts).result()
    pool = [from_dicts(json.loads(t)) for t in texts[:n]]
    return sorted(pool, key=len)  # stable: hypothesis draws small ones first


def dump(value: object) -> str:
    """A failing value as text: messages in the wire form, anything else as JSON."""
    if isinstance(value, Message):
        value = to_dicts([value])[0]
    elif isinstance(value, (list, tuple)) and all(
        isinstance(m, Message) for m in value
    ):
        value = to_dicts(value)
    return json.dumps(value, ensure_ascii=False, default=repr)


def for_each(values: Sequence[T], check: Callable[[T, random.Random], Any]) -> int:
    """Run ``check(value, rng)`` on every value; fail naming the first failing one.

    Returns:
        How many values were checked.
    """
    for k, value in enumerate(values):
        try:
            check(value, random.Random(k))
        except Exception as exc:
            shown = dump(value)
            if len(shown) > MAX_SHOWN:
                shown = shown[:MAX_SHOWN] + " ..."
            raise AssertionError(
                f"fails on value {k} of {len(values)} (smallest first): {shown}"
            ) from exc
    return len(values)


def edited(
    seq: Sequence[T], rng: random.Random, put_in: Callable[[], T], span: int = 30
) -> list[T]:
    """``seq`` after one to four random edits of the kinds strategies make.

    A span (of up to ``span`` elements) dropped, a span replaced by one new
    element (``put_in()``: a run collapsed to a line), or one put in
    (appended, when at the end): what an incremental path must follow.
    """
    out = list(seq)
    for _ in range(rng.randrange(1, 5)):
        i = rng.randrange(len(out) + 1)
        j = min(len(out), i + rng.randrange(span))
        kind = rng.random()
        if kind < 0.4:
            del out[i:j]
        elif kind < 0.7:
            out[i:j] = [put_in()]
        else:
            out.insert(i, put_in())
    return out
