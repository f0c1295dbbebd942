"""Reading JSON from outside Relay, and taking values out of it without trusting its shape.

:func:`loads` is the one way to parse JSON that came from outside (a repository's file, an
audit log line, a contract, a transcript, an agent's stream line, a message on a socket):
every way the text can be bad — invalid JSON, not UTF-8, nested deeper than
:data:`MAX_DEPTH` (the standard parser's ``RecursionError``), an integer of more than 4,300
digits (its ``ValueError``) — is one ``json.JSONDecodeError``, which each caller turns into
its own ``RelayError`` or a skipped line. Nothing deeper than :data:`MAX_DEPTH` reaches the
code that walks the value (often recursively: dumping, hashing, rendering).

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

import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "as_dict", "as_float", "as_int", "as_list", "as_str", "as_text", "loads"]

#: JSON from outside nested deeper than this is refused (Relay's own files nest < 10 deep)
MAX_DEPTH = 128
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = bytes(set(range(256)) - set(b"[]{}"))


def loads(data: str | bytes, *, fast: bool = False,
          object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
          parse_constant: Callable[[str], Any] | None = None,
          max_depth: int = MAX_DEPTH) -> Any:
    """Parse untrusted JSON; every problem with it is a ``json.JSONDecodeError`` (one
    nested deeper than ``max_depth``, at most :data:`MAX_DEPTH`, says "nested deeper than").

    ``fast`` parses with orjson (several times faster, for stream lines and transcripts; it
    refuses ``NaN`` / ``Infinity`` and reads integers past 64 bits as floats); otherwise
    with the standard parser and its hooks, whose semantics hashed data (audit, contracts)
    depends on."""
    try:
        if fast:
            value = orjson.loads(data)
        else:
            value = json.loads(data, object_pairs_hook=object_pairs_hook,
                               parse_constant=parse_constant)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise _bad(data, f"nested deeper than {max_depth} levels") from None
    except ValueError as exc:  # not UTF-8 (UnicodeDecodeError); 4,300+ digits; a hook's refusal
        raise _bad(data, str(exc).split(";")[0]) from None
    if _nests(data) > max_depth and _too_deep(data, max_depth):
        raise _bad(data, f"nested deeper than {max_depth} levels")
    return value


def _bad(data: str | bytes, why: str) -> json.JSONDecodeError:
    return json.JSONDecodeError(why, data if isinstance(data, str) else "", 0)


def _nests(data: str | bytes) -> int:
    """An upper bound of the depth (every bracket, in strings too): cheap, in C."""
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _too_deep(data: str | bytes, max_depth: int) -> bool:
    """Whether ``data`` (valid JSON: it parsed) nests deeper than ``max_depth``.

    On the text, in C-speed passes, never walking the value in Python: strings are dropped,
    then everything but brackets, then each pass removes the innermost pairs."""
    if isinstance(data, str):  # bytes: translate() drops the non-brackets in one C call
        data = data.encode("utf-8", "surrogatepass")
    raw = _STRING.sub(b"", data).translate(None, _NOT_BRACKET)
    for _ in range(max_depth):
        if not raw:
            return False
        raw = raw.replace(b"[]", b"").replace(b"{}", b"")
    return bool(raw)


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
