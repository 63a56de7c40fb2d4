"""The Claude Code sessions replayed through the proxy with a 64,000-token window.

Each turn is the history so far, as Claude Code sends it (an Anthropic
Messages request with ``max_tokens``), over HTTP to a proxy before a
recording upstream. Every forwarded request fits and passes ``problems``; the
share of forwarded tokens repeating the previous request's leading messages
byte for byte is printed (``benchmarks/proxy_latency.py --replay`` replays
every turn; here each session's first ``TURNS`` requests, enough to pass the
window several times over).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from tests.conftest import data_dir
from tests.proxy._upstream import Recorder, repeated_prefix, running

from contextwindow import TokenCounter, problems, read_transcripts
from contextwindow.formats._coerce import coerce_messages
from contextwindow.formats.anthropic import to_anthropic
from contextwindow.models import get_tokenizer
from contextwindow.proxy import FitterConfig, ProxyConfig, create_app

WINDOW = 64_000
MAX_TOKENS = 8_192
TURNS = 30


def test_claude_code_sessions_fit(tmp_path: Path) -> None:
    root = data_dir() / "claude_code_sessions"
    rec = Recorder()
    over = forwarded = prefix = rewritten = 0
    with running(rec.app) as up:
        config = ProxyConfig(
            upstream_anthropic=up,
            upstream_openai=up,
            store=f"sqlite:///{tmp_path / 'p.db'}",
            fitting=FitterConfig(window=WINDOW),
        )
        with running(create_app(config)) as proxy, httpx.Client(timeout=60) as http:
            for path in sorted(root.glob("*.jsonl")):
                (t,) = read_transcripts(path)
                counter = TokenCounter(get_tokenizer(t.model), "anthropic")
                msgs = t.messages
                turns = [j for j, m in enumerate(msgs) if m.role == "assistant" and j][
                    :TURNS
                ]
                previous: list[str] = []
                for j in turns:
                    body = {
                        "model": t.model,
                        "max_tokens": MAX_TOKENS,
                        **to_anthropic(msgs[:j]).body(),
                    }
                    r = http.post(
                        proxy + "/v1/messages",
                        content=json.dumps(body).encode(),
                        headers={
                            "x-api-key": "sk-ant-test",
                            "content-type": "application/json",
                        },
                    )
                    assert r.status_code == 200, r.text
                    sent = rec.seen[-1].json
                    read = coerce_messages(
                        {k: sent[k] for k in ("system", "messages") if k in sent},
                        provider="anthropic",
                    )
                    assert problems(read.messages, "anthropic") == ()
                    tokens = counter.messages(read.messages)
                    assert tokens <= WINDOW - MAX_TOKENS
                    assert int(r.headers["x-contextwindow-tokens-forwarded"]) == tokens
                    over += (
                        int(r.headers["x-contextwindow-tokens-in"])
                        > WINDOW - MAX_TOKENS
                    )
                    rewritten += sent != body
                    # Leading messages byte-identical to the previous request's.
                    same, previous = repeated_prefix(
                        previous, sent["messages"], counter
                    )
                    prefix += same
                    forwarded += tokens
    share = prefix / forwarded
    print(
        f"\nreplay: {over} requests over the window fitted; "
        f"{prefix:,} of {forwarded:,} "
        f"forwarded tokens ({share:.0%}) repeat the previous request's prefix"
    )
    assert over >= 5  # the window was passed, in every session but perhaps one
    assert share > 0.5
