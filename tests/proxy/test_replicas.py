"""Two proxy replicas on one store, 16 clients alternating between them."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.proxy._upstream import Recorder, anthropic_turn, running
from tests.proxy.conftest import make_backend
from tests.proxy.test_sdks import KEY, _check

from contextwindow.formats._coerce import coerce_messages
from contextwindow.proxy import FitterConfig, ProxyConfig, create_app
from contextwindow.proxy._fitter import _derived_id
from contextwindow.proxy._shapes import APIS
from contextwindow.store import open_store

CLIENTS = 16
TURNS = 8
MODEL = "claude-sonnet-4-6"


def _client(k: int, replicas: list[str]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    if k % 2 == 0:
        headers["x-conversation-id"] = f"client-{k}"
    with httpx.Client(timeout=30) as http:
        for i in range(TURNS):
            history += anthropic_turn(i, 300, f"client {k} ")
            body = {"model": MODEL, "max_tokens": 500, "messages": history}
            r = http.post(
                replicas[i % 2] + "/v1/messages",
                headers=headers,
                content=json.dumps(body).encode(),
            )
            assert r.status_code == 200, r.text
            history.append({"role": "assistant", "content": f"read {i}"})
    return history


@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_two_replicas_one_store(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    backend = make_backend(kind, request, tmp_path)
    rec = Recorder()
    with running(rec.app) as up:
        config = ProxyConfig(
            upstream_openai=up,
            upstream_anthropic=up,
            store=backend.url,
            fitting=FitterConfig(window=3_000),
        )
        with (
            running(create_app(config)) as a,
            running(create_app(config)) as b,
            ThreadPoolExecutor(CLIENTS) as pool,
        ):
            histories = list(pool.map(lambda k: _client(k, [a, b]), range(CLIENTS)))
    assert len(rec.seen) == CLIENTS * TURNS
    for seen in rec.seen:
        body = seen.json
        assert _check("anthropic", {"messages": body["messages"]}, None, MODEL) <= 2_500
    store = open_store(backend.url)
    try:
        api = APIS["/v1/messages"]
        for k, history in enumerate(histories):
            sent = coerce_messages(history[:-1], provider="anthropic").messages
            cid = f"client-{k}" if k % 2 == 0 else _derived_id(api, MODEL, sent)
            logged = store.load(cid).messages
            # Every message the client sent, once, in order (the last reply
            # was never sent back).
            assert logged == tuple(sent)
            # ... and more than the window holds: the proxy had to fit it.
            assert _check("anthropic", history[:-1], None, MODEL) > 2_500
    finally:
        store.close()
