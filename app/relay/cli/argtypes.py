"""Argument types the commands share (argparse turns their errors into usage errors).

Numbers keep the one rule of :mod:`relay.core.numbers`: finite, not negative, not absurd,
and a whole number is bounded before it is converted.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable

from relay.core.numbers import DELAY, MAX_COUNT, SECONDS, USD, Bound, whole_number


def int_between(low: int, high: int = MAX_COUNT) -> Callable[[str], int]:
    """A whole number of at least ``low`` (and at most ``high``)."""

    def parse(text: str) -> int:
        try:
            return whole_number(text, low, high)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


#: a whole number of 1 or more
positive_int = int_between(1)
#: a whole number of 0 or more
count = int_between(0)


def _number(bound: Bound) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            return bound.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


#: a time in seconds, more than 0 (a timeout, a lease, an interval)
seconds = _number(SECONDS)
#: a time in seconds, 0 allowed (a delay)
delay = _number(DELAY)
_usd = _number(USD)


def usd_amount(value: str) -> float:
    """A number of US dollars ≥ 0 (``12``, ``0.5``, ``$30``)."""
    return _usd(value.removeprefix("$"))


def percentages(text: str) -> list[float]:
    """A comma-separated list of percentages (0–100), e.g. ``40,70,97``."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError("a comma-separated list of percentages") from exc
    if not values or any(not 0 <= v <= 100 for v in values):
        raise argparse.ArgumentTypeError("percentages between 0 and 100, e.g. 40,70,97")
    return values


#: the most days ``--since Nd`` may reach back (a century)
MAX_SINCE_DAYS = 36_500


def since(text: str) -> str:
    """``YYYY-MM-DD`` or ``Nd`` (N days ago, at most a century), kept as written."""
    from datetime import date

    stripped = text.strip()
    if match := re.fullmatch(r"([0-9]+)d", stripped):
        try:
            whole_number(match.group(1), 0, MAX_SINCE_DAYS)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"days ago {exc}") from None
        return stripped
    try:
        date.fromisoformat(stripped)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is neither a date nor a number of days (e.g. 2026-11-01, 7d)") from None
    return stripped


def command_line(text: str) -> list[str]:
    """One command line split into its arguments (never given to a shell)."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:  # an unbalanced quote, a trailing backslash
        raise argparse.ArgumentTypeError(f"{text[:60]!r}: {exc} (quote it as a shell would)") from None
    if not argv:
        raise argparse.ArgumentTypeError("an empty command")
    return argv
