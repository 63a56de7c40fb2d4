"""The documentation site: it builds with no warning, names every public object,
and every example in it runs and prints what it shows."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

import contextwindow
from contextwindow.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def _hook() -> ModuleType:
    """The docs' MkDocs hook that shows README sections on guide pages."""
    spec = importlib.util.spec_from_file_location("_readme_hook", DOCS / "_readme.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


def blocks(kind: str) -> list[tuple[Path, str]]:
    """Fenced blocks of every page, README sections included, as MkDocs shows them."""
    found: list[tuple[Path, str]] = []
    for page in PAGES:
        text = HOOK.expand(page.read_text(encoding="utf-8"))
        found += [(page, b) for b in re.findall(rf"```{kind}\n(.*?)```", text, re.S)]
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built with ``mkdocs build --strict`` (a warning fails it)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def inventory(site: Path) -> set[str]:
    """The objects the API reference documents (mkdocstrings' objects.inv)."""
    raw = (site / "objects.inv").read_bytes()
    body = zlib.decompress(raw.split(b"\n", 4)[4]).decode("utf-8")
    return {line.split(" ", 1)[0] for line in body.splitlines() if line}


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


class TestSite:
    def test_builds_strict(self, site: Path) -> None:
        """mkdocs build --strict succeeds and writes every page."""
        assert (site / "index.html").exists()
        assert (site / "reference" / "index.html").exists()
        assert (site / "guides" / "report" / "index.html").exists()

    def test_every_public_name_in_the_reference(self, site: Path) -> None:
        """Each name of contextwindow.__all__ is documented in the API reference."""
        documented = inventory(site)
        missing = [
            n for n in contextwindow.__all__ if f"contextwindow.{n}" not in documented
        ]
        assert missing == []

    def test_reference_pages_document_the_subpackages(self, site: Path) -> None:
        """The pages for the subpackages where users pick an implementation."""
        documented = inventory(site)
        for name in (
            "contextwindow.strategies.SlidingWindow",
            "contextwindow.store.SQLiteStore",
            "contextwindow.formats.to_provider",
            "contextwindow.report.build_report",
            "contextwindow.cli.json_schema",
        ):
            assert name in documented, name


class TestReadmeSections:
    def test_markers_name_sections(self) -> None:
        """Each page's README marker names a section the README keeps whole."""
        markers = 0
        for page in PAGES:
            text = page.read_text(encoding="utf-8")
            for title in re.findall(r"^<!-- README: (.+?) -->$", text, re.M):
                markers += 1
                assert HOOK.section(title).strip(), (page.name, title)
        assert markers >= 1

    def test_headings_and_links(self) -> None:
        """A section's ### headings move up one level; README links become pages."""
        text = "## A\n### B\n```\n### code\n```\nsee [P](#persistence)\n## C\n"
        body = HOOK.section("A", text)
        assert body.splitlines()[0] == "## B"
        assert "### code" in body
        assert "[P](persistence.md)" in body


class TestExamples:
    def test_python_examples_run(self, in_checkout: Path) -> None:
        """Every python block of the docs runs, and its shown output is right."""
        found = blocks("python")
        assert len(found) >= 10
        for page, block in found:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, str(page), "exec"), {})
            printed = out.getvalue().splitlines()
            shown = [ln[2:] for ln in block.splitlines() if ln.startswith("# [")]
            for expected in shown:
                assert shown_in(expected, printed), (page.name, expected, printed)

    def test_shown_command_output(self, in_checkout: Path) -> None:
        """Every `$ contextwindow ...` sample shows lines the command really prints."""
        samples = [
            (p, b) for p, b in blocks("text") if b.startswith("$ contextwindow ")
        ]
        assert len(samples) >= 3
        for page, sample in samples:
            command, *shown = sample.splitlines()
            result = CliRunner().invoke(main, shlex.split(command[2:])[1:])
            assert result.exit_code == 0, (page.name, command, result.output)
            printed = result.stdout.splitlines()
            for line in shown:
                if line.strip() not in ("", "..."):
                    assert line in printed, (page.name, command, line)

    def test_commands_run(self, in_checkout: Path) -> None:
        """Every `contextwindow ...` line of a bash block on the shipped example
        exits as documented (those on a store URL need its server)."""
        ran = 0
        for page, block in blocks("bash"):
            for line in block.splitlines():
                for step in line.split("&&"):
                    args = shlex.split(step, comments=True)
                    if not args or args[0] != "contextwindow":
                        continue
                    if not any(a.startswith("examples/") for a in args):
                        continue
                    ran += 1
                    result = CliRunner().invoke(main, args[1:])
                    # A documented error example says so: --budget lots.
                    expected = 2 if "lots" in args else 0
                    assert result.exit_code == expected, (
                        page.name,
                        step,
                        result.output,
                    )
