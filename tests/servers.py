"""Real PostgreSQL and Redis servers, one of each per test session.

Started on loopback from the binaries ``scripts/install_servers.sh`` installs
(``contextwindow.store.servers``), in throwaway folders, and stopped at the
end. ``tests/conftest.py`` makes the fixtures visible to every test; each
test takes fresh storage on them (a schema, a key prefix: see
``tests/store/conftest.py``). Without the binaries the tests skip, and under
CI (``CI=true``) they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NoReturn

import pytest

from contextwindow.store.servers import (
    local_postgres,
    local_redis,
    postgres_bin,
    redis_bin,
)


def unavailable(what: str) -> NoReturn:
    """Skip, or fail under CI, naming the server to install."""
    msg = f"{what} not found; scripts/install_servers.sh installs it"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a throwaway PostgreSQL server's ``postgres`` database."""
    if postgres_bin() is None:
        unavailable("PostgreSQL (initdb, pg_ctl)")
    with local_postgres(fast=True) as url:
        yield url


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a throwaway Redis server."""
    if redis_bin() is None:
        unavailable("redis-server")
    with local_redis() as url:
        yield url
