"""The ``Tokenizer`` protocol: anything that counts the tokens of a text.

Contract: ``count(text)`` is a pure function of ``text`` (same text, same count),
never negative, and ``count("") == 0``. ``exact`` says whether the count is the
model's real one or an approximation, so every report can label it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens in text.

    Example:
        >>> from contextwindow.tokens import HeuristicTokenizer
        >>> isinstance(HeuristicTokenizer(), Tokenizer)
        True
    """

    @property
    def name(self) -> str:
        """A short name for reports, e.g. ``o200k_base`` or ``heuristic``."""
        ...

    @property
    def exact(self) -> bool:
        """Whether counts equal the model's own tokenizer."""
        ...

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``."""
        ...
