from __future__ import annotations

import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextwindow.errors import ArgumentTypeError
from contextwindow.tokens import BPETokenizer, HeuristicTokenizer, Tokenizer
from contextwindow.tokens import heuristic as heuristic_module

O200K = BPETokenizer("o200k_base")
HEUR = HeuristicTokenizer()

PROSE = (
    "The airline policy says a passenger may change a basic economy ticket only "
    "within 24 hours of booking. After that, changes are not allowed."
)
CODE = (
    "defmodule Spotter.Transcripts do\n"
    "  def list_sessions(project_id, opts \\\\ []) do\n"
    "    Repo.all(from s in Session, where: s.project_id == ^project_id, limit: 50)\n"
    "  end\nend\n"
)
CHINESE = (
    "上下文窗口是模型一次能够处理的最大令牌数量。"
    "当对话变得太长时，需要删除较早的消息。"  # noqa: RUF001  (a real fullwidth comma)
)
JAPANESE = "東京の天気は晴れです。明日は雨が降るかもしれません。"


def rel_err(text: str) -> float:
    truth = O200K.count(text)
    return abs(HEUR.count(text) - truth) / truth


def modelled(text: str) -> float:
    """The weighted sum of the fitted and the pinned features, unrounded."""
    pairs = [
        *zip(
            heuristic_module._weights(), heuristic_module._features(text), strict=True
        ),
        *zip(
            heuristic_module._pinned_weights(),
            heuristic_module._pinned(text),
            strict=True,
        ),
    ]
    return sum(w * f for w, f in pairs)


class TestHeuristicTokenizer:
    def test_protocol(self) -> None:
        """It is a Tokenizer named heuristic, and not exact."""
        assert isinstance(HEUR, Tokenizer)
        assert (HEUR.name, HEUR.exact) == ("heuristic", False)

    def test_repr(self) -> None:
        """The repr rebuilds an equivalent tokenizer."""
        assert repr(HEUR) == "HeuristicTokenizer()"

    def test_empty_is_zero(self) -> None:
        """The empty string counts 0."""
        assert HEUR.count("") == 0

    def test_any_text_counts_at_least_one(self) -> None:
        """Every non-empty text, even one space or one letter, counts at least 1."""
        for text in [" ", "a", "\n", ".", "7", "é", "字", "🙂", " " * 50]:
            assert HEUR.count(text) >= 1, text

    def test_short_texts_within_one_token(self) -> None:
        """Short replies (1-5 tokens) are counted within one token of o200k."""
        texts = ["Yes", "OK", "Thanks!", "Hello, world!", "hi there", "###STOP###"]
        texts += ["How old is Luna?", "Now run all tests.", "Transfer successful"]
        for text in texts:
            assert abs(HEUR.count(text) - O200K.count(text)) <= 1, text
        assert [HEUR.count(t) for t in ("Yes", "OK", "Hello, world!")] == [1, 1, 4]

    def test_grows_with_text(self) -> None:
        """Repeating a text never lowers its count, and roughly scales it."""
        one = HEUR.count(PROSE)
        counts = [HEUR.count(" ".join([PROSE] * k)) for k in range(1, 6)]
        assert counts == sorted(counts)
        assert 4.5 * one <= counts[-1] <= 5.5 * one

    def test_prose_and_code_close_to_o200k(self) -> None:
        """English prose and source code are within 15 % of o200k."""
        assert rel_err(PROSE) <= 0.15
        assert rel_err(CODE) <= 0.15

    def test_cjk_counts_per_character(self) -> None:
        """CJK text costs roughly a token per character, as in o200k, not len/4."""
        for text in (CHINESE, JAPANESE):
            per_char = HEUR.count(text) / len(text)
            assert 0.5 <= per_char <= 1.0, text
            assert rel_err(text) <= 0.2, text

    def test_code_costs_more_than_prose_per_char(self) -> None:
        """Code and punctuation cost more per character than English prose."""
        assert HEUR.count(CODE) / len(CODE) > HEUR.count(PROSE) / len(PROSE)

    def test_digits_counted(self) -> None:
        """Digits cost more than letters of the same length."""
        assert HEUR.count("4815162342 1234567") > HEUR.count("abcdefghij abcdefg")

    def test_lone_surrogate_does_not_raise(self) -> None:
        """Text holding a lone surrogate (from bad JSON) is still counted."""
        assert HEUR.count("ab\ud800cd") >= 1

    def test_count_matches_features(self) -> None:
        """The inlined hot path equals the weighted feature sum used by the fit."""
        weights = heuristic_module._weights()
        texts = [PROSE, CODE, CHINESE, "x → y — “z” 🚀", "Ünïcödé 12 345"]
        texts += ["a\x00\x00\x00b\x1b[0m\x7f", "\u1112\u1161\u11ab \u1100\u1173\u11af"]
        for text in texts:
            feats = heuristic_module._features(text)
            assert len(feats) == len(weights) == len(heuristic_module.FEATURES)
            assert HEUR.count(text) == max(1, int(modelled(text) + 0.5)), text

    def test_pinned_weights_keep_their_rates(self) -> None:
        """A pinned feature's weight is its rate less the fitted weights it shares."""
        fitted = dict(
            zip(heuristic_module.FEATURES, heuristic_module._weights(), strict=True)
        )
        pinned = heuristic_module.PINNED
        for (rate, shared), w in zip(
            pinned.values(), heuristic_module._pinned_weights(), strict=True
        ):
            assert w == pytest.approx(rate - sum(fitted[n] for n in shared))
        assert [rate for rate, _ in pinned.values()] == [1.0, -1.0, 3.0]

    @pytest.mark.parametrize(
        "text",
        [
            "\x00" * 1000,
            "\x00",
            "\x00" * 3,
            "record\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" * 300,
            "".join(chr(i) for i in range(1, 32) if i not in (9, 10, 13)) * 100,
            "\x7f" * 100,
            ("word\x01" * 100),
            "".join(f"\x1b[32m[INFO]\x1b[0m step {i} done\n" for i in range(300)),
        ],
        ids=["nul-run", "nul", "3-nul", "nul-padded", "c0", "del", "word-ctrl", "ansi"],
    )
    def test_control_characters_at_o200k_rates(self, text: str) -> None:
        """Control characters and NUL padding count within 10 % of o200k (they
        counted 2-14 % of it as punctuation, whose runs merge)."""
        assert rel_err(text) <= 0.10

    def test_binary_read_as_text(self) -> None:
        """Binary records read as text (NULs, controls, Latin-1 or U+FFFD) are
        counted within 15 % of o200k (they counted 63-70 % of it)."""
        import random
        import struct

        rng = random.Random(7)
        records = b"".join(
            struct.pack("<IHh8s", rng.randrange(5000), i, -i, b"name%03d" % (i % 97))
            + bytes(rng.randrange(12))
            for i in range(1500)
        )
        for text in (records.decode("latin-1"), records.decode("utf-8", "replace")):
            assert rel_err(text) <= 0.15

    def test_decomposed_hangul(self) -> None:
        """Korean in NFD (macOS file names) counts as o200k does: three tokens a
        Jamo (it counted 15 %, as Indic text); composed Korean is unchanged."""
        import unicodedata

        korean = "프로젝트 보고서 최종본 파일 " * 100
        decomposed = unicodedata.normalize("NFD", korean)
        assert rel_err(decomposed) <= 0.10
        jamo = "".join(chr(c) for c in range(0x1100, 0x1113)) * 50
        assert HEUR.count(jamo) == O200K.count(jamo) == 3 * len(jamo)
        assert heuristic_module._pinned(korean) == (0, 0, 0)

    def test_accuracy_on_shared_data(
        self, message_texts: list[str], o200k_counts: list[int]
    ) -> None:
        """On every shared-data message text: median error <= 6 %, p90 <= 15 %."""
        errs = sorted(
            abs(HEUR.count(t) - n) / n
            for t, n in zip(message_texts, o200k_counts, strict=True)
        )
        median = statistics.median(errs)
        p90 = errs[int(0.9 * (len(errs) - 1))]
        assert median <= 0.06, median
        assert p90 <= 0.15, p90
        # And far better than the len/4 rule it replaces.
        quarter = sorted(
            abs(len(t) / 4 - n) / n
            for t, n in zip(message_texts, o200k_counts, strict=True)
        )
        assert p90 < 0.5 * quarter[int(0.9 * (len(quarter) - 1))]


def _django_translations(per_language: int = 6) -> list[str]:
    """Texts the heuristic was never fitted on: Django's translations.

    For every language but English and the CJK ones, ``per_language`` texts of
    four translated strings each (``msgstr`` of its core ``django.po``), spread
    evenly over the file.
    """
    import re
    from pathlib import Path

    import django  # type: ignore[import-untyped]

    root = Path(django.__file__).parent / "conf" / "locale"
    texts: list[str] = []
    for po in sorted(root.glob("*/LC_MESSAGES/django.po")):
        lang = po.parts[-3]
        if lang.startswith("en") or lang.split("_")[0] in ("zh", "ja", "ko"):
            continue
        found = re.findall(r'^msgstr(?:\[\d+\])? "(.+)"$', po.read_text("utf-8"), re.M)
        kept = [s.replace('\\"', '"') for s in found if len(s) > 3]
        groups = ["\n".join(kept[k : k + 4]) for k in range(0, len(kept), 4)]
        texts += groups[:: max(1, len(groups) // per_language)][:per_language]
    return [t for t in texts if t]


class TestHeldOut:
    def test_translations_never_fitted_on(self) -> None:
        """On Django's translations into ~90 languages (no fit saw them), the median
        error is within 25 % and the p90 within 50 % of o200k (the previous
        weights: 48 % and 67 % on this sample; now 20 % and 44 %), and well
        below len/4's."""
        texts = _django_translations()
        assert len(texts) > 300
        truth = [O200K.count(t) for t in texts]
        errs = sorted(
            abs(HEUR.count(t) - n) / n for t, n in zip(texts, truth, strict=True)
        )
        median, p90 = errs[len(errs) // 2], errs[int(0.9 * (len(errs) - 1))]
        assert median <= 0.25, median
        assert p90 <= 0.50, p90
        quarter = sorted(
            abs(len(t) / 4 - n) / n for t, n in zip(texts, truth, strict=True)
        )
        assert median < 0.6 * quarter[len(quarter) // 2]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    """Any text: a non-negative int, 0 only when empty, the same each call, and
    the rounded weighted feature sum the fit script models."""
    n = HEUR.count(text)
    assert isinstance(n, int)
    assert n == HEUR.count(text)
    assert (n == 0) == (text == "")
    if text:
        est = modelled(text)
        assert n == (int(est + 0.5) if est >= 1.0 else 1)


class TestArguments:
    @pytest.mark.parametrize("bad", [None, [], 0, False, b"x", ["a"], 5])
    def test_count_takes_a_str(self, bad: object) -> None:
        """A falsy non-str is no empty text (it counted 0); a truthy one is named."""
        with pytest.raises(ArgumentTypeError, match=r"^text: expected a str"):
            HeuristicTokenizer().count(bad)  # type: ignore[arg-type]  # the wrong type on purpose
