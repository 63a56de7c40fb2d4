"""Where a secret could show: everything an exception carries, as text.

Shared by the tests that hold DESIGN's invariant "no secret (an API key, any
8-character piece of it) in an error, repr or log".
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable

PIECE = 8


def pieces(secret: str) -> set[str]:
    """Every run of 8 characters of ``secret`` (the whole of a shorter one)."""
    if len(secret) < PIECE:
        return {secret}
    return {secret[i : i + PIECE] for i in range(len(secret) - PIECE + 1)}


def exception_text(exc: BaseException) -> str:
    """The exception's text, repr and args, its traceback, and its whole chain.

    The chain is walked through ``__cause__`` and ``__context__`` alike,
    suppressed or not: a handler may print either.
    """
    out: list[str] = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out += [
            str(e),
            repr(e),
            repr(e.args),
            repr(vars(e) if hasattr(e, "__dict__") else ""),
        ]
        todo += [e.__cause__, e.__context__]
    return "\n".join(out)


def leaked(secrets: Iterable[str], *texts: str) -> list[str]:
    """The pieces of ``secrets`` found in ``texts`` (none: nothing leaked)."""
    text = "\n".join(texts)
    return sorted(p for s in secrets for p in pieces(s) if p in text)
