"""Strategies that fit a conversation into a token budget.

Each is a small, pure callable ``strategy(messages, budget) -> Fitted``;
``Pipeline`` chains them and stops once the budget is met. Every output is
valid for the budget's provider (``contextwindow.validity.ensure_valid``).

Example:
    >>> from contextwindow import Message, TokenCounter
    >>> from contextwindow.testing import FakeTokenizer
    >>> conv = [Message.user("a " * 50), Message.assistant("b " * 20),
    ...         Message.user("c"), Message.assistant("d"), Message.user("e?")]
    >>> fitted = Pipeline(SlidingWindow(4), DropOldest(keep_first=0))(
    ...     conv, Budget(30, TokenCounter(FakeTokenizer())))
    >>> [m.text for m in fitted.messages], fitted.report.stages
    (['c', 'd', 'e?'], ('SlidingWindow', 'DropOldest'))
"""

from __future__ import annotations

from contextwindow.strategies.base import (
    Budget,
    Change,
    ChangeKind,
    Fitted,
    Report,
    Strategy,
    finish,
    pinned_flags,
)
from contextwindow.strategies.collapse import CollapseRuns
from contextwindow.strategies.drop import DropOldest, MaxMessages, SlidingWindow
from contextwindow.strategies.files import DEFAULT_FILE_TOOLS, FileTool
from contextwindow.strategies.lossless import CompactLossless
from contextwindow.strategies.names import STRATEGY_NAMES, parse_strategy
from contextwindow.strategies.pipeline import Pipeline
from contextwindow.strategies.relevant import SelectRelevant
from contextwindow.strategies.stale import StaleReads
from contextwindow.strategies.summarize import Summarize
from contextwindow.strategies.tool_inputs import TruncateToolInputs
from contextwindow.strategies.tool_results import (
    ClearToolResults,
    Deduplicate,
    TruncateToolResults,
)

__all__ = [
    "DEFAULT_FILE_TOOLS",
    "STRATEGY_NAMES",
    "Budget",
    "Change",
    "ChangeKind",
    "ClearToolResults",
    "CollapseRuns",
    "CompactLossless",
    "Deduplicate",
    "DropOldest",
    "FileTool",
    "Fitted",
    "MaxMessages",
    "Pipeline",
    "Report",
    "SelectRelevant",
    "SlidingWindow",
    "StaleReads",
    "Strategy",
    "Summarize",
    "TruncateToolInputs",
    "TruncateToolResults",
    "finish",
    "parse_strategy",
    "pinned_flags",
]
