r"""Reading JSON from outside: text, parsing and the tree, each checked or refused.

Contract: every function here returns what was asked or raises
``InvalidMessageError`` naming where (the file, its line, the path inside the
document); none lets a ``RecursionError``, a ``UnicodeError`` or a bare
``ValueError`` escape.

- ``decode(data, name)``: bytes are strict UTF-8 (a byte-order mark
  dropped); text already decoded must be valid Unicode too, so standard
  input read with ``surrogateescape`` (a C or POSIX locale) is refused as a
  file with the same bytes is, with the same message.
- ``loads(text, where)``: ``json.loads``, with a document nested too deeply
  for the parser and a number too long to convert (Python's 4,300-digit
  limit) reported as what they are.
- ``check_tree(value, where)``: no container nested deeper than
  ``MAX_DEPTH`` (deeper input would overflow the stack of whatever copies or
  writes it later), and no string or key holding a lone surrogate (a
  ``\ud800`` escape: valid JSON, but no UTF-8 text can carry it, so every
  tokenizer and writer would fail on it).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from contextwindow.errors import InvalidMessageError

__all__ = ["MAX_DEPTH", "check_tree", "decode", "loads"]

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects accepted."""

_LONE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def decode(data: str | bytes, name: str) -> str:
    r"""``data`` as text, or ``InvalidMessageError(name, "not UTF-8 text: ...")``.

    Example:
        >>> decode(b"caf\xc3\xa9", "a.json")
        'café'
        >>> decode(b"caf\xe9", "a.json")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: a.json: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position 3: unexpected end of data
        >>> decode("caf\udce9", "<stdin>")  # the same bytes, read as surrogateescape
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: <stdin>: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position 3: unexpected end of data
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    if isinstance(data, str):
        if data.isascii() or not _LONE.search(data):
            return data.lstrip("\ufeff")
        try:  # undecodable bytes a text stream kept as surrogates: say which
            data = data.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            raise InvalidMessageError(
                name, f"not UTF-8 text: a lone surrogate at character {exc.start}"
            ) from None
    try:
        return data.decode("utf-8-sig").lstrip("\ufeff")
    except UnicodeDecodeError as exc:
        raise InvalidMessageError(name, f"not UTF-8 text: {exc}") from None


def loads(text: str, where: str) -> Any:
    """``json.loads(text)``; ``json.JSONDecodeError`` is the caller's to report.

    Raises:
        json.JSONDecodeError: Not JSON (the caller may try JSON Lines).
        InvalidMessageError: JSON nested too deeply to parse, or a number
            too long to read.

    Example:
        >>> loads("[" * 100_000 + "]" * 100_000, "deep.json")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: deep.json: not readable JSON: nested deeper than 200 levels
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise InvalidMessageError(
            where, f"not readable JSON: nested deeper than {MAX_DEPTH} levels"
        ) from None
    except ValueError as exc:  # e.g. an integer past sys.get_int_max_str_digits()
        reason = str(exc).split(";")[0]
        raise InvalidMessageError(
            where, f"not readable JSON: a number too long ({reason})"
        ) from None


def check_tree(value: Any, where: str, text: str | None = None) -> None:
    r"""Refuse nesting past ``MAX_DEPTH`` and lone surrogates, naming the path.

    ``text`` is the JSON ``value`` was parsed from, when known: a document
    without enough brackets to nest that deep, and without a surrogate
    escape, is not walked.

    Example:
        >>> check_tree([{"content": "a\ud800b"}], "chat.json")
        Traceback (most recent call last):
        ...
        contextwindow.errors.InvalidMessageError: chat.json: [0].content: a lone surrogate (\ud800) at character 1: not Unicode text
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    surrogates = text is None or _SURROGATE_ESCAPE.search(text) is not None
    few = text is not None and text.count("[") + text.count("{") <= MAX_DEPTH
    if few and not surrogates:
        return  # too few brackets to nest that deep, and no surrogate escape
    # Iterative: the walk itself must not overflow on what it refuses.
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 0, ())]
    while stack:
        node, depth, path = stack.pop()
        if depth >= MAX_DEPTH:  # the root container is level 1
            raise InvalidMessageError(
                _where(where, path), f"nested deeper than {MAX_DEPTH} levels"
            )
        if isinstance(node, dict):
            for k, v in cast("dict[str, Any]", node).items():
                if surrogates:
                    _text(k, where, (*path, k))
                if isinstance(v, (dict, list)):
                    stack.append((cast("Any", v), depth + 1, (*path, k)))
                elif surrogates and isinstance(v, str):
                    _text(v, where, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]  # parsed JSON: any element
                if isinstance(v, (dict, list)):
                    stack.append((cast("Any", v), depth + 1, (*path, i)))
                elif surrogates and isinstance(v, str):
                    _text(v, where, (*path, i))
        elif surrogates and isinstance(node, str):
            _text(node, where, path)


def _text(s: str, where: str, path: tuple[Any, ...]) -> None:
    if s.isascii():
        return
    found = _LONE.search(s)
    if found is not None:
        char = f"\\u{ord(found.group()):04x}"
        raise InvalidMessageError(
            _where(where, path),
            f"a lone surrogate ({char}) at character {found.start()}: not Unicode text",
        )


def _where(where: str, path: tuple[Any, ...]) -> str:
    """``where``, then the path inside the document: ``chat.json: [3].content``."""
    if len(path) > 8:  # a very deep path: its start and its end
        inner = _steps(path[:4]) + "..." + _steps(path[-4:])
    else:
        inner = _steps(path)
    return f"{where}: {inner.lstrip('.')}" if inner else where


def _steps(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
