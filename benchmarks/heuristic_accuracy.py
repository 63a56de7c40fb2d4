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
    rows: dict[str, _texts.Rows] = {}
    halves: dict[str, tuple[_texts.Rows, _texts.Rows]] = {}
    texts: dict[str, list[str]] = {}
    for name, grouped in {**shared, **extras, **pypi}.items():
        kept = [(g, t, n) for g, t in grouped if (n := bpe.count(t)) > 0]
        texts[name] = [t for _, t, _ in kept]
        rows[name] = [(heuristic._features(t), n) for _, t, n in kept]
        halves[name] = (
            [
                r
                for r, (g, _, _) in zip(rows[name], kept, strict=True)
                if not _texts.held_out(g)
            ],
            [
                r
                for r, (g, _, _) in zip(rows[name], kept, strict=True)
                if _texts.held_out(g)
            ],
        )
    systems = {name: _texts.normal(r) for name, r in rows.items() if name not in pypi}
    train_half = {name: _texts.normal(halves[name][0]) for name in shared}
    extra = [systems[name] for name in extras]

    print(
        f"{'set':<34}{'texts':>7}{'median':>9}{'p90':>9}"
        f"{'len/4 median':>14}{'p90':>8}   goal met"
    )

    def line(label: str, name: str, data: _texts.Rows, estimates: list[int]) -> None:
        truth = [n for _, n in data]
        med, p90 = errors(estimates, truth)
        quarter = [len(t) / 4 for t in _texts_of(name, data)]
        q_med, q_p90 = errors(quarter, truth) if quarter else (0.0, 0.0)
        ok = "yes" if med <= GOAL[0] and p90 <= GOAL[1] else "no"
        print(
            f"  {label:<32}{len(data):>7,}{med:>9.2%}{p90:>9.2%}"
            f"{q_med:>14.2%}{q_p90:>8.2%}   {ok}"
        )

    def _texts_of(name: str, data: _texts.Rows) -> list[str]:
        if data is rows[name]:
            return texts[name]
        keep = {id(r) for r in data}
        return [
            t for t, r in zip(texts[name], rows[name], strict=True) if id(r) in keep
        ]

    print("1. each shared data set left out (refitted on the others + extras)")
    for out in shared:
        w = _texts.solve(_texts.add(*(systems[n] for n in shared if n != out), *extra))
        line(out, out, rows[out], [_texts.estimate(w, x) for x, _ in rows[out]])
    print("2. half of the groups of each shared set held out (refitted on the rest)")
    w = _texts.solve(_texts.add(*train_half.values(), *extra))
    for name in shared:
        test = halves[name][1]
        line(
            f"{name}, held-out half",
            name,
            test,
            [_texts.estimate(w, x) for x, _ in test],
        )
    print("3. texts PyPI packages ship, never fitted on (the shipped weights)")
    for name in pypi:
        line(name, name, rows[name], [heur.count(t) for t in texts[name]])
    print("4. in-sample (the shipped weights on texts they were fitted on)")
    for name in (*shared, *extras):
        line(name, name, rows[name], [heur.count(t) for t in texts[name]])

    def count_all(count: Callable[[str], int], items: list[str]) -> None:
        for text in items:
            count(text)

    print(f"\n{'tokenizer':<26}{'seconds':>9}{'MB/s':>9}{'ratio':>9}")
    for label, items in (
        ("shared data", [t for n in shared for t in texts[n]]),
        ("PyPI texts", [t for n in pypi for t in texts[n]]),
    ):
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in items)
        t_heur = best_of(lambda items=items: count_all(heur.count, items))
        t_bpe = best_of(lambda items=items: count_all(bpe.count, items))
        print(f"{label}: {len(items):,} texts, {size / 1e6:.1f} MB (UTF-8)")
        ratio = t_bpe / t_heur
        mbs = size / t_heur / 1e6
        print(f"  {'heuristic':<24}{t_heur:>9.3f}{mbs:>9.1f}{ratio:>8.1f}x")
        print(f"  {'o200k BPE':<24}{t_bpe:>9.3f}{size / t_bpe / 1e6:>9.1f}")
    print(f"\n({time.perf_counter() - t_start:.0f} s in all)")


if __name__ == "__main__":
    main()
