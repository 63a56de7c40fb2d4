"""Learning how far an approximate count is from what the provider bills.

Contract:

- ``Calibration`` keeps the ratio of the input tokens a provider reported
  for a request to the count made of that same request here, over the last
  ``window`` observations, and estimates it as their median: one odd call
  (a request counted for one thing and billed for another) moves it little.
  Before any observation the ratio is ``prior`` (1.0: the count as it is).
- ``estimate(counted)`` is what the provider would bill for ``counted``
  tokens (rounded up); ``limit(budget)`` is the count that fits ``budget``
  billed tokens (rounded down), the number to give ``fit`` or a manager as
  its budget. Both are monotonic in their argument.
- ``reported_input_tokens(usage)`` reads the prompt size from the usage any
  provider or framework returns (an ``int``, a mapping or an object, or a
  response carrying one): OpenAI's ``prompt_tokens``, Anthropic's
  ``input_tokens`` plus its cache reads and writes, Gemini's
  ``prompt_token_count``, and the ``input_tokens`` of the Responses API,
  pydantic-ai, the OpenAI Agents SDK and LangChain (which include cached
  tokens already).
- Observations that say nothing (a count or a report of 0) are ignored, so
  an adapter may pass every usage it sees. So is, with a warning logged
  (``contextwindow.calibration``; a log, not a Python warning, since an
  adapter passes what it gets), an observation whose ratio lies outside
  ``PLAUSIBLE`` (a quarter to four times the count): no tokenizer is that
  far from another, so such a report is not of the request counted (a
  session's cumulative usage, another request's, a mocked one), and taken it
  would decide the ratio alone while it is the only one. A negative count or
  report is an error.
- A calibration may be shared by several managers of one model, from
  several threads.
"""

from __future__ import annotations

import logging
import math
import statistics
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sized
from typing import Any, cast

from contextwindow._args import check_int, check_items, check_number, shown
from contextwindow.errors import ArgumentTypeError, ArgumentValueError

__all__ = ["PLAUSIBLE", "Calibration", "reported_input_tokens"]

logger = logging.getLogger("contextwindow.calibration")

DEFAULT_WINDOW = 20
"""Observations the ratio is the median of: enough that one odd call moves
it little, few enough that it follows a change of model or framing."""

MAX_WINDOW = 1_000_000
"""The largest ``window``: far more observations than a median needs."""

PLAUSIBLE = (0.25, 4.0)
"""The ratios one observation may have to be kept (bounds included). The
approximations differ from the real tokenizers by tens of percent (Claude's
to o200k's: about 1.2); a report four times the count or more, or a quarter
of it or less, is of something else than the request counted."""

_INPUT_KEYS = (
    "prompt_tokens",
    "input_tokens",
    "prompt_token_count",
    "promptTokenCount",
)
_ANTHROPIC_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")


class Calibration:
    """The ratio of the provider's reported input tokens to this project's count.

    Args:
        window: How many recent observations the ratio is the median of.
        prior: The ratio before anything was observed.

    Raises:
        ArgumentError: ``window`` is not an int in [1, ``MAX_WINDOW``], or
            ``prior`` not a positive number.

    Example:
        >>> cal = Calibration()
        >>> cal.ratio, cal.limit(10_000)
        (1.0, 10000)
        >>> cal.observe(1_000, {"input_tokens": 1_100})  # counted, reported
        1.1
        >>> cal.observe(2_000, 2_300)
        1.125
        >>> cal.estimate(4_000), cal.limit(10_000), cal.observed
        (4500, 8888, 2)
    """

    __slots__ = ("_lock", "_prior", "_ratios", "_window")

    def __init__(self, *, window: int = DEFAULT_WINDOW, prior: float = 1.0) -> None:
        self._window: int = check_int(window, "window", low=1, high=MAX_WINDOW)
        self._prior = float(check_number(prior, "prior", low=0, open_low=True))
        self._ratios: deque[float] = deque(maxlen=self._window)
        self._lock = threading.Lock()

    @property
    def ratio(self) -> float:
        """Reported over counted: the median of the recent observations."""
        with self._lock:
            ratios = tuple(self._ratios)
        return statistics.median(ratios) if ratios else self._prior

    @property
    def observed(self) -> int:
        """How many observations the ratio now rests on (at most ``window``)."""
        return len(self._ratios)

    @property
    def window(self) -> int:
        """How many recent observations are kept."""
        return self._window

    @property
    def ratios(self) -> tuple[float, ...]:
        """The recent observations' ratios, oldest first."""
        with self._lock:
            return tuple(self._ratios)

    def observe(self, counted: int, reported: Any) -> float:
        """Record one request: its count here and the usage the provider reported.

        Args:
            counted: The tokens counted here for the request (a manager's
                ``Prepared.tokens``, or ``count_messages`` of what was sent).
            reported: The provider's usage for it (anything
                ``reported_input_tokens`` reads).

        Returns:
            The ratio after this observation (unchanged when it was ignored:
            a count or a report of 0, or a ratio outside ``PLAUSIBLE``, which
            logs a warning).

        Raises:
            ArgumentError: ``counted`` is not an int >= 0, or ``reported`` no
                usage (or a negative one).

        Example:
            >>> cal = Calibration()
            >>> cal.observe(1_000, 250_000)  # a session's total, not this request's
            1.0
            >>> cal.observe(1_000, 1_150), cal.observed
            (1.15, 1)
        """
        counted = int(check_int(counted, "counted", low=0))
        billed = reported_input_tokens(reported)
        if counted > 0 and billed > 0:
            ratio = billed / counted
            low, high = PLAUSIBLE
            if not low <= ratio <= high:
                logger.warning(
                    "usage ignored: %s input tokens reported for a request "
                    "counted at %s (ratio %.3g, outside %g-%g); is it another "
                    "request's, or a total?",
                    f"{billed:,}",
                    f"{counted:,}",
                    ratio,
                    low,
                    high,
                )
                return self.ratio
            with self._lock:
                self._ratios.append(ratio)
        return self.ratio

    def observe_many(self, pairs: Iterable[tuple[int, Any]]) -> float:
        """Record several ``(counted, reported)`` observations, oldest first.

        Raises:
            ArgumentError: ``pairs`` is not an iterable of pairs (each checked
                before any is recorded), or a pair as ``observe`` refuses it.

        Example:
            >>> Calibration().observe_many([(100, 110), (200, 240)])
            1.15
        """
        takes = "an iterable of (counted, reported) pairs"
        items: list[Any] = check_items(pairs, "pairs", takes=takes)
        for k, pair in enumerate(items):
            if not _is_pair(pair):
                raise ArgumentTypeError(f"pairs[{k}]", shown(pair), "a pair")
        for counted, reported in items:
            self.observe(counted, reported)
        return self.ratio

    def estimate(self, counted: int) -> int:
        """What the provider would bill for ``counted`` tokens (rounded up).

        Example:
            >>> Calibration(prior=1.2).estimate(1_000)
            1200
        """
        counted = check_int(counted, "counted", low=0)
        return math.ceil(counted * self.ratio - 1e-9)

    def limit(self, budget: int) -> int:
        """The count that fits ``budget`` billed tokens (rounded down).

        Example:
            >>> Calibration(prior=1.25).limit(1_000)
            800
        """
        budget = check_int(budget, "budget", low=0)
        return math.floor(budget / self.ratio + 1e-9)

    def reset(self) -> None:
        """Forget every observation (the ratio is ``prior`` again)."""
        with self._lock:
            self._ratios.clear()

    def __repr__(self) -> str:
        return (
            f"Calibration(ratio={self.ratio:.4g}, observed={self.observed}, "
            f"window={self._window})"
        )


def reported_input_tokens(usage: Any) -> int:
    """The prompt size in a provider's or a framework's usage report.

    Args:
        usage: An ``int``; a mapping or an object with ``prompt_tokens``
            (OpenAI Chat Completions), ``input_tokens`` (Anthropic, whose
            ``cache_read_input_tokens`` and ``cache_creation_input_tokens``
            are added; the Responses API; pydantic-ai; the OpenAI Agents
            SDK; LangChain's ``usage_metadata``) or ``prompt_token_count``
            (Gemini); or a response carrying one as ``usage``,
            ``usage_metadata`` or ``usageMetadata``.

    Returns:
        The input tokens reported (0 when the report holds none).

    Raises:
        ArgumentTypeError: ``usage`` is none of these.
        ArgumentValueError: A negative count, named by where it was found
            (``usage.prompt_tokens``).

    Example:
        >>> reported_input_tokens({"prompt_tokens": 120, "completion_tokens": 9})
        120
        >>> reported_input_tokens({"input_tokens": 3, "cache_read_input_tokens": 900,
        ...                        "cache_creation_input_tokens": 40})
        943
        >>> reported_input_tokens({"usage": {"input_tokens": 77}})
        77
    """
    found = _read(usage, "usage", depth=0)
    if found is None:
        raise ArgumentTypeError(
            "usage",
            shown(usage),
            "an int, or a usage report with prompt_tokens or input_tokens",
        )
    return found


def _field(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        found: Any = cast("Mapping[str, Any]", obj).get(key)
        return found
    return getattr(obj, key, None)


def _tokens(value: Any, where: str) -> int | None:
    """A count (``None`` when ``value`` is no int); a negative one is refused.

    No provider reports a negative count: one is a bug upstream, and taken
    as 0 it would hide that a request was never billed.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value < 0:
        raise ArgumentValueError(where, shown(value), "a token count >= 0")
    return value


def _read(usage: Any, where: str, depth: int) -> int | None:
    direct = _tokens(usage, where)
    if direct is not None:
        return direct
    if usage is None or isinstance(usage, (str, bytes)) or depth > 2:
        return None
    for key in _INPUT_KEYS:
        value = _field(usage, key)
        n = _tokens(value, f"{where}.{key}")
        if n is None:
            continue
        if key == "input_tokens":
            n += sum(
                _tokens(_field(usage, k), f"{where}.{k}") or 0 for k in _ANTHROPIC_CACHE
            )
        return n
    for key in ("usage", "usage_metadata", "usageMetadata"):
        inner = _field(usage, key)
        if inner is not None and inner is not usage:
            n = _read(inner, f"{where}.{key}", depth + 1)
            if n is not None:
                return n
    return None


def _is_pair(value: object) -> bool:
    """Whether ``value`` is a pair: a tuple or a list of two items."""
    return isinstance(value, tuple | list) and len(cast("Sized", value)) == 2
