"""scripts/move_readme_sections.py, on a copy of the README and the docs."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_moves_word_for_word(tmp_path: Path) -> None:
    """Moved sections reach their pages whole; the README keeps one example each."""
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    before = (tmp_path / "README.md").read_text(encoding="utf-8")
    hook = load(tmp_path / "docs" / "_readme.py", "_readme_copy")
    script = load(ROOT / "scripts" / "move_readme_sections.py", "_move")
    expected = {t: hook.section(t, before) for t in ("Fitting", "Persistence")}
    moved = script.move(tmp_path)
    assert {"Fitting", "Persistence", "Library"} <= set(moved)
    after = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert len(after) < len(before) * 0.6
    assert after.startswith(before.split("## What you get")[0])  # quick start kept
    assert "## What you get" in after
    fitting = (tmp_path / "docs" / "guides" / "fitting.md").read_text("utf-8")
    assert expected["Fitting"].strip() in fitting
    assert "<!-- README:" not in fitting
    persistence = (tmp_path / "docs" / "guides" / "persistence.md").read_text("utf-8")
    assert expected["Persistence"].strip() in persistence
    assert "More: [Fitting](docs/guides/fitting.md)." in after
    # One example per moved section that had one, each still a whole block.
    assert len(re.findall(r"^```python$", after, re.M)) >= 5
    assert after.count("```") % 2 == 0
