"""A fast token estimate that approximates ``o200k_base`` without BPE.

Contract: ``count`` is a pure function of the text, ``count("") == 0`` and any
non-empty text counts at least 1. It never loops over characters in Python:
the text is encoded to UTF-8 once, mapped to a small alphabet of character
classes with one ``bytes.translate`` (continuation bytes deleted, so one class
byte per character), and a handful of ``bytes.count`` calls on that class
string give the features. Each ``count`` is a pass over the text, so there are
only eight for ASCII text; that keeps it several times faster than exact BPE
there (``benchmarks/heuristic_accuracy.py`` measures both in one run).

The estimate is linear in those features. Why these features: o200k splits text
into pre-tokens (words with their leading space or punctuation, runs of up to
three digits, punctuation runs, whitespace runs) and then merges bytes inside
each. So every character costs a base rate; a run of lowercase letters costs
less per letter the longer it is (common words are one token, longer ones
split into a few pieces), which counts of "aa", "aaa" and "aaaaa" in the class
string model (non-overlapping, so a run of n letters adds n // 2, n // 3 and
n // 5); a space usually joins the word after it; capitals, digits after a
space, ``,"`` (JSON) and runs of other punctuation have rates of their own.
Non-ASCII characters are classed by their UTF-8 lead byte (Latin extensions;
Greek/Cyrillic/Hebrew/Arabic; Indic/Thai; the U+2000 block of symbols and
arrows; CJK; Hangul; emoji) with a rate for some, and a few patterns of them.

Text in a script written with spaces (a non-ASCII Latin, Greek, Cyrillic,
Hebrew, Arabic, Indic ... letter in it) also has its words looked up in
o200k's own vocabulary: a word that is one token costs one, the others are
priced by their bytes (``_word_features``). The table is built once, on the
first such text, from the shipped ``o200k_base.tiktoken`` (about 1 s and
134,000 words); ASCII text never builds it. That lookup is a pass per word
(``bytes.split`` and ``map`` in C), so such text costs about twice the
per-script estimate alone.

The weights are fitted by least squares on the *relative* error (so short
messages weigh as much as long ones) with ``scripts/fit_heuristic.py``, on the
shared data and a few texts packages ship (``benchmarks/_texts.py``).
``benchmarks/heuristic_accuracy.py`` measures it on text its weights never
saw: with each shared data set left out it is within 4.6-4.7 % of o200k in the
median and 11.5-14.3 % at the 90th percentile; on Django's translations into 92
languages 10.0 % / 33.3 % (per-script rates alone: 13.6 % / 38.9 %); ``len/4``
gets 11-32 % and 28-52 %.
"""

from __future__ import annotations

import base64
import itertools
import threading
from importlib import resources

__all__ = ["HeuristicTokenizer"]

# -- character classes -----------------------------------------------------------
#
# One class byte per character: ASCII by kind, non-ASCII by UTF-8 lead byte.
#   a  lowercase ASCII letter       A  uppercase ASCII letter     0  digit
#   ' ' space                       \n line break (\r, \n)        \t other space
#   "  quote (" ' `)                (  opening bracket ([{<)      )  closing )]}>
#   ,  separator (, ; :)            .  full stop                  _  underscore
#   /  slash, backslash, bar        -  hyphen                     =  other ASCII
#   x  U+0080-U+027F (Latin-1, Latin extended)
#   y  U+0280-U+07FF (Greek, Cyrillic, Hebrew, Arabic ...)
#   u  U+0800-U+1FFF and private use (Indic, Thai, Georgian ...)
#   s  U+2000-U+2FFF (punctuation, arrows, box drawing, dingbats)
#   c  U+3000-U+9FFF and U+F000-U+FFFF (CJK, kana, fullwidth forms)
#   h  U+A000-U+DFFF (Hangul syllables, Yi)
#   e  4-byte characters (emoji, rare CJK)

_ASCII_CLASSES = {
    **dict.fromkeys("abcdefghijklmnopqrstuvwxyz", "a"),
    **dict.fromkeys("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "A"),
    **dict.fromkeys("0123456789", "0"),
    " ": " ",
    "\r": "\n",
    "\n": "\n",
    **dict.fromkeys("\t\x0b\x0c", "\t"),
    **dict.fromkeys("\"'`", '"'),
    **dict.fromkeys("([{<", "("),
    **dict.fromkeys(")]}>", ")"),
    **dict.fromkeys(",;:", ","),
    ".": ".",
    "_": "_",
    **dict.fromkeys("/\\|", "/"),
    "-": "-",
}


def _class_of(byte: int) -> str:
    if byte < 0x80:
        return _ASCII_CLASSES.get(chr(byte), "=")
    if byte < 0xC0:
        return "-"  # continuation byte: deleted by translate
    if byte < 0xCA:
        return "x"
    if byte < 0xE0:
        return "y"
    if byte < 0xE2 or byte == 0xEE:
        return "u"
    if byte == 0xE2:
        return "s"
    if byte < 0xEA or byte == 0xEF:
        return "c"
    if byte < 0xEE:
        return "h"
    return "e"


_CLASSES = bytes(ord(_class_of(b)) for b in range(256))
_CONTINUATION = bytes(range(0x80, 0xC0))

# -- weights ---------------------------------------------------------------------
#
# Fitted by scripts/fit_heuristic.py (o200k_base, every message text of
# ../shared/data and the fit's extra texts, benchmarks/_texts.py). Rerun it and
# paste its output here when the features change.
_W_TEXT = -0.1742
_W_CHAR = 0.6030
_W_LOWER2 = -0.4394
_W_SPACE = -0.5027
_W_LOWER3 = -0.5327
_W_LOWER5 = -0.6929
_W_COMMA_QUOTE = -0.8237
_W_SPACE_DIGIT = 0.8688
_W_OTHER_ASCII2 = -1.1339
_W_UPPER = -0.0972
_W_ALPHABETIC = -0.3181
_W_OTHER = -0.2884
_W_CJK = 0.4526
_W_EMOJI = 1.0949
_W_ALPHABETIC_SPACE = -0.0408
_W_OTHER_SPACE = -0.6866
_W_SYMBOL_SPACE = 1.3820
_W_OTHER_LOWER = -0.6705
_W_CJK3 = -1.1101
_W_KNOWN = -0.1830
_W_UNKNOWN_BYTES = 0.0166
_W_UNKNOWN_WORDS = 1.1506
_WEIGHTS = (
    _W_TEXT,
    _W_CHAR,
    _W_LOWER2,
    _W_SPACE,
    _W_LOWER3,
    _W_LOWER5,
    _W_COMMA_QUOTE,
    _W_SPACE_DIGIT,
    _W_UPPER,
    _W_OTHER_ASCII2,
    _W_ALPHABETIC,
    _W_OTHER,
    _W_CJK,
    _W_EMOJI,
    _W_ALPHABETIC_SPACE,
    _W_OTHER_SPACE,
    _W_SYMBOL_SPACE,
    _W_OTHER_LOWER,
    _W_CJK3,
    _W_KNOWN,
    _W_UNKNOWN_BYTES,
    _W_UNKNOWN_WORDS,
)

# The features: each is the number of non-overlapping matches of a pattern in
# the class string (``bytes.count``), so a run of n lowercase letters adds
# n // 2 to "aa", n // 3 to "aaa" and n // 5 to "aaaaa": longer words cost more
# per letter, as rarer, longer words split into more BPE pieces. The last three
# come from the words of a non-ASCII text (``_word_features``) and are 0 for
# ASCII text.
FEATURES: tuple[str, ...] = (
    "text",  # 1 for any non-empty text
    "char",  # characters
    "lower2",  # aa
    "space",  # ' '
    "lower3",  # aaa
    "lower5",  # aaaaa
    "comma_quote",  # ,"  (JSON and CSV)
    "space_digit",  # ' 0'
    "upper",  # A
    "other_ascii2",  # ==  (runs of #, *, =, $ ...)
    "alphabetic",  # y
    "other",  # u
    "cjk",  # c
    "emoji",  # e
    "alphabetic_space",  # 'y '
    "other_space",  # 'u '
    "symbol_space",  # 's '
    "other_lower",  # ua
    "cjk3",  # ccc
    "known",  # words that are one o200k token
    "unknown_bytes",  # UTF-8 bytes of the other words
    "unknown_words",  # the other words
)
"""Feature names, in the order ``_features`` returns them (for the fit script)."""

# -- words of non-ASCII text -------------------------------------------------------
#
# Per-script rates cannot tell Italian from Welsh, or a common Russian word
# from a rare one: o200k's vocabulary can. A non-ASCII text's bytes are cut into
# words (every ASCII byte that is not a letter becomes a space; ``bytes.split``)
# and each word is looked up, by ``map`` in C, in the set of o200k tokens that
# are a whole word (letters only, with or without a leading space), built once
# from the shipped ``o200k_base.tiktoken`` on first use. A known word is one
# token; the others are counted, with their bytes, for the fit to price.

_WORD_BYTES = bytes(b if chr(b).isalpha() or b >= 0x80 else 0x20 for b in range(256))
_KNOWN_SHIFT = 32
_LOW_BITS = (1 << _KNOWN_SHIFT) - 1
_ZEROS = itertools.repeat(0)
_words: dict[bytes, int] | None = None
_words_lock = threading.Lock()


def _word_table() -> dict[bytes, int]:
    """Every whole-word o200k token, mapped to ``2**32 + its length in bytes``.

    So one ``sum`` over a text's words gives both how many were found and
    their bytes.
    """
    global _words
    if _words is not None:
        return _words
    with _words_lock:
        if _words is None:
            values = [(1 << _KNOWN_SHIFT) + n for n in range(256)]
            table: dict[bytes, int] = {}
            res = (
                resources.files("contextwindow.tokens") / "data" / "o200k_base.tiktoken"
            )
            for line in res.read_bytes().splitlines():
                token = base64.b64decode(line.split(maxsplit=1)[0])
                word = token[1:] if token.startswith(b" ") else token
                try:
                    if word.decode("utf-8").isalpha():
                        table[word] = values[len(word)]
                except UnicodeDecodeError:
                    continue
            _words = table
    return _words


def _word_features(raw: bytes) -> tuple[int, int, int]:
    """Known words, bytes of the unknown ones, unknown words, of UTF-8 ``raw``."""
    b = raw.translate(_WORD_BYTES)
    words = b.split()
    found = sum(map(_word_table().get, words, _ZEROS))
    known = found >> _KNOWN_SHIFT
    return known, len(b) - b.count(b" ") - (found & _LOW_BITS), len(words) - known


def _has_spaced_letters(classes: bytes) -> bool:
    """Whether a class string holds letters of a script written with spaces.

    Latin, Greek, Cyrillic, Hebrew, Arabic, Indic ...: only then are the words
    looked up (CJK, Hangul and symbols alone are not).
    """
    return b"x" in classes or b"y" in classes or b"u" in classes


def _features(text: str) -> tuple[int, ...]:  # pyright: ignore[reportUnusedFunction]  # used by scripts/fit_heuristic.py and tests
    """The feature counts of a non-empty text, in ``FEATURES`` order."""
    raw = text.encode("utf-8", "surrogatepass")
    s = raw.translate(_CLASSES, _CONTINUATION)
    c = s.count
    words = _word_features(raw) if _has_spaced_letters(s) else (0, 0, 0)
    return (
        1,
        len(s),
        c(b"aa"),
        c(b" "),
        c(b"aaa"),
        c(b"aaaaa"),
        c(b',"'),
        c(b" 0"),
        c(b"A"),
        c(b"=="),
        c(b"y"),
        c(b"u"),
        c(b"c"),
        c(b"e"),
        c(b"y "),
        c(b"u "),
        c(b"s "),
        c(b"ua"),
        c(b"ccc"),
        *words,
    )


def _weights() -> tuple[float, ...]:  # pyright: ignore[reportUnusedFunction]  # used by scripts/fit_heuristic.py and tests
    """The weights, in ``FEATURES`` order."""
    return _WEIGHTS


class HeuristicTokenizer:
    """Estimates ``o200k_base`` token counts from character classes.

    For non-ASCII scripts written with spaces, it also looks the words up among
    o200k's whole-word tokens.

    Use it where speed matters more than the last token (budget checks on every
    push); use ``BPETokenizer`` where the count must be exact.

    Warning:
        It is fitted to agent traffic (prose, code, JSON, logs). Text unlike
        that is estimated worse: random-looking strings such as base64, JWTs
        and hashes are undercounted by up to half, long digit runs and long
        runs of spaces are overcounted. Languages other than English written
        in plain ASCII (Italian without accents, Dutch, Welsh, Swahili ...)
        are undercounted by about a quarter in the median, and CJK text is
        within about 10 % in the median, 30 % at the 90th percentile. Keep a
        margin when such content may fill the window, or count it exactly.

    Example:
        >>> tok = HeuristicTokenizer()
        >>> tok.count("The quick brown fox jumps over the lazy dog.")  # o200k: 10
        10
        >>> tok.count("")
        0
        >>> (tok.name, tok.exact)
        ('heuristic', False)
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        """Always ``heuristic``."""
        return "heuristic"

    @property
    def exact(self) -> bool:
        """Always ``False``: counts are estimates."""
        return False

    def count(self, text: str) -> int:
        """Return the estimated token count of ``text`` (at least 1 unless empty)."""
        if not text:
            return 0
        # Inlined _features(): this is the hot path, no tuple is built.
        raw = text.encode("utf-8", "surrogatepass")
        s = raw.translate(_CLASSES, _CONTINUATION)
        c = s.count
        est = (
            _W_TEXT
            + _W_CHAR * len(s)
            + _W_LOWER2 * c(b"aa")
            + _W_SPACE * c(b" ")
            + _W_LOWER3 * c(b"aaa")
            + _W_LOWER5 * c(b"aaaaa")
            + _W_COMMA_QUOTE * c(b',"')
            + _W_SPACE_DIGIT * c(b" 0")
            + _W_UPPER * c(b"A")
            + _W_OTHER_ASCII2 * c(b"==")
        )
        if not text.isascii():
            if _has_spaced_letters(s):
                known, unknown_bytes, unknown_words = _word_features(raw)
                est += (
                    _W_KNOWN * known
                    + _W_UNKNOWN_BYTES * unknown_bytes
                    + _W_UNKNOWN_WORDS * unknown_words
                )
            est += (
                _W_ALPHABETIC * c(b"y")
                + _W_OTHER * c(b"u")
                + _W_CJK * c(b"c")
                + _W_EMOJI * c(b"e")
                + _W_ALPHABETIC_SPACE * c(b"y ")
                + _W_OTHER_SPACE * c(b"u ")
                + _W_SYMBOL_SPACE * c(b"s ")
                + _W_OTHER_LOWER * c(b"ua")
                + _W_CJK3 * c(b"ccc")
            )
        return int(est + 0.5) if est >= 1.0 else 1

    def __repr__(self) -> str:
        return "HeuristicTokenizer()"
