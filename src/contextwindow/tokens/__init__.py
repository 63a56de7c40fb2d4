"""Counting tokens: the ``Tokenizer`` protocol, its implementations, and framing.

- ``BPETokenizer``: exact o200k_base / cl100k_base counts, offline.
- ``HeuristicTokenizer``: a fast o200k estimate from character classes.
- ``ApproximateTokenizer``: another tokenizer's counts, scaled and labelled as
  an estimate for a model whose vocabulary is not public (e.g. Claude).
- ``HFTokenizer``: any Hugging Face ``tokenizer.json`` (extra ``hf``; importing
  this package never needs it).
- ``Calibration``: the ratio of a provider's reported input tokens to these
  counts, learned from usage reports (``reported_input_tokens``).
- ``TokenCounter`` / ``count_messages``: whole messages and requests, with each
  provider's framing, tool schemas and images, cached per message.

Example:
    >>> from contextwindow.messages import Message
    >>> count_messages([Message.user("hello")], BPETokenizer("o200k_base"))
    8
"""

from __future__ import annotations

from contextwindow.tokens.approx import ApproximateTokenizer
from contextwindow.tokens.base import Tokenizer
from contextwindow.tokens.bpe import BPETokenizer, load_encoding
from contextwindow.tokens.calibration import Calibration, reported_input_tokens
from contextwindow.tokens.counting import TokenCounter, count_messages
from contextwindow.tokens.heuristic import HeuristicTokenizer
from contextwindow.tokens.hf import HFTokenizer

__all__ = [
    "ApproximateTokenizer",
    "BPETokenizer",
    "Calibration",
    "HFTokenizer",
    "HeuristicTokenizer",
    "TokenCounter",
    "Tokenizer",
    "count_messages",
    "load_encoding",
    "reported_input_tokens",
]
