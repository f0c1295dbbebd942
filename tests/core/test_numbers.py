"""The one rule for numbers (relay.core.numbers): every front end refuses nan, infinities,
negatives, absurd values and 5,000-digit integers the same way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from relay.core.config import load_config
from relay.core.errors import ConfigError, PipelineInvalidError
from relay.core.models import SessionSpec
from relay.core.numbers import MAX_SECONDS, MAX_USD, SECONDS, USD, whole_number
from relay.core.pipeline_model import parse_pipeline


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, MAX_USD * 2, 10**5000],
                         ids=["nan", "inf", "-inf", "-1", "absurd", "5000-digits"])
def test_usd_refuses_what_no_budget_can_be(value: float) -> None:
    with pytest.raises(ValueError, match="an amount of USD"):
        USD.check(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, 0, -5, MAX_SECONDS + 1, 10**5000],
                         ids=["nan", "inf", "0", "-5", "absurd", "5000-digits"])
def test_seconds_refuses_what_no_timeout_can_be(value: float) -> None:
    with pytest.raises(ValueError, match="a time in seconds"):
        SECONDS.check(value)


def test_good_numbers_pass() -> None:
    assert USD.check(0) == 0.0
    assert USD.check(12.5) == 12.5
    assert SECONDS.check(0.25) == 0.25
    assert SECONDS.parse(" 900 ") == 900.0


@pytest.mark.parametrize("text", ["9" * 5000, "1" + "0" * 40, "-1", "x", "1.5", "٣", ""],
                         ids=["5000-digits", "41-digits", "-1", "x", "1.5", "arabic-3", "empty"])
def test_whole_number_never_converts_what_it_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"whole number|between") as raised:
        whole_number(text, 0, 1000)
    assert len(str(raised.value)) < 100


def test_whole_number_reads_a_bounded_integer() -> None:
    assert whole_number("0042", 1, 100) == 42


@pytest.mark.parametrize("field", ["timeout", "budgetUsd", "backoff"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400", "-1"])
def test_a_pipeline_file_refuses_non_finite_and_negative_numbers(field: str, value: str) -> None:
    node = '{"id": "a", "provider": "demo", "task": "t"' + (
        f', "timeout": {value}' if field == "timeout" else "") + "}"
    top = f', "{field}": {value}' if field != "timeout" else ""
    text = '{"name": "p", "nodes": [' + node + "]" + top + "}"
    with pytest.raises(PipelineInvalidError):
        parse_pipeline(json.loads(text))


@pytest.mark.parametrize("key", ["RELAY_INACTIVITY_TIMEOUT", "RELAY_VERIFY_TIMEOUT",
                                 "RELAY_PIPELINE_LEASE", "RELAY_PAUSE_TIMEOUT"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e400"])
def test_the_environment_refuses_non_finite_times(key: str, value: str) -> None:
    with pytest.raises(ConfigError):
        load_config(env={key: value})


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 1e12])
def test_a_session_spec_refuses_a_budget_no_session_can_have(value: float,
                                                                    tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        SessionSpec(repo=tmp_path, task="t", runtime="demo", budget_usd=value)
    with pytest.raises(ValidationError):
        SessionSpec(repo=tmp_path, task="t", runtime="demo", task_budget_usd=value)
