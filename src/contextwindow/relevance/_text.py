"""Text to search terms: words, lowercased, without stopwords, stemmed.

Contract: ``terms(text)`` is a pure function of the text. Words are runs of
letters or digits (``_`` and punctuation split them); CJK ideographs, kana and
hangul are one term per character, since those scripts put no spaces between
words. Single Latin letters and common English function words are dropped, and
ASCII words are reduced to their Porter stem, so ``painted`` and ``paintings``
match ``paint``.

Example:
    >>> terms("What did Caroline research? She researched adoption agencies.")
    ['carolin', 'research', 'research', 'adopt', 'agenc']
"""

from __future__ import annotations

import re
from functools import lru_cache

from contextwindow._args import check_str
from contextwindow.relevance._stem import stem

__all__ = ["STOPWORDS", "terms"]

_WORD = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_]+"
)

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
    out: list[str] = []
    append = out.append
    for word in _WORD.findall(text.lower()):
        term = _term(word)
        if term:
            append(term)
    return out


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
