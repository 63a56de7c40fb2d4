from __future__ import annotations

import builtins
import sys
from pathlib import Path
from typing import Any

import pytest
import tokenizers

from contextwindow.errors import ContextWindowError
from contextwindow.tokens import HFTokenizer, Tokenizer

CORPUS = [
    "the cat sat on the mat",
    "the dog sat on the log",
    "a cat and a dog",
] * 20


@pytest.fixture(scope="module")
def bpe_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BPE tokenizer.json trained in-test (no download)."""
    from tokenizers import Tokenizer as HF
    from tokenizers import models, pre_tokenizers, processors, trainers

    tok = HF(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=60, special_tokens=["[UNK]", "[BOS]"])
    tok.train_from_iterator(CORPUS, trainer)
    # A BOS the model would add around a whole prompt: counts must leave it out.
    tok.post_processor = processors.TemplateProcessing(
        single="[BOS] $A", special_tokens=[("[BOS]", tok.token_to_id("[BOS]"))]
    )
    path = tmp_path_factory.mktemp("tiny-bpe") / "tokenizer.json"
    tok.save(str(path))
    return path


class TestHFTokenizer:
    def test_counts_like_the_library(self, bpe_json: Path) -> None:
        """Counts equal the tokenizers library's own encoding, specials excluded."""
        ref = tokenizers.Tokenizer.from_file(str(bpe_json))
        tok = HFTokenizer.from_file(bpe_json)
        for text in ["the cat sat", "a dog and a cat on the mat", "zebra!"]:
            expected = len(ref.encode(text, add_special_tokens=False).ids)
            assert tok.count(text) == expected
            assert len(ref.encode(text).ids) == expected + 1  # the BOS left out

    def test_protocol_and_name(self, bpe_json: Path) -> None:
        """It is an exact Tokenizer named after the folder holding the file."""
        tok = HFTokenizer(bpe_json)
        assert isinstance(tok, Tokenizer)
        assert tok.exact is True
        assert tok.name == bpe_json.parent.name
        assert HFTokenizer(bpe_json, name="tiny").name == "tiny"

    def test_a_generic_folder_is_not_its_name(
        self, bpe_json: Path, tmp_path: Path
    ) -> None:
        """``Qwen2.5-7B/tokenizer/tokenizer.json`` is Qwen2.5-7B, not 'tokenizer'."""
        for generic in ("model", "tokenizer"):
            folder = tmp_path / "Qwen2.5-7B" / generic
            folder.mkdir(parents=True)
            (folder / "tokenizer.json").write_bytes(bpe_json.read_bytes())
            assert HFTokenizer(folder / "tokenizer.json").name == "Qwen2.5-7B"

    def test_repr_names_it(self, bpe_json: Path) -> None:
        """The repr shows the tokenizer's name."""
        assert repr(HFTokenizer(bpe_json, name="tiny")) == "HFTokenizer(name='tiny')"

    def test_empty_and_batch(self, bpe_json: Path) -> None:
        """Empty text counts 0; count_many equals count one by one."""
        tok = HFTokenizer(bpe_json)
        texts = ["the cat", "", "a dog and a log"]
        assert tok.count("") == 0
        assert tok.count_many(texts) == [tok.count(t) for t in texts]

    def test_word_level(self, tmp_path: Path) -> None:
        """A WordLevel tokenizer counts one token per known or unknown word."""
        from tokenizers import Tokenizer as HF
        from tokenizers import models, pre_tokenizers

        hf = HF(models.WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]"))
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
        path = tmp_path / "words.json"
        hf.save(str(path))
        tok = HFTokenizer(path)
        assert tok.name == "words"
        assert tok.count("hello there hello") == 3

    def test_padding_and_truncation_in_the_file_do_not_count(
        self, tmp_path: Path
    ) -> None:
        """A file that pads or cuts every text to a model's length (an embedding
        model's) counts each text whole; a lone surrogate counts, not raises."""
        from tokenizers import Tokenizer as HF
        from tokenizers import models, pre_tokenizers

        hf = HF(
            models.WordLevel({"hello": 0, "[UNK]": 1, "[PAD]": 2}, unk_token="[UNK]")
        )
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
        hf.enable_padding(length=8, pad_token="[PAD]", pad_id=2)
        hf.enable_truncation(max_length=8)
        path = tmp_path / "padded.json"
        hf.save(str(path))
        tok = HFTokenizer(path)
        assert tok.count("hello") == 1
        assert tok.count("hello " * 50) == 50
        assert tok.count_many(["hello", "hello " * 20]) == [1, 20]
        assert tok.count("cut \ud83d") == 2
        assert tok.count_many(["hello", "cut \ud83d"]) == [1, 2]

    def test_bad_file(self, tmp_path: Path) -> None:
        """A missing or invalid file is a ContextWindowError naming the path."""
        bad = tmp_path / "tokenizer.json"
        bad.write_text("{not json")
        with pytest.raises(ContextWindowError, match=r"tokenizer\.json"):
            HFTokenizer(bad)
        with pytest.raises(ContextWindowError, match=r"missing\.json"):
            HFTokenizer(tmp_path / "missing.json")

    def test_missing_package(
        self, bpe_json: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without tokenizers installed the error says what to pip install."""
        real_import = builtins.__import__

        def no_tokenizers(name: str, *args: Any, **kwargs: Any) -> Any:
            if name == "tokenizers" or name.startswith("tokenizers."):
                raise ImportError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.delitem(sys.modules, "tokenizers")
        monkeypatch.setattr(builtins, "__import__", no_tokenizers)
        hint = r"pip install 'contextwindow\[hf\]'"
        with pytest.raises(ContextWindowError, match=hint):
            HFTokenizer(bpe_json)
