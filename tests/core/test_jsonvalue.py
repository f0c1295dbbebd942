"""The JSON coercions: each kind, and each decision where the copies they replaced disagreed."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from relay.core.jsonvalue import as_dict, as_float, as_int, as_list, as_str, as_text


def test_containers_are_kept_or_empty() -> None:
    obj: dict[str, Any] = {"a": 1}
    arr: list[Any] = [1]
    assert (as_dict(obj) is obj, as_list(arr) is arr) == (True, True)
    not_objects: tuple[Any, ...] = (None, "x", 1, [1], ("t",))
    not_arrays: tuple[Any, ...] = (None, "x", 1, {"a": 1}, ("t",))
    assert [as_dict(v) for v in not_objects] == [{}] * len(not_objects)
    assert [as_list(v) for v in not_arrays] == [[]] * len(not_arrays)
    # a fresh empty container each time: a caller may fill it
    first = as_dict(None)
    first["k"] = 1
    assert as_dict(None) == {}


def test_the_empty_string_is_a_string_but_not_a_text() -> None:
    assert (as_str(""), as_text("")) == ("", None)
    assert as_str("a") == as_text("a") == "a"
    for other in (None, 1, 1.5, True, b"a", ["a"], {"a": "b"}):
        assert (as_str(other), as_text(other)) == (None, None)


@pytest.mark.parametrize(("value", "expected"), [
    (0, 0), (42, 42), (-3, -3), (10**20, 10**20),
    (3.0, 3), (-0.0, 0), (1e3, 1000),         # JSON does not tell 3 from 3.0
    (True, None), (False, None),              # a bool is not an int
    (2.5, None), (math.nan, None), (math.inf, None), (-math.inf, None),
    ("42", None), (" 7 ", None), ("²", None),  # a string is never parsed
    (None, None), ([1], None), ({"n": 1}, None),
])
def test_as_int(value: Any, expected: int | None) -> None:
    got = as_int(value)
    assert (got, type(got)) == (expected, type(expected))


@pytest.mark.parametrize(("value", "expected"), [
    (0, 0.0), (3, 3.0), (2.5, 2.5), (-1e-9, -1e-9),
    (True, None), (False, None),
    (math.nan, None), (math.inf, None), (-math.inf, None), (10**400, None),
    ("1.5", None), (None, None), ([1.0], None),
])
def test_as_float(value: Any, expected: float | None) -> None:
    got = as_float(value)
    assert (got, type(got)) == (expected, type(expected))


def test_values_as_the_json_parser_gives_them() -> None:
    doc = json.loads('{"n": 5, "f": 5.0, "x": 0.5, "s": "", "nan": NaN, "b": true, "o": {}}')
    assert [as_int(doc.get(k)) for k in ("n", "f", "x", "s", "nan", "b", "missing")] == \
        [5, 5, None, None, None, None, None]
    assert (as_float(doc["nan"]), as_float(doc["x"])) == (None, 0.5)
    assert (as_dict(doc["o"]), as_text(doc["s"]), as_str(doc["s"])) == ({}, None, "")


def test_as_number_reads_header_strings_and_refuses_what_is_not_finite() -> None:
    from relay.core.jsonvalue import as_number

    assert as_number(" 42.5 ") == 42.5
    assert as_number(7) == 7.0
    assert as_number(True) is None
    assert as_number("nan") is None
    assert as_number("inf") is None
    assert as_number("soon") is None
    assert as_number(None) is None
