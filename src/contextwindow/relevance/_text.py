"""Text to search terms: words, lowercased, without stopwords, stemmed.

Contract: ``terms(text)`` is a pure function of the text. Text that is not
ASCII is put in Unicode's NFKC form and case-folded first, so one word written
two ways (``café`` composed or as ``e`` plus a combining accent, ``ﬁle`` with
a ligature, ``Straße`` and ``STRASSE``) is one term. Words are runs of
letters or digits with the combining marks that follow them (``_`` and
punctuation split them; a mark is part of its letter: Devanagari's vowel
signs, a decomposed accent, the dot that folding ``İ`` leaves); CJK
ideographs, kana and hangul are one term per character, since those scripts
put no spaces between words. Single Latin letters and common English function
words are dropped, and ASCII words are reduced to their Porter stem, so
``painted`` and ``paintings`` match ``paint``.

Example:
    >>> terms("What did Caroline research? She researched adoption agencies.")
    ['carolin', 'research', 'research', 'adopt', 'agenc']
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

from contextwindow._args import check_str
from contextwindow.relevance._stem import stem

__all__ = ["STOPWORDS", "terms"]

_CJK = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]"
_WORD = re.compile(_CJK + r"|[^\W_]+")
"""Words of ASCII text (no combining mark can occur in it)."""

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be
    because been before being below between both but by can could did do does
    doing done down during each else ever few for from further get got had has
    have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most much my myself no nor not now of off on
    once only or other ought our ours ourselves out over own really same shall
    she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up upon us very was
    we were what when where which while who whom whose why will with would yet
    you your yours yourself yourselves ll re ve don didn doesn isn wasn aren
    weren won wouldn couldn shouldn hasn haven hadn
    """.split()  # noqa: SIM905 -- a list of 160 words reads better as text
)
"""English function words: they match nearly everything, so they rank nothing."""


def terms(text: str) -> list[str]:
    """The search terms of ``text``, in order, repeats kept.

    Example:
        >>> terms("I'm painting 3 cats in 東京")
        ['paint', '3', 'cat', '東', '京']
    """
    if text.__class__ is not str:  # one test on the hot path
        check_str(text, "text")
    if text.isascii():  # most text, and already normal: the fast path
        words = _WORD.findall(text.lower())
    else:
        words = _unicode_words().findall(unicodedata.normalize("NFKC", text).casefold())
    out: list[str] = []
    append = out.append
    for word in words:
        term = _term(word)
        if term:
            append(term)
    return out


@cache
def _unicode_words() -> re.Pattern[str]:
    r"""Words of any text: a letter or digit, then letters, digits and marks.

    Python's ``\w`` takes no combining mark (categories Mn and Mc), and
    ``re`` has no class for them: the class is read from ``unicodedata``
    once, at the first text that is not ASCII (about 30 ms). Every such mark
    lies below U+20000 but for the variation selectors U+E0100-U+E01EF
    (``tests/relevance/test_text.py`` checks this against ``unicodedata``).
    """
    ranges: list[tuple[int, int]] = []
    for cp in range(0x300, 0x20000):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    ranges.append((0xE0100, 0xE01EF))
    marks = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )
    # Letters, then marks and letters: the marks' class is long (some 300
    # ranges), so a word's end on an ASCII character skips it.
    return re.compile(_CJK + rf"|[^\W_]+(?:(?![\x00-\x7f])[{marks}]+[^\W_]*)*")


@lru_cache(maxsize=200_000)
def _term(word: str) -> str:
    """The term a lowercase word stands for; empty when it is a stopword."""
    if word in STOPWORDS:
        return ""
    if word.isascii():
        if word.isalpha():
            return "" if len(word) == 1 else stem(word)
        return word
    return word
