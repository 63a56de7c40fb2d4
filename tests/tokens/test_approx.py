from __future__ import annotations

from typing import Any

import pytest

from contextwindow import (
    ArgumentError,
    ArgumentTypeError,
    ArgumentValueError,
    Message,
    TokenCounter,
    count_messages,
    fit,
)
from contextwindow.testing import FakeTokenizer
from contextwindow.tokens.approx import ApproximateTokenizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.bpe import BPETokenizer


class TestApproximateTokenizer:
    def test_delegates_count(self) -> None:
        """Counts are exactly the base's counts."""
        base = BPETokenizer("o200k_base")
        tok = ApproximateTokenizer(base, "claude-opus-4-6")
        for text in [
            "",
            "hello world",
            "東京タワーの高さは何メートル",
            "def f(x):\n  return x\n",
        ]:
            assert tok.count(text) == base.count(text)

    def test_never_exact(self) -> None:
        """It reports exact=False even over an exact base."""
        assert ApproximateTokenizer(BPETokenizer("o200k_base"), "m").exact is False

    def test_name_says_approximate(self) -> None:
        """The name gives the base and what it approximates."""
        tok = ApproximateTokenizer(FakeTokenizer("words"), "gemini-2.5-pro")
        assert tok.name == "words (approximate for gemini-2.5-pro)"
        assert (tok.label, tok.base.name) == ("gemini-2.5-pro", "words")
        assert "gemini-2.5-pro" in repr(tok)

    def test_is_a_tokenizer(self) -> None:
        """It satisfies the Tokenizer protocol."""
        assert isinstance(ApproximateTokenizer(FakeTokenizer(), "m"), Tokenizer)

    def test_count_many_batches_through_the_base(self) -> None:
        """count_many uses the base's batch counting when it has one."""
        base = BPETokenizer("o200k_base")
        tok = ApproximateTokenizer(base, "m")
        texts = ["one two", "three", ""]
        assert tok.count_many(texts) == [base.count(t) for t in texts]

    def test_count_many_without_batching(self) -> None:
        """count_many falls back to one count per text."""
        base = FakeTokenizer()
        tok = ApproximateTokenizer(base, "m")
        assert tok.count_many(["a b", "c"]) == [2, 1]
        assert base.calls == ["a b", "c"]

    def test_scale_rounds_up(self) -> None:
        """A scale multiplies the base's counts, rounding up; empty stays 0."""
        tok = ApproximateTokenizer(FakeTokenizer(), "m", scale=1.17)
        assert tok.count("a b c d e f g h i j") == 12  # 11.7 -> 12
        assert tok.count("") == 0
        assert tok.count_many(["a b c d e f g h i j", "a"]) == [12, 2]
        assert "x1.17" in tok.name
        assert "scale=1.17" in repr(tok)

    @pytest.mark.parametrize(
        "scale", [0.0, -1.0, float("nan"), float("inf"), True, "1.2", None]
    )
    def test_bad_scale(self, scale: object) -> None:
        """A scale that is not a finite number > 0 fails at construction."""
        with pytest.raises(ArgumentError, match=r"^scale: expected a finite number"):
            ApproximateTokenizer(FakeTokenizer(), "m", scale=scale)  # type: ignore[arg-type]  # the wrong type on purpose

    def test_a_name_is_the_tokenizer_it_names(self) -> None:
        """A str base is the encoding it names, not ``str.count`` (counts of ~0)."""
        tok = ApproximateTokenizer("o200k_base", "my-model")
        text = "word " * 500
        assert tok.count(text) == BPETokenizer("o200k_base").count(text) > 400
        conv = [Message.user("task"), Message.assistant(text), Message.user("final?")]
        fitted = fit(conv, limit=100, tokenizer=tok)
        real = count_messages(fitted.messages, "gpt-4o")
        assert fitted.report.tokens_after == real <= 100

    @pytest.mark.parametrize("base", [None, 5, b"o200k_base", "no-such-encoding", {}])
    def test_not_a_tokenizer(self, base: object) -> None:
        """Anything that is not a tokenizer nor names one is refused as ``base``."""
        with pytest.raises(ArgumentError, match=r"^base: "):
            ApproximateTokenizer(base, "m")  # type: ignore[arg-type]  # the wrong type on purpose

    def test_label_is_a_str(self) -> None:
        """The label is shown in every report: it must be text."""
        with pytest.raises(ArgumentError, match=r"^label: expected a str"):
            ApproximateTokenizer(FakeTokenizer(), None)  # type: ignore[arg-type]  # the wrong type on purpose


class CharsOver4:
    """A user's estimate: ``len / 4``, a float (``count("")`` is the int 0)."""

    name, exact = "chars/4", False

    def count(self, text: str) -> Any:
        return len(text) / 4 if text else 0


class Negative:
    """A user's tokenizer gone wrong: negative counts."""

    name, exact = "negative", False

    def count(self, text: str) -> int:
        return -len(text)


class TestAUsersBase:
    CONV = (
        Message.user("word " * 400),
        Message.assistant("ok " * 300),
        Message.user("and now?"),
    )

    @pytest.mark.parametrize(
        ("base", "error", "got"),
        [
            (CharsOver4(), ArgumentTypeError, "500.0"),
            (Negative(), ArgumentValueError, "-2000"),
        ],
    )
    def test_counts_are_checked(
        self, base: Tokenizer, error: type[Exception], got: str
    ) -> None:
        """A float or negative count from a user's base is named, as a bare one's is."""
        tok = ApproximateTokenizer(base, "claude")
        match = rf"^base: expected a Tokenizer whose count returns an int >= 0.*{got}"
        with pytest.raises(error, match=match):
            tok.count("word " * 400)
        with pytest.raises(error, match=r"^base: "):
            TokenCounter(tok).messages(list(self.CONV))
        with pytest.raises(error, match=r"^base: "):
            fit(list(self.CONV), limit=500, tokenizer=tok)
        with pytest.raises(error, match=r"^base: "):
            tok.count_many(["word " * 400])

    def test_a_batch_is_checked(self) -> None:
        """A user's count_many returning floats, or too few counts: named."""

        class Batch(CharsOver4):
            def count_many(self, texts: list[str]) -> list[Any]:
                return [len(t) / 4 for t in texts]

        class Short(CharsOver4):
            def count_many(self, texts: list[str]) -> list[int]:
                return [1]

        with pytest.raises(ArgumentTypeError, match=r"^base: .*returned 1\.0"):
            ApproximateTokenizer(Batch(), "m").count_many(["abcd", "ab"])
        with pytest.raises(ArgumentValueError, match=r"^base: .*returned 1 for 2"):
            ApproximateTokenizer(Short(), "m").count_many(["abcd", "ab"])

    def test_good_counts_pass(self) -> None:
        """A user's base that counts right is used as it is, scaled."""

        class Words:
            name, exact = "words", False

            def count(self, text: str) -> int:
                return len(text.split())

        tok = ApproximateTokenizer(Words(), "m", scale=1.5)
        assert tok.count("a b c") == 5
        assert tok.count_many(["a b", "c"]) == [3, 2]
