"""Strategies by name: ``parse_strategy("dedupe,truncate(keep_recent=2),drop-oldest")``.

Contract:

- ``parse_strategy(spec)`` returns the strategy a spec names: one stage is
  that strategy itself; stages joined by ``,`` are a ``Pipeline`` of them, in
  order. It builds the same objects the classes build, so a parsed strategy
  equals the one written out in Python.
- A stage is a name from ``STRATEGY_NAMES``, optionally followed by arguments
  in parentheses: ``name(key=value, ...)``; where the strategy takes one, its
  first argument may come first without its keyword (``sliding-window(30)``,
  ``relevant(4, scorer=embeddings)``). Every option a strategy's class
  takes has a name here: integers (``N``), numbers (``X``), texts (``TEXT``,
  quoted with ``'`` or ``"`` when they hold a comma or a parenthesis), and
  parts chosen by name (``relevant(scorer=embeddings)``,
  ``summarize(summarizer=extractive)``). Names ignore case, and ``_`` stands
  for ``-``.
- A bad spec raises ``ContextWindowError`` naming the stage at fault and
  listing the valid names or arguments; nothing else escapes.

Example:
    >>> parse_strategy("sliding-window(30)")
    SlidingWindow(keep_last=30)
    >>> pipe = parse_strategy("dedupe, truncate(max_tokens=300), drop-oldest")
    >>> pipe.stages[1], len(pipe.stages)
    (TruncateToolResults(keep_recent=3, max_tokens=300), 3)
    >>> parse_strategy("clear(placeholder='[cut, {tokens} tokens]')").placeholder
    '[cut, {tokens} tokens]'
    >>> parse_strategy("summarize(max_share=0.5)").max_share
    0.5
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from contextwindow._args import check_str
from contextwindow.errors import ContextWindowError
from contextwindow.strategies.base import Strategy
from contextwindow.strategies.drop import DropOldest, MaxMessages, SlidingWindow
from contextwindow.strategies.files import DEFAULT_FILE_TOOLS, FileTool
from contextwindow.strategies.lossless import CompactLossless
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
    "INT",
    "NUMBER",
    "STRATEGY_NAMES",
    "TEXT",
    "StrategyName",
    "Value",
    "choice",
    "parse_strategy",
]


@dataclass(frozen=True, slots=True)
class Value:
    """How one argument of a spec is written and read.

    Example:
        >>> INT.read("3"), NUMBER.read("0.5"), TEXT.read("'a, b'")
        (3, 0.5, 'a, b')
    """

    metavar: str
    """How help texts show it: ``N``, ``X``, ``TEXT``, or the names to choose."""
    read: Callable[[str], object]
    """Turns the written value into the argument (``ValueError`` when it cannot)."""


def _int(text: str) -> int:
    return int(text)


def _number(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


def _text(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


INT = Value("N", _int)
"""An integer."""
NUMBER = Value("X", _number)
"""A finite number."""
TEXT = Value("TEXT", _text)
"""A text, quoted when it holds ``,``, ``(`` or ``)``."""


def _bool(text: str) -> bool:
    word = text.lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise ValueError(text)


def _names(text: str) -> tuple[str, ...]:
    names = tuple(_text(text).replace("|", " ").split())
    if not names:
        raise ValueError(text)
    return names


def _file_tools(text: str) -> Mapping[str, FileTool]:
    names = _names(text)
    unknown = [n for n in names if n not in DEFAULT_FILE_TOOLS]
    if unknown:
        raise ValueError(text)
    return {n: DEFAULT_FILE_TOOLS[n] for n in names}


BOOL = Value("BOOL", _bool)
"""``true`` or ``false`` (also ``yes``/``no``, ``on``/``off``, ``1``/``0``)."""
NAMES = Value("NAMES", _names)
"""Names separated by spaces or ``|``: ``shell='bash zsh'``."""
FILE_TOOLS = Value("TOOLS", _file_tools)
"""Known file tools by name (``DEFAULT_FILE_TOOLS``): ``tools='Read Edit'``."""


def choice(**made: Callable[[], object]) -> Value:
    """A part chosen by name, built when the spec is read.

    Example:
        >>> choice(one=lambda: 1, two=lambda: 2).read("two")
        2
    """

    def read(text: str) -> object:
        make = made.get(_text(text).strip().lower())
        if make is None:
            raise ValueError(text)
        return make()

    return Value("|".join(made), read)


@dataclass(frozen=True, slots=True)
class StrategyName:
    """What a strategy name builds, and the arguments it takes.

    Example:
        >>> STRATEGY_NAMES["truncate"].make(keep_recent=1)
        TruncateToolResults(keep_recent=1, max_tokens=500)
    """

    make: Callable[..., Strategy]
    """Builds the strategy from keyword arguments."""
    arguments: Mapping[str, Value] = field(default_factory=lambda: MappingProxyType({}))
    """The arguments it takes, by keyword, and how each is written."""
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
        if self.positional and len(self.arguments) == 1:
            return f"{name}({next(iter(self.arguments.values())).metavar})"
        shown = ", ".join(f"{a}={v.metavar}" for a, v in self.arguments.items())
        return f"{name}({shown})"


def _args(**values: Value) -> Mapping[str, Value]:
    return MappingProxyType(values)


def _bm25() -> object:
    from contextwindow.relevance import BM25Scorer

    return BM25Scorer()


def _embeddings() -> object:
    # Loads all-MiniLM-L6-v2 (the ``embeddings`` extra) when the spec is read.
    from contextwindow.relevance import EmbeddingScorer, MiniLMEmbedder

    return EmbeddingScorer(MiniLMEmbedder())


def _extractive() -> object:
    from contextwindow.summarizers.extractive import ExtractiveSummarizer

    return ExtractiveSummarizer()


def _names_summarizer() -> object:
    from contextwindow.summarizers.names import NamesSummarizer

    return NamesSummarizer()


def _default() -> Strategy:
    # fitting imports the strategies package, so importing it at the top of
    # this module would be a cycle once the package re-exports parse_strategy.
    from contextwindow.fitting import DEFAULT_STRATEGY

    return DEFAULT_STRATEGY


STRATEGY_NAMES: Mapping[str, StrategyName] = MappingProxyType(
    {
        "drop-oldest": StrategyName(
            DropOldest,
            _args(keep_first=INT),
            summary="drop the oldest units until the budget is met (the task last)",
        ),
        "sliding-window": StrategyName(
            SlidingWindow,
            _args(keep_last=INT),
            positional=True,
            summary="keep the last N units, drop the rest",
        ),
        "relevant": StrategyName(
            SelectRelevant,
            _args(keep_recent=INT, scorer=choice(bm25=_bm25, embeddings=_embeddings)),
            positional=True,
            summary="keep the recent units and the older ones most relevant to "
            "the final message (BM25, or embeddings: the embeddings extra)",
        ),
        "max-messages": StrategyName(
            MaxMessages,
            _args(limit=INT),
            positional=True,
            summary="keep at most N messages besides system ones, oldest units first",
        ),
        "truncate": StrategyName(
            TruncateToolResults,
            _args(keep_recent=INT, max_tokens=INT),
            summary="cut old tool results to head and tail",
        ),
        "truncate-inputs": StrategyName(
            TruncateToolInputs,
            _args(keep_recent=INT, max_tokens=INT),
            summary="cut long arguments of old tool calls (a file written) to "
            "head and tail",
        ),
        "clear": StrategyName(
            ClearToolResults,
            _args(keep_recent=INT, placeholder=TEXT, max_share=NUMBER),
            summary="replace old tool results with a placeholder",
        ),
        "lossless": StrategyName(
            CompactLossless,
            summary="compact JSON, repeated lines and whitespace in tool output "
            "(loses nothing)",
        ),
        "dedupe": StrategyName(
            Deduplicate,
            _args(note=TEXT, near=BOOL),
            summary="point repeated tool outputs (also but for timestamps and "
            "ids) to the latest copy",
        ),
        "stale": StrategyName(
            StaleReads,
            _args(tools=FILE_TOOLS, shell=NAMES, marker=TEXT),
            summary="mark file reads that a later read or write supersedes",
        ),
        "summarize": StrategyName(
            Summarize,
            _args(
                keep_recent=INT,
                max_tokens=INT,
                max_share=NUMBER,
                keep_first=INT,
                read_originals=BOOL,
                summarizer=choice(extractive=_extractive, names=_names_summarizer),
            ),
            summary="replace the oldest units with one extractive summary "
            "that keeps their facts (offline)",
        ),
        "default": StrategyName(
            _default,
            summary="lossless, dedupe, stale, truncate, truncate-inputs, clear, "
            "truncate the latest, summarize by names, then drop-oldest",
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
        ArgumentTypeError: ``spec`` is not a ``str``.
        ContextWindowError: An empty spec or stage, an unknown name, an
            unknown or repeated argument, a value not of the argument's kind,
            a value the strategy refuses, or unbalanced parentheses or
            quotes.

    Example:
        >>> parse_strategy("clear(keep_recent=5)")
        ClearToolResults(keep_recent=5, placeholder='[tool result cleared: {tokens} tokens{names}; recall {handle}]', max_share=0.1)
        >>> parse_strategy("default").strategy == parse_strategy(
        ...     "lossless,dedupe,stale,truncate,truncate-inputs,clear,"
        ...     "truncate(keep_recent=0),summarize(summarizer=names,keep_recent=2,"
        ...     "max_tokens=1000,keep_first=1,read_originals=true),drop-oldest")
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
    check_str(spec, "spec", takes="a strategy spec str (e.g. 'drop-oldest')")
    stages = [_stage(part) for part in _split(spec)]
    return stages[0] if len(stages) == 1 else Pipeline(*stages)


def _split(spec: str) -> list[str]:
    """The stages of a spec: split at the commas outside parentheses and quotes."""
    parts: list[str] = []
    depth = 0
    start = 0
    quote = ""
    for i, ch in enumerate(spec):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
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
    if quote:
        raise _error(spec, f"{quote} without its closing {quote}")
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


def _items(raw: str) -> list[str]:
    """The arguments of a stage: split at the commas outside quotes."""
    items: list[str] = []
    start = 0
    quote = ""
    for i, ch in enumerate(raw):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == ",":
            items.append(raw[start:i].strip())
            start = i + 1
    items.append(raw[start:].strip())
    return items


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


def _arguments(
    part: str, name: str, entry: StrategyName, raw: str
) -> dict[str, object]:
    items = _items(raw) if raw.strip() else []
    if items and not entry.arguments:
        raise _error(part, f"{name} takes no arguments")
    takes = f"{name} takes {', '.join(entry.arguments)}"
    first = next(iter(entry.arguments), "")
    kwargs: dict[str, object] = {}
    for k, item in enumerate(items):
        key, eq, value = item.partition("=")
        if not eq or key.strip()[:1] in ("'", '"'):
            if not entry.positional or k > 0:
                raise _error(
                    part, f"{item!r} needs a keyword (usage: {entry.usage(name)})"
                )
            key, value = first, item
        key = key.strip()
        if key not in entry.arguments:
            raise _error(part, f"unknown argument {key!r} ({takes})")
        if key in kwargs:
            raise _error(part, f"argument {key!r} given twice")
        kwargs[key] = _value(part, key, entry.arguments[key], value.strip())
    return kwargs


_KINDS = {
    "N": "an integer",
    "X": "a number",
    "TEXT": "a text",
    "BOOL": "true or false",
    "NAMES": "names separated by spaces",
    "TOOLS": "file tool names (" + ", ".join(DEFAULT_FILE_TOOLS) + ")",
}


def _value(part: str, key: str, kind: Value, value: str) -> object:
    try:
        return kind.read(value)
    except ValueError:
        what = _KINDS.get(kind.metavar, f"one of {kind.metavar.replace('|', ', ')}")
        raise _error(part, f"{key}={value!r} is not {what}") from None


def _error(part: str, reason: str) -> ContextWindowError:
    return ContextWindowError(f"strategy {part!r}: {reason}")
