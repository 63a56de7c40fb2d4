"""Move the README's long sections into the documentation, word for word.

Usage::

    python scripts/move_readme_sections.py [--root DIR]

Each docs page holding a ``<!-- README: Title -->`` marker gets the README's
``## Title`` section in its place (as the MkDocs hook in ``docs/_readme.py``
shows it: ``###`` headings one level up, README links pointed at the pages).
The README keeps, for each moved section, its heading, the prose before its
first code block, that first example, and a link to the page: what a
newcomer reads first. Sections named in ``KEEP`` stay whole. Nothing is
reworded; run it once, after the README edits of every branch are merged,
then run the tests (``tests/test_readme.py``, ``tests/test_docs.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

KEEP = ("Quick start", "What you get", "Data and licences")
"""Sections the README keeps whole."""


def _hook(root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_readme", root / "docs/_readme.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no docs/_readme.py under {root}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _excerpt(body: str) -> str:
    """The prose before the first code block and that block, or the first paragraph."""
    m = re.search(r"^```.*?^```[ \t]*$", body, re.S | re.M)
    return body.split("\n\n")[0] if m is None else body[: m.end()]


def move(root: Path) -> list[str]:
    """Move every marked section; return the titles moved."""
    hook = _hook(root)
    readme_path = root / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    moved: list[str] = []
    for page in sorted((root / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        markers = re.findall(r"^<!-- README: (.+?) -->$", text, re.M)
        for title in markers:
            if title in KEEP:
                continue
            body = hook.section(title, readme)
            text = text.replace(f"<!-- README: {title} -->", body.rstrip("\n"))
            link = page.relative_to(root).as_posix()
            readme = _shorten(readme, title, link)
            moved.append(title)
        page.write_text(text, encoding="utf-8")
    readme_path.write_text(readme, encoding="utf-8")
    return moved


def _shorten(readme: str, title: str, link: str) -> str:
    parts = re.split(r"(?m)^(## .+\n)", readme)
    for k in range(1, len(parts), 2):
        if parts[k].strip() == f"## {title}":
            kept = _excerpt(parts[k + 1].strip("\n"))
            more = f"More: [{title}]({link})."
            parts[k + 1] = f"\n{kept.rstrip()}\n\n{more}\n\n"
            return "".join(parts)
    raise SystemExit(f"README.md has no section {title!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).parent.parent)
    args = parser.parse_args()
    for title in move(args.root.resolve()):
        print(f"moved {title}")


if __name__ == "__main__":
    main()
