"""Argument types the commands share (argparse turns their errors into usage errors)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_between(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number of at least ``low`` (and at most ``high``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {low} or more" if high is None
                                             else f"must be between {low} and {high}")
        return value

    return parse


#: a whole number of 1 or more
positive_int = int_between(1)


def usd_amount(value: str) -> float:
    """A number of US dollars ≥ 0 (``12``, ``0.5``, ``$30``)."""
    try:
        amount = float(value.lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an amount of USD") from None
    if not amount >= 0 or amount == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r}: a budget is a number of USD ≥ 0")
    return amount


def percentages(text: str) -> list[float]:
    """A comma-separated list of percentages (0–100), e.g. ``40,70,97``."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError("a comma-separated list of percentages") from exc
    if not values or any(not 0 <= v <= 100 for v in values):
        raise argparse.ArgumentTypeError("percentages between 0 and 100, e.g. 40,70,97")
    return values
