from __future__ import annotations

import dataclasses
import hashlib
import os
from importlib import resources
from pathlib import Path

import pytest
import tiktoken
import tiktoken.registry

from contextwindow.errors import ArgumentTypeError, ContextWindowError
from contextwindow.tokens import BPETokenizer, Tokenizer, bpe, load_encoding
from contextwindow.tokens import bpe as bpe_module

# The blob paths tiktoken_ext.openai_public loads; tiktoken caches each file
# under sha1(blobpath) in TIKTOKEN_CACHE_DIR, so placing our shipped copy there
# lets tiktoken's own registry build the encoding without the network.
BLOBS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@pytest.fixture
def tiktoken_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken.get_encoding served from a cache holding our shipped files."""
    for name, blob in BLOBS.items():
        shipped = resources.files("contextwindow.tokens") / "data" / f"{name}.tiktoken"
        key = hashlib.sha1(blob.encode()).hexdigest()
        (tmp_path / key).write_bytes(shipped.read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    # Drop encodings tiktoken may have built already, so ours are really loaded.
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})


class TestBPETokenizer:
    def test_is_a_tokenizer(self) -> None:
        """BPETokenizer satisfies the Tokenizer protocol and is exact."""
        tok = BPETokenizer("o200k_base")
        assert isinstance(tok, Tokenizer)
        assert (tok.name, tok.exact) == ("o200k_base", True)

    def test_encoding_and_repr(self) -> None:
        """The tiktoken encoding is exposed and agrees with count; repr names it."""
        tok = BPETokenizer("cl100k_base")
        assert tok.encoding.name == "cl100k_base"
        assert len(tok.encoding.encode_ordinary("hello world")) == tok.count(
            "hello world"
        )
        assert repr(tok) == "BPETokenizer('cl100k_base')"

    def test_empty_is_zero(self) -> None:
        """The empty string has no tokens."""
        assert BPETokenizer("cl100k_base").count("") == 0

    def test_special_token_text_is_ordinary(self) -> None:
        """Special-token text in content is counted as plain text, not rejected."""
        assert BPETokenizer("o200k_base").count("<|endoftext|>") > 1

    def test_count_many_matches_count(self) -> None:
        """The batch count equals counting one text at a time."""
        tok = BPETokenizer("o200k_base")
        texts = ["hello world", "", "東京タワー", "def f(x):\n    return x\n"]
        assert tok.count_many(texts) == [tok.count(t) for t in texts]

    @pytest.mark.usefixtures("tiktoken_registry")
    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
    def test_equals_tiktoken_on_every_message_text(
        self, name: str, message_texts: list[str]
    ) -> None:
        """Counts equal tiktoken's own registry encoding on every shared-data text."""
        reference = tiktoken.get_encoding(name)
        assert reference is not load_encoding(name)
        expected = [len(ids) for ids in reference.encode_ordinary_batch(message_texts)]
        assert BPETokenizer(name).count_many(message_texts) == expected
        assert len(expected) > 13_000


class TestLoadEncoding:
    def test_unknown_name(self) -> None:
        """An unknown encoding name is a ContextWindowError listing the known ones."""
        with pytest.raises(ContextWindowError, match="cl100k_base, o200k_base"):
            load_encoding("p50k_base")

    def test_sha256_mismatch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A shipped file that fails its sha256 is a clear error, not wrong counts."""
        spec = bpe_module.ENCODINGS["o200k_base"]
        bad = dataclasses.replace(spec, sha256="0" * 64)
        monkeypatch.setitem(bpe_module.ENCODINGS, "o200k_base", bad)
        monkeypatch.setattr(bpe_module, "_cache", {})
        with pytest.raises(ContextWindowError, match=r"does not match.*reinstall"):
            load_encoding("o200k_base")

    def test_cached(self) -> None:
        """Loading twice returns the same Encoding object."""
        assert load_encoding("cl100k_base") is load_encoding("cl100k_base")


class TestLongWhitespace:
    @pytest.mark.parametrize(
        "text",
        [
            " " * 1_000_000,
            "x" + " " * 1_200_000 + "y",
            "\t" * 1_000_000,
            "a " * 10 + " " * 2_000_000 + "tail words",
        ],
        ids=["spaces", "inside-text", "tabs", "after-words"],
    )
    def test_a_million_blanks_count_as_their_pieces(self, text: str) -> None:
        """A whitespace run past what tiktoken's matcher takes (a Rust panic
        before, which ``except Exception`` does not catch) counts, and as the
        run's pieces of 32,768 count, which each tiktoken counts whole."""
        tok = BPETokenizer("o200k_base")
        pieces = bpe._pieces(text)
        assert len(pieces) > 1
        assert "".join(pieces) == text
        assert tok.count(text) == sum(
            len(tok.encoding.encode_ordinary(p)) for p in pieces
        )
        assert tok.count_many(["a b", text]) == [2, tok.count(text)]

    def test_a_run_of_spaces_counts_as_tokens_of_128(self) -> None:
        """What the pieces rest on: o200k holds runs of 128 spaces in one token."""
        tok = BPETokenizer("o200k_base")
        assert tok.count(" " * bpe.RUN_PIECE) == bpe.RUN_PIECE // 128
        assert tok.count(" " * 1_000_000) == -(-1_000_000 // 128)


class TestArguments:
    @pytest.mark.parametrize("bad", [None, [], 0, False, b"x", ["a"]])
    def test_count_takes_a_str(self, bad: object) -> None:
        """A falsy non-str is no empty text (it counted 0); a truthy one is named."""
        with pytest.raises(ArgumentTypeError, match=r"^text: expected a str"):
            BPETokenizer("o200k_base").count(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [{}, [], None, 5])
    def test_load_encoding_takes_a_name(self, bad: object) -> None:
        """An unhashable or non-str name is named, not a TypeError from the cache."""
        with pytest.raises(ArgumentTypeError, match=r"^name: expected an encoding"):
            load_encoding(bad)  # type: ignore[arg-type]  # the wrong type on purpose


def test_loading_an_encoding_writes_nothing_to_the_temp_folder(tmp_path: Path) -> None:
    """The shipped BPE files are read in place: no copy in a cache folder.

    ``tiktoken.load`` caches every file it reads under the temp folder
    (``data-gym-cache``): 5.3 MB for each install location.
    """
    import subprocess
    import sys

    env = {**os.environ, "TMPDIR": str(tmp_path)}
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        env.pop(name, None)
    code = "from contextwindow.tokens import bpe; bpe.load_encoding('o200k_base')"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert list(tmp_path.rglob("*")) == []
