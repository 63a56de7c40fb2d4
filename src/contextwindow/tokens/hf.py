"""Exact counts for any Hugging Face ``tokenizer.json``, offline.

Contract: the optional ``tokenizers`` package (extra ``hf``) is imported only
when an ``HFTokenizer`` is built, so importing this module always works; a
missing package raises ``ContextWindowError`` naming the
``pip install 'contextwindow[hf]'`` to run. Counts exclude the special tokens a
model adds around a whole prompt (BOS/EOS): message framing is the counter's
job. The file is read from disk; nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from contextwindow.errors import ContextWindowError

__all__ = ["HFTokenizer"]


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise ContextWindowError(
            "HFTokenizer needs the 'tokenizers' package: "
            "pip install 'contextwindow[hf]'"
        ) from exc
    return tokenizers


class HFTokenizer:
    """Counts tokens with a Hugging Face ``tokenizer.json`` (Llama, Qwen, Mistral ...).

    Args:
        tokenizer_json_path: Path to a ``tokenizer.json`` file.
        name: Name for reports; defaults to the folder holding the file
            (``Qwen2.5-7B/tokenizer.json`` -> ``Qwen2.5-7B``; the one above a
            folder called ``model`` or ``tokenizer``), or the file's stem when
            it is not called ``tokenizer.json``.

    Raises:
        ContextWindowError: ``tokenizers`` is not installed, or the file cannot
            be read as a tokenizer.

    Example:
        >>> import tempfile
        >>> from tokenizers import Tokenizer, models, pre_tokenizers
        >>> vocab = {"hello": 0, "world": 1, "[UNK]": 2}
        >>> t = Tokenizer(models.WordLevel(vocab, "[UNK]"))
        >>> t.pre_tokenizer = pre_tokenizers.Whitespace()
        >>> folder = tempfile.mkdtemp()
        >>> t.save(f"{folder}/tokenizer.json")
        >>> tok = HFTokenizer.from_file(f"{folder}/tokenizer.json")
        >>> tok.count("hello world hello")
        3
        >>> tok.exact
        True
    """

    __slots__ = ("_name", "_tok")

    def __init__(
        self, tokenizer_json_path: str | os.PathLike[str], *, name: str | None = None
    ) -> None:
        tokenizers = _tokenizers()
        path = Path(tokenizer_json_path)
        try:
            self._tok = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises bare Exception subclasses
            raise ContextWindowError(
                f"{path}: cannot load as a tokenizer.json: {exc}"
            ) from exc
        # A file may pad or cut every text to a model's input length (an
        # embedding model's 128): a count is of the whole text.
        self._tok.no_padding()
        self._tok.no_truncation()
        if name is None:
            folder = path.parent
            if folder.name.lower() in _GENERIC and folder.parent.name:
                folder = folder.parent  # .../Qwen2.5-7B/tokenizer/tokenizer.json
            name = folder.name if path.name == "tokenizer.json" else path.stem
        self._name = name or path.stem

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, name: str | None = None
    ) -> HFTokenizer:
        """Load a ``tokenizer.json``; the same as the constructor."""
        return cls(path, name=name)

    @property
    def name(self) -> str:
        """The name given, or taken from the file's location."""
        return self._name

    @property
    def exact(self) -> bool:
        """Always ``True``."""
        return True

    def count(self, text: str) -> int:
        """Return the number of tokens in ``text``, without special tokens."""
        if not text:
            return 0
        try:
            return len(self._tok.encode(text, add_special_tokens=False).ids)
        except TypeError:  # a lone surrogate: the Rust side takes UTF-8 only
            return len(self._tok.encode(_encodable(text), add_special_tokens=False).ids)

    def count_many(self, texts: list[str]) -> list[int]:
        """Count several texts at once, with the library's parallel batch encoder."""
        try:
            encodings = self._tok.encode_batch(texts, add_special_tokens=False)
        except TypeError:  # a lone surrogate in one of them
            encodings = self._tok.encode_batch(
                [_encodable(t) for t in texts], add_special_tokens=False
            )
        return [len(e.ids) for e in encodings]

    def __repr__(self) -> str:
        return f"HFTokenizer(name={self._name!r})"


_GENERIC = frozenset(("model", "models", "tokenizer", "tokenizers"))
"""Folder names that say nothing of the model: the one above names it."""


def _encodable(text: str) -> str:
    """``text``, a lone surrogate in it replaced (the Rust side takes UTF-8 only)."""
    return text.encode("utf-8", "replace").decode("utf-8")
