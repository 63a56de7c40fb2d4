"""The proxy's added latency; the Claude Code replay through it and headroom-ai.

Usage::

    python benchmarks/proxy_latency.py [--n 200] [--skip-latency] [--skip-replay]
        [--sessions 5] [--headroom /work/venv-headroom]

Latency: a fast upstream (a bare ASGI app answering a fixed chat completion)
and ``contextwindow proxy`` run as subprocesses; the client sends the same
requests to each, at 1 and at 32 concurrent clients, and the added latency is
the proxy's p50 / p99 less the direct p50 / p99 (median against median).
Two requests: one that fits (a 20-message conversation, forwarded byte for
byte), and turns 46 to 50 of conversations with a 6,000-token window that
passed it around turn 20 (each fitted from the conversation's compacted
view; turns 1 to 45 are sent untimed first).

Replay: the five Claude Code main sessions, each turn the history so far as
an Anthropic request (``max_tokens`` 8,192), with a 64,000-token window,
through our proxy and, when ``--headroom`` names a virtual environment
holding headroom-ai, through ``headroom proxy`` (started offline, at its
defaults: it takes no budget), both before the same recording upstream. Per
proxy: tokens forwarded, requests within the window, requests a provider
would reject (``problems``), and the median added latency against sending the
same request to the upstream directly. The venv is found at ``--headroom``,
else ``$HEADROOM_VENV``, else ``/work/venv-headroom``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from _data import ROOT, data_dir

from contextwindow import TokenCounter, problems, read_transcripts
from contextwindow.formats._coerce import coerce_messages
from contextwindow.formats.anthropic import to_anthropic
from contextwindow.models import get_tokenizer

REPLY = json.dumps(
    {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
).encode()
ANTHROPIC_REPLY = json.dumps(
    {
        "id": "m1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
).encode()


class Upstream:
    """A bare ASGI upstream: answers at once, keeps the last body (for the replay)."""

    def __init__(self) -> None:
        self.last: bytes = b""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                await send({"type": msg["type"] + ".complete"})
                if msg["type"] == "lifespan.shutdown":
                    return
        parts = []
        while True:
            msg = await receive()
            parts.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        self.last = b"".join(parts)
        body = (
            ANTHROPIC_REPLY
            if "messages" in scope["path"] and "chat" not in scope["path"]
            else REPLY
        )
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(url: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer in {seconds:.0f} s")


@contextmanager
def in_thread(app: Any) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
    )
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(10)


@contextmanager
def process(
    args: list[str], url: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the process
    proc = subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, env=os.environ | (env or {})
    )
    try:
        wait_for(url + "/healthz" if "contextwindow" in " ".join(args) else url)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def our_proxy(upstream: str, store: Path, window: int) -> Any:
    port = free_port()
    args = [
        sys.executable,
        "-m",
        "contextwindow",
        "proxy",
        "--port",
        str(port),
        "--upstream-openai",
        upstream,
        "--upstream-anthropic",
        upstream,
        "--store",
        f"sqlite:///{store}",
        "--window",
        str(window),
        "--max-concurrency",
        "256",
    ]
    env = {"PYTHONPATH": str(ROOT / "src")}
    return process(args, f"http://127.0.0.1:{port}", env)


# -- latency -----------------------------------------------------------------------


def chat(turns: int, result_words: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."}
    ]
    for i in range(turns):
        msgs += [
            {"role": "user", "content": f"step {i}: read the next file"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"f{i}.py"}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"# f{i}.py\n"
                + f"def f{i}(x):\n    return x + {i}\n" * result_words,
            },
            {"role": "assistant", "content": f"f{i}.py adds {i}."},
        ]
    return msgs


async def timed(
    client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str]
) -> float:
    t = time.perf_counter()
    r = await client.post(url, content=body, headers=headers)
    took = time.perf_counter() - t
    assert r.status_code == 200, r.text[:300]
    return took


async def run_clients(
    url: str, jobs: list[list[tuple[bytes, dict[str, str], bool]]], concurrency: int
) -> list[float]:
    """Each job is one client's sequence of (body, headers, timed?) requests."""
    times: list[float] = []
    limits = httpx.Limits(max_connections=concurrency + 8)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        queue = list(jobs)

        async def worker() -> None:
            while queue:
                job = queue.pop()
                for body, headers, keep in job:
                    took = await timed(client, url, body, headers)
                    if keep:
                        times.append(took)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return times


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def latency(n: int) -> None:
    print(
        "added latency (ms): proxy p50/p99 less direct p50/p99, same requests, same run"
    )
    port = free_port()
    up_args = [
        sys.executable,
        "-c",
        "import sys; sys.path.insert(0, sys.argv[2]); import uvicorn, proxy_latency; "
        "uvicorn.run(proxy_latency.Upstream(), host='127.0.0.1', "
        "port=int(sys.argv[1]), "
        "log_level='warning', access_log=False)",
        str(port),
        str(ROOT / "benchmarks"),
    ]
    up = f"http://127.0.0.1:{port}"
    ctype = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    small = json.dumps(
        {"model": "gpt-4o", "max_tokens": 500, "messages": chat(5, 3)}
    ).encode()
    with (
        tempfile.TemporaryDirectory() as tmp,
        process(up_args, up),
        our_proxy(up, Path(tmp) / "p.db", 6_000) as proxy,
    ):
        print(
            f"{'request':<34}{'clients':>8}{'direct p50':>11}{'p99':>7}"
            f"{'proxy p50':>11}{'p99':>7}{'added p50':>11}{'p99':>7}"
        )
        for concurrency in (1, 32):
            jobs_fit = [[(small, ctype, True)] for _ in range(n)]
            row(
                "fits (20 messages, ~600 tokens)",
                concurrency,
                up,
                proxy,
                jobs_fit,
                jobs_fit,
            )
            convs = max(concurrency, n // 5)
            turns = 50

            def conv_jobs(
                prefix: str,
                with_header: bool,
                convs: int = convs,
                concurrency: int = concurrency,
                turns: int = turns,
            ) -> list[list[tuple[bytes, dict[str, str], bool]]]:
                jobs = []
                for k in range(convs):
                    seq = []
                    h = ctype | (
                        {"x-conversation-id": f"{prefix}{concurrency}-{k}"}
                        if with_header
                        else {}
                    )
                    for t in range(1, turns + 1):
                        msgs = chat(t, 40)[:-1]
                        msgs[1] = {
                            "role": "user",
                            "content": f"conversation {k}: step 0",
                        }
                        body = json.dumps(
                            {"model": "gpt-4o", "max_tokens": 500, "messages": msgs}
                        ).encode()
                        seq.append((body, h, t > turns - 5))
                    jobs.append(seq)
                return jobs

            row(
                "turns 46-50, fitted (6k window)",
                concurrency,
                up,
                proxy,
                conv_jobs("d", False),
                conv_jobs("p", True),
            )


def row(
    name: str, concurrency: int, up: str, proxy: str, direct_jobs: Any, proxy_jobs: Any
) -> None:
    path = "/v1/chat/completions"
    direct = asyncio.run(run_clients(up + path, direct_jobs, concurrency))
    ours = asyncio.run(run_clients(proxy + path, proxy_jobs, concurrency))
    d50, d99, p50, p99 = (
        1000 * x
        for x in (pct(direct, 0.5), pct(direct, 0.99), pct(ours, 0.5), pct(ours, 0.99))
    )
    print(
        f"{name:<34}{concurrency:>8}{d50:>11.2f}{d99:>7.1f}{p50:>11.2f}{p99:>7.1f}"
        f"{p50 - d50:>11.2f}{p99 - d99:>7.1f}"
    )


# -- replay --------------------------------------------------------------------------

WINDOW = 64_000
MAX_TOKENS = 8_192


def replay(sessions: int, headroom: Path | None) -> None:
    root = data_dir() / "claude_code_sessions"
    paths = sorted(root.glob("*.jsonl"))[:sessions]
    transcripts = [read_transcripts(p)[0] for p in paths]
    rec = Upstream()
    with in_thread(rec) as up, tempfile.TemporaryDirectory() as tmp:
        peers: list[tuple[str, Any]] = [
            ("contextwindow", our_proxy(up, Path(tmp) / "p.db", WINDOW))
        ]
        if headroom is not None:
            port = free_port()
            args = [
                str(headroom / "bin" / "headroom"),
                "proxy",
                "--port",
                str(port),
                "--anthropic-api-url",
                up,
                "--openai-api-url",
                up,
                "--no-cache",
                "--no-rate-limit",
                "--http2" if False else "--no-http2",
            ]
            env = {"HEADROOM_OFFLINE": "1", "HEADROOM_TELEMETRY": "off"}
            peers.append(
                ("headroom-ai", process(args, f"http://127.0.0.1:{port}/health", env))
            )
        print(
            f"\nClaude Code replay: {len(transcripts)} sessions, window {WINDOW:,}, "
            f"max_tokens {MAX_TOKENS:,}"
        )
        print(
            f"{'proxy':<15}{'requests':>9}{'tokens in':>13}{'forwarded':>13}"
            f"{'in window':>10}{'invalid':>8}{'prefix':>8}"
            f"{'added p50 ms':>13}{'p99':>8}"
        )
        only = os.environ.get("PROXY_BENCH_ONLY")
        for name, ctx in peers:
            if only and name != only:
                continue
            try:
                with ctx as url:
                    base = url.removesuffix("/health")
                    stats = replay_one(transcripts, base, up, rec)
            except (SystemExit, httpx.HTTPError, AssertionError) as exc:
                print(f"{name:<15} failed: {exc}")
                continue
            n, tin, fwd, inside, invalid, prefix, added = stats
            print(
                f"{name:<15}{n:>9}{tin:>13,}{fwd:>13,}{inside:>10}{invalid:>8}"
                f"{prefix / fwd:>8.0%}{statistics.median(added):>13.2f}"
                f"{pct(added, 0.99):>8.1f}"
            )


def replay_one(
    transcripts: list[Any], proxy: str, up: str, rec: Upstream
) -> tuple[Any, ...]:
    n = tin = fwd = inside = invalid = prefix = 0
    added: list[float] = []
    headers = {
        "x-api-key": "sk-ant-bench",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    with httpx.Client(timeout=300) as http:
        for t in transcripts:
            counter = TokenCounter(get_tokenizer(t.model), "anthropic")
            msgs = t.messages
            previous: list[str] = []
            for j, m in enumerate(msgs):
                if m.role != "assistant" or not j:
                    continue
                body = json.dumps(
                    {
                        "model": t.model,
                        "max_tokens": MAX_TOKENS,
                        **to_anthropic(msgs[:j]).body(),
                    }
                ).encode()
                t0 = time.perf_counter()
                r = http.post(up + "/v1/messages", content=body, headers=headers)
                direct = time.perf_counter() - t0
                t0 = time.perf_counter()
                r = http.post(proxy + "/v1/messages", content=body, headers=headers)
                through = time.perf_counter() - t0
                assert r.status_code == 200, r.text[:300]
                added.append(1000 * (through - direct))
                sent = json.loads(rec.last)
                read = coerce_messages(
                    {k: sent[k] for k in ("system", "messages") if k in sent},
                    provider="anthropic",
                )
                tokens = counter.messages(read.messages)
                n += 1
                tin += counter.messages(msgs[:j])
                fwd += tokens
                inside += tokens <= WINDOW - MAX_TOKENS
                invalid += bool(problems(read.messages, "anthropic"))
                now = [json.dumps(x, sort_keys=True) for x in sent["messages"]]
                same = 0
                for a, b in zip(previous, now, strict=False):
                    if a != b:
                        break
                    same += 1
                if same:
                    kept = coerce_messages(
                        sent["messages"][:same], provider="anthropic"
                    )
                    prefix += counter.messages(kept.messages)
                previous = now
    return n, tin, fwd, inside, invalid, prefix, added


def main() -> None:
    argv = sys.argv[1:]
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 200
    sessions = int(argv[argv.index("--sessions") + 1]) if "--sessions" in argv else 5
    venv = (
        Path(argv[argv.index("--headroom") + 1])
        if "--headroom" in argv
        else Path(os.environ.get("HEADROOM_VENV", "/work/venv-headroom"))
    )
    if "--skip-latency" not in argv:
        latency(n)
    if "--skip-replay" not in argv:
        replay(sessions, venv if (venv / "bin" / "headroom").exists() else None)


if __name__ == "__main__":
    main()
