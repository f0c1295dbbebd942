"""What to do when a run ends on a limit: retry, wait, hand off or fail.

Pure: the runner gives the limit, the time, the task's policy and whether the
chain has somewhere to go; :func:`decide` answers. The rules (seed 000, "retry:
wait vs handoff"):

* a **rate limit** with a short retry-after (≤ ``retry_max_delay``) and an
  **overload** are retried on the same account, a few times
  (``max_retries``) with the delay the provider asked for (overload: a
  growing backoff) — not every 429 burns a handoff;
* a **usage limit / quota** is terminal for the account until its reset: the
  account's circuit breaker opens, and the task
  - waits for the reset (plus a margin) when it is near (``wait_if_within_s``)
    under ``auto``, or whenever the policy is ``wait`` — never longer than
    ``max_wait_s``;
  - otherwise hands off to the next chain entry;
* what cannot be waited out or handed off fails, saying when it resets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from relay.core.config import Config
from relay.core.events import LimitHit
from relay.core.models import LimitPolicy, SessionSpec

#: a limit reported with a reset longer ago than this has no usable reset time
STALE_RESET = timedelta(minutes=1)
#: overload backoff: attempt n waits OVERLOAD_BACKOFF * 3**(n-1) seconds
OVERLOAD_BACKOFF = 5.0

Action = Literal["retry", "wait", "handoff", "fail"]


@dataclass(frozen=True, slots=True)
class Rules:
    """The knobs of one decision (from the task's spec and Relay's config)."""

    policy: LimitPolicy = "auto"
    wait_if_within_s: float = 300.0
    max_wait_s: float = 5 * 3600.0
    reset_margin_s: float = 30.0
    retry_max_delay_s: float = 60.0
    max_retries: int = 3

    @classmethod
    def for_task(cls, spec: SessionSpec, config: Config) -> Rules:
        """The task's policy with Relay's retry and margin settings."""
        return cls(policy=spec.on_limit, wait_if_within_s=spec.wait_if_within_s,
                   max_wait_s=spec.max_wait_s, reset_margin_s=config.reset_margin,
                   retry_max_delay_s=config.retry_max_delay, max_retries=config.max_retries)


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict; ``until`` is when a retry or a wait ends."""

    action: Action
    why: str
    until: datetime | None = None
    #: the account is out until its reset: open its circuit breaker
    terminal: bool = False


def decide(limit: LimitHit, *, now: datetime, rules: Rules, has_next: bool,
           retries: int) -> Decision:
    """Decide what follows a run that ended on ``limit``.

    Args:
        limit: The blocking limit the run reported.
        now: The current time (aware).
        rules: Policy and thresholds.
        has_next: Whether the chain has an entry after the current one.
        retries: How often this entry was already retried in a row.
    """
    kind = limit.limit.replace("_", " ")
    if limit.resets_at is not None and limit.resets_at < now - STALE_RESET:
        # a reset that already passed when the limit was reported contradicts it:
        # do not wait on it (treated as unknown)
        limit = limit.model_copy(update={"resets_at": None})
    if limit.limit in ("rate_limit", "overloaded"):
        short = _short_retry(limit, now, rules, retries)
        if short is not None:
            return short
        if has_next and rules.policy != "wait":
            return Decision("handoff", f"{kind} persists after {retries} retries" if retries
                            else f"{kind} with a long wait")
        return _wait_or_fail(limit, now, rules, terminal=False)
    # usage limit / quota: the account is out until its reset
    if has_next and rules.policy == "handoff":
        return Decision("handoff", f"{kind} reached", terminal=True)
    if has_next and rules.policy == "auto" and not _near(limit, now, rules.wait_if_within_s):
        return Decision("handoff", f"{kind} reached; the reset is not near", terminal=True)
    return _wait_or_fail(limit, now, rules, terminal=True)


def _short_retry(limit: LimitHit, now: datetime, rules: Rules, retries: int) -> Decision | None:
    if retries >= rules.max_retries:
        return None
    if limit.limit == "overloaded":
        delay = OVERLOAD_BACKOFF * 3 ** retries
        if limit.resets_at is not None:
            delay = max(delay, (limit.resets_at - now).total_seconds())
    elif limit.resets_at is not None:
        delay = max((limit.resets_at - now).total_seconds(), 0.0)
    else:
        return None  # a rate limit that names no delay: do not hammer the account
    if delay > rules.retry_max_delay_s:
        return None
    return Decision("retry", f"{limit.limit.replace('_', ' ')}: retry {retries + 1} of "
                             f"{rules.max_retries} on the same account in {delay:.0f} s",
                    until=now + timedelta(seconds=delay))


def _near(limit: LimitHit, now: datetime, within_s: float) -> bool:
    return limit.resets_at is not None and (limit.resets_at - now).total_seconds() <= within_s


def _wait_or_fail(limit: LimitHit, now: datetime, rules: Rules, *, terminal: bool) -> Decision:
    kind = limit.limit.replace("_", " ")
    if limit.resets_at is None:
        return Decision("fail", f"{kind} reached and its reset time is unknown", terminal=terminal)
    until = max(limit.resets_at, now) + timedelta(seconds=rules.reset_margin_s)
    wait_s = (until - now).total_seconds()
    # only ``wait`` waits for a far reset; ``auto`` waits for a near one
    patience = rules.max_wait_s if rules.policy == "wait" else min(
        rules.max_wait_s, rules.wait_if_within_s + rules.reset_margin_s)
    if wait_s > patience:
        return Decision("fail", f"{kind} reached; it resets at {limit.resets_at:%Y-%m-%d %H:%M %Z}",
                        terminal=terminal)
    return Decision("wait", f"{kind} reached; waiting for the reset", until=until,
                    terminal=terminal)
