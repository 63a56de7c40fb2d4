"""Strategies by name: ``parse_strategy("dedupe,truncate(keep_recent=2),drop-oldest")``.

Contract:

- ``parse_strategy(spec)`` returns the strategy a spec names: one stage is
  that strategy itself; stages joined by ``,`` are a ``Pipeline`` of them, in
  order. It builds the same objects the classes build, so a parsed strategy
  equals the one written out in Python.
- A stage is a name from ``STRATEGY_NAMES``, optionally followed by integer
  arguments in parentheses: ``name(key=value, ...)``, or one positional value
  where the strategy takes one (``sliding-window(30)``). Names ignore case, and
  ``_`` stands for ``-``.
- A bad spec raises ``ContextWindowError`` naming the stage at fault and
  listing the valid names or arguments; nothing else escapes.

Example:
    >>> parse_strategy("sliding-window(30)")
    SlidingWindow(keep_last=30)
    >>> pipe = parse_strategy("dedupe, truncate(max_tokens=300), drop-oldest")
    >>> pipe.stages[1], len(pipe.stages)
    (TruncateToolResults(keep_recent=3, max_tokens=300), 3)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from contextwindow.errors import ContextWindowError
from contextwindow.strategies.base import Strategy
from contextwindow.strategies.drop import DropOldest, MaxMessages, SlidingWindow
from contextwindow.strategies.lossless import CompactLossless
from contextwindow.strategies.pipeline import Pipeline
from contextwindow.strategies.relevant import SelectRelevant
from contextwindow.strategies.stale import StaleReads
from contextwindow.strategies.summarize import Summarize
from contextwindow.strategies.tool_results import (
    ClearToolResults,
    Deduplicate,
    TruncateToolResults,
)

__all__ = ["STRATEGY_NAMES", "StrategyName", "parse_strategy"]


@dataclass(frozen=True, slots=True)
class StrategyName:
    """What a strategy name builds, and the arguments it takes.

    Example:
        >>> STRATEGY_NAMES["truncate"].make(keep_recent=1)
        TruncateToolResults(keep_recent=1, max_tokens=500)
    """

    make: Callable[..., Strategy]
    """Builds the strategy from keyword arguments."""
    arguments: tuple[str, ...] = ()
    """The integer arguments it takes, by keyword."""
    positional: bool = False
    """Whether one value without a keyword is taken as the first argument."""
    summary: str = ""
    """One line saying what it does, for help texts."""

    def usage(self, name: str) -> str:
        """How the name is written with its arguments.

        Example:
            >>> STRATEGY_NAMES["truncate"].usage("truncate")
            'truncate(keep_recent=N, max_tokens=N)'
            >>> STRATEGY_NAMES["sliding-window"].usage("sliding-window")
            'sliding-window(N)'
        """
        if not self.arguments:
            return name
        if self.positional:
            return f"{name}(N)"
        return f"{name}({', '.join(f'{a}=N' for a in self.arguments)})"


def _default() -> Strategy:
    # fitting imports the strategies package, so importing it at the top of
    # this module would be a cycle once the package re-exports parse_strategy.
    from contextwindow.fitting import DEFAULT_STRATEGY

    return DEFAULT_STRATEGY


STRATEGY_NAMES: Mapping[str, StrategyName] = MappingProxyType(
    {
        "drop-oldest": StrategyName(
            DropOldest,
            ("keep_first",),
            summary="drop the oldest units until the budget is met (the task last)",
        ),
        "sliding-window": StrategyName(
            SlidingWindow,
            ("keep_last",),
            positional=True,
            summary="keep the last N units, drop the rest",
        ),
        "relevant": StrategyName(
            SelectRelevant,
            ("keep_recent",),
            positional=True,
            summary="keep the recent units and the older ones most relevant to "
            "the final message (BM25)",
        ),
        "max-messages": StrategyName(
            MaxMessages,
            ("limit",),
            positional=True,
            summary="keep at most N messages besides system ones, oldest units first",
        ),
        "truncate": StrategyName(
            TruncateToolResults,
            ("keep_recent", "max_tokens"),
            summary="cut old tool results to head and tail",
        ),
        "clear": StrategyName(
            ClearToolResults,
            ("keep_recent",),
            summary="replace old tool results with a placeholder",
        ),
        "lossless": StrategyName(
            CompactLossless,
            summary="compact JSON, repeated lines and whitespace in tool output "
            "(loses nothing)",
        ),
        "dedupe": StrategyName(
            Deduplicate,
            summary="point repeated tool outputs (also but for timestamps and "
            "ids) to the latest copy",
        ),
        "stale": StrategyName(
            StaleReads,
            summary="mark file reads that a later read or write supersedes",
        ),
        "summarize": StrategyName(
            Summarize,
            ("keep_recent", "max_tokens"),
            summary="replace the oldest units with one extractive summary "
            "that keeps their facts (offline)",
        ),
        "default": StrategyName(
            _default,
            summary="lossless, dedupe, stale, truncate, clear, then drop-oldest",
        ),
    }
)
"""Every strategy name ``parse_strategy`` knows, in the order help lists them."""

_STAGE = re.compile(r"([A-Za-z][\w-]*)\s*(?:\((.*)\))?", re.S)


def parse_strategy(spec: str) -> Strategy:
    """The strategy a spec names (see the module's contract).

    Args:
        spec: Stage names joined by ``,``, each optionally with arguments,
            e.g. ``"sliding-window(30),drop-oldest"``.

    Returns:
        The strategy of the one stage, or a ``Pipeline`` of the stages.

    Raises:
        ContextWindowError: An empty spec or stage, an unknown name, an
            unknown or repeated argument, a value that is not an integer, a
            value the strategy refuses, or unbalanced parentheses.

    Example:
        >>> parse_strategy("clear(keep_recent=5)")
        ClearToolResults(keep_recent=5, placeholder='[tool result cleared: {tokens} tokens{names}; recall {handle}]', max_share=0.1)
        >>> parse_strategy("default") == parse_strategy(
        ...     "lossless,dedupe,stale,truncate,clear,drop-oldest")
        True
        >>> parse_strategy("truncate(keep=2)")
        Traceback (most recent call last):
        ...
        contextwindow.errors.ContextWindowError: strategy 'truncate(keep=2)': unknown argument 'keep' (truncate takes keep_recent, max_tokens)
        >>> parse_strategy("dedupe,shrink")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        contextwindow.errors.ContextWindowError: strategy 'shrink': unknown name (known: drop-oldest, sliding-window, ...)
    """  # noqa: E501 -- doctest output lines cannot be wrapped
    stages = [_stage(part) for part in _split(spec)]
    return stages[0] if len(stages) == 1 else Pipeline(*stages)


def _split(spec: str) -> list[str]:
    """The stages of a spec: split at the commas outside parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(spec):
        if ch == "(":
            depth += 1
            if depth > 1:
                raise _error(spec, "nested parentheses")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _error(spec, "')' without '('")
        elif ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    if depth:
        raise _error(spec, "'(' without ')'")
    parts.append(spec[start:])
    parts = [p.strip() for p in parts]
    if not any(parts):
        raise ContextWindowError(
            f"empty strategy spec (known names: {', '.join(STRATEGY_NAMES)})"
        )
    for k, p in enumerate(parts):
        if not p:
            raise _error(spec, f"stage {k + 1} is empty")
    return parts


def _stage(part: str) -> Strategy:
    m = _STAGE.fullmatch(part)
    if m is None:
        raise _error(part, "expected name or name(key=value, ...)")
    name = m.group(1).lower().replace("_", "-")
    entry = STRATEGY_NAMES.get(name)
    if entry is None:
        known = ", ".join(STRATEGY_NAMES)
        raise _error(part, f"unknown name (known: {known})")
    kwargs = _arguments(part, name, entry, m.group(2) or "")
    try:
        return entry.make(**kwargs)
    except ContextWindowError as exc:
        raise _error(part, str(exc)) from None


def _arguments(part: str, name: str, entry: StrategyName, raw: str) -> dict[str, int]:
    items = [a.strip() for a in raw.split(",")] if raw.strip() else []
    if items and not entry.arguments:
        raise _error(part, f"{name} takes no arguments")
    takes = f"{name} takes {', '.join(entry.arguments)}"
    kwargs: dict[str, int] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq:
            if not entry.positional or len(items) > 1:
                raise _error(
                    part, f"{item!r} needs a keyword (usage: {entry.usage(name)})"
                )
            key, value = entry.arguments[0], item
        key = key.strip()
        if key not in entry.arguments:
            raise _error(part, f"unknown argument {key!r} ({takes})")
        if key in kwargs:
            raise _error(part, f"argument {key!r} given twice")
        kwargs[key] = _integer(part, key, value.strip())
    return kwargs


def _integer(part: str, key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _error(part, f"{key}={value!r} is not an integer") from None


def _error(part: str, reason: str) -> ContextWindowError:
    return ContextWindowError(f"strategy {part!r}: {reason}")
