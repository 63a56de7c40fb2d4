from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextwindow import from_provider, problems
from contextwindow.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README.read_text(), re.S)


def cli(command: str) -> str:
    """Run a `contextwindow ...` command line; return what it printed to stdout."""
    args = shlex.split(command)
    assert args[0] == "contextwindow", command
    result = CliRunner().invoke(main, args[1:])
    assert result.exit_code == 0, (command, result.output)
    return result.stdout


@pytest.fixture
def in_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder where `examples/` is the project's, as in a checkout."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def shown_in(expected: str, printed: list[str]) -> bool:
    """Whether a line the docs show was printed; ``…`` in it stands for any text
    (an id that differs from run to run)."""
    pattern = ".*".join(map(re.escape, expected.split("…")))
    return any(re.fullmatch(pattern, line) for line in printed)


class TestReadme:
    def test_python_examples_run(self) -> None:
        """Every python block of the README runs, and its shown output is right."""
        found = blocks("python")
        assert found
        for block in found:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, "README.md", "exec"), {})
            printed = out.getvalue().splitlines()
            shown = [ln[2:] for ln in block.splitlines() if ln.startswith("# [")]
            for expected in shown:
                assert shown_in(expected, printed), (expected, printed)

    def test_opens_with_the_two_commands(self) -> None:
        """The quick start's first two commands install-and-run and test."""
        commands = blocks("bash")
        assert "contextwindow inspect examples/" in commands[0]
        assert "contextwindow fit examples/" in commands[0]
        assert commands[1].strip() == "scripts/test"

    def test_first_command_runs(self, in_checkout: Path) -> None:
        """The first command's inspect and fit run, and fit writes a valid file."""
        steps = [s.strip() for s in blocks("bash")[0].split("&&")]
        assert steps[0] == "python -m pip install ."
        for step in steps[1:]:
            cli(step)
        out = re.search(r"-o (\S+)", steps[-1])
        assert out is not None
        data = json.loads((in_checkout / out.group(1)).read_text())
        assert problems(from_provider(data, "openai"), "openai") == ()
        # What the prose after the sample says the file holds.
        said = re.search(
            r"`fitted.json` holds (\d+) of the (\d+) messages", README.read_text()
        )
        assert said is not None
        given = json.loads((in_checkout / "examples/agent_session.json").read_text())
        assert (int(said.group(1)), int(said.group(2))) == (len(data), len(given))

    def test_shown_command_output(self, in_checkout: Path) -> None:
        """Every `$ contextwindow ...` sample shows lines the command really prints."""
        samples = [b for b in blocks("text") if b.startswith("$ contextwindow ")]
        assert len(samples) >= 2
        for sample in samples:
            command, *shown = sample.splitlines()
            printed = cli(command[2:]).splitlines()
            for line in shown:
                if line.strip() not in ("", "..."):
                    assert line in printed, (command, line)
