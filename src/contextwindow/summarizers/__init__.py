"""Summarizers: turn older messages into a short text (see ``base``).

Example:
    >>> from contextwindow.summarizers import Summarizer
    >>> Summarizer.__name__
    'Summarizer'
"""

from __future__ import annotations

from contextwindow.summarizers.base import AsyncSummarizer, Summarizer

__all__ = ["AsyncSummarizer", "Summarizer"]
