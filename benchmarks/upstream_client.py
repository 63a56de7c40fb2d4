"""The proxy's upstream client against httpx (and, given, another client module).

Usage::

    python benchmarks/upstream_client.py [--n 300] [--kb 33] [--other PATH]

The recording upstream of the proxy's tests (``tests/proxy/_upstream.py``,
answering at once) runs as a subprocess; one request (a Chat Completions
conversation of about ``--kb`` KB) is sent to it over and over by each
client in turn (interleaved: call ``i`` of every client before call
``i + 1`` of any, so all meet the same load), on one event loop (uvloop
where installed, as the proxy runs). Per call: the wall time from sending
to the body's end and this process's CPU time over it; the medians of
``--n`` calls each, and the ratio against the proxy's client in the same
run. ``--other PATH`` adds a module file with the same interface as
``contextwindow.proxy._http`` (an earlier version of it, e.g. ``git show
269ee46:src/contextwindow/proxy/_http.py > /tmp/hand_http.py``: the
proxy's hand-written HTTP/1.1 client before aiohttp).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from _data import ROOT

sys.path.insert(0, str(ROOT))  # the recording upstream of the proxy's tests
from tests.proxy._upstream import free_port, openai_turn, recorder_command

from contextwindow.proxy import _http

Call = Callable[[], Awaitable[int]]


def body(kb: int) -> bytes:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "A coding agent."}]
    i = 0
    while len(json.dumps(msgs)) < kb * 1000:
        code = f"def f{i}(x):\n    return x + {i}\n" * 20
        msgs += openai_turn(i, f"# f{i}.py\n{code}", f"step {i}: read the next file")
        i += 1
    return json.dumps({"model": "gpt-4o", "messages": msgs}).encode()


def module_call(mod: Any, url: str, payload: bytes) -> tuple[Call, Any]:
    client = mod.Client(connect_timeout=10, read_timeout=60)
    headers = [(b"content-type", b"application/json"), (b"authorization", b"Bearer x")]

    async def call() -> int:
        return await _drained(await client.send("POST", url, headers, payload))

    return call, client.aclose


def httpx_call(url: str, payload: bytes) -> tuple[Call, Any]:
    client = httpx.AsyncClient(trust_env=False, timeout=60)
    headers = [(b"content-type", b"application/json"), (b"authorization", b"Bearer x")]

    async def call() -> int:
        req = client.build_request("POST", url, headers=headers, content=payload)
        return await _drained(await client.send(req, stream=True))

    return call, client.aclose


async def _drained(resp: Any) -> int:
    """Read an answer's body to its end, close it; the bytes read."""
    n = 0
    async for chunk in resp.aiter_raw():
        n += len(chunk)
    await resp.aclose()
    return n


async def measure(
    url: str, payload: bytes, n: int, other: Path | None
) -> dict[str, tuple[list[float], list[float]]]:
    calls: dict[str, tuple[Call, Any]] = {
        "proxy's client (aiohttp)": module_call(_http, url, payload),
        "httpx": httpx_call(url, payload),
    }
    if other is not None:
        spec = importlib.util.spec_from_file_location("other_http", other)
        assert spec is not None
        assert spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        calls[f"{other.name}"] = module_call(mod, url, payload)
    got: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in calls}
    try:
        for _ in range(20):  # warm up: connections open, code paths hot
            for call, _close in calls.values():
                await call()
        for _ in range(n):
            for name, (call, _close) in calls.items():
                wall, cpu = time.perf_counter(), time.process_time()
                size = await call()
                got[name][1].append(time.process_time() - cpu)
                got[name][0].append(time.perf_counter() - wall)
                assert size > 0
    finally:
        for _call, close in calls.values():
            await close()
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--kb", type=int, default=33)
    ap.add_argument("--other", type=Path, default=None)
    args = ap.parse_args()
    port = free_port()
    up = subprocess.Popen(recorder_command(port, str(ROOT), str(ROOT / "src")))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(base, timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("the upstream did not start") from None
                time.sleep(0.2)
        payload = body(args.kb)
        try:
            import uvloop

            run: Any = uvloop.run
        except ImportError:
            run = asyncio.run
        got = run(measure(base + "/v1/chat/completions", payload, args.n, args.other))
    finally:
        up.terminate()
        up.wait(10)
    print(
        f"{len(payload) / 1000:.1f} KB request, {args.n} calls per client, "
        "interleaved; medians (ms); ratio against the proxy's client"
    )
    print(f"{'client':<28}{'wall':>8}{'CPU':>8}{'wall x':>9}{'CPU x':>8}")
    ref_wall, ref_cpu = (statistics.median(x) for x in next(iter(got.values())))
    for name, (walls, cpus) in got.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(
            f"{name:<28}{wall * 1000:>8.2f}{cpu * 1000:>8.2f}"
            f"{wall / ref_wall:>9.2f}{cpu / ref_cpu:>8.2f}"
        )


if __name__ == "__main__":
    main()
