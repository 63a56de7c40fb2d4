"""How close, and how fast, is HeuristicTokenizer next to exact o200k BPE?

Usage::

    python benchmarks/heuristic_accuracy.py

Over every message text of the shared data (see ``_data.py``): the median and
90th percentile of the absolute relative error against o200k_base, for
``HeuristicTokenizer`` and for ``len/4``, and the time to count every text one
call at a time, heuristic against ``BPETokenizer.count`` (the same texts, the
same run, best of 3). Acceptance: median <= 6 %, p90 <= 15 %, speed >= 3x.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from _data import best_of, message_texts

from contextwindow.tokens import BPETokenizer, HeuristicTokenizer


def rel_errors(estimates: Sequence[float], truth: Sequence[int]) -> list[float]:
    return sorted(abs(e - t) / t for e, t in zip(estimates, truth, strict=True))


def pct(sorted_values: Sequence[float], q: float) -> float:
    return sorted_values[int(q * (len(sorted_values) - 1))]


def main() -> None:
    texts = message_texts()
    bpe = BPETokenizer("o200k_base")
    heur = HeuristicTokenizer()
    truth = [bpe.count(t) for t in texts]

    rows = [
        ("heuristic", rel_errors([heur.count(t) for t in texts], truth)),
        ("len/4", rel_errors([len(t) / 4 for t in texts], truth)),
    ]
    total_chars = sum(map(len, texts))
    print(f"{len(texts)} message texts, {total_chars:,} chars,", end=" ")
    print(f"{sum(truth):,} o200k tokens\n")
    print(f"{'estimator':<12}{'median':>9}{'p90':>9}{'p99':>9}")
    for name, errs in rows:
        print(
            f"{name:<12}{statistics.median(errs):>9.2%}{pct(errs, 0.9):>9.2%}"
            f"{pct(errs, 0.99):>9.2%}"
        )

    def count_all(count: Callable[[str], int]) -> None:
        for text in texts:
            count(text)

    t_heur = best_of(lambda: count_all(heur.count))
    t_bpe = best_of(lambda: count_all(bpe.count))
    print(f"\n{'tokenizer':<12}{'seconds':>9}{'MB/s':>9}")
    for name, secs in (("heuristic", t_heur), ("o200k BPE", t_bpe)):
        print(f"{name:<12}{secs:>9.3f}{total_chars / secs / 1e6:>9.1f}")
    print(f"\nspeed ratio (BPE time / heuristic time): {t_bpe / t_heur:.1f}x")


if __name__ == "__main__":
    main()
