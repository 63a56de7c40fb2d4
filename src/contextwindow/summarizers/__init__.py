"""Summarizers: turn older messages into a short text that keeps the facts.

- ``Summarizer`` / ``AsyncSummarizer``: the protocols (``base``).
- ``ExtractiveSummarizer``: no network, deterministic; the default.
- ``NamesSummarizer``: no network, deterministic; the paths, identifiers and
  numbers the messages held, no prose (the default pipeline's last resort
  before dropping).
- ``OpenAICompatibleSummarizer``, ``AnthropicSummarizer``: LLM summaries over
  HTTP (extra ``llm``), with the facts the model dropped re-attached.
- ``extract_facts``, ``Facts``, ``check_facts``: the fact record (``facts``).
- ``is_summary``, ``summary_sources``, ``summary_handle``, ``recall``:
  summary messages in a conversation (``record``).

Example:
    >>> from contextwindow.messages import Message
    >>> s = ExtractiveSummarizer().summarize(
    ...     [Message.user("Deploy v2.3.1 to staging before 5 pm today.")])
    >>> print(s)
    user: Deploy v2.3.1 to staging before 5 pm today.
"""

from __future__ import annotations

from contextwindow.summarizers._llm import DEFAULT_PROMPT, render_transcript
from contextwindow.summarizers.anthropic import AnthropicSummarizer
from contextwindow.summarizers.base import AsyncSummarizer, Summarizer
from contextwindow.summarizers.extractive import ExtractiveSummarizer
from contextwindow.summarizers.facts import (
    Fact,
    FactCheck,
    FactKind,
    Facts,
    check_facts,
    extract_facts,
)
from contextwindow.summarizers.names import NamesSummarizer
from contextwindow.summarizers.openai_compat import OpenAICompatibleSummarizer
from contextwindow.summarizers.record import (
    SUMMARY_KEY,
    is_summary,
    recall,
    summary_body,
    summary_facts,
    summary_handle,
    summary_message,
    summary_sources,
)

__all__ = [
    "DEFAULT_PROMPT",
    "SUMMARY_KEY",
    "AnthropicSummarizer",
    "AsyncSummarizer",
    "ExtractiveSummarizer",
    "Fact",
    "FactCheck",
    "FactKind",
    "Facts",
    "NamesSummarizer",
    "OpenAICompatibleSummarizer",
    "Summarizer",
    "check_facts",
    "extract_facts",
    "is_summary",
    "recall",
    "render_transcript",
    "summary_body",
    "summary_facts",
    "summary_handle",
    "summary_message",
    "summary_sources",
]
