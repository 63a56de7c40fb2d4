"""Throwaway PostgreSQL and Redis servers on loopback, for tests and benchmarks.

Contract:

- ``local_postgres()`` and ``local_redis()`` start a server of the machine's
  own binaries on ``127.0.0.1`` and a free port, in a new temporary folder,
  yield its URL, and on exit stop it and remove the folder. Nothing listens
  beyond loopback; PostgreSQL trusts local connections (it holds nothing).
- PostgreSQL refuses to run as root: under root, ``initdb`` and ``pg_ctl``
  run as the ``postgres`` user (``runuser``), in a folder that user owns.
- Binaries: ``$CONTEXTWINDOW_PG_BIN`` or the newest Debian
  ``/usr/lib/postgresql/<version>/bin`` or ``initdb`` on ``PATH``; and
  ``redis-server`` on ``PATH``. ``postgres_bin()`` and ``redis_bin()`` say
  whether they are there; a missing one, or a server that does not start,
  raises ``StoreError`` with the reason (its log's tail included).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Generator, Sequence
from pathlib import Path

from contextwindow.errors import StoreError

__all__ = ["local_postgres", "local_redis", "postgres_bin", "redis_bin"]

_DEBIAN = Path("/usr/lib/postgresql")
_FAST = ("-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off")
"""PostgreSQL settings for tests: a killed client still loses nothing (the
server has what it acknowledged); only a crash of the machine could."""


def postgres_bin() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or ``None``."""
    env = os.environ.get("CONTEXTWINDOW_PG_BIN")
    if env:
        return Path(env)
    found = sorted(
        _DEBIAN.glob("*/bin/initdb"),
        key=lambda p: [int(x) for x in p.parent.parent.name.split(".") if x.isdigit()],
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def redis_bin() -> str | None:
    """The ``redis-server`` program, or ``None``."""
    return shutil.which("redis-server")


def free_port() -> int:
    """A TCP port nothing listens on at the moment, on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _run(argv: Sequence[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode:
        detail = (done.stderr or done.stdout).strip()
        if log is not None:
            detail += "\n" + _tail(log)
        raise StoreError(f"{what} failed ({done.returncode}): {detail}")


@contextlib.contextmanager
def local_postgres(*, fast: bool = False) -> Generator[str, None, None]:
    """Run a throwaway PostgreSQL server; yield its URL.

    Args:
        fast: Turn off ``fsync`` and synchronous commits (see ``_FAST``).
    """
    bindir = postgres_bin()
    if bindir is None or not (bindir / "initdb").exists():
        raise StoreError(
            "PostgreSQL binaries not found (set CONTEXTWINDOW_PG_BIN to the folder "
            "holding initdb and pg_ctl)"
        )
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="cw-pg-"))
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(folder, user.pw_uid, user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log, port = folder / "data", folder / "server.log", free_port()
    options = [f"-p {port}", f"-k {folder}", "-c listen_addresses=127.0.0.1"]
    options += _FAST if fast else ()
    pg_ctl = [*as_user, str(bindir / "pg_ctl"), "-D", str(data)]
    try:
        _run(
            [
                *as_user,
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
            "initdb",
        )
        _run(
            [
                *pg_ctl,
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                " ".join(options),
                "start",
            ],
            "pg_ctl start",
            log,
        )
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            _run([*pg_ctl, "-m", "immediate", "-w", "stop"], "pg_ctl stop", log)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def local_redis() -> Generator[str, None, None]:
    """Run a throwaway Redis server (no persistence); yield its URL."""
    program = redis_bin()
    if program is None:
        raise StoreError(
            "redis-server not found (Debian: apt-get install redis-server)"
        )
    folder = Path(tempfile.mkdtemp(prefix="cw-redis-"))
    port, log = free_port(), folder / "server.log"
    server = subprocess.Popen(
        [
            program,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
            "--logfile",
            str(log),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_redis(port, server, log)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for_redis(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", port), timeout=1) as s,
        ):
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                return
        time.sleep(0.05)
    raise StoreError(f"redis-server did not start on port {port}:\n{_tail(log)}")
