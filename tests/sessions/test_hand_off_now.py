"""Hand off now: pause at a safe point, then the usual handoff — in this process and across two."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.errors import HandoffRefusedError, RelayError
from relay.core.events import EventRecord
from relay.core.models import SessionSpec
from relay.engine.engine import Engine

CHAIN = ["demo:primary", "demo:backup"]


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0.2))
    yield eng
    await eng.close()


async def first(sub: AsyncIterable[EventRecord], kind: str) -> EventRecord:
    async for record in sub:
        if record.event.kind == kind:
            return record
    raise AssertionError(f"no {kind} event")


async def steps_of(engine: Engine, session_id: str) -> list[tuple[str, str | None]]:
    return [(r.event.state, r.event.detail) for r in await engine.session_events(session_id)
            if r.event.kind == "handoff_step"]


async def test_hand_off_now_pauses_at_the_end_of_the_running_tool_call(engine: Engine,
                                                                       git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="t", chain=CHAIN))
    await first(sub, "tool_call")  # the demo is inside its first tool call
    answer = await engine.request_handoff(sid)
    assert "demo:backup" in answer
    row = await engine.wait_session(sid)

    assert row.state == "completed", row.reason
    runs = await engine.runs(sid)
    assert [r.outcome for r in runs] == ["cancelled", "completed"]
    steps = await steps_of(engine, sid)
    assert [s for s, _ in steps] == ["pausing", "snapshotted", "envelope_built", "dispatched",
                                     "resuming", "done"]
    snapshotted = dict(steps)["snapshotted"] or ""
    assert snapshotted.startswith("paused at the end of tool call list_files")
    handoff = (await engine.handoffs(sid))[0]
    assert (handoff.from_entry, handoff.to_entry, handoff.reason) == (
        "demo:primary", "demo:backup", "requested by the user")


async def test_no_safe_point_in_time_stops_the_agent_mid_turn(relay_home: Path, vault_env: None,
                                                              git_repo: Path) -> None:
    eng = await Engine.open(load_config(demo_step_delay=5, pause_timeout=0.05))
    try:
        sub = eng.bus.subscribe()
        sid = await eng.start_session(SessionSpec(repo=git_repo, task="t", chain=CHAIN))
        await first(sub, "assistant_text")  # thinking, no tool call running yet
        await eng.request_handoff(sid)
        async for record in sub:
            if record.event.kind == "handoff_step" and record.event.state == "done":
                break
        await eng.cancel_session(sid)  # the receiver would take 5 s a step
        await eng.wait_session(sid)
        detail = dict(await steps_of(eng, sid))["snapshotted"] or ""
        assert detail.startswith("no safe point within 0.05 s: stopped mid-turn")
    finally:
        await eng.close()


async def test_hand_off_now_to_an_entry_outside_the_chain(engine: Engine, git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="t", runtime="demo"))
    await first(sub, "tool_call")
    await engine.request_handoff(sid, "demo:spare")
    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason
    handoff = (await engine.handoffs(sid))[0]
    assert (handoff.to_entry, handoff.state) == ("demo:spare", "done")


async def test_a_waiting_session_is_handed_off_at_once(engine: Engine, git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    spec = SessionSpec(repo=git_repo, task="t", chain=CHAIN, demo_limit_after=1, on_limit="wait",
                       max_wait_s=6 * 3600)
    sid = await engine.start_session(spec)
    async for record in sub:
        if record.event.kind == "state_changed" and record.event.state == "waiting":
            assert record.event.until is not None
            break
    row = await engine.get_session(sid)
    assert row.state == "waiting"
    assert row.wait_until is not None
    await engine.request_handoff(sid)
    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason
    detail = dict(await steps_of(engine, sid))["snapshotted"] or ""
    assert detail.startswith("the agent was not running")


async def test_refusals_say_why(engine: Engine, git_repo: Path) -> None:
    sub = engine.bus.subscribe()
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="t", runtime="demo"))
    await first(sub, "tool_call")
    with pytest.raises(HandoffRefusedError, match="last entry"):
        await engine.request_handoff(sid)
    with pytest.raises(HandoffRefusedError, match="already runs on demo"):
        await engine.request_handoff(sid, "demo")
    await engine.request_handoff(sid, "demo:spare")
    with pytest.raises(HandoffRefusedError, match="already requested"):
        await engine.request_handoff(sid, "demo:other")
    row = await engine.wait_session(sid)
    with pytest.raises(HandoffRefusedError, match="nothing is running"):
        await engine.request_handoff(row.id)


async def test_an_engine_that_does_not_run_the_session_says_where_it_runs(
        engine: Engine, git_repo: Path) -> None:
    """Sessions run in their data folder's host and front ends ask it over its API; an
    engine asked to act on a session it does not run refuses, saying so (nothing crosses
    processes through the database any more)."""
    other = await Engine.open(load_config())
    try:
        sub = engine.bus.subscribe()
        sid = await engine.start_session(SessionSpec(repo=git_repo, task="t", chain=CHAIN))
        await first(sub, "tool_call")
        for act in (other.request_handoff(sid), other.cancel_session(sid),
                    other.answer_input(sid, "r1", "allow")):
            with pytest.raises(RelayError, match="this Relay does not run it") as refused:
                await act
            assert refused.value.hint is not None
            assert "relay-cli status" in refused.value.hint
        row = await engine.wait_session(sid)  # untouched by the refusals
        assert row.state == "completed", row.reason
        assert await engine.handoffs(sid) == []
    finally:
        await other.close()


async def test_a_limit_warning_hands_off_pre_emptively(engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="t", chain=CHAIN, demo_limit_after=2, preempt=True)
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    records = await engine.session_events(row.id)
    limits = [r.event for r in records if r.event.kind == "limit_hit"]
    assert [lim.blocking for lim in limits] == [False]  # warned, never blocked
    handoff = (await engine.handoffs(row.id))[0]
    assert handoff.reason is not None
    assert handoff.reason.startswith("pre-emptive: (simulated) Close to the five_hour limit")
    assert handoff.state == "done"
    assert [r.outcome for r in await engine.runs(row.id)] == ["cancelled", "completed"]


async def test_without_preempt_a_warning_changes_nothing(engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="t", chain=CHAIN, demo_limit_after=2)
    row = await engine.run_session(spec)
    handoff = (await engine.handoffs(row.id))[0]
    assert handoff.reason == "usage_limit"  # it ran into the limit, then handed off
