"""A recording upstream and a proxy in front of it, both real servers on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.proxy._upstream import Recorder, running

from contextwindow.proxy import FitterConfig, ProxyConfig, create_app


@dataclass
class Rig:
    url: str
    upstream: Recorder
    upstream_url: str


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Recorder, str]]:
    rec = Recorder()
    with running(rec.app) as url:
        yield rec, url


MakeRig = Callable[..., AbstractContextManager[Rig]]


@pytest.fixture
def make_rig(upstream: tuple[Recorder, str], tmp_path: Path) -> MakeRig:
    """A proxy before the recorder (a 3,000-token window for every model);
    keywords override ``ProxyConfig`` fields."""
    rec, url = upstream

    @contextmanager
    def make(**overrides: Any) -> Iterator[Rig]:
        rec.seen.clear()
        rec.status, rec.delay, rec.gate, rec.usage_input = 200, 0.0, None, 1
        fields: dict[str, Any] = {
            "upstream_openai": url + "/v1",
            "upstream_anthropic": url,
            "fitting": FitterConfig(window=3_000),
            "store": f"sqlite:///{tmp_path / 'proxy.db'}",
            "read_timeout": 1.0,
        }
        fields.update(overrides)
        with running(create_app(ProxyConfig(**fields))) as proxy:
            yield Rig(proxy, rec, url)

    return make


@pytest.fixture
def rig(make_rig: MakeRig) -> Iterator[Rig]:
    with make_rig() as r:
        yield r


# Fresh storage (a schema, a key prefix) per test on the session's servers.
from tests.store.conftest import make_backend  # noqa: E402

__all__ = ["MakeRig", "Rig", "make_backend"]
