"""A recording upstream and a proxy in front of it, both real servers on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


@pytest.fixture
def rig(upstream: tuple[Recorder, str], tmp_path: Path) -> Iterator[Rig]:
    """The proxy (a 3,000-token window for every model) before the recorder."""
    rec, url = upstream
    rec.seen.clear()
    rec.status, rec.delay, rec.gate = 200, 0.0, None
    config = ProxyConfig(
        upstream_openai=url + "/v1",
        upstream_anthropic=url,
        fitting=FitterConfig(window=3_000),
        store=f"sqlite:///{tmp_path / 'proxy.db'}",
        read_timeout=2.0,
    )
    with running(create_app(config)) as proxy:
        yield Rig(proxy, rec, url)
