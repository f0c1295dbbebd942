"""The wait / retry / hand off / fail decision after a limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from relay.core.events import LimitHit
from relay.sessions.decision import OVERLOAD_BACKOFF, Rules, decide

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def limit(kind: str, in_s: float | None) -> LimitHit:
    resets = NOW + timedelta(seconds=in_s) if in_s is not None else None
    return LimitHit.model_validate({"limit": kind, "message": "m", "resets_at": resets})


def test_a_short_rate_limit_is_retried_on_the_same_account() -> None:
    d = decide(limit("rate_limit", 20), now=NOW, rules=Rules(), has_next=True, retries=0)
    assert d.action == "retry"
    assert d.until == NOW + timedelta(seconds=20)
    assert not d.terminal


def test_retries_run_out_then_the_task_is_handed_off() -> None:
    d = decide(limit("rate_limit", 20), now=NOW, rules=Rules(max_retries=3), has_next=True,
               retries=3)
    assert d.action == "handoff"
    assert "3 retries" in d.why


def test_a_long_retry_after_hands_off_instead_of_blocking() -> None:
    d = decide(limit("rate_limit", 600), now=NOW, rules=Rules(retry_max_delay_s=60),
               has_next=True, retries=0)
    assert d.action == "handoff"


def test_a_rate_limit_without_a_delay_is_not_hammered() -> None:
    d = decide(limit("rate_limit", None), now=NOW, rules=Rules(), has_next=True, retries=0)
    assert d.action == "handoff"


@pytest.mark.parametrize(("retries", "delay"), [(0, OVERLOAD_BACKOFF), (1, OVERLOAD_BACKOFF * 3)])
def test_overload_backs_off_more_each_time(retries: int, delay: float) -> None:
    d = decide(limit("overloaded", None), now=NOW, rules=Rules(), has_next=False, retries=retries)
    assert d.action == "retry"
    assert d.until == NOW + timedelta(seconds=delay)


def test_usage_limit_far_from_reset_hands_off_and_opens_the_breaker() -> None:
    d = decide(limit("usage_limit", 3 * 3600), now=NOW, rules=Rules(), has_next=True, retries=0)
    assert (d.action, d.terminal) == ("handoff", True)


def test_usage_limit_near_its_reset_waits_with_the_margin() -> None:
    rules = Rules(wait_if_within_s=300, reset_margin_s=30)
    d = decide(limit("usage_limit", 120), now=NOW, rules=rules, has_next=True, retries=0)
    assert d.action == "wait"
    assert d.until == NOW + timedelta(seconds=150)
    assert d.terminal


def test_policy_handoff_never_waits_while_there_is_a_next_entry() -> None:
    d = decide(limit("usage_limit", 60), now=NOW, rules=Rules(policy="handoff"), has_next=True,
               retries=0)
    assert d.action == "handoff"


def test_policy_wait_waits_even_when_it_could_hand_off() -> None:
    d = decide(limit("usage_limit", 3600), now=NOW, rules=Rules(policy="wait"), has_next=True,
               retries=0)
    assert d.action == "wait"


def test_nowhere_to_go_auto_fails_naming_a_far_reset_but_waits_for_a_near_one() -> None:
    far = decide(limit("quota", 3600), now=NOW, rules=Rules(), has_next=False, retries=0)
    assert far.action == "fail"
    assert "2026-11-30 13:00 UTC" in far.why
    near = decide(limit("quota", 200), now=NOW, rules=Rules(), has_next=False, retries=0)
    assert near.action == "wait"


def test_policy_wait_waits_up_to_the_maximum_then_fails_naming_the_reset() -> None:
    rules = Rules(policy="wait", max_wait_s=7200)
    ok = decide(limit("quota", 3600), now=NOW, rules=rules, has_next=False, retries=0)
    assert ok.action == "wait"
    too_long = decide(limit("quota", 3 * 3600), now=NOW, rules=rules, has_next=False, retries=0)
    assert too_long.action == "fail"
    assert "2026-11-30 15:00 UTC" in too_long.why


def test_an_unknown_reset_with_nowhere_to_go_fails_instead_of_guessing() -> None:
    d = decide(limit("usage_limit", None), now=NOW, rules=Rules(), has_next=False, retries=0)
    assert d.action == "fail"
    assert "unknown" in d.why


def test_a_reset_already_in_the_past_is_not_waited_on() -> None:
    d = decide(limit("usage_limit", -86400), now=NOW, rules=Rules(), has_next=True, retries=0)
    assert d.action == "handoff"
