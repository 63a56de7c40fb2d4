"""A fast token estimate that approximates ``o200k_base`` without a vocabulary.

Contract: ``count`` is a pure function of the text, ``count("") == 0`` and any
non-empty text counts at least 1. It never loads a file and never loops over
characters in Python: the text is encoded to UTF-8 once, mapped to a small
alphabet of character classes with one ``bytes.translate`` (continuation bytes
deleted, so one class byte per character), and a handful of ``bytes.count``
calls on that class string give the features. Each ``count`` is a pass over
the text, so there are only eight for ASCII text (and one ``isascii`` test of
the class string for control characters); that keeps it several times faster
than exact BPE (``benchmarks/heuristic_accuracy.py`` measures both in one run).

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
arrows; CJK; Hangul; emoji) with a rate for each, and a few patterns of them
(a word ending before a space, long runs). Control characters and Hangul
Jamo have the rates o200k's vocabulary gives them, not fitted ones (``PINNED``):
a token per control character (NULs merge in pairs), three per Jamo, so NUL
padding, a binary file read as text and decomposed Korean count within about
15 % of o200k.

The features were chosen, and their weights are fitted, by least squares on
the *relative* error (so short messages weigh as much as long ones) with
``scripts/fit_heuristic.py``, on the shared data and a few texts packages
ship (``benchmarks/_texts.py``). ``benchmarks/heuristic_accuracy.py`` measures
it on text its weights never saw: with each shared data set left out it is
within 4.2-4.6 % of o200k in the median and 11.5-14.3 % at the 90th
percentile, and 4.7 % / 12.5 % on the standard library's sources; ``len/4``
gets 11-24 % and 24-35 %.
"""

from __future__ import annotations

from contextwindow._args import check_str

__all__ = ["HeuristicTokenizer"]

# -- character classes -----------------------------------------------------------
#
# One class byte per character: ASCII by kind, non-ASCII by UTF-8 lead byte.
#   a  lowercase ASCII letter       A  uppercase ASCII letter     0  digit
#   ' ' space                       \n line break (\r, \n)        \t tab
#   "  quote (" ' `)                (  opening bracket ([{<)      )  closing )]}>
#   ,  separator (, ; :)            .  full stop                  _  underscore
#   /  slash, backslash, bar        -  hyphen                     =  other ASCII
#   \x80  control character: C0 (NUL included) but tab and line breaks, and
#       DEL; the one class byte above ASCII, so one ``isascii`` (a word at a
#       time) tells whether the class string holds any
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
    "\t": "\t",
    **dict.fromkeys("\"'`", '"'),
    **dict.fromkeys("([{<", "("),
    **dict.fromkeys(")]}>", ")"),
    **dict.fromkeys(",;:", ","),
    ".": ".",
    "_": "_",
    **dict.fromkeys("/\\|", "/"),
    "-": "-",
    # o200k has a token for each control character and merges none of them
    # with a neighbour (but NUL with NUL): classed apart, with a rate of their
    # own (_W_CONTROL), not as punctuation, whose runs merge (_W_OTHER_ASCII2).
    **dict.fromkeys([chr(b) for b in range(0x20) if chr(b) not in "\t\n\r"], "\x80"),
    "\x7f": "\x80",
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
_W_TEXT = -0.1803
_W_CHAR = 0.6024
_W_LOWER2 = -0.4364
_W_SPACE = -0.5108
_W_LOWER3 = -0.5304
_W_LOWER5 = -0.6895
_W_COMMA_QUOTE = -0.8471
_W_SPACE_DIGIT = 0.8534
_W_OTHER_ASCII2 = -1.1527
_W_UPPER = -0.0839
_W_LATIN = 1.0012
_W_ALPHABETIC = 0.0447
_W_OTHER = -0.1379
_W_SYMBOL = 0.7008
_W_CJK = 0.4518
_W_HANGUL = 0.1189
_W_EMOJI = 1.1121
_W_ALPHABETIC_SPACE = -1.1072
_W_OTHER_SPACE = 0.0581
_W_SYMBOL_SPACE = 0.6082
_W_OTHER_LOWER = -1.0628
_W_HANGUL_LINE = 0.7296
_W_ALPHABETIC6 = -1.3655
_W_CJK3 = -1.1042

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
    _W_LATIN,
    _W_ALPHABETIC,
    _W_OTHER,
    _W_SYMBOL,
    _W_CJK,
    _W_HANGUL,
    _W_EMOJI,
    _W_ALPHABETIC_SPACE,
    _W_OTHER_SPACE,
    _W_SYMBOL_SPACE,
    _W_OTHER_LOWER,
    _W_HANGUL_LINE,
    _W_ALPHABETIC6,
    _W_CJK3,
)

# The features: each is the number of non-overlapping matches of a pattern in
# the class string (``bytes.count``), so a run of n lowercase letters adds
# n // 2 to "aa", n // 3 to "aaa" and n // 5 to "aaaaa": longer words cost more
# per letter, as rarer, longer words split into more BPE pieces.
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
    "latin",  # x
    "alphabetic",  # y
    "other",  # u
    "symbol",  # s
    "cjk",  # c
    "hangul",  # h
    "emoji",  # e
    "alphabetic_space",  # 'y '
    "other_space",  # 'u '
    "symbol_space",  # 's '
    "other_lower",  # ua
    "hangul_line",  # h\n
    "alphabetic6",  # yyyyyy
    "cjk3",  # ccc
)
"""Feature names, in the order ``_features`` returns them (for the fit script)."""

# -- pinned rates ----------------------------------------------------------------
#
# Not fitted: o200k's vocabulary sets these, and too few texts hold such
# characters to fit them (four of the fit's 14,695: ANSI colour codes). Each
# C0 control character (NUL included) and DEL is a token of its own, and only
# NUL merges, two to a token: a run of k NULs is k - k // 2 tokens. A Hangul
# Jamo (U+1100-U+11FF: the decomposed Korean of macOS file names) is three
# tokens, its three bytes, which o200k never merges. Fitted features count
# these characters too (every one is a "char", a Jamo is also "other"), so
# each weight is its rate less theirs: a refit keeps the rate.
_R_CONTROL = 1.0
_R_NUL2 = -1.0
_R_JAMO = 3.0
_W_CONTROL = _R_CONTROL - _W_CHAR
_W_NUL2 = _R_NUL2
_W_JAMO = _R_JAMO - _W_CHAR - _W_OTHER

PINNED: dict[str, tuple[float, tuple[str, ...]]] = {
    "control": (_R_CONTROL, ("char",)),  # \x80
    "nul2": (_R_NUL2, ()),  # two NULs, in the text
    "jamo": (_R_JAMO, ("char", "other")),  # U+1100-U+11FF, in the text
}
"""Pinned features, in the order ``_pinned`` returns them: tokens per match,
and the fitted features that count each match too. ``scripts/fit_heuristic.py``
fits the others with these held."""


def _features(text: str) -> tuple[int, ...]:  # pyright: ignore[reportUnusedFunction]  # used by scripts/fit_heuristic.py and tests
    """The feature counts of a non-empty text, in ``FEATURES`` order."""
    s = text.encode("utf-8", "surrogatepass").translate(_CLASSES, _CONTINUATION)
    c = s.count
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
        c(b"x"),
        c(b"y"),
        c(b"u"),
        c(b"s"),
        c(b"c"),
        c(b"h"),
        c(b"e"),
        c(b"y "),
        c(b"u "),
        c(b"s "),
        c(b"ua"),
        c(b"h\n"),
        c(b"yyyyyy"),
        c(b"ccc"),
    )


def _weights() -> tuple[float, ...]:  # pyright: ignore[reportUnusedFunction]  # used by scripts/fit_heuristic.py and tests
    """The weights, in ``FEATURES`` order."""
    return _WEIGHTS


def _pinned(text: str) -> tuple[int, int, int]:  # pyright: ignore[reportUnusedFunction]  # used by scripts/fit_heuristic.py and tests
    """The pinned feature counts of a text, in ``PINNED`` order."""
    raw = text.encode("utf-8", "surrogatepass")
    controls = raw.translate(_CLASSES, _CONTINUATION).count(b"\x80")
    return controls, raw.count(b"\0\0"), _jamo(raw)


def _pinned_weights() -> tuple[float, float, float]:  # pyright: ignore[reportUnusedFunction]  # used by tests
    """The pinned features' weights, in ``PINNED`` order."""
    return _W_CONTROL, _W_NUL2, _W_JAMO


def _jamo(raw: bytes) -> int:
    """Hangul Jamo (U+1100-U+11FF: lead byte E1, second byte 84-87) in UTF-8."""
    if b"\xe1" not in raw:  # one memchr: no character of U+1000-U+1FFF
        return 0
    c = raw.count
    return c(b"\xe1\x84") + c(b"\xe1\x85") + c(b"\xe1\x86") + c(b"\xe1\x87")


class HeuristicTokenizer:
    """Estimates ``o200k_base`` token counts from character classes.

    Use it where speed matters more than the last token (budget checks on every
    push); use ``BPETokenizer`` where the count must be exact.

    Warning:
        It is fitted to agent traffic (prose, code, JSON, logs). Text unlike
        that is estimated worse: random-looking strings such as base64, JWTs
        and hashes are undercounted by up to half; text in a script the fit
        saw little or nothing of (Syriac, Thaana, Ethiopic, Cherokee,
        Mongolian, polytonic Greek ...) and strings of random characters of
        any non-Latin script, which o200k splits into bytes, by up to seven
        times, and a list of one-letter Cyrillic, Greek or Hebrew words
        counts almost nothing; long digit runs and long runs of spaces are
        overcounted. Control characters (NUL padding, a binary file read as
        text) and decomposed Hangul are counted at o200k's own rates, within
        15 %. Keep a margin when such content may fill the window, or
        count it exactly.

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
        """Return the estimated token count of ``text`` (at least 1 unless empty).

        Raises:
            ArgumentTypeError: ``text`` is not a ``str`` (``None`` and ``[]``
                are not empty texts).
        """
        if text.__class__ is not str:  # one test on the hot path
            check_str(text, "text")
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
        if not s.isascii():  # control characters (rare: one fast test first)
            est += _W_CONTROL * c(b"\x80") + _W_NUL2 * raw.count(b"\0\0")
        if not text.isascii():
            other = c(b"u")
            if other:  # Hangul Jamo are of class u: the text is read for them
                est += _W_JAMO * _jamo(raw)
            est += (
                _W_LATIN * c(b"x")
                + _W_ALPHABETIC * c(b"y")
                + _W_OTHER * other
                + _W_SYMBOL * c(b"s")
                + _W_CJK * c(b"c")
                + _W_HANGUL * c(b"h")
                + _W_EMOJI * c(b"e")
                + _W_ALPHABETIC_SPACE * c(b"y ")
                + _W_OTHER_SPACE * c(b"u ")
                + _W_SYMBOL_SPACE * c(b"s ")
                + _W_OTHER_LOWER * c(b"ua")
                + _W_HANGUL_LINE * c(b"h\n")
                + _W_ALPHABETIC6 * c(b"yyyyyy")
                + _W_CJK3 * c(b"ccc")
            )
        return int(est + 0.5) if est >= 1.0 else 1

    def __repr__(self) -> str:
        return "HeuristicTokenizer()"
