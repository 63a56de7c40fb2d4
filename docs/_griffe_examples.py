"""A griffe extension for the API reference: ``Example:`` sections are examples.

The project's docstrings title their doctests ``Example:`` (Google style, as
ruff's ``D`` rules check them); griffe reads only ``Examples:`` as examples and
renders anything else as Markdown, where ``>>>`` lines would become quotes.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` to ``Examples:`` before a docstring is parsed."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Fix the docstring of every object griffe loads."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
