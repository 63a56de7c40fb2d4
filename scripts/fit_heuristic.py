"""Fit the weights of ``contextwindow.tokens.heuristic`` against o200k_base,
and measure them on texts they were not fitted on.

Usage::

    python scripts/fit_heuristic.py   # data: $CONTEXTWINDOW_DATA or ../shared/data

Least squares on the *relative* error (each text weighs the same whatever its
length, which is what "median / p90 relative error over every message"
rewards), over every feature at once.

The data sets, each split into a training and a held-out part by group (a
tau-bench trajectory, a Claude Code session file, a LoCoMo conversation, a
source file, a language), one group in five held out:

- the shared data (``benchmarks/_data.py`` walks the raw files): ``tau-bench``,
  ``claude-code``, ``locomo``;
- texts that packages installed from PyPI ship: ``code`` (the Python sources
  of ``click``, in chunks of about 1,500 characters at line ends), ``json``
  (the JSON Schema metaschemas of ``jsonschema-specifications`` and the model
  table ``litellm`` ships, in chunks), ``cjk`` and ``prose`` (the interface
  strings of ``mkdocs-material``'s translations, one text per language:
  Chinese, Japanese and Korean; every other language but English), plus the
  small multilingual sample below (training only).

It prints three tables: each shared data set left out (the weights fitted on
the two others and every training part), each held-out part (the weights
refitted on every training part, and beside them the weights heuristic.py
ships, which were fitted on all of the shared data, so that column is
in-sample for the three shared sets), and the refitted weights on their own
training texts, labelled in-sample. Then the refitted ``_W_*`` block, to paste
into heuristic.py when it does better. Needs only the package (tiktoken), the standard
library and the packages named above (a missing one's set is skipped).
"""

# ruff: noqa: RUF001  (the multilingual sample is meant to hold look-alike letters)
from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys
import zlib
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import _data

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


Grouped = list[tuple[str, str]]
"""(group, text) pairs of one data set."""


def _chunks(text: str, size: int = 1500) -> list[str]:
    """``text`` cut at line ends into pieces of about ``size`` characters."""
    out, piece = [], ""
    for line in text.splitlines(keepends=True):
        piece += line
        if len(piece) >= size:
            out.append(piece)
            piece = ""
    if piece.strip():
        out.append(piece)
    return out


def shared_sets() -> dict[str, Grouped]:
    """The shared data, grouped: trajectory, session file, conversation."""
    data = _data.data_dir()
    tau: Grouped = []
    for k, traj in enumerate(
        json.loads((data / "tau-bench_gpt-4o-airline.json").read_text())
    ):
        for msg in traj["traj"]:
            content = msg.get("content")
            if isinstance(content, str) and content:
                tau.append((str(k), content))
            for call in msg.get("tool_calls") or ():
                if call["function"].get("arguments"):
                    tau.append((str(k), call["function"]["arguments"]))
    claude: Grouped = []
    for path in _data.claude_files(data):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                record = json.loads(line)
                if record.get("type") not in ("user", "assistant"):
                    continue
                content = record["message"].get("content")
                blocks = (
                    [content]
                    if isinstance(content, str)
                    else [t for b in content or () for t in _data._block_texts(b)]
                )
                claude += [(path.name, t) for t in blocks if t]
    locomo: Grouped = []
    for k, sample in enumerate(json.loads((data / "locomo10.json").read_text())):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                locomo += [(str(k), t["text"]) for t in turns if t.get("text")]
    return {"tau-bench": tau, "claude-code": claude, "locomo": locomo}


def package_sets() -> dict[str, Grouped]:
    """Code, JSON, CJK and other prose that installed PyPI packages ship."""
    out: dict[str, Grouped] = {}
    root = _package("click")
    if root is not None:
        out["code"] = [
            (p.name, c)
            for p in sorted(root.glob("*.py"))
            for c in _chunks(p.read_text())
        ]
    found: Grouped = []
    root = _package("jsonschema_specifications")
    if root is not None:
        for p in sorted(root.rglob("*.json")):
            found += [(p.name, c) for c in _chunks(p.read_text())]
    root = _package("litellm")  # found, not imported: importing it goes online
    if root is not None:
        p = root / "model_prices_and_context_window_backup.json"
        if p.exists():
            pieces = _chunks(p.read_text())[:400]
            found += [(f"litellm-{k // 20}", c) for k, c in enumerate(pieces)]
    if found:
        out["json"] = found
    root = _package("material")
    if root is not None:
        root = root / "templates" / "partials" / "languages"
        cjk: Grouped = []
        prose: Grouped = []
        for p in sorted(root.glob("*.html")):
            lang = p.stem
            values = re.findall(r'^\s*"[\w.]+": "(.*)",?$', p.read_text(), re.M)
            kept = [v for v in values if len(v) > 3 and not v.startswith("[")]
            if lang == "en":
                continue
            into = cjk if lang.split("-")[0] in ("zh", "ja", "ko") else prose
            # Eight strings a text, one line each; held out by language.
            for k in range(0, len(kept), 8):
                into.append((lang, "\n".join(kept[k : k + 8])))
        out["cjk"], out["prose"] = cjk, prose
    return out


def _package(name: str) -> Path | None:
    """Where an installed package's files are (``None`` if it is not installed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def held_out(group: str) -> bool:
    """One group in five is held out (a stable hash of its name)."""
    return zlib.crc32(group.encode()) % 5 == 0


Rows = list[tuple[list[int], int]]


def rows(texts: Sequence[str], bpe: BPETokenizer) -> Rows:
    """Features and the exact count of each text (empty ones left out)."""
    return [(list(heuristic._features(t)), n) for t in texts if (n := bpe.count(t)) > 0]


def fit(data: Rows) -> list[float]:
    """Weights of every feature, least squares on the relative error."""
    return solve([f for f, _ in data], [n for _, n in data], [n for _, n in data])


def score(weights: Sequence[float], data: Rows) -> tuple[float, float, int]:
    """Median and p90 relative error of the rounded estimate, and the count."""
    est = [
        max(1, int(sum(w * x for w, x in zip(weights, f, strict=True)) + 0.5))
        for f, _ in data
    ]
    med, p90 = errors(est, [n for _, n in data])
    return med, p90, len(data)


def main() -> None:
    bpe = BPETokenizer("o200k_base")
    sets = {**shared_sets(), **package_sets()}
    train: dict[str, Rows] = {}
    test: dict[str, Rows] = {}
    for name, grouped in sets.items():
        train[name] = rows([t for g, t in grouped if not held_out(g)], bpe)
        test[name] = rows([t for g, t in grouped if held_out(g)], bpe)
    sample = rows(MULTILINGUAL, bpe)
    shared = ("tau-bench", "claude-code", "locomo")

    shipped = heuristic._weights()

    def line(label: str, *results: tuple[float, float, int]) -> str:
        cells = "".join(f"{med:>9.2%}{p90:>9.2%}" for med, p90, _ in results)
        return f"  {label:<30}{results[0][2]:>7,}{cells}"

    print("each shared data set left out (fitted on the others), median and p90:")
    for out in shared:
        fitted = [r for name in sets if name != out for r in train[name]]
        fitted += [r for name in shared if name != out for r in test[name]]
        w = fit(fitted + sample)
        print(line(out, score(w, train[out] + test[out])))
    weights = fit([r for name in sets for r in train[name]] + sample)
    print(
        "held-out part of each set: refitted on every training part | the "
        "weights heuristic.py ships (fitted on all of the shared data: "
        "in-sample there)"
    )
    pooled: Rows = []
    for name in sets:
        pooled += test[name]
        print(line(name, score(weights, test[name]), score(shipped, test[name])))
    print(line("all held-out parts", score(weights, pooled), score(shipped, pooled)))
    print("in-sample: the refitted weights on the texts they were fitted on")
    seen = [r for name in sets for r in train[name]]
    print(line("all training parts", score(weights, seen)))

    print("\n# Refitted by scripts/fit_heuristic.py (o200k_base), training parts.")
    for name, w in zip(heuristic.FEATURES, weights, strict=True):
        print(f"{CONSTANTS[name]} = {w:.4f}")


if __name__ == "__main__":
    main()
