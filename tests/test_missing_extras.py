"""A feature whose extra is missing says which extra to install.

Each case runs in a fresh interpreter where the extra's package cannot be
imported (``sys.modules[name] = None`` makes its import fail).
"""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("blocked", "code", "said"),
    [
        ("starlette", "import contextwindow.proxy", "contextwindow[proxy]"),
        ("aiohttp", "import contextwindow.proxy", "contextwindow[proxy]"),
        (
            "hypothesis",
            "from contextwindow.testing import conversations; conversations()",
            "contextwindow[test]",
        ),
    ],
)
def test_the_error_names_the_extra(blocked: str, code: str, said: str) -> None:
    run = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.modules[{blocked!r}] = None; {code}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:"), last
    assert said in last
