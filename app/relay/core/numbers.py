"""The one rule for numbers a user or a file gives Relay: finite, not negative, not absurd.

A time in seconds, an amount of US dollars or a count arrives by the command line, a
pipeline file, ``relay.toml`` / the environment, or an MCP tool's input; each front end
checks it here, so ``nan``, ``Infinity``, ``1e400``, ``-1`` and a 5,000-digit integer are
refused the same way everywhere, with one line saying what is allowed.

=================  =======================================================================
``SECONDS``        a time: finite, 0 < t ≤ 30 days (a timeout, a lease, an interval)
``DELAY``          a delay: as ``SECONDS`` but 0 allowed (0: no wait)
``USD``            an amount of US dollars: finite, 0 ≤ x ≤ 1,000,000
``whole_number``   a decimal integer as text, bounded, without converting 5,000 digits
=================  =======================================================================

The same rules as pydantic field types are ``relay.core.models.Seconds``, ``Delay`` and
``Usd`` (this module stays free of pydantic: the command line's parser imports it).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["DELAY", "MAX_COUNT", "MAX_SECONDS", "MAX_USD", "SECONDS", "USD", "Bound",
           "whole_number"]

#: the longest time any timeout, lease or interval may be (30 days)
MAX_SECONDS = 30 * 24 * 3600.0
#: the largest budget (no session or pipeline can cost more than this)
MAX_USD = 1_000_000.0
#: the largest count a user can ask for (a list's length, a line number, a stint)
MAX_COUNT = 1_000_000_000
#: a decimal integer this long is refused before it is converted (Python refuses 4,300)
_MAX_DIGITS = 30
_WHOLE = re.compile(r"[+-]?(?P<digits>[0-9]+)")


@dataclass(frozen=True)
class Bound:
    """A finite number between ``low`` (excluded if ``open_low``) and ``high``."""

    what: str
    low: float
    high: float
    open_low: bool = False

    def describe(self) -> str:
        low = f"more than {self.low:g}" if self.open_low else f"{self.low:g} or more"
        return f"{self.what}: a finite number, {low}, at most {self.high:,.10g}"

    def check(self, value: float) -> float:
        """``value`` as a float if it keeps the rule; else ValueError saying what is allowed."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"not a number: {self.describe()}")  # noqa: TRY004 — the callers map ValueError
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if (not math.isfinite(number) or number > self.high or number < self.low
                or (self.open_low and number == self.low)):
            raise ValueError(f"{_shown(value)} is out of range: {self.describe()}")
        return number

    def parse(self, text: str) -> float:
        """A number written as text (``"12"``, ``"0.5"``), checked."""
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError(f"{_shown(text)} is not a number: {self.describe()}") from None
        return self.check(value)


def _shown(value: object) -> str:
    if isinstance(value, int) and abs(value) >= 10**_MAX_DIGITS:
        return "a number with too many digits"
    text = repr(value) if isinstance(value, str) else f"{value:g}" if isinstance(
        value, float) else str(value)
    return text if len(text) <= 40 else text[:37] + "…"


SECONDS = Bound("a time in seconds", 0.0, MAX_SECONDS, open_low=True)
DELAY = Bound("a time in seconds", 0.0, MAX_SECONDS)
USD = Bound("an amount of USD", 0.0, MAX_USD)



def whole_number(text: str, low: int, high: int = MAX_COUNT) -> int:
    """A decimal integer between ``low`` and ``high`` written as ``text``; else ValueError.

    Never converts more than a few dozen digits (``int()`` of 5,000 digits raises its own
    ValueError, and a number past SQLite's 64 bits would fail later, far from the input)."""
    match = _WHOLE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"not a whole number: {_shown(text)}")
    if len(match["digits"].lstrip("0")) > _MAX_DIGITS:
        raise ValueError(f"must be between {low} and {high}")
    value = int(match[0])
    if value < low and high == MAX_COUNT:
        raise ValueError(f"must be {low} or more")
    if not low <= value <= high:
        raise ValueError(f"must be between {low} and {high}")
    return value
