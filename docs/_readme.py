"""A MkDocs hook: guide pages that show a section of the README as it is.

A page line ``<!-- README: Fitting -->`` becomes the README's ``## Fitting``
section (its ``###`` headings one level up, its in-README links pointed at the
guide pages), so that the README and the guides never drift apart. The docs
test expands pages with the same function.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parent.parent / "README.md"
_MARKER = re.compile(r"^<!-- README: (.+?) -->$", re.MULTILINE)
PAGES = {
    "#what-you-get": "../what-you-get.md",
    "#command-line": "cli.md",
    "#library": "library.md",
    "#fitting": "fitting.md",
    "#summarisation": "summarisation.md",
    "#relevance": "relevance.md",
    "#managing-a-live-conversation": "manager.md",
    "#multi-agent": "multiagent.md",
    "#persistence": "persistence.md",
    "#proxy": "proxy.md",
    "#measured": "../measured.md",
    "#development": "../development.md",
}
"""Where each README section's guide is, from a guide page."""


def section(title: str, text: str | None = None) -> str:
    """The README's ``## title`` section, ready to stand on a page of its own."""
    readme = README.read_text(encoding="utf-8") if text is None else text
    parts = re.split(r"(?m)^## (.+)$", readme)
    found = dict(zip(parts[1::2], parts[2::2], strict=True))
    if title not in found:
        raise KeyError(f"README.md has no section {title!r}")
    out: list[str] = []
    fence = False
    for line in found[title].strip("\n").splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("### "):
            line = line[1:]
        out.append(line)
    body = "\n".join(out) + "\n"
    body = body.replace("](docs/guides/", "](")
    for anchor, page in PAGES.items():
        body = body.replace(f"]({anchor})", f"]({page})")
    return body


def expand(markdown: str) -> str:
    """Replace each README marker of a page with that section."""
    return _MARKER.sub(lambda m: section(m.group(1)), markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs' hook: expand the page's README markers."""
    return expand(markdown)
