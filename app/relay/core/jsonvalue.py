"""Taking values out of parsed JSON without trusting its shape.

Each ``as_*`` takes whatever ``json.loads`` / ``orjson.loads`` produced (or ``None`` for a
missing key) and returns it as the type asked for, or an empty answer. They never raise and
never convert between kinds: a string is not parsed as a number, a number never becomes a
string, a bool is not a number.

=============  ============================================================================
``as_dict``    the value if it is a ``dict`` (a JSON object), else a new empty dict
``as_list``    the value if it is a ``list`` (a JSON array), else a new empty list
``as_str``     the value if it is a ``str``, ``""`` included, else None
``as_text``    the value if it is a non-empty ``str``, else None: for ids, names and models,
               where ``""`` means "not given"
``as_int``     an ``int`` (not a ``bool``) as it is; a ``float`` without a fractional part
               as that int (JSON does not tell ``3`` from ``3.0`` and some writers emit the
               latter); anything else None — bools, ``2.5``, nan, infinities, ``"42"``
``as_float``   an ``int`` or ``float`` (not a ``bool``) as a finite ``float``; else None —
               nan and infinities (``json.loads`` accepts ``NaN`` / ``Infinity``; no count,
               cost or time can be one) and ints too large for a float included
=============  ============================================================================

Decisions where the copies this replaced disagreed (each pinned in
``tests/core/test_jsonvalue.py``): ``""`` stays a string in ``as_str`` and is absence only in
``as_text``; integral floats are ints; digit strings are not ints (the editor stores' copy parsed them
everywhere, and ``"²".isdigit()`` made its ``int()`` raise: the one format that writes a
number as a string, Continue's ``dateCreated``, is read as one where dates are read,
``relay.detect.stores.editor_common.iso_to_ms``); non-finite floats are not floats.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["as_dict", "as_float", "as_int", "as_list", "as_str", "as_text"]


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty dict."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    """``value`` if it is a string (the empty string too), else None."""
    return value if isinstance(value, str) else None


def as_text(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def as_int(value: Any) -> int | None:
    """An integer: an int (not a bool), or a float with no fractional part; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_float(value: Any) -> float | None:
    """A finite number (int or float, not a bool) as a float; else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def as_number(value: Any) -> float | None:
    """:func:`as_float`, or a string that holds a finite number (an HTTP header's value,
    ``" 42.5 "``); else None."""
    if isinstance(value, str):
        try:
            return as_float(float(value.strip()))
        except ValueError:
            return None
    return as_float(value)
