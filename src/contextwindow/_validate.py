"""Validation at the edge: read JSON-shaped input or raise naming the place.

Contract: each helper returns a value of the asked type or raises
``InvalidMessageError(path, reason)`` naming the exact place (e.g.
``messages[3].tool_call_id: missing``); nothing here lets a ``KeyError`` or
``TypeError`` escape. Types are named in JSON's words (``array``, ``boolean``,
``null``), since that is what the caller wrote. Used by ``formats``,
``transcripts`` and ``wire``; the core trusts its own types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from contextwindow.errors import InvalidMessageError

__all__ = ["expect_list", "expect_mapping", "expect_str", "opt_str", "type_name"]


def type_name(value: object) -> str:
    """Name a JSON value's type the way error messages do.

    Example:
        >>> [type_name(v) for v in (None, True, 1, "a", [], {})]
        ['null', 'boolean', 'number', 'string', 'array', 'object']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def expect_mapping(value: object, path: str) -> Mapping[str, Any]:
    """Return ``value`` if it is a JSON object, else raise naming ``path``.

    Example:
        >>> try:
        ...     expect_mapping([], "messages[1]")
        ... except InvalidMessageError as exc:
        ...     print(exc)
        messages[1]: expected an object, got array
    """
    if not isinstance(value, Mapping):
        raise InvalidMessageError(path, f"expected an object, got {type_name(value)}")
    return cast("Mapping[str, Any]", value)


def expect_list(value: object, path: str) -> Sequence[Any]:
    """Return ``value`` if it is a JSON list, else raise naming ``path``."""
    if not isinstance(value, (list, tuple)):
        raise InvalidMessageError(path, f"expected an array, got {type_name(value)}")
    return cast("Sequence[Any]", value)


def expect_str(obj: Mapping[str, Any], key: str, path: str) -> str:
    """Return the string ``obj[key]``; raise ``path.key: missing`` or a type error.

    Example:
        >>> try:
        ...     expect_str({"id": 3}, "id", "messages[0]")
        ... except InvalidMessageError as exc:
        ...     print(exc)
        messages[0].id: expected a string, got number
    """
    if key not in obj:
        raise InvalidMessageError(f"{path}.{key}", "missing")
    value = obj[key]
    if not isinstance(value, str):
        raise InvalidMessageError(
            f"{path}.{key}", f"expected a string, got {type_name(value)}"
        )
    return value


def opt_str(obj: Mapping[str, Any], key: str, path: str) -> str | None:
    """Return ``obj[key]`` when it is a string, ``None`` when absent or null."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidMessageError(
            f"{path}.{key}", f"expected a string, got {type_name(value)}"
        )
    return value
