"""Fit the weights of ``contextwindow.tokens.heuristic`` against o200k_base.

Usage::

    python scripts/fit_heuristic.py   # data: $CONTEXTWINDOW_DATA or ../shared/data

Two stages, both least squares on the *relative* error (each text weighs the
same whatever its length, which is what "median / p90 relative error over every
message" rewards):

1. ASCII and U+2000-block weights, on every message text of the shared data
   (``benchmarks/_data.py`` walks the raw files).
2. The weights of the other scripts (Latin extended, Greek/Cyrillic/Hebrew/
   Arabic, Indic/Thai, CJK, Hangul, emoji), which the data barely contains, on
   the small multilingual sample below with stage 1's weights held fixed.

It prints the ``_W_*`` block to paste into heuristic.py, then the accuracy of
the fitted estimate and of ``len/4`` on the shared data. Needs only the
package (tiktoken) and the standard library.
"""

# ruff: noqa: RUF001  (the multilingual sample is meant to hold look-alike letters)
from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from _data import message_texts

from contextwindow.tokens import heuristic
from contextwindow.tokens.bpe import BPETokenizer

# Feature name -> the constant it sets in heuristic.py.
CONSTANTS = {
    "text": "_W_TEXT",
    "char": "_W_CHAR",
    "lower": "_W_LOWER",
    "word_punct": "_W_WORD_PUNCT",
    "word_space": "_W_WORD_SPACE",
    "digit": "_W_DIGIT",
    "space2": "_W_SPACE2",
    "symbol": "_W_SYMBOL",
    "latin": "_W_LATIN",
    "alphabetic": "_W_ALPHABETIC",
    "other": "_W_OTHER",
    "cjk": "_W_CJK",
    "hangul": "_W_HANGUL",
    "emoji": "_W_EMOJI",
}
STAGE1 = (
    "text",
    "char",
    "lower",
    "word_punct",
    "word_space",
    "digit",
    "space2",
    "symbol",
)
STAGE2 = ("latin", "alphabetic", "other", "cjk", "hangul", "emoji")

# Written for this script: everyday sentences in scripts the shared data lacks.
MULTILINGUAL = [
    "La fenêtre de contexte est le nombre maximal de jetons que le modèle peut "
    "traiter en une seule fois. Quand la conversation devient trop longue, il "
    "faut supprimer les anciens messages.",
    "Das Kontextfenster ist die maximale Anzahl von Tokens, die das Modell auf "
    "einmal verarbeiten kann. Größere Gespräche müssen gekürzt werden.",
    "¿Dónde está la estación? Mañana salimos temprano hacia Córdoba y Málaga.",
    "A função retorna a última mensagem não lida e a situação do pedido.",
    "Контекстное окно — это максимальное количество токенов, которое модель "
    "может обработать за один раз. Старые сообщения нужно удалить или сжать.",
    "Завтра в Москве ожидается снег, температура около минус пяти градусов.",
    "Το παράθυρο περιβάλλοντος είναι ο μέγιστος αριθμός λεκτικών μονάδων που "
    "μπορεί να επεξεργαστεί το μοντέλο.",
    "نافذة السياق هي الحد الأقصى لعدد الرموز التي يمكن للنموذج معالجتها في "
    "وقت واحد. عندما تصبح المحادثة طويلة جدا، يجب حذف الرسائل القديمة.",
    "חלון ההקשר הוא המספר המרבי של אסימונים שהמודל יכול לעבד בבת אחת.",
    "संदर्भ विंडो टोकन की अधिकतम संख्या है जिसे मॉडल एक बार में संसाधित कर "
    "सकता है। जब बातचीत बहुत लंबी हो जाती है, तो पुराने संदेशों को हटाना पड़ता है।",
    "หน้าต่างบริบทคือจำนวนโทเค็นสูงสุดที่โมเดลสามารถประมวลผลได้ในครั้งเดียว "
    "เมื่อการสนทนายาวเกินไป จะต้องลบข้อความเก่าออก",
    "上下文窗口是模型一次能够处理的最大令牌数量。当对话变得太长时，我们需要删除或"
    "压缩较早的消息，同时保留系统提示和最近的工具调用结果。",
    "今天北京天气晴朗，最高气温二十五度。明天可能会下雨，请带好雨伞。",
    "コンテキストウィンドウとは、モデルが一度に処理できるトークンの最大数です。"
    "会話が長くなりすぎた場合は、古いメッセージを削除または要約する必要があります。",
    "東京の天気は晴れです。明日は雨が降るかもしれません。",
    "컨텍스트 창은 모델이 한 번에 처리할 수 있는 최대 토큰 수입니다. 대화가 너무 "
    "길어지면 오래된 메시지를 삭제하거나 요약해야 합니다.",
    "오늘 서울의 날씨는 맑고 기온은 이십오 도입니다.",
    "Great job 🎉🎉 thanks 🙏 see you 👋 🚀🔥✨ 😀😃😄",
    "Deploy done ✅ tests green 🟢 coffee ☕ time 🍕🍕",
]


def solve(
    rows: Sequence[Sequence[float]],
    targets: Sequence[float],
    scales: Sequence[float],
) -> list[float]:
    """Weighted least squares: minimise sum(((x . w - y) / scale) ** 2)."""
    k = len(rows[0])
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for x, y, scale in zip(rows, targets, scales, strict=True):
        inv2 = 1.0 / (scale * scale)
        for i in range(k):
            if x[i]:
                xi = x[i] * inv2
                b[i] += xi * y
                row = a[i]
                for j in range(k):
                    row[j] += xi * x[j]
    # Gauss-Jordan elimination with partial pivoting (a tiny ridge keeps
    # features absent from a sample solvable: they get weight ~0).
    for i in range(k):
        a[i][i] += 1e-9
    for col in range(k):
        piv = max(range(col, k), key=lambda r: abs(a[r][col]))
        a[col], a[piv] = a[piv], a[col]
        b[col], b[piv] = b[piv], b[col]
        p = a[col][col]
        for r in range(k):
            if r != col and a[r][col]:
                f = a[r][col] / p
                a[r] = [vr - f * vc for vr, vc in zip(a[r], a[col], strict=True)]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] for i in range(k)]


def errors(estimates: Sequence[float], truth: Sequence[int]) -> tuple[float, float]:
    """Median and 90th percentile of the absolute relative error."""
    errs = sorted(abs(e - t) / t for e, t in zip(estimates, truth, strict=True))
    return statistics.median(errs), errs[int(0.9 * (len(errs) - 1))]


def main() -> None:
    bpe = BPETokenizer("o200k_base")
    index = {name: i for i, name in enumerate(heuristic.FEATURES)}

    texts = message_texts()
    truth = [bpe.count(t) for t in texts]
    feats = [heuristic._features(t) for t in texts]
    cols1 = [index[n] for n in STAGE1]
    w1 = solve([[f[i] for i in cols1] for f in feats], truth, truth)
    weights = dict(zip(STAGE1, w1, strict=True))

    def partial(f: Sequence[int]) -> float:
        return sum(w * f[index[n]] for n, w in weights.items())

    sample = [heuristic._features(t) for t in MULTILINGUAL]
    sample_truth = [bpe.count(t) for t in MULTILINGUAL]
    cols2 = [index[n] for n in STAGE2]
    # Fit what stage 1 leaves unexplained, still relative to the true count.
    rows2 = [[f[i] for i in cols2] for f in sample]
    residual = [y - partial(f) for f, y in zip(sample, sample_truth, strict=True)]
    w2 = solve(rows2, residual, sample_truth)
    weights.update(zip(STAGE2, w2, strict=True))

    print("# Fitted by scripts/fit_heuristic.py (o200k_base).")
    for name in heuristic.FEATURES:
        print(f"{CONSTANTS[name]} = {weights[name]:.4f}")

    def estimate(f: Sequence[int]) -> float:
        est = sum(weights[n] * f[index[n]] for n in heuristic.FEATURES)
        return max(1, int(est + 0.5))

    med, p90 = errors([estimate(f) for f in feats], truth)
    q_med, q_p90 = errors([len(t) / 4 for t in texts], truth)
    s_med, s_p90 = errors([estimate(f) for f in sample], sample_truth)
    print(f"\n{len(texts)} texts: median {med:.2%}, p90 {p90:.2%}", end=" ")
    print(f"(len/4: {q_med:.2%}, {q_p90:.2%})")
    print(
        f"{len(MULTILINGUAL)} multilingual samples: median {s_med:.2%}, p90 {s_p90:.2%}"
    )


if __name__ == "__main__":
    main()
