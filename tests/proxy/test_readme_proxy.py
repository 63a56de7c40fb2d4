"""The README's Proxy section, run: the command started, curl and the SDK pointed at it.

The upstreams it names are replaced by a recording upstream on loopback, and
port 8787 by a free one; everything else runs as written.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.proxy._upstream import Recorder, free_port, running

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("\n## Proxy\n", 1)[1].split("\n## ", 1)[0]


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", _section(), re.S)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Recorder]]:
    """The section's `contextwindow proxy` command, run against the recorder."""
    (command,) = [
        b.strip() for b in _blocks("bash") if b.startswith("contextwindow proxy")
    ]
    args = shlex.split(command)
    rec = Recorder()
    port = free_port()
    with running(rec.app) as up:
        for flag in ("--upstream-anthropic", "--upstream-openai"):
            args[args.index(flag) + 1] = up
        db = tmp_path_factory.mktemp("readme") / "proxy.db"
        args += ["--port", str(port), "--store", f"sqlite:///{db}"]
        env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
        log = (db.parent / "stderr.txt").open("wb")
        proc = subprocess.Popen(  # the README's own command
            [sys.executable, "-m", "contextwindow", *args[1:]],
            env=env,
            stderr=log,
            stdout=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert proc.poll() is None, (db.parent / "stderr.txt").read_text()
                assert time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.1)
            yield url, rec
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()


def test_claude_code_line() -> None:
    assert "ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude\n" in _blocks("bash")


def test_curl(served: tuple[str, Recorder]) -> None:
    url, rec = served
    (command,) = [b.strip() for b in _blocks("bash") if b.startswith("curl")]
    command = command.replace("http://127.0.0.1:8787", url)
    env = os.environ | {"ANTHROPIC_API_KEY": "sk-ant-readme-0123456789"}
    out = subprocess.run(
        command,
        shell=True,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert "HTTP/1.1 200" in out
    assert "x-contextwindow-tokens-in:" in out
    assert '"text": "Hello"' in out or '"text":"Hello"' in out
    assert rec.seen[-1].headers["x-api-key"] == "sk-ant-readme-0123456789"


def test_openai_sdk(
    served: tuple[str, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = served
    (block,) = _blocks("py")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-readme-0123456789")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(
            compile(block.replace("http://127.0.0.1:8787", url), "README.md", "exec"),
            {},
        )
    assert out.getvalue().strip() == "Hello"
