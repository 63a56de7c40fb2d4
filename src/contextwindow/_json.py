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

Writing JSON back, where a value was parsed from JSON text that held a lone
surrogate as an escape (``\ud83d``: a tool that cut a UTF-16 string inside
an emoji), must not turn the escape into the raw surrogate, which no UTF-8
text can carry:

- ``has_surrogate_escape(text)``: whether parsing JSON ``text`` may give
  one it did not hold raw.
- ``escape_surrogates(text)``: JSON text written back with each lone
  surrogate as its escape, as it came.
- ``replace_surrogates(value)``: a parsed value with each lone surrogate made
  U+FFFD, for a writer whose output is a value (Anthropic's ``input``), not
  text.

These never raise.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from contextwindow.errors import InvalidMessageError

__all__ = [
    "MAX_DEPTH",
    "check_tree",
    "decode",
    "escape_surrogates",
    "has_surrogate_escape",
    "loads",
    "replace_surrogates",
]

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


def has_surrogate_escape(text: str) -> bool:
    r"""Whether JSON ``text`` holds a surrogate escape (``\ud83d``).

    The escape may be half of a pair (``\ud83d\ude00``, one emoji): this says
    only that parsing ``text`` may give a lone surrogate it did not hold raw.

    Example:
        >>> has_surrogate_escape('{"t": "cut \\ud83d"}')
        True
        >>> has_surrogate_escape('{"t": "ok \\u00e9"}')
        False
    """
    return "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None


def escape_surrogates(text: str) -> str:
    r"""JSON ``text`` with each lone surrogate written as its ``\uXXXX`` escape.

    ``json.dumps(..., ensure_ascii=False)`` writes a lone surrogate raw,
    which no UTF-8 text can carry; its escape parses back to the same value
    and is plain ASCII. A raw surrogate can only be inside a JSON string,
    where the escape means the same.

    Example:
        >>> import json
        >>> value = json.loads('{"t": "caf\u00e9 \\ud83d"}')
        >>> escape_surrogates(json.dumps(value, ensure_ascii=False))
        '{"t": "café \\ud83d"}'
    """
    if text.isascii() or _LONE.search(text) is None:
        return text
    return _LONE.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def replace_surrogates(value: Any) -> Any:
    r"""``value`` (parsed JSON) with each lone surrogate in a string made U+FFFD.

    Keys too. U+FFFD is what a UTF-8 encoder writing with
    ``errors="replace"`` sends: the one character a lone surrogate can
    become in UTF-8 text. Containers are changed in place (the caller parsed
    ``value`` and owns it), without recursion: nothing raises.

    Example:
        >>> replace_surrogates({"t": ["cut \ud83d", 1], "k\udc00": None})
        {'t': ['cut \ufffd', 1], 'k\ufffd': None}
    """
    if isinstance(value, str):
        return _replaced(value)
    stack: list[object] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            obj = cast("dict[str, Any]", node)
            if any(_replaced(k) is not k for k in obj):  # keep the key order
                items = list(obj.items())
                obj.clear()
                obj.update((_replaced(k), v) for k, v in items)
            for k, v in obj.items():  # values replaced, no key added
                if isinstance(v, str):
                    obj[k] = _replaced(v)
                else:  # a container to walk, or a number the loop passes
                    stack.append(v)
        elif isinstance(node, list):
            seq = cast("list[object]", node)
            for i, v in enumerate(seq):
                if isinstance(v, str):
                    seq[i] = _replaced(v)
                else:
                    stack.append(v)
    return value


def _replaced(s: str) -> str:
    """``s``, the same object when it holds no lone surrogate."""
    if s.isascii() or _LONE.search(s) is None:
        return s
    return _LONE.sub("\ufffd", s)


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
