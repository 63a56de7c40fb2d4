"""What every ``--json`` output shares: the envelope, the schema, the writer.

Contract: every document a command prints under ``--json`` is one JSON object
that starts with ``schema_version`` (``SCHEMA_VERSION``) and ``command``, and
validates against the JSON Schema shipped beside this module
(``schema.json``, ``schema()`` loads it). An error under ``--json`` is such
an object too, ``{"schema_version", "command", "error": {"type", "message",
"exit_code"}}``, printed to stdout with the same non-zero exit as without.
Output is deterministic: keys in a fixed order, no time of the run, ids
derived from the input.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_VERSION", "document", "dumps", "error_document", "schema"]

SCHEMA_VERSION = 1
"""Raised when a field is removed or changes meaning; new fields do not."""


def document(command: str, **fields: Any) -> dict[str, Any]:
    """A ``--json`` document: the envelope, then ``fields`` in order.

    Example:
        >>> document("models", models=[])
        {'schema_version': 1, 'command': 'models', 'models': []}
    """
    return {"schema_version": SCHEMA_VERSION, "command": command, **fields}


def error_document(
    command: str | None, kind: str, message: str, exit_code: int
) -> dict[str, Any]:
    """The ``--json`` document of an error.

    Example:
        >>> error_document("fit", "usage", "bad --budget", 2)["error"]["type"]
        'usage'
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "error": {"type": kind, "message": message, "exit_code": exit_code},
    }


def dumps(doc: Any) -> str:
    """Indented UTF-8 JSON, the way every command prints it."""
    return json.dumps(doc, indent=2, ensure_ascii=False)


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema every ``--json`` document validates against.

    Example:
        >>> schema()["properties"]["schema_version"]["const"] == SCHEMA_VERSION
        True
    """
    text = (resources.files("contextwindow.cli") / "schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
