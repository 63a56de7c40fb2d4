from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


class TestReadme:
    def test_python_examples_run(self) -> None:
        """Every python block of the README runs, and its shown output is right."""
        blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
        assert blocks
        for block in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, "README.md", "exec"), {})
            printed = out.getvalue().splitlines()
            shown = [ln[2:] for ln in block.splitlines() if ln.startswith("# [")]
            for expected in shown:
                assert expected in printed, (expected, printed)

    def test_opens_with_the_two_commands(self) -> None:
        """The quick start's first two commands install-and-run and test."""
        commands = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
        assert "contextwindow inspect examples/" in commands[0]
        assert commands[1].strip() == "scripts/test"
