"""Fit the weights of ``contextwindow.tokens.heuristic`` against o200k_base.

Usage::

    python scripts/fit_heuristic.py   # data: $CONTEXTWINDOW_DATA or ../shared/data

Least squares on the *relative* error (each text weighs the same whatever its
length, which is what "median / p90 relative error over every text" rewards),
over every feature at once, on every message text of the shared data and the
fit's extra texts (``benchmarks/_texts.py``: ``click``'s sources,
``mkdocs-material``'s translations, a small multilingual sample). The texts
that PyPI packages ship in ``_texts.pypi_sets()`` are never fitted on: they
measure the weights, with the held-out splits, in
``benchmarks/heuristic_accuracy.py``.

The rates in ``heuristic.PINNED`` (control characters, Hangul Jamo) are not
fitted: o200k's vocabulary sets them. The fit holds them: each such
character's tokens are taken off its text's count, and the character off the
fitted features that count it too.

Prints the ``_W_*`` block to paste into heuristic.py.
Needs only the package
(tiktoken), the standard library and the packages named in ``_texts.py`` (a
missing one's texts are skipped).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import _texts

from contextwindow.tokens import heuristic
from contextwindow.tokens.bpe import BPETokenizer


def main() -> None:
    bpe = BPETokenizer("o200k_base")
    sets = {**_texts.shared_sets(), **_texts.training_extras()}
    rows = [
        held(t, n)
        for grouped in sets.values()
        for _, t in grouped
        if (n := bpe.count(t)) > 0
    ]
    weights = _texts.solve(normal_held(rows))
    print(
        f"# {len(rows):,} texts: "
        + ", ".join(f"{k} {len(v):,}" for k, v in sets.items())
    )
    for name, w in zip(heuristic.FEATURES, weights, strict=True):
        print(f"_W_{name.upper()} = {w:.4f}")


def held(text: str, n: int) -> tuple[list[int], float, int]:
    """A text's fitted features, the tokens its pinned features give, its count.

    A pinned feature's weight is its rate less the weights of the fitted
    features that count the same characters (``heuristic.PINNED``): so its
    matches are taken off those features, and its tokens off the count.
    """
    x = list(heuristic._features(text))
    known = 0.0
    for (rate, shared), k in zip(
        heuristic.PINNED.values(), heuristic._pinned(text), strict=True
    ):
        known += rate * k
        for name in shared:
            x[heuristic.FEATURES.index(name)] -= k
    return x, known, n


def normal_held(rows: list[tuple[list[int], float, int]]) -> _texts.Normal:
    """``_texts.normal`` with the pinned tokens held: still the relative error
    of the whole count, ``(x . w + known - n) / n``."""
    k = len(rows[0][0])
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for x, known, n in rows:
        v = [xi / n for xi in x]
        target = (n - known) / n
        nz = [(i, vi) for i, vi in enumerate(v) if vi]
        for i, vi in nz:
            b[i] += vi * target
            row = a[i]
            for j, vj in nz:
                row[j] += vi * vj
    return a, b


if __name__ == "__main__":
    main()
