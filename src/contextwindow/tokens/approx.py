"""A tokenizer standing in for one whose real vocabulary is not available.

Contract: ``ApproximateTokenizer`` counts what its base counts, times a stated
``scale`` (rounded up, so ``count("") == 0`` still holds), always reports
``exact = False`` and a name that says what it approximates and by which factor,
so every report built on it is labelled as an estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from contextwindow._args import as_tokenizer, check_number, check_str, shown
from contextwindow.errors import ArgumentValueError
from contextwindow.tokens.base import Tokenizer

__all__ = ["ApproximateTokenizer"]


class ApproximateTokenizer:
    """Count with ``base``, labelled as an approximation for ``label``.

    Args:
        base: The tokenizer whose counts are used (e.g. ``o200k_base`` BPE),
            or what names one, as for ``TokenCounter``: a model or an
            encoding (``"o200k_base"``).
        label: What is approximated, usually a model name.
        scale: Measured ratio of the real tokenizer's counts to the base's
            (e.g. Claude's to o200k's); ``1.0`` when nothing was measured.

    Raises:
        ArgumentError: ``base`` is not a tokenizer nor names one, ``label``
            is not a ``str``, or ``scale`` is not a finite number > 0.

    Example:
        >>> from contextwindow.testing import FakeTokenizer
        >>> tok = ApproximateTokenizer(FakeTokenizer(), "claude-sonnet-4-5")
        >>> tok.name
        'fake (approximate for claude-sonnet-4-5)'
        >>> (tok.count("three short words"), tok.exact)
        (3, False)
        >>> scaled = ApproximateTokenizer(FakeTokenizer(), "claude", scale=1.17)
        >>> (scaled.name, scaled.count("three short words"))
        ('fake x1.17 (approximate for claude)', 4)
    """

    __slots__ = ("_base", "_count", "_label", "_scale")

    def __init__(
        self, base: Tokenizer | str, label: str, *, scale: float = 1.0
    ) -> None:
        from contextwindow.tokens.counting import checked_count

        # A str has a ``count`` method too: taken as a base, it would count
        # occurrences of the text in the name (about 0 for any request).
        self._base = as_tokenizer(base, "base")
        # This class is the library's, so a counter takes its counts as they
        # come: a user's base is checked here instead (a float or a negative
        # count named at once, not summed into the request's tokens).
        self._count = checked_count(self._base, "base")
        self._label: str = check_str(label, "label")
        self._scale: float = check_number(scale, "scale", low=0, open_low=True)

    @property
    def name(self) -> str:
        """The base's name, the factor if any, and what it approximates."""
        factor = "" if self._scale == 1.0 else f" x{self._scale:g}"
        return f"{self._base.name}{factor} (approximate for {self._label})"

    @property
    def scale(self) -> float:
        """The factor applied to the base's counts."""
        return self._scale

    @property
    def exact(self) -> bool:
        """Always ``False``."""
        return False

    @property
    def base(self) -> Tokenizer:
        """The tokenizer doing the counting."""
        return self._base

    @property
    def label(self) -> str:
        """What is approximated."""
        return self._label

    def count(self, text: str) -> int:
        """Return the base's count of ``text`` times the scale, rounded up.

        Raises:
            ArgumentError: A user's base returned something other than an
                ``int >= 0`` (named as ``base``).
        """
        n = self._count(text)
        return n if self._scale == 1.0 else math.ceil(n * self._scale)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Count several texts, in one batch when the base can."""
        from contextwindow.tokens.counting import checked_result

        batch: Callable[[list[str]], Iterable[int]] | None = getattr(
            self._base, "count_many", None
        )
        counts: list[int]
        if callable(batch):
            texts = list(texts)
            counts = list(batch(texts))
            if not type(self._base).__module__.startswith("contextwindow."):
                # A user's batch: each count checked as ``count`` checks it.
                if len(counts) != len(texts):
                    raise ArgumentValueError(
                        "base",
                        shown(self._base),
                        "a Tokenizer whose count_many returns one count per text",
                        f"it returned {len(counts)} for {len(texts)}",
                    )
                counts = [
                    checked_result(n, self._base, "base", len(t))
                    for n, t in zip(counts, texts, strict=True)
                ]
        else:
            counts = [self._count(t) for t in texts]
        if self._scale == 1.0:
            return counts
        return [math.ceil(n * self._scale) for n in counts]

    def __repr__(self) -> str:
        extra = "" if self._scale == 1.0 else f", scale={self._scale!r}"
        return f"ApproximateTokenizer({self._base!r}, {self._label!r}{extra})"
