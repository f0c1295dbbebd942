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
