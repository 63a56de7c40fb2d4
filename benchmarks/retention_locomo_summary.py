"""Answers that survive compressing the LoCoMo conversations to a quarter.

Usage::

    python benchmarks/retention_locomo_summary.py

Each of the 10 LoCoMo conversations (``locomo10.json``) becomes one chat
(speaker A as ``user``, speaker B as ``assistant``, each turn named for its
speaker); the first turn of each session opens with the session's date and
time, as in LoCoMo's own prompts (``[1:56 pm on 8 May, 2023]``), since the
temporal answers are dates. Each chat is fitted to 25 % of its own tokens
(exact o200k, OpenAI framing) by:

- extractive summary: ``fit`` with ``Summarize(ExtractiveSummarizer(o200k))``
  (``DropOldest`` finishes if the summary is not enough), at its default
  ``max_tokens`` (2,000) and with the summary given half the budget;
- drop-oldest: ``fit`` with ``DropOldest()``.

For every QA item of categories 1 (multi-hop), 2 (temporal) and 4
(single-hop), an answer is *kept* when its text (case and spacing ignored)
appears in the compressed context. The ceiling is the share whose answer text
appears in the whole conversation at all (many answers are paraphrases, or
dates to be computed, and never appear verbatim).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from _data import data_dir

from contextwindow import fit
from contextwindow.messages import Message, Text
from contextwindow.strategies import DropOldest, Strategy, Summarize
from contextwindow.summarizers import ExtractiveSummarizer
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts

CATEGORIES = (1, 2, 4)
SHARE = 0.25


def fold(text: str) -> str:
    return " ".join(text.lower().split())


def dated(messages: Sequence[Message]) -> list[Message]:
    """Each session's first turn opens with the session's date and time."""
    out: list[Message] = []
    session = None
    for m in messages:
        if m.meta.get("session") != session:
            session = m.meta.get("session")
            stamp = Text(f"[{m.meta.get('date_time')}]")
            m = replace(m, parts=(stamp, *m.parts))
        out.append(m)
    return out


def context(messages: Sequence[Message]) -> str:
    return fold("\n".join(m.text for m in messages))


def main() -> None:
    data = data_dir()
    tok = BPETokenizer("o200k_base")
    convs = read_transcripts(data / "locomo10.json")
    methods: list[tuple[str, object]] = [
        ("extractive summary (max_tokens 2,000)", "default"),
        ("extractive summary (half the budget)", "half"),
        ("drop-oldest", DropOldest()),
    ]
    names = [n for n, _ in methods]
    kept = dict.fromkeys(["whole conversation", *names], 0)
    by_cat = {(n, c): 0 for n in kept for c in CATEGORIES}
    per_cat = dict.fromkeys(CATEGORIES, 0)
    tokens = dict.fromkeys(names, 0)
    total_items = 0
    rows = []
    for t in convs:
        conv = dated(t.messages)
        counter = TokenCounter(tok, "openai")
        total = counter.messages(conv)
        limit = int(total * SHARE)
        qa = [
            q for q in t.meta["qa"] if q.get("category") in CATEGORIES and "answer" in q
        ]
        answers = [(q["category"], fold(str(q["answer"]))) for q in qa]
        texts = {"whole conversation": context(conv)}
        for name, how in methods:
            strategy: Strategy
            if how == "default":
                strategy = Summarize(ExtractiveSummarizer(tok))
            elif how == "half":
                strategy = Summarize(ExtractiveSummarizer(tok), max_tokens=limit // 2)
            else:
                strategy = how  # type: ignore[assignment]
            fitted = fit(conv, limit=limit, strategy=strategy, tokenizer=counter)
            texts[name] = context(fitted.messages)
            tokens[name] += fitted.report.tokens_after
        row = [t.title, f"{total:,}", f"{limit:,}", str(len(answers))]
        for name, text in texts.items():
            hits = [a in text for _, a in answers]
            kept[name] += sum(hits)
            for (cat, _), hit in zip(answers, hits, strict=True):
                by_cat[(name, cat)] += hit
            row.append(f"{sum(hits) / len(answers):.1%}")
        for cat, _ in answers:
            per_cat[cat] += 1
        total_items += len(answers)
        rows.append(row)
    head = ["conversation", "tokens", "budget (25 %)", "QA items", *kept]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    shares = [f"{kept[n] / total_items:.1%}" for n in kept]
    print(f"| all | | | {total_items} | " + " | ".join(shares) + " |")
    print()
    print("| category | QA items | " + " | ".join(kept) + " |")
    print("|" + "---|" * (2 + len(kept)))
    for cat in CATEGORIES:
        cells = [f"{by_cat[(n, cat)] / per_cat[cat]:.1%}" for n in kept]
        print(f"| {cat} | {per_cat[cat]} | " + " | ".join(cells) + " |")
    print()
    for name in names:
        print(f"{name}: {tokens[name]:,} tokens sent in all")


if __name__ == "__main__":
    main()
