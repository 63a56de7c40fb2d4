"""Exact BPE counts with tiktoken, offline.

The BPE rank files for ``o200k_base`` and ``cl100k_base`` ship inside this
package (``tokens/data``); each is checked against the sha256 that tiktoken
itself expects before use, so a corrupted install fails loudly instead of
counting wrong. Nothing is downloaded, and no process-wide environment variable
is set.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from contextwindow._args import check_str
from contextwindow.errors import ContextWindowError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["ENCODINGS", "BPETokenizer", "load_encoding"]


@dataclass(frozen=True)
class _Spec:
    file: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]


_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Regexes and special tokens as tiktoken_ext.openai_public defines them.
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = "|".join(
    [
        r"""'(?i:[sdmt]|ll|ve|re)""",
        r"""[^\r\n\p{L}\p{N}]?+\p{L}++""",
        r"""\p{N}{1,3}+""",
        r""" ?[^\s\p{L}\p{N}]++[\r\n]*+""",
        r"""\s++$""",
        r"""\s*[\r\n]""",
        r"""\s+(?!\S)""",
        r"""\s""",
    ]
)

ENCODINGS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
    "cl100k_base": _Spec(
        "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
}
"""The encodings shipped with the package."""

_ENCODING_NAME = "an encoding name (o200k_base)"

_cache: dict[str, tiktoken.Encoding] = {}
_lock = threading.Lock()


def load_encoding(name: str) -> tiktoken.Encoding:
    """Build a ``tiktoken.Encoding`` from the shipped BPE file (cached).

    Args:
        name: ``o200k_base`` or ``cl100k_base``.

    Raises:
        ArgumentTypeError: ``name`` is not a ``str``.
        ContextWindowError: Unknown name, or the shipped file fails its sha256.

    Example:
        >>> load_encoding("o200k_base").encode_ordinary("hello world")
        [24912, 2375]
    """
    check_str(name, "name", takes=_ENCODING_NAME)
    with _lock:
        enc = _cache.get(name)
        if enc is not None:
            return enc
        spec = ENCODINGS.get(name)
        if spec is None:
            known = ", ".join(sorted(ENCODINGS))
            raise ContextWindowError(f"unknown encoding {name!r} (known: {known})")
        import tiktoken

        data = (
            resources.files("contextwindow.tokens") / "data" / spec.file
        ).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != spec.sha256:
            raise ContextWindowError(
                f"{spec.file}: sha256 {digest} does not match the expected "
                f"{spec.sha256}; reinstall contextwindow"
            )
        # Read here, not by ``tiktoken.load``: it copies every file it reads
        # into a cache in the temp folder (and before 0.12 needs blobfile
        # for a local path).
        ranks = {
            base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
        enc = tiktoken.Encoding(
            name=name,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=spec.special_tokens,
        )
        _cache[name] = enc
        return enc


class BPETokenizer:
    """Exact token counts for OpenAI's BPE encodings, offline.

    Special-token text (``<|endoftext|>``) in user content is counted as the
    ordinary text it is, which is how the API treats it.

    Example:
        >>> tok = BPETokenizer("o200k_base")
        >>> tok.count("The quick brown fox.")
        5
        >>> tok.exact
        True
    """

    __slots__ = ("_enc", "_name")

    def __init__(self, encoding: str = "o200k_base") -> None:
        check_str(encoding, "encoding", takes=_ENCODING_NAME)
        self._name = encoding
        self._enc = load_encoding(encoding)

    @property
    def name(self) -> str:
        """The encoding name."""
        return self._name

    @property
    def exact(self) -> bool:
        """Always ``True``."""
        return True

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The underlying ``tiktoken.Encoding``."""
        return self._enc

    def count(self, text: str) -> int:
        """Return the exact token count of ``text``.

        A run of about a million whitespace characters overflows tiktoken's
        pattern matcher (a Rust panic, which no ``except Exception`` catches):
        a text holding a run of ``2 * RUN_PIECE`` or more is counted in pieces
        cut inside its long runs (``_pieces``), as the whole would count.

        Raises:
            ArgumentTypeError: ``text`` is not a ``str`` (``None`` and ``[]``
                are not empty texts).
        """
        if text.__class__ is not str:  # one test on the hot path
            check_str(text, "text")
        if not text:
            return 0
        if len(text) >= 2 * RUN_PIECE and _LONG_RUN.search(text) is not None:
            return sum(len(self._enc.encode_ordinary(p)) for p in _pieces(text))
        return len(self._enc.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        """Count several texts at once, using tiktoken's thread pool."""
        if any(len(t) >= 2 * RUN_PIECE and _LONG_RUN.search(t) for t in texts):
            return [self.count(t) for t in texts]
        return [len(t) for t in self._enc.encode_ordinary_batch(texts)]

    def __repr__(self) -> str:
        return f"BPETokenizer({self._name!r})"


RUN_PIECE = 1 << 15
"""Whitespace characters a piece of a long run holds (``_pieces``): a multiple
of the longest run of spaces one token holds, so the pieces count as the run."""

_LONG_RUN = re.compile(rf"(?<!\s)\s{{{2 * RUN_PIECE},}}")
"""A long whitespace run, tried from a run's start only (no quadratic rescan)."""


def _pieces(text: str) -> list[str]:
    """``text`` cut inside each whitespace run of ``2 * RUN_PIECE`` or more.

    Example:
        >>> [len(p) for p in _pieces("a" + " " * (3 * RUN_PIECE) + "b")]
        [32769, 32768, 32769]
    """
    out: list[str] = []
    at = 0
    for found in _LONG_RUN.finditer(text):
        start, end = found.span()
        cut = start + RUN_PIECE
        while end - cut >= RUN_PIECE:  # the run's last piece goes with what follows
            out.append(text[at:cut])
            at = cut
            cut += RUN_PIECE
    out.append(text[at:])
    return out
