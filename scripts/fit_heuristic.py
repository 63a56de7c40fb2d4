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

Prints the ``_W_*`` block to paste into heuristic.py. Needs only the package
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
    rows: _texts.Rows = [
        (heuristic._features(t), n)
        for grouped in sets.values()
        for _, t in grouped
        if (n := bpe.count(t)) > 0
    ]
    weights = _texts.solve(_texts.normal(rows))
    print(
        f"# {len(rows):,} texts: "
        + ", ".join(f"{k} {len(v):,}" for k, v in sets.items())
    )
    for name, w in zip(heuristic.FEATURES, weights, strict=True):
        print(f"_W_{name.upper()} = {w:.4f}")


if __name__ == "__main__":
    main()
