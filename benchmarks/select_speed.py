"""How fast ``SelectRelevant`` answers a query on a long conversation.

Usage::

    python benchmarks/select_speed.py [--no-embeddings]

The LoCoMo conversation closest to 600 turns, with one of its QA questions
appended last (a user message), fitted to 10 % of its tokens (exact o200k,
OpenAI framing) with the counter kept warm between calls, as an agent loop
or a manager would:

- index: the first ``SelectRelevant()`` call, which tokenises every turn;
- per query, once indexed: every QA question of the conversation in turn,
  called on the strategy directly and through ``fit`` (which validates the
  input first and has ``DropOldest`` to fall back on); median and worst;
- after one append: a new turn added before the question, then the query,
  twenty times (each time one more new turn): the cost of an agent loop's
  next turn, which tokenises the one new turn;
- peers on the same inputs: ``fit`` with ``DropOldest`` (no relevance) and
  LangChain ``trim_messages(strategy="last")`` (with the OpenAI cookbook's
  counter over the same tokenizer), what a user would otherwise run;
- with the ``embeddings`` extra (unless ``--no-embeddings``):
  ``SelectRelevant(scorer=EmbeddingScorer(MiniLMEmbedder()))``, indexing
  (embedding every turn) and per query (embedding the question), torch on
  one thread (see ``_data.minilm``).

Goal: under 50 ms per query once indexed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

from _data import data_dir, minilm
from fit_speed import cookbook_counter
from langchain_core.messages import BaseMessage, convert_to_messages, trim_messages

from contextwindow import fit
from contextwindow.formats import to_openai
from contextwindow.messages import Message
from contextwindow.relevance import EmbeddingScorer
from contextwindow.strategies import Budget, DropOldest, SelectRelevant, Strategy
from contextwindow.tokens import BPETokenizer, TokenCounter
from contextwindow.transcripts import read_transcripts

TARGET_TURNS = 600
SHARE = 0.10
APPENDS = 20
GOAL_MS = 50.0


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ms(values: Sequence[float]) -> str:
    """Median and worst, in milliseconds."""
    return f"{statistics.median(values) * 1e3:8.1f} {max(values) * 1e3:8.1f}"


def main() -> None:
    tok = BPETokenizer("o200k_base")
    transcripts = read_transcripts(data_dir() / "locomo10.json")
    t = min(transcripts, key=lambda x: abs(len(x.messages) - TARGET_TURNS))
    conv = list(t.messages)
    questions = [qa["question"] for qa in t.meta["qa"]]
    counter = TokenCounter(tok)
    limit = int(counter.messages(conv) * SHARE)
    print(
        f"conversation {t.title}: {len(conv)} turns, {counter.messages(conv):,} "
        f"tokens; budget {limit:,} ({SHARE:.0%}); {len(questions)} questions\n"
    )

    def run(strategy: Strategy, question: str, turns: list[Message]) -> None:
        strategy([*turns, Message.user(question)], Budget(limit, counter))

    def through_fit(strategy: Strategy, question: str, turns: list[Message]) -> None:
        fit(
            [*turns, Message.user(question)],
            limit=limit,
            strategy=strategy,
            tokenizer=counter,
        )

    rows: list[tuple[str, str]] = []
    bm25 = SelectRelevant()
    index = timed(lambda: run(bm25, questions[0], conv))
    rows.append(("SelectRelevant BM25: index (first call)", f"{index * 1e3:8.1f}"))
    direct = [timed(lambda q=q: run(bm25, q, conv)) for q in questions]
    rows.append(("  per query, once indexed", ms(direct)))
    fitted = [timed(lambda q=q: through_fit(bm25, q, conv)) for q in questions]
    rows.append(("  per query, through fit()", ms(fitted)))
    grown = list(conv)
    appended = []
    for k in range(APPENDS):
        grown = [*grown, Message.user(f"By the way, I repainted the fence ({k}).")]
        q = questions[k % len(questions)]
        appended.append(timed(lambda q=q, g=grown: through_fit(bm25, q, g)))
    rows.append(("  after one append, through fit()", ms(appended)))

    drop = [timed(lambda q=q: through_fit(DropOldest(), q, conv)) for q in questions]
    rows.append(("fit() DropOldest, per query", ms(drop)))
    peer = trim_peer(tok, conv, limit)
    trims = [timed(lambda q=q: peer(q)) for q in questions]
    rows.append(("trim_messages(strategy='last'), per query", ms(trims)))

    embedded = embedding_rows(conv, questions, run)
    print(f"{'':<44}{'median ms':>9}{'worst ms':>9}")
    for name, cells in [*rows, *embedded]:
        print(f"{name:<44}{cells}")
    median = statistics.median(fitted) * 1e3
    print(
        f"\nper query through fit(): {median:.1f} ms, goal under {GOAL_MS:.0f} ms: "
        f"{'met' if median < GOAL_MS else 'NOT met'}; "
        f"{statistics.median(trims) / statistics.median(fitted):.1f}x faster than "
        f"trim_messages, {statistics.median(fitted) / statistics.median(drop):.1f}x "
        "the cost of DropOldest"
    )


def trim_peer(
    tok: BPETokenizer, conv: list[Message], limit: int
) -> Callable[[str], list[BaseMessage]]:
    lc = convert_to_messages(to_openai(conv))
    count = cookbook_counter(tok)

    def trim(question: str) -> list[BaseMessage]:
        asked = convert_to_messages([{"role": "user", "content": question}])
        return trim_messages(
            [*lc, *asked], strategy="last", max_tokens=limit, token_counter=count
        )

    return trim


def embedding_rows(
    conv: list[Message],
    questions: list[str],
    run: Callable[[Strategy, str, list[Message]], None],
) -> list[tuple[str, str]]:
    embedder = minilm()
    if isinstance(embedder, str):
        return [("SelectRelevant BM25+MiniLM", f"  {embedder}")]
    blend = SelectRelevant(scorer=EmbeddingScorer(embedder))
    index = timed(lambda: run(blend, questions[0], conv))
    per = [timed(lambda q=q: run(blend, q, conv)) for q in questions[1:]]
    return [
        ("SelectRelevant BM25+MiniLM: index", f"{index * 1e3:8.1f}"),
        ("  per query (embeds the question)", ms(per)),
    ]


if __name__ == "__main__":
    main()
