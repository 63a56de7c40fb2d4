"""What the manager tests share: texts of known size and a cheap manager."""

from __future__ import annotations

from typing import Any

from contextwindow import ContextManager
from contextwindow.testing import FakeTokenizer


def words(n: int, tag: str = "w") -> str:
    """``n`` distinct words: ``n`` tokens for ``FakeTokenizer``."""
    return " ".join(f"{tag}{i}" for i in range(n))


def manager(limit: int = 1000, **kw: Any) -> ContextManager:
    """A manager with a ``limit``-token window, counting words."""
    kw.setdefault("tokenizer", FakeTokenizer())
    return ContextManager(token_limit=limit, **kw)
