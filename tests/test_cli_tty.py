"""The command line on a real terminal (tmux): colour there, none when piped.

Each case runs ``python -m contextwindow`` in a tmux pane of a private tmux
server and reads the pane back with its escape sequences (``capture-pane
-e``): on the terminal the output carries colour and rich's tables; piped
through ``cat``, or with ``NO_COLOR``, it carries none.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent_session.json"
ESC = "\x1b["
DONE = "__cw_done__"


class Tmux:
    """A private tmux server: one pane per command."""

    def __init__(self) -> None:
        self.socket = f"cw-{uuid.uuid4().hex[:8]}"

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def run(self, command: str, width: int = 140) -> str:
        """Run ``command`` in a new pane; the pane's text with escapes, once done."""
        name = uuid.uuid4().hex[:8]
        env = f"PYTHONPATH={shlex.quote(os.environ.get('PYTHONPATH', ''))}"
        # The pane's own size, not one the test runner's environment claims.
        script = f"export {env}; unset COLUMNS LINES; {command}; echo {DONE}; sleep 120"
        self._tmux(
            "new-session", "-d", "-s", name, "-x", str(width), "-y", "60", script
        )
        deadline = time.monotonic() + 60
        text = ""
        while time.monotonic() < deadline:
            text = self._tmux("capture-pane", "-t", name, "-p", "-e", "-J")
            if DONE in text:
                break
            time.sleep(0.2)
        self._tmux("kill-session", "-t", name)
        assert DONE in text, text
        return text.split(DONE)[0]

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False)


@pytest.fixture(scope="module")
def tmux() -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        msg = "tmux is not installed (scripts/install_browser.sh installs it)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    t = Tmux()
    yield t
    t.close()


def cli(*args: str) -> str:
    return " ".join(
        shlex.quote(a) for a in (sys.executable, "-m", "contextwindow", *args)
    )


class TestOnATerminal:
    def test_inspect_in_colour(self, tmux: Tmux) -> None:
        """inspect on a terminal: colour, rich tables, previews to the full width."""
        out = tmux.run(cli("inspect", str(EXAMPLE)), width=150)
        assert ESC in out
        assert "─" in out  # rich's table rule
        assert "by role" in out
        widest = max(len(line) for line in _strip(out).splitlines())
        assert widest > 120  # previews use the terminal's width

    def test_fit_in_colour(self, tmux: Tmux, tmp_path: Path) -> None:
        """fit's report on a terminal: colour and rich tables."""
        target = tmp_path / "fitted.json"
        out = tmux.run(cli("fit", str(EXAMPLE), "--budget", "1.5k", "-o", str(target)))
        assert ESC in out
        assert "totals" in out
        assert target.exists()

    def test_piped_is_plain(self, tmux: Tmux, tmp_path: Path) -> None:
        """Piped, inspect and fit print plain text: no escape codes."""
        out = tmux.run(cli("inspect", str(EXAMPLE)) + " | cat")
        assert "by role" in out
        assert ESC not in out
        target = tmp_path / "fitted.json"
        fit = cli("fit", str(EXAMPLE), "--budget", "1500", "-o", str(target))
        out = tmux.run(fit + " | cat")
        assert "totals" in out
        assert ESC not in out

    def test_no_color(self, tmux: Tmux) -> None:
        """NO_COLOR on a terminal: plain text, as when piped."""
        out = tmux.run("NO_COLOR=1 " + cli("inspect", str(EXAMPLE)))
        assert "by role" in out
        assert "─" not in out
        assert ESC not in out


def _strip(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)
