"""How close, and how fast, is HeuristicTokenizer next to exact o200k BPE, on text
its weights never saw?

Usage::

    python benchmarks/heuristic_accuracy.py

The texts (``_texts.py``): the shared data (``tau-bench``, ``claude-code``,
``locomo``), the fit's extra texts (``click``'s sources, ``mkdocs-material``'s
translations, a small multilingual sample) and texts that installed packages
ship and no fit sees (the standard library's sources, JSON that
``jsonschema-specifications`` and ``litellm`` ship, Django's translations and
CPython's CJK test texts). Each row is the median and 90th percentile of the
absolute relative error against o200k_base over the texts of a set, each text
counted once, one call each:

1. each shared data set left out: the weights refitted (the same features, the
   same least squares as ``scripts/fit_heuristic.py``) on the two others and
   the extra texts, reported on the one left out;
2. half of each shared set held out: refitted on the other half of the groups
   (trajectories, session files, conversations) of every shared set and the
   extra texts, reported on the held-out half;
3. the PyPI texts, with the weights ``heuristic.py`` ships (fitted on all of
   the shared data and the extra texts, none of these);
4. in-sample, labelled so: the shipped weights on the texts they were fitted
   on.

``len/4`` is shown beside each row. Then the speed: every shared-data message
text counted one call at a time, heuristic against ``BPETokenizer.count``
(the same texts, the same run, best of 3), and the same on the PyPI texts.
Goal: median <= 3 % and p90 <= 10 % on every held-out row, speed >= 4x.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import _texts
from _data import best_of

from contextwindow.tokens import BPETokenizer, HeuristicTokenizer, heuristic

GOAL = (0.03, 0.10)
Item = tuple[str, str, int, tuple[int, ...]]
"""A text's group, the text, its o200k count and its heuristic features."""


def errors(estimates: Sequence[float], truth: Sequence[int]) -> tuple[float, float]:
    """Median and 90th percentile of the absolute relative error."""
    errs = sorted(abs(e - t) / t for e, t in zip(estimates, truth, strict=True))
    return errs[len(errs) // 2], errs[int(0.9 * (len(errs) - 1))]


def main() -> None:
    t_start = time.perf_counter()
    bpe = BPETokenizer("o200k_base")
    heur = HeuristicTokenizer()
    shared = _texts.shared_sets()
    extras = _texts.training_extras()
    pypi = _texts.pypi_sets()
    # Each text once: its group, the text, its o200k count and its features.
    items: dict[str, list[Item]] = {}
    for name, grouped in {**shared, **extras, **pypi}.items():
        items[name] = [
            (g, t, n, heuristic._features(t))
            for g, t in grouped
            if (n := bpe.count(t)) > 0
        ]

    def normal(chosen: list[Item]) -> _texts.Normal:
        return _texts.normal([(x, n) for _, _, n, x in chosen])

    def half(name: str, held: bool) -> list[Item]:
        return [i for i in items[name] if _texts.held_out(i[0]) == held]

    systems = {name: normal(items[name]) for name in (*shared, *extras)}
    extra = [systems[name] for name in extras]

    print(
        f"{'set':<34}{'texts':>7}{'median':>9}{'p90':>9}"
        f"{'len/4 median':>14}{'p90':>8}   goal met"
    )

    def line(label: str, chosen: list[Item], estimates: list[int]) -> None:
        truth = [n for _, _, n, _ in chosen]
        med, p90 = errors(estimates, truth)
        q_med, q_p90 = errors([len(t) / 4 for _, t, _, _ in chosen], truth)
        ok = "yes" if med <= GOAL[0] and p90 <= GOAL[1] else "no"
        print(
            f"  {label:<32}{len(chosen):>7,}{med:>9.2%}{p90:>9.2%}"
            f"{q_med:>14.2%}{q_p90:>8.2%}   {ok}"
        )

    def refitted(weights: list[float], chosen: list[Item]) -> list[int]:
        return [_texts.estimate(weights, x) for _, _, _, x in chosen]

    def shipped(chosen: list[Item]) -> list[int]:
        return [heur.count(t) for _, t, _, _ in chosen]

    print("1. each shared data set left out (refitted on the others + extras)")
    for out in shared:
        w = _texts.solve(_texts.add(*(systems[n] for n in shared if n != out), *extra))
        line(out, items[out], refitted(w, items[out]))
    print("2. half of the groups of each shared set held out (refitted on the rest)")
    w = _texts.solve(
        _texts.add(*(normal(half(name, held=False)) for name in shared), *extra)
    )
    for name in shared:
        test = half(name, held=True)
        line(f"{name}, held-out half", test, refitted(w, test))
    print("3. texts PyPI packages ship, never fitted on (the shipped weights)")
    for name in pypi:
        line(name, items[name], shipped(items[name]))
    print("4. in-sample (the shipped weights on texts they were fitted on)")
    for name in (*shared, *extras):
        line(name, items[name], shipped(items[name]))

    def count_all(count: Callable[[str], int], texts: list[str]) -> None:
        for text in texts:
            count(text)

    print(f"\n{'tokenizer':<26}{'seconds':>9}{'MB/s':>9}{'ratio':>9}")
    for label, texts in (
        ("shared data", [i[1] for n in shared for i in items[n]]),
        ("PyPI texts", [i[1] for n in pypi for i in items[n]]),
    ):
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
        t_heur = best_of(lambda texts=texts: count_all(heur.count, texts))
        t_bpe = best_of(lambda texts=texts: count_all(bpe.count, texts))
        print(f"{label}: {len(texts):,} texts, {size / 1e6:.1f} MB (UTF-8)")
        ratio = t_bpe / t_heur
        mbs = size / t_heur / 1e6
        print(f"  {'heuristic':<24}{t_heur:>9.3f}{mbs:>9.1f}{ratio:>8.1f}x")
        print(f"  {'o200k BPE':<24}{t_bpe:>9.3f}{size / t_bpe / 1e6:>9.1f}")
    print(f"\n({time.perf_counter() - t_start:.0f} s in all)")


if __name__ == "__main__":
    main()
