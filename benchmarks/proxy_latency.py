"""The proxy's added latency; the Claude Code replay through it and headroom-ai.

Usage::

    python benchmarks/proxy_latency.py [--n 200] [--clients 1,32] [--skip-latency]
        [--skip-replay] [--sessions 5] [--headroom PATH] [--baseline SRC]

Latency: the recording upstream of the proxy's tests
(``tests/proxy/_upstream.py``, answering at once) and ``contextwindow proxy``
run as subprocesses; the client sends the same requests to each, at 1 and at
32 concurrent clients (``--clients`` names others), and the added latency is
the proxy's p50 / p99 less the direct p50 / p99 (median against median). At
one client each request goes direct, then through each proxy of the row in
turn, so that all meet the same load.
Two requests: one that fits (a 20-message conversation, forwarded byte for
byte; every client sends the same one, so it is one conversation), and
turns 46 to 50 of conversations (one per client) with a 6,000-token window
that passed it around turn 15 (each fitted from the conversation's
compacted view; turns 1 to 45 are sent untimed first). The conversations go
through a proxy on SQLite (its default, each append synced to disk, while
the upstream answers) and one on ``memory://``, to tell the disk's share
from the proxy's own; ``--baseline SRC`` adds a proxy run from another
source tree (``SRC`` holding ``contextwindow``: an older version) on SQLite.
The same turns go once more with ``TOOLS`` (eighteen tool schemas of a coding
agent's size) in every request, through proxies with a 40,000-token window
(``TOOLS_WINDOW``), which they pass at turn 43.

Replay: the five Claude Code main sessions, each turn the history so far as
an Anthropic request (``max_tokens`` 8,192), with a 64,000-token window,
through our proxy and headroom-ai's ``headroom proxy`` (offline, at its
defaults: it takes no budget), both before the same recording upstream, in
the same run: each request goes to the upstream directly, then through each
proxy in turn, so both meet the same load. Per proxy: tokens forwarded,
requests within the window, requests a provider would reject (``problems``),
the share of forwarded tokens repeating the previous request's prefix, and
the added latency against the direct call. ``--headroom`` names the
``headroom`` executable or the venv holding it; by default
``$HEADROOM_VENV``, ``/work/venv-headroom``, then ``headroom`` on ``PATH``.
headroom-ai starts slowly (15 s idle, minutes on a loaded machine): it is
started after the latency part (so as not to load it), with our proxy, and
the replay waits for both; when it is absent its row says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
from _data import ROOT, TOOLS, data_dir

sys.path.insert(0, str(ROOT))  # the recording upstream of the proxy's tests
from tests.proxy._upstream import (
    Recorder,
    free_port,
    openai_turn,
    recorder_command,
    repeated_prefix,
    running,
)

from contextwindow import TokenCounter, problems, read_transcripts
from contextwindow.formats._coerce import coerce_messages
from contextwindow.formats.anthropic import to_anthropic
from contextwindow.models import get_tokenizer


def wait_for(url: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not answer in {seconds:.0f} s")


PIDS: dict[str, int] = {}
"""The process serving each base URL."""


def cpu_seconds(url: str) -> float:
    """CPU time so far of the process serving ``url``, all its threads."""
    total = 0
    for task in Path(f"/proc/{PIDS[url]}/task").iterdir():
        with contextlib.suppress(OSError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


@contextmanager
def process(
    args: list[str], url: str, env: dict[str, str] | None = None
) -> Iterator[str]:
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the process
    proc = subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, env=os.environ | (env or {})
    )
    PIDS[url] = proc.pid
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


def our_proxy(upstream: str, store: str, window: int, src: Path | None = None) -> Any:
    """``contextwindow proxy`` in its own process (``src``: another source tree)."""
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
        store,
        "--window",
        str(window),
        "--max-concurrency",
        "256",
    ]
    env = {"PYTHONPATH": str(src or ROOT / "src")}
    return process(args, f"http://127.0.0.1:{port}", env)


# -- latency -----------------------------------------------------------------------


def chat(turns: int, result_words: int) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."}
    ]
    for i in range(turns):
        code = f"def f{i}(x):\n    return x + {i}\n" * result_words
        msgs += openai_turn(i, f"# f{i}.py\n{code}", f"step {i}: read the next file")
        msgs.append({"role": "assistant", "content": f"f{i}.py adds {i}."})
    return msgs


async def timed(
    client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str]
) -> float:
    """One request's seconds; sent once more if the connection broke (a
    keep-alive connection the server closed as it was reused: said at the end)."""
    for attempt in (1, 2):
        t = time.perf_counter()
        try:
            r = await client.post(url, content=body, headers=headers)
        except httpx.TransportError:
            if attempt == 2:
                raise
            RETRIED.append(url)
            continue
        took = time.perf_counter() - t
        assert r.status_code == 200, r.text[:300]
        return took
    raise AssertionError("unreachable")  # pragma: no cover -- the loop returns


RETRIED: list[str] = []
"""Requests sent again after a broken connection."""


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


async def interleaved(
    targets: list[tuple[str, list[list[tuple[bytes, dict[str, str], bool]]]]],
) -> tuple[list[list[float]], list[list[float]]]:
    """One client sending each step of each job to every target in turn; the
    seconds of each timed request, and the CPU seconds its server spent on it."""
    times: list[list[float]] = [[] for _ in targets]
    cpu: list[list[float]] = [[] for _ in targets]
    base = [url.rsplit("/v1/", 1)[0] for url, _ in targets]
    async with httpx.AsyncClient(timeout=60) as client:
        for k in range(len(targets[0][1])):
            for step in range(len(targets[0][1][k])):
                for i, (url, jobs) in enumerate(targets):
                    body, headers, keep = jobs[k][step]
                    before = cpu_seconds(base[i]) if keep else 0.0
                    took = await timed(client, url, body, headers)
                    if keep:
                        times[i].append(took)
                        cpu[i].append(cpu_seconds(base[i]) - before)
    return times, cpu


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def latency(
    n: int, baseline: Path | None = None, clients: tuple[int, ...] = (1, 32)
) -> None:
    print(
        "added latency (ms): proxy p50/p99 less direct p50/p99, same requests, same "
        "run;\nat 1 client also the CPU ms the proxy's process spent on a request "
        "(p50, all its threads),\nand the upstream's on a direct one"
    )
    port = free_port()
    up_args = recorder_command(port, str(ROOT), str(ROOT / "src"))
    up = f"http://127.0.0.1:{port}"
    ctype = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    small = json.dumps(
        {"model": "gpt-4o", "max_tokens": 500, "messages": chat(5, 3)}
    ).encode()
    with (
        tempfile.TemporaryDirectory() as tmp,
        process(up_args, up),
        our_proxy(up, f"sqlite:///{tmp}/p.db", 6_000) as on_disk,
        our_proxy(up, "memory://", 6_000) as in_memory,
        our_proxy(up, f"sqlite:///{tmp}/t.db", TOOLS_WINDOW) as with_tools,
        ExitStack() as stack,
    ):
        before = before_tools = None
        if baseline is not None:
            before = stack.enter_context(
                our_proxy(up, f"sqlite:///{tmp}/b.db", 6_000, baseline)
            )
            before_tools = stack.enter_context(
                our_proxy(up, f"sqlite:///{tmp}/bt.db", TOOLS_WINDOW, baseline)
            )
        print(
            f"{'request':<44}{'clients':>8}{'direct p50':>11}{'p99':>7}"
            f"{'proxy p50':>11}{'p99':>7}{'added p50':>11}{'p99':>7}"
            f"{'CPU p50':>9}{'up CPU':>9}"
        )
        for concurrency in clients:
            jobs_fit = [[(small, ctype, True)] for _ in range(n)]
            row(
                "fits (20 messages, ~600 tokens)",
                concurrency,
                up,
                [("", on_disk, jobs_fit)],
                jobs_fit,
            )
            convs = max(concurrency, n // 5)
            row(
                "turns 46-50, fitted (6k window)",
                concurrency,
                up,
                [
                    (", SQLite store", on_disk, conv_jobs("p", True, convs)),
                    (", memory store", in_memory, conv_jobs("m", True, convs)),
                    *(
                        [(", SQLite, --baseline", before, conv_jobs("b", True, convs))]
                        if before is not None
                        else []
                    ),
                ],
                conv_jobs("d", False, convs),
            )
            row(
                f"turns 46-50, {len(TOOLS)} tools, fitted (40k)",
                concurrency,
                up,
                [
                    (", SQLite", with_tools, conv_jobs("t", True, convs, TOOLS)),
                    *(
                        [
                            (
                                ", --baseline",
                                before_tools,
                                conv_jobs("bt", True, convs, TOOLS),
                            )
                        ]
                        if before_tools is not None
                        else []
                    ),
                ],
                conv_jobs("dt", False, convs, TOOLS),
            )


TOOLS_WINDOW = 40_000
"""The window of the conversations sent with ``TOOLS``: they pass it (less the
reply's 500 tokens) at turn 43."""


def conv_jobs(
    prefix: str,
    with_header: bool,
    convs: int,
    tools: list[dict[str, Any]] | None = None,
    turns: int = 50,
) -> list[list[tuple[bytes, dict[str, str], bool]]]:
    """``convs`` conversations of ``turns`` turns, the last five timed (each
    request with ``tools``, when given)."""
    ctype = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    jobs = []
    for k in range(convs):
        seq = []
        h = ctype | (
            {"x-conversation-id": f"{prefix}{convs}-{k}"} if with_header else {}
        )
        for t in range(1, turns + 1):
            msgs = chat(t, 40)[:-1]
            msgs[1] = {"role": "user", "content": f"conversation {k}: step 0"}
            doc: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 500}
            doc["messages"] = msgs
            if tools:
                doc["tools"] = tools
            body = json.dumps(doc).encode()
            seq.append((body, h, t > turns - 5))
        jobs.append(seq)
    return jobs


def row(
    name: str,
    concurrency: int,
    up: str,
    proxies: list[tuple[str, str, Any]],
    direct_jobs: Any,
) -> None:
    """The direct figures, then each proxy's ``(label, url, jobs)``, one line each."""
    path = "/v1/chat/completions"
    if concurrency == 1:
        # One client: each request goes direct, then through each proxy in
        # turn, so that all meet the same load (a loaded machine's swings
        # would otherwise land on one row and not the next).
        targets = [(up + path, direct_jobs)]
        targets += [(proxy + path, jobs) for _, proxy, jobs in proxies]
        times, cpu = asyncio.run(interleaved(targets))
        direct, mine = times[0], times[1:]
        cpus = [1000 * pct(c, 0.5) for c in cpu]
    else:
        direct = asyncio.run(run_clients(up + path, direct_jobs, concurrency))
        mine = [
            asyncio.run(run_clients(proxy + path, jobs, concurrency))
            for _, proxy, jobs in proxies
        ]
        cpus = []
    d50, d99 = 1000 * pct(direct, 0.5), 1000 * pct(direct, 0.99)
    for k, ((label, _, _), ours) in enumerate(zip(proxies, mine, strict=True)):
        p50, p99 = 1000 * pct(ours, 0.5), 1000 * pct(ours, 0.99)
        cpu = f"{cpus[k + 1]:>9.2f}{cpus[0]:>9.2f}" if cpus else ""
        print(
            f"{name + label:<44}{concurrency:>8}{d50:>11.2f}{d99:>7.1f}"
            f"{p50:>11.2f}{p99:>7.1f}{p50 - d50:>11.2f}{p99 - d99:>7.1f}{cpu}"
        )


# -- replay --------------------------------------------------------------------------

WINDOW = 64_000
MAX_TOKENS = 8_192


def headroom_exe(given: str | None) -> Path | None:
    """The ``headroom`` executable: ``given`` (it or its venv), else the defaults."""
    places: list[str | None] = [given] if given else []
    if not given:
        places += [os.environ.get("HEADROOM_VENV"), "/work/venv-headroom"]
        places.append(shutil.which("headroom"))
    for place in places:
        if not place:
            continue
        path = Path(place)
        exe = path / "bin" / "headroom" if path.is_dir() else path
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    return None


class Headroom:
    """``headroom proxy`` before ``upstream``, started at once, waited for later."""

    def __init__(self, exe: Path, upstream: str, log: IO[bytes]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [
            str(exe),
            "proxy",
            "--port",
            str(self.port),
            "--anthropic-api-url",
            upstream,
            "--openai-api-url",
            upstream,
            "--no-cache",
            "--no-rate-limit",
            "--no-http2",
        ]
        env = os.environ | {"HEADROOM_OFFLINE": "1", "HEADROOM_TELEMETRY": "off"}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=env
        )

    def ready(self) -> float:
        """Wait until it answers ``/health``; the seconds it took to start."""
        wait_for(self.url + "/health", 600)
        return time.monotonic() - self.started

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Peer:
    """One proxy's figures over the replay."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.url = name, url
        self.n = self.tokens_in = self.forwarded = self.inside = 0
        self.invalid = self.prefix = 0
        self.added: list[float] = []
        self.previous: list[str] = []
        self.failed: str | None = None


def replay(sessions: int, rec: Recorder, up: str, headroom: Headroom | None) -> None:
    root = data_dir() / "claude_code_sessions"
    paths = sorted(root.glob("*.jsonl"))[:sessions]
    transcripts = [read_transcripts(p)[0] for p in paths]
    print(
        f"\nClaude Code replay: {len(transcripts)} sessions, window {WINDOW:,}, "
        f"max_tokens {MAX_TOKENS:,}, each request direct then through each proxy"
    )
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        ours = stack.enter_context(our_proxy(up, f"sqlite:///{tmp}/p.db", WINDOW))
        peers = [Peer("contextwindow", ours)]
        if headroom is not None:
            try:
                took = headroom.ready()
                print(
                    f"(headroom-ai's proxy answered /health {took:.0f} s after start)"
                )
                peers.append(Peer("headroom-ai", headroom.url))
            except SystemExit as exc:
                print(f"headroom-ai: not measured, it did not start: {exc}")
        replay_all(transcripts, peers, up, rec)
    print(
        f"{'proxy':<15}{'requests':>9}{'tokens in':>13}{'forwarded':>13}"
        f"{'in window':>10}{'invalid':>8}{'prefix':>8}"
        f"{'added p50 ms':>13}{'p99':>8}"
    )
    for peer in peers:
        if peer.failed:
            print(f"{peer.name:<15} failed after {peer.n} requests: {peer.failed}")
        if not peer.n:
            continue
        print(
            f"{peer.name:<15}{peer.n:>9}{peer.tokens_in:>13,}{peer.forwarded:>13,}"
            f"{peer.inside:>10}{peer.invalid:>8}"
            f"{peer.prefix / peer.forwarded:>8.0%}"
            f"{statistics.median(peer.added):>13.2f}{pct(peer.added, 0.99):>8.1f}"
        )
    if headroom is None:
        print(
            "headroom-ai      not measured: no headroom executable (pip install "
            "'headroom-ai[proxy]' in a venv, pass --headroom PATH)"
        )


def replay_all(
    transcripts: list[Any], peers: list[Peer], up: str, rec: Recorder
) -> None:
    headers = {
        "x-api-key": "sk-ant-bench",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    with httpx.Client(timeout=600) as http:
        for t in transcripts:
            counter = TokenCounter(get_tokenizer(t.model), "anthropic")
            msgs = t.messages
            for peer in peers:
                peer.previous = []
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
                tokens_in = counter.messages(msgs[:j])
                t0 = time.perf_counter()
                r = http.post(up + "/v1/messages", content=body, headers=headers)
                direct = time.perf_counter() - t0
                for peer in peers:
                    if peer.failed:
                        continue
                    try:
                        t0 = time.perf_counter()
                        r = http.post(
                            peer.url + "/v1/messages", content=body, headers=headers
                        )
                        through = time.perf_counter() - t0
                    except httpx.HTTPError as exc:
                        peer.failed = f"{type(exc).__name__}: {exc}"
                        continue
                    if r.status_code != 200:
                        peer.failed = f"status {r.status_code}: {r.text[:200]}"
                        continue
                    peer.added.append(1000 * (through - direct))
                    measure(peer, json.loads(rec.seen[-1].body), tokens_in, counter)


def measure(peer: Peer, sent: dict[str, Any], tokens_in: int, counter: Any) -> None:
    read = coerce_messages(
        {k: sent[k] for k in ("system", "messages") if k in sent},
        provider="anthropic",
    )
    tokens = counter.messages(read.messages)
    peer.n += 1
    peer.tokens_in += tokens_in
    peer.forwarded += tokens
    peer.inside += tokens <= WINDOW - MAX_TOKENS
    peer.invalid += bool(problems(read.messages, "anthropic"))
    same, peer.previous = repeated_prefix(peer.previous, sent["messages"], counter)
    peer.prefix += same


def main() -> None:
    argv = sys.argv[1:]
    n = int(argv[argv.index("--n") + 1]) if "--n" in argv else 200
    sessions = int(argv[argv.index("--sessions") + 1]) if "--sessions" in argv else 5
    given = argv[argv.index("--headroom") + 1] if "--headroom" in argv else None
    do_replay = "--skip-replay" not in argv
    baseline = (
        Path(argv[argv.index("--baseline") + 1]) if "--baseline" in argv else None
    )
    clients = (1, 32)
    if "--clients" in argv:
        clients = tuple(int(c) for c in argv[argv.index("--clients") + 1].split(","))
    if "--skip-latency" not in argv:
        latency(n, baseline, clients)
        if RETRIED:
            print(f"({len(RETRIED)} requests sent again after a broken connection)")
    if not do_replay:
        return
    rec = Recorder(keep=1)
    with ExitStack() as stack:
        up = stack.enter_context(running(rec.app))
        headroom: Headroom | None = None
        exe = headroom_exe(given)
        if exe is not None:
            log = stack.enter_context(tempfile.TemporaryFile())
            headroom = Headroom(exe, up, log)
            stack.callback(headroom.stop)
        replay(sessions, rec, up, headroom)


if __name__ == "__main__":
    main()
