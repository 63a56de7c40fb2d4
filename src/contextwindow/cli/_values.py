"""Option values the commands share: token amounts such as ``10k``, ``1.5M``, ``25%``.

Contract: a wrong value is a click ``BadParameter``, one line naming the value
and what is accepted; nothing here prints.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import click

__all__ = ["Amount", "AmountType", "parse_amount"]

_AMOUNT = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)(%?)", re.IGNORECASE)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


@dataclass(frozen=True, slots=True)
class Amount:
    """A number of tokens, or a share (``percent``) of some other number."""

    value: float
    percent: bool = False

    def tokens(self, whole: int) -> int:
        """The tokens this amount stands for, ``whole`` being 100 %.

        Example:
            >>> Amount(25, percent=True).tokens(2000), Amount(1500).tokens(2000)
            (500, 1500)
        """
        return int(whole * self.value / 100) if self.percent else int(self.value)

    def __str__(self) -> str:
        """As given, in digits: ``25%``, ``12.5%``, ``1,000,000%``, ``1,500``.

        Never in exponent notation (``1e+06%``), which no budget is written in.

        Example:
            >>> str(Amount(1e6, percent=True)), str(Amount(0.5, percent=True))
            ('1,000,000%', '0.5%')
        """
        if not self.percent:
            return f"{int(self.value):,}"
        # repr is the float's shortest exact digits; Decimal writes them out.
        digits = Decimal(repr(float(self.value))).normalize()
        return f"{digits:,f}%"


def parse_amount(text: str, *, percent: bool = True) -> Amount | None:
    """``1500``, ``1,500``, ``10k``, ``1.5M`` or (with ``percent``) ``25%``.

    Returns ``None`` for what is none of these (a fraction of a token
    included).

    Example:
        >>> parse_amount("10k"), parse_amount("1.5M"), parse_amount("25%")
        (Amount(value=10000, percent=False), Amount(value=1500000, percent=False), \
Amount(value=25.0, percent=True))
        >>> parse_amount("1.5") is None, parse_amount("-5") is None
        (True, True)
        >>> parse_amount("9007199254740993")  # past a float's exact integers
        Amount(value=9007199254740993, percent=False)
    """
    cleaned = text.strip().replace(",", "").replace("_", "")
    m = _AMOUNT.fullmatch(cleaned)
    if m is None:
        return None
    number, suffix, pct = m.groups()
    if pct:
        share = float(number)
        if not percent or suffix or share == math.inf:
            return None
        return Amount(share, percent=True)
    # Exact: a float holds integers to 2**53 alone (9007199254740993 would
    # read as ...992), so a count is never read through one.
    try:
        tokens = Fraction(number) * _SCALE[suffix.lower()]
    except ValueError:  # past Python's 4,300 digits for an int
        return None
    if tokens.denominator != 1:
        return None
    return Amount(int(tokens))


class AmountType(click.ParamType[Amount]):
    """A click type for token amounts (see ``parse_amount``)."""

    name = "amount"

    def __init__(self, whole: str | None) -> None:
        """``whole``: what N% is a share of (``None``: no percentages)."""
        self.whole = whole

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> Amount:
        """Parse ``value``, or fail with one line naming it and what is accepted."""
        if isinstance(value, Amount):
            return value
        parsed = parse_amount(str(value), percent=self.whole is not None)
        if parsed is None and str(value).strip().startswith("-"):
            self.fail(f"{value!r} is negative: give 0 or more", param, ctx)
        if parsed is None:
            accepted = "a number of tokens (N, such as 1500, 10k or 1.5M)"
            if self.whole is not None:
                accepted += f" or a share of {self.whole} (N%)"
            self.fail(f"{value!r} is not {accepted}", param, ctx)
        return parsed
