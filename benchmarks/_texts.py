"""Texts that fit and measure ``HeuristicTokenizer``, grouped for splits.

Shared by ``benchmarks/heuristic_accuracy.py`` and ``scripts/fit_heuristic.py``.
Every set is a list of ``(group, text)`` pairs; a group is the unit a split
keeps whole (a tau-bench trajectory, a Claude Code session file, a LoCoMo
conversation, a source file, a language), so no held-out text shares a file
with a fitted one.

- ``shared_sets()``: the shared data (``_data.py`` walks the raw files):
  ``tau-bench``, ``claude-code``, ``locomo``.
- ``training_extras()``: texts only the fit uses, for what the shared data
  lacks: the Python sources of ``click`` (code), the interface strings of
  ``mkdocs-material``'s translations (non-English and CJK, short), and the
  small multilingual sample ``MULTILINGUAL``.
- ``pypi_sets()``: texts that installed packages ship and that no fit ever
  sees: ``code`` (a quarter of the standard library's top-level modules, by a
  hash of the file name, in chunks of about 1,500 characters at line ends),
  ``json`` (the JSON Schema metaschemas of ``jsonschema-specifications`` and a
  part of the model table that ``litellm`` ships, in chunks), ``cjk`` (the
  Chinese, Japanese and Korean translations of Django, four strings a text,
  and the CJK sample texts of CPython's ``test/cjkencodings``) and ``prose``
  (Django's translations into every other language but English, four
  strings a text). A missing package's texts are left out.
"""

# ruff: noqa: RUF001  (the multilingual sample is meant to hold look-alike letters)
from __future__ import annotations

import importlib.util
import json
import re
import sysconfig
import zlib
from collections.abc import Sequence
from pathlib import Path

import _data

Grouped = list[tuple[str, str]]
"""(group, text) pairs of one data set."""

SHARED = ("tau-bench", "claude-code", "locomo")

# Written for the fit: everyday sentences in scripts the shared data lacks.
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


def held_out(group: str) -> bool:
    """Half of the groups are held out (a stable hash of the group's name)."""
    return zlib.crc32(group.encode()) % 2 == 0


def chunks(text: str, size: int = 1500) -> list[str]:
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
        claude += [(path.name, t) for t in _data.claude_file_texts(path)]
    locomo: Grouped = []
    for k, sample in enumerate(json.loads((data / "locomo10.json").read_text())):
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                locomo += [(str(k), t["text"]) for t in turns if t.get("text")]
    return {"tau-bench": tau, "claude-code": claude, "locomo": locomo}


def training_extras() -> dict[str, Grouped]:
    """Texts only the fit uses: code, and the scripts the shared data lacks."""
    out: dict[str, Grouped] = {
        "sample": [(str(k), t) for k, t in enumerate(MULTILINGUAL)]
    }
    root = package("click")
    if root is not None:
        out["click"] = [
            (p.name, c)
            for p in sorted(root.glob("*.py"))
            for c in chunks(p.read_text())
        ]
    root = package("material")
    if root is not None:
        found: Grouped = []
        for p in sorted((root / "templates" / "partials" / "languages").glob("*.html")):
            if p.stem == "en":
                continue
            values = re.findall(r'^\s*"[\w.]+": "(.*)",?$', p.read_text(), re.M)
            kept = [v for v in values if len(v) > 3 and not v.startswith("[")]
            found += [
                (p.stem, "\n".join(kept[k : k + 8])) for k in range(0, len(kept), 8)
            ]
        out["mkdocs-material"] = found
    return out


def pypi_sets() -> dict[str, Grouped]:
    """Code, JSON, CJK and other prose that installed packages ship (held out)."""
    out: dict[str, Grouped] = {}
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    code: Grouped = []
    for p in sorted(stdlib.glob("*.py")):
        if zlib.crc32(p.name.encode()) % 4 == 0:
            text = p.read_text(encoding="utf-8", errors="replace")
            code += [(p.name, c) for c in chunks(text)]
    if code:
        out["code"] = code
    found: Grouped = []
    root = package("jsonschema_specifications")
    if root is not None:
        for p in sorted(root.rglob("*.json")):
            found += [(p.name, c) for c in chunks(p.read_text())]
    root = package("litellm")  # found, not imported: importing it goes online
    if root is not None:
        p = root / "model_prices_and_context_window_backup.json"
        if p.exists():
            pieces = chunks(p.read_text())[:400]
            found += [(f"litellm-{k // 20}", c) for k, c in enumerate(pieces)]
    if found:
        out["json"] = found
    cjk: Grouped = []
    prose: Grouped = []
    root = package("django")
    if root is not None:
        for p in sorted(root.rglob("django.po")):
            lang = p.parts[-3]
            if lang.startswith("en"):
                continue
            kept = [v for v in po_strings(p.read_text(encoding="utf-8")) if len(v) > 3]
            into = cjk if lang.split("_")[0] in ("zh", "ja", "ko") else prose
            into += [(lang, "\n".join(kept[k : k + 4])) for k in range(0, len(kept), 4)]
    for p in sorted((stdlib / "test" / "cjkencodings").glob("*-utf8.txt")):
        text = p.read_text(encoding="utf-8")
        cjk += [(p.name, t) for t in text.split("\n\n") if t.strip()]
    if cjk:
        out["cjk"] = cjk
    if prose:
        out["prose"] = prose
    return out


_ESCAPES = {"n": "\n", "t": "\t"}


def po_strings(text: str) -> list[str]:
    """The translations (``msgstr``, continued lines joined) of a gettext file."""
    out: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("msgstr"):
            m = re.match(r'msgstr(?:\[\d+\])? "(.*)"$', line)
            current = [m.group(1)] if m else None
            if current is not None:
                out.append(current)
        elif line.startswith('"') and current is not None:
            current.append(line[1:-1])
        else:
            current = None
    return [
        re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), "".join(parts))
        for parts in out
    ]


def package(name: str) -> Path | None:
    """Where an installed package's files are (``None`` if it is not installed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


Rows = list[tuple[tuple[float, ...], int]]
"""Features and the exact o200k count of each text."""
Normal = tuple[list[list[float]], list[float]]
"""The normal equations of a least-squares fit, summed over texts."""


def normal(rows: Rows) -> Normal:
    """Normal equations of the squared *relative* error over ``rows``.

    Minimising ``sum(((x . w - n) / n) ** 2)`` weighs each text the same
    whatever its length, which is what a median or p90 relative error over
    texts rewards. Sums of two sets' equations are the equations of their union.
    """
    k = len(rows[0][0])
    a = [[0.0] * k for _ in range(k)]
    b = [0.0] * k
    for x, n in rows:
        v = [xi / n for xi in x]
        nz = [(i, vi) for i, vi in enumerate(v) if vi]
        for i, vi in nz:
            b[i] += vi
            row = a[i]
            for j, vj in nz:
                row[j] += vi * vj
    return a, b


def add(*systems: Normal) -> Normal:
    """The normal equations of the union of the sets behind ``systems``."""
    k = len(systems[0][1])
    a = [[sum(s[0][i][j] for s in systems) for j in range(k)] for i in range(k)]
    return a, [sum(s[1][i] for s in systems) for i in range(k)]


def solve(system: Normal) -> list[float]:
    """Weights solving ``system`` (Gauss-Jordan, partial pivoting; a tiny ridge
    gives a feature that no fitted text has a weight of about 0)."""
    a = [row[:] for row in system[0]]
    b = system[1][:]
    k = len(b)
    for i in range(k):
        a[i][i] += 1e-9 * max(1.0, a[i][i])
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


def estimate(weights: Sequence[float], x: Sequence[float]) -> int:
    """The rounded estimate, as ``HeuristicTokenizer.count`` rounds it."""
    est = sum(w * xi for w, xi in zip(weights, x, strict=True))
    return int(est + 0.5) if est >= 1.0 else 1
