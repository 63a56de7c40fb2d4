"""End to end: the OpenAI SDK, streamed, through the proxy to a llama.cpp server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import openai
from tests.llama import LlamaServer
from tests.proxy._upstream import running

from contextwindow.proxy import FitterConfig, ProxyConfig, create_app

WINDOW = 300


def test_streamed_chat_through_the_proxy(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    config = ProxyConfig(
        upstream_openai=llama_server.base_url,
        store=f"sqlite:///{tmp_path / 'p.db'}",
        fitting=FitterConfig(windows={llama_server.model: WINDOW}),
    )
    history = [{"role": "system", "content": "You answer in one short sentence."}]
    for i in range(10):  # about 800 tokens: over twice the window
        history += [
            {"role": "user", "content": f"Note {i}: " + "the sky is blue. " * 12},
            {"role": "assistant", "content": "Noted."},
        ]
    history.append({"role": "user", "content": "What colour is the sky?"})
    with running(create_app(config)) as proxy:
        client: Any = openai.OpenAI(
            base_url=proxy + "/v1",
            max_retries=0,
            api_key=os.environ[llama_server.key_env],
        )
        raw = client.chat.completions.with_raw_response.create(
            model=llama_server.model,
            messages=history,
            max_tokens=8,
            temperature=0,
            stream=True,
        )
        chunks = list(raw.parse())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert len(chunks) > 2  # streamed, token by token
    tokens_in = int(raw.headers["x-contextwindow-tokens-in"])
    forwarded = int(raw.headers["x-contextwindow-tokens-forwarded"])
    assert forwarded <= WINDOW - 8 < tokens_in
    assert raw.headers["x-contextwindow-conversation"].startswith("proxy-")
