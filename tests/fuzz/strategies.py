"""Shared hypothesis strategies: JSON values, JSON-ish lines and raw bytes, biased toward
what once broke Relay (deep nesting, huge integers, non-finite numbers, control bytes)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: every fuzz test runs a few seconds: few enough examples, no per-example deadline (the
#: machine is shared; one slow example is not a failure)
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
            | st.text(max_size=30) | st.sampled_from([2**70, 1e308, -1, 0, "", "\x00"]))


def json_values(keys: list[str] | None = None) -> st.SearchStrategy[Any]:
    """Any JSON value, its object keys often taken from ``keys`` (a format's own fields)."""
    key = st.sampled_from(keys) | st.text(max_size=10) if keys else st.text(max_size=10)
    return st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(key, inner, max_size=5), max_leaves=25)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def lines(keys: list[str]) -> st.SearchStrategy[str]:
    """One line a stream or a transcript might hold: a JSON object with the format's own
    keys, any JSON, a truncated or deep line, or plain text."""
    objects = st.dictionaries(st.sampled_from(keys), json_values(keys), max_size=6)
    return st.one_of(
        objects.map(lambda o: json.dumps(o, default=str)),
        json_values(keys).map(lambda v: json.dumps(v, default=str)),
        objects.map(lambda o: json.dumps(o, default=str)).map(lambda s: s[: len(s) // 2]),
        st.sampled_from([_deep(200), _deep(5000), '{"a":' + "9" * 5000 + "}",
                         '{"type": NaN}', '{"x": 1e400}', "\x00", "\ufeff{}", "{" * 3]),
        st.text(max_size=80),
    )


def bytes_lines(keys: list[str]) -> st.SearchStrategy[bytes]:
    """A line as bytes: the above encoded, or arbitrary bytes (not UTF-8, NULs, escapes)."""
    return st.one_of(lines(keys).map(lambda s: s.encode("utf-8", "surrogatepass")),
                     st.binary(max_size=80))
