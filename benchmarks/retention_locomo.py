"""How much of what a question needs survives fitting: LoCoMo evidence turns.

Usage::

    python benchmarks/retention_locomo.py [--sample N] [--no-embeddings]

For every QA item of ``locomo10.json`` (the 1,978 whose evidence names turns
of the conversation; 4 items have no evidence and a few ids are typos), the
item's conversation with the question appended last (a user message) is
fitted to 10 % and 25 % of its own tokens (exact o200k, OpenAI framing), by:

- (a) ``fit(..., strategy=DropOldest())``;
- (b) LangChain ``trim_messages(strategy="last")`` on the same conversation
  (``to_openai`` then ``convert_to_messages``), counting with the OpenAI
  cookbook's framing over the same tokenizer;
- (c) ``fit(..., strategy=SelectRelevant())``: BM25, offline;
- (d) ``SelectRelevant(scorer=EmbeddingScorer(MiniLMEmbedder()))``: BM25
  blended with all-MiniLM-L6-v2 cosines, when the ``embeddings`` extra is
  installed (skipped with a note otherwise, or with ``--no-embeddings``).

Printed: the share of evidence turns still in the fitted conversation, by QA
category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5
adversarial) and in all, per method and budget; then the time each method
took. The question is the query; nothing is tuned per item. ``--sample N``
takes N items at random (seed 0) instead of all of them.

LoCoMo turns are read by ``read_transcripts``: speaker A is ``user``,
speaker B ``assistant``, each named for the speaker, image captions as a
second text part (``[shared an image: ...]``) and the session's date in
``meta``; ``SelectRelevant`` scores a turn by its speaker, date and text.
"""

from __future__ import annotations

import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from _data import data_dir, minilm
from fit_speed import cookbook_counter
from langchain_core.messages import BaseMessage, convert_to_messages, trim_messages

from contextwindow import fit
from contextwindow.formats import to_openai
from contextwindow.messages import Message
from contextwindow.relevance import EmbeddingScorer
from contextwindow.strategies import DropOldest, SelectRelevant, Strategy
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts

SHARES = (0.10, 0.25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
CATEGORIES[5] = "adversarial"


@dataclass
class Item:
    """One QA item: its conversation, question, category and evidence turns."""

    conversation: int
    question: str
    category: int
    evidence: tuple[int, ...]
    """Indices of the evidence turns in the conversation."""


@dataclass
class Conversation:
    """One LoCoMo conversation, its counter and its LangChain form."""

    messages: list[Message]
    counter: TokenCounter
    langchain: list[BaseMessage]


def evidence_ids(raw: Sequence[str]) -> list[str]:
    """Evidence ids, split where one entry holds several (``D1:3; D1:5``)."""
    return [p.strip() for e in raw for p in re.split(r"[;,]", e) if p.strip()]


def load(tok: BPETokenizer) -> tuple[list[Conversation], list[Item]]:
    convs: list[Conversation] = []
    items: list[Item] = []
    for k, t in enumerate(read_transcripts(data_dir() / "locomo10.json")):
        msgs = list(t.messages)
        lc = convert_to_messages(to_openai(msgs))
        convs.append(Conversation(msgs, TokenCounter(tok), lc))
        where = {m.meta["dia_id"]: i for i, m in enumerate(msgs)}
        for qa in t.meta["qa"]:
            found = sorted(
                {where[e] for e in evidence_ids(qa.get("evidence", ())) if e in where}
            )
            if found:
                items.append(Item(k, qa["question"], qa["category"], tuple(found)))
    return convs, items


Method = Callable[[Conversation, Message, int], set[int]]
"""Given a conversation, the question and a limit: the turns kept."""


def ours(strategy: Strategy) -> Method:
    def run(conv: Conversation, question: Message, limit: int) -> set[int]:
        fitted = fit(
            [*conv.messages, question],
            limit=limit,
            strategy=strategy,
            tokenizer=conv.counter,
        )
        kept = {m.id for m in fitted.messages}
        return {i for i, m in enumerate(conv.messages) if m.id in kept}

    return run


def langchain(tok: BPETokenizer) -> Method:
    count = cookbook_counter(tok)

    def run(conv: Conversation, question: Message, limit: int) -> set[int]:
        asked = convert_to_messages([{"role": "user", "content": question.text}])
        out = trim_messages(
            [*conv.langchain, *asked],
            strategy="last",
            max_tokens=limit,
            token_counter=count,
        )
        # "last" keeps a suffix: the question and the turns just before it.
        n = len(conv.messages)
        return set(range(n - (len(out) - 1), n)) if out else set()

    return run


def embedding_method() -> Method | str:
    """(d), or why it is not run."""
    embedder = minilm()
    if isinstance(embedder, str):
        return embedder
    return ours(SelectRelevant(scorer=EmbeddingScorer(embedder)))


def main() -> None:
    tok = BPETokenizer("o200k_base")
    convs, items = load(tok)
    if "--sample" in sys.argv:
        n = int(sys.argv[sys.argv.index("--sample") + 1])
        items = random.Random(0).sample(items, n)
    methods: dict[str, Method | str] = {
        "(a) DropOldest": ours(DropOldest()),
        "(b) trim_messages last": langchain(tok),
        "(c) SelectRelevant BM25": ours(SelectRelevant()),
        "(d) SelectRelevant BM25+MiniLM": embedding_method(),
    }
    wanted = Counter[int]()
    for item in items:
        wanted[item.category] += len(item.evidence)
    total_turns = sum(wanted.values())
    print(
        f"{len(items):,} QA items, {total_turns:,} evidence turns, "
        f"{len(convs)} conversations ({sum(len(c.messages) for c in convs):,} turns)\n"
    )
    header = "".join(f"{CATEGORIES[c][:11]:>12}" for c in sorted(CATEGORIES))
    print(f"{'method':<32}{'budget':>7}{header}{'all':>8}{'seconds':>9}")
    for name, method in methods.items():
        if isinstance(method, str):
            print(f"{name:<32}  {method}")
            continue
        for share in SHARES:
            kept = Counter[int]()
            t0 = time.perf_counter()
            for item in items:
                conv = convs[item.conversation]
                question = Message.user(item.question)
                full = conv.counter.messages([*conv.messages, question])
                turns = method(conv, question, int(full * share))
                kept[item.category] += sum(1 for e in item.evidence if e in turns)
            took = time.perf_counter() - t0
            cells = "".join(
                f"{kept[c] / wanted[c]:>12.1%}" if wanted[c] else f"{'-':>12}"
                for c in sorted(CATEGORIES)
            )
            share_all = sum(kept.values()) / total_turns
            print(
                f"{name:<32}{share:>7.0%}{cells}{share_all:>8.1%}{took:>9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
