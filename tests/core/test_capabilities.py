"""The capability table and the normalised event model."""

from __future__ import annotations

import json
import typing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pydantic
import pytest

from relay.core import capabilities as caps_mod
from relay.core import events as ev
from relay.core.capabilities import RUNTIME_NAMES, Cap, Capabilities, Level
from relay.core.errors import RelayError, UnsupportedCapabilityError
from relay.runtimes.registry import available_runtimes

RANK = {Level.NO: 0, Level.UNKNOWN: 1, Level.PARTIAL: 2, Level.YES: 3}


# -- the table ----------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIME_NAMES)
def test_every_runtime_states_a_level_for_every_capability(runtime: str) -> None:
    # The table itself, not for_runtime() (which would paper over a gap with UNKNOWN).
    stated = caps_mod._TABLE[runtime]
    assert set(stated) == set(Cap), f"{runtime} is missing {set(Cap) - set(stated)}"
    assert all(isinstance(level, Level) for level in stated.values())
    c = Capabilities.for_runtime(runtime)
    assert c.runtime == runtime
    assert {cap: c.level(cap) for cap in Cap} == stated
    assert c.as_dict() == {cap.value: level.value for cap, level in stated.items()}


def test_every_drivable_runtime_is_in_the_table() -> None:
    assert set(available_runtimes()) <= set(RUNTIME_NAMES)
    assert len(set(RUNTIME_NAMES)) == len(RUNTIME_NAMES)


def test_unknown_runtime_knows_nothing() -> None:
    c = Capabilities.for_runtime("nonesuch")
    assert all(c.level(cap) is Level.UNKNOWN for cap in Cap)
    assert not any(c.supports(cap) for cap in Cap)
    with pytest.raises(UnsupportedCapabilityError):
        c.require(Cap.STREAM_EVENTS)


def test_require_follows_the_level() -> None:
    refused: set[Level] = set()
    allowed: set[Level] = set()
    for runtime in RUNTIME_NAMES:
        c = Capabilities.for_runtime(runtime)
        for cap in Cap:
            level = c.level(cap)
            if level in (Level.NO, Level.UNKNOWN):
                assert not c.supports(cap)
                with pytest.raises(UnsupportedCapabilityError) as info:
                    c.require(cap)
                err = info.value
                assert isinstance(err, RelayError)
                assert (err.runtime, err.capability, err.level) == (runtime, cap.value, level.value)
                assert runtime in err.message
                assert cap.value in err.message
                assert level.value in err.message
                assert err.hint
                refused.add(level)
            else:
                assert c.supports(cap)
                c.require(cap)  # does not raise
                allowed.add(level)
    # The table exercises every branch (otherwise this test proves little).
    assert refused == {Level.NO, Level.UNKNOWN}
    assert allowed == {Level.YES, Level.PARTIAL}


@pytest.mark.parametrize("runtime", RUNTIME_NAMES)
def test_narrow_never_widens_beyond_the_table(runtime: str) -> None:
    table = Capabilities.for_runtime(runtime)
    for cap in Cap:
        for observed in Level:
            narrowed = table.narrow(**{cap.value: observed})
            result, stated = narrowed.level(cap), table.level(cap)
            if stated is Level.UNKNOWN:
                assert result is observed  # nothing to bound it: the observation wins
            else:
                assert RANK[result] <= RANK[stated]
                assert result is min(stated, observed, key=RANK.__getitem__)
            # Only the observed capability changed, and the original is untouched.
            for other in Cap:
                if other is not cap:
                    assert narrowed.level(other) is table.level(other)
            assert table.level(cap) is stated
            assert narrowed.runtime == runtime


def test_narrow_examples() -> None:
    claude = Capabilities.for_runtime("claude")
    assert claude.level(Cap.SEND_INPUT) is Level.PARTIAL
    assert claude.narrow(send_input=Level.YES).level(Cap.SEND_INPUT) is Level.PARTIAL
    assert claude.narrow(permission_policy=Level.NO).level(Cap.PERMISSION_POLICY) is Level.NO
    narrowed = claude.narrow(permission_policy=Level.PARTIAL, fork=Level.NO)
    assert narrowed.level(Cap.PERMISSION_POLICY) is Level.PARTIAL
    assert narrowed.level(Cap.FORK) is Level.NO
    codex = Capabilities.for_runtime("codex")
    assert codex.narrow(cost=Level.YES).level(Cap.COST) is Level.NO


def test_narrow_rejects_unknown_capability_names() -> None:
    with pytest.raises(ValueError, match="teleport"):
        Capabilities.for_runtime("claude").narrow(teleport=Level.YES)


def test_capabilities_are_immutable() -> None:
    c = Capabilities.for_runtime("demo")
    with pytest.raises(TypeError):
        c._levels[Cap.FORK] = Level.YES  # type: ignore[index]
    assert c.level(Cap.FORK) is Level.NO


# -- Usage ------------------------------------------------------------------------------

FIELDS = list(ev.Usage.model_fields)


def test_usage_addition_keeps_unknown_as_none() -> None:
    assert ev.Usage() + ev.Usage() == ev.Usage()
    assert (ev.Usage() + ev.Usage()).is_unknown
    a = ev.Usage(input_tokens=10, output_tokens=None, cost_usd=0.5)
    b = ev.Usage(input_tokens=5, cache_read_tokens=7, cost_usd=None)
    assert a + b == ev.Usage(input_tokens=15, cache_read_tokens=7, cost_usd=0.5)
    assert (a + b).output_tokens is None
    assert (a + b).reasoning_tokens is None
    assert ev.Usage(output_tokens=0) + ev.Usage() == ev.Usage(output_tokens=0)  # 0 is not None


@pytest.mark.parametrize("name", FIELDS)
def test_usage_addition_per_field(name: str) -> None:
    one = 1.5 if name == "cost_usd" else 1
    two = 2.25 if name == "cost_usd" else 2
    x, y = ev.Usage(**{name: one}), ev.Usage(**{name: two})
    assert getattr(x + y, name) == one + two
    assert getattr(x + ev.Usage(), name) == one
    assert getattr(ev.Usage() + y, name) == two
    assert all(getattr(x + y, other) is None for other in FIELDS if other != name)


def test_usage_minus_gives_deltas() -> None:
    earlier = ev.Usage(input_tokens=100, output_tokens=40, cache_read_tokens=None, cost_usd=1.0)
    later = ev.Usage(input_tokens=150, output_tokens=40, cache_read_tokens=30, cost_usd=None)
    delta = later.minus(earlier)
    assert delta == ev.Usage(input_tokens=50, output_tokens=0, cache_read_tokens=30,
                             cost_usd=None)
    assert earlier + delta == ev.Usage(input_tokens=150, output_tokens=40,
                                       cache_read_tokens=30, cost_usd=1.0)
    assert ev.Usage().minus(earlier) == ev.Usage()  # unknown now stays unknown
    assert ev.Usage(input_tokens=5).minus(ev.Usage(input_tokens=9)).input_tokens == 0  # reset


def test_usage_is_unknown() -> None:
    assert ev.Usage().is_unknown
    for name in FIELDS:
        assert not ev.Usage(**{name: 0}).is_unknown


# -- events -----------------------------------------------------------------------------

T0 = datetime(2025, 3, 4, 5, 6, 7, 891_000, tzinfo=UTC)

SAMPLES: list[Any] = [
    ev.SessionStarted(ts=T0, runtime="claude", agent_session_id="abc", model="m", cwd="/w",
                      tools=["Bash", "Edit"], permission_mode="acceptEdits", version="1.2"),
    ev.AssistantText(ts=T0, text="thinking…", reasoning=True, message_id="msg1",
                     parent_call_id="c0"),
    ev.ToolCall(ts=T0, call_id="c1", name="Bash",
                input={"command": "ls -la", "nested": {"n": [1, 2.5, None, True]}},
                parent_call_id="c0"),
    ev.ToolResult(ts=T0, call_id="c1", output="ok\n", is_error=False, exit_code=0),
    ev.PermissionDenied(ts=T0, tool="Write", call_id="c2", detail="read-only"),
    ev.TurnCompleted(ts=T0, usage=ev.Usage(input_tokens=3, cost_usd=0.001), model="m",
                     num_turns=2, result_text="done"),
    ev.NeedsInput(ts=T0, request_id="r1", prompt="Proceed?", tool="Bash", read_only=False,
                  options=[ev.InputOption(id="y", label="yes", kind="allow_once"),
                           ev.InputOption(id="n", label="no", kind="reject_once")]),
    ev.InputWithdrawn(ts=T0, request_id="r1", reason="answered elsewhere"),
    ev.LimitHit(ts=T0, limit="usage_limit", message="5-hour limit",
                resets_at=datetime(2025, 3, 4, 10, 0, tzinfo=timezone(timedelta(hours=2))),
                scope="account", blocking=False),
    ev.QuotaUpdate(ts=T0, window="five_hour", status="allowed_warning", used_percent=91.5,
                   resets_at=datetime(2025, 3, 4, 10, 0, tzinfo=UTC), window_minutes=300,
                   origin="claude rate_limit_event"),
    ev.Notice(ts=T0, category="retry", message="retrying in 2 s", simulated=True),
    ev.AgentError(ts=T0, category="auth", message="401", http_status=401, fatal=False),
    ev.SessionEnded(ts=T0, outcome="interrupted", reason="stopped", exit_code=None,
                    result_text="partial"),
    ev.StateChanged(ts=T0, state="waiting", reason="usage limit", replay=True,
                    until=datetime(2025, 3, 4, 10, 0, tzinfo=UTC)),
    ev.VerifyResult(ts=T0, command=["pytest", "-q"], passed=False, exit_code=1,
                    output="1 failed", duration_s=1.5),
    ev.HandoffStep(ts=T0, handoff_id="h-1", state="snapshotted", from_entry="claude:work",
                   to_entry="codex", reason="usage_limit", detail="a" * 40),
    ev.BoardChanged(ts=T0, entity="task", action="stage", project="shop", task="SHOP-3",
                    fields={"from": "dev", "to": "test", "ids": [1, 2]}, actor="owner"),
    ev.LiveStateChanged(ts=T0, agent_session_id="9f25", state="needs_input",
                        previous="working", detail="Claude needs your permission",
                        needs="permission", cwd="/w", relay_session_id="0123456789ab"),
    ev.GuardDecision(ts=T0, decision="deny", reason="prod is read-only", rule="env.kubectl",
                     environment="prod", tool="Bash", summary="Bash: kubectl delete pod x",
                     where="hook", agent_session_id="9f25"),
    ev.MessageChanged(ts=T0, message_id="m1", state="delivered", mode="queue", how="turn",
                      text="also add a test", source="window"),
]


def union_kinds() -> set[str]:
    union = typing.get_args(ev.AgentEvent)[0]
    return {cls.model_fields["kind"].default for cls in typing.get_args(union)}


def test_samples_cover_every_event_kind() -> None:
    kinds = [s.kind for s in SAMPLES]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == union_kinds()


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.kind)
def test_parse_event_round_trips(event: Any) -> None:
    for payload in (event.model_dump_json(), event.model_dump_json().encode()):
        back = ev.parse_event(payload)
        assert type(back) is type(event)
        assert back == event
        assert back.ts == event.ts
        assert back.ts.utcoffset() == timedelta(0)
    # Through the adapter used for storage too.
    assert ev.parse_event(ev.EVENT_ADAPTER.dump_json(event)) == event


def test_round_trip_keeps_none_distinct_from_zero() -> None:
    e = ev.TurnCompleted(usage=ev.Usage(input_tokens=0))
    back = ev.parse_event(e.model_dump_json())
    assert isinstance(back, ev.TurnCompleted)
    assert back.usage.input_tokens == 0
    assert back.usage.output_tokens is None


@pytest.mark.parametrize("payload", [
    {"kind": "teleport", "message": "x"},
    {"message": "no kind at all"},
    {"kind": "notice", "message": "x", "surprise": 1},   # extra fields are refused
    {"kind": "notice"},                                   # required field missing
    {"kind": "notice", "message": "x", "category": "shout"},
    {"kind": "state_changed", "state": "exploded"},
], ids=["unknown-kind", "no-kind", "extra-field", "missing-field", "bad-category", "bad-state"])
def test_invalid_payloads_are_rejected(payload: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        ev.parse_event(json.dumps(payload))


def test_events_are_frozen_and_timestamped_in_utc() -> None:
    before = datetime.now(UTC)
    e = ev.Notice(message="hi")
    after = datetime.now(UTC)
    assert before <= e.ts <= after
    assert e.ts.tzinfo is not None
    assert e.replay is False
    assert e.simulated is False
    with pytest.raises(pydantic.ValidationError):
        e.message = "changed"  # type: ignore[misc]


def test_event_record_is_immutable() -> None:
    record = ev.EventRecord(id=1, session_id="s", run_id=None, event=ev.Notice(message="x"))
    with pytest.raises((AttributeError, TypeError)):
        record.id = 2  # type: ignore[misc]
    assert record == ev.EventRecord(id=1, session_id="s", run_id=None, event=record.event)
