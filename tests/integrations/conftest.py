"""Real PostgreSQL and Redis servers for the adapters that keep conversations."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from contextwindow.store.servers import (
    local_postgres,
    local_redis,
    postgres_bin,
    redis_bin,
)


def _unavailable(what: str) -> None:
    msg = f"{what} not found; scripts/install_servers.sh installs it"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a throwaway PostgreSQL server's ``postgres`` database."""
    if postgres_bin() is None:
        _unavailable("PostgreSQL (initdb, pg_ctl)")
    with local_postgres(fast=True) as url:
        yield url


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a throwaway Redis server."""
    if redis_bin() is None:
        _unavailable("redis-server")
    with local_redis() as url:
        yield url
