"""Talking to a session with the demo runtime: steer, the queue, interrupt, follow-ups."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.errors import MessageNotFoundError, MessageRefusedError, RelayError
from relay.core.events import (
    AgentEvent,
    AssistantText,
    MessageChanged,
    SessionEnded,
    TurnCompleted,
    VerifyResult,
)
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes import registry
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from relay.runtimes.demo import DemoAdapter
from tests.engine.talk_helpers import busy, said, until_event


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0.25))
    yield eng
    await eng.close()


async def test_steer_reaches_the_running_demo_turn(engine: Engine, git_repo: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    steered = await engine.talk.say(sid, "Use a title case heading.", mode="now", source="cli")
    assert (steered.state, steered.how, steered.source) == ("delivered", "steer", "cli")
    ack = await until_event(engine, sid, lambda e: isinstance(e, AssistantText)
                            and "Use a title case heading." in e.text)
    assert isinstance(ack, AssistantText)
    assert "mid-turn" in ack.text
    row = await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert row.state == "completed"
    assert len(runs) == 1  # steered in, not a new run
    assert steered.run_id == runs[0].id


async def test_queued_messages_go_once_as_one_prompt_after_the_turn(
        engine: Engine, git_repo: Path) -> None:
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo", verify=[["git", "status"]])
    sid = await engine.start_session(spec)
    await busy(engine, sid)
    first = await engine.talk.say(sid, "Also list the files.")
    second = await engine.talk.say(sid, "And say hello.", source="window")
    assert (first.state, second.state) == ("queued", "queued")
    pending = await engine.talk.messages(sid, pending=True)
    assert [m.id for m in pending] == [first.id, second.id]

    row = await engine.wait_session(sid)
    assert row.state == "completed", row.reason
    runs = await engine.runs(sid)
    assert [r.outcome for r in runs] == ["completed", "completed"]  # the turn was never cut
    assert runs[1].agent_session_id == runs[0].agent_session_id  # the same conversation
    done = await engine.talk.messages(sid)
    assert [(m.state, m.how, m.run_id) for m in done] == [("delivered", "resume", runs[1].id)] * 2
    assert await engine.talk.messages(sid, pending=True) == []
    assert "Also list the files. And say hello." in await said(engine, sid, runs[1].id)
    # each message changed queued → sending → delivered, once
    changes = [r.event for r in await engine.session_events(sid)
               if isinstance(r.event, MessageChanged) and r.event.message_id == first.id]
    assert [c.state for c in changes] == ["queued", "sending", "delivered"]
    # the acceptance commands ran once, after the last turn
    verified = [r for r in await engine.session_events(sid) if isinstance(r.event, VerifyResult)]
    assert len(verified) == 1
    assert verified[0].run_id == runs[1].id


async def test_edit_and_cancel_while_queued_refused_once_sent(engine: Engine,
                                                             git_repo: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    keep = await engine.talk.say(sid, "Write a haiku.")
    drop = await engine.talk.say(sid, "Delete everything.")
    edited = await engine.talk.edit(sid, keep.id, "Write a limerick.")
    assert (edited.text, edited.state) == ("Write a limerick.", "queued")
    cancelled = await engine.talk.cancel(sid, drop.id)
    assert cancelled.state == "cancelled"
    with pytest.raises(MessageRefusedError, match="cancelled"):
        await engine.talk.edit(sid, drop.id, "again")
    with pytest.raises(MessageNotFoundError):
        await engine.talk.cancel(sid, "nosuchmsg")

    await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert len(runs) == 2
    texts = await said(engine, sid, runs[1].id)
    assert "Write a limerick." in texts
    assert "Delete everything." not in texts
    with pytest.raises(MessageRefusedError, match="delivered") as refused:
        await engine.talk.cancel(sid, keep.id)
    assert refused.value.hint
    states = {m.id: m.state for m in await engine.talk.messages(sid)}
    assert states == {keep.id: "delivered", drop.id: "cancelled"}


async def test_interrupt_ends_the_turn_and_a_message_continues(engine: Engine,
                                                                git_repo: Path) -> None:
    engine.config = load_config(demo_step_delay=0.5)
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    answer = await engine.talk.interrupt(sid)
    assert "next message" in answer
    row = await engine.wait_session(sid)
    assert (row.state, row.reason) == ("interrupted", INTERRUPTED_REASON)
    first = (await engine.runs(sid))[0]
    assert first.outcome == "interrupted"
    assert row.workdir
    assert Path(row.workdir).is_dir()  # the worktree stays
    with pytest.raises(RelayError, match="no turn is running"):
        await engine.talk.interrupt(sid)
    abilities = await engine.talk.abilities(sid)
    assert (abilities.busy, abilities.can_send) == (False, True)

    follow = await engine.talk.say(sid, "Go on, but keep it short.")
    assert (follow.state, follow.how) == ("delivered", "resume")
    row = await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert row.state == "completed"
    assert len(runs) == 2
    assert runs[1].agent_session_id == first.agent_session_id  # the conversation goes on
    assert follow.run_id == runs[1].id
    assert "Go on, but keep it short." in await said(engine, sid, runs[1].id)


async def test_interrupt_and_send_delivers_the_message_next(engine: Engine,
                                                             git_repo: Path) -> None:
    engine.config = load_config(demo_step_delay=0.5)
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    sent = await engine.talk.say(sid, "Stop and summarise.", mode="interrupt")
    assert sent.state == "queued"
    row = await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert row.state == "completed", row.reason
    assert [r.outcome for r in runs] == ["interrupted", "completed"]
    delivered = (await engine.talk.messages(sid))[0]
    assert (delivered.state, delivered.how, delivered.run_id) == ("delivered", "resume",
                                                                   runs[1].id)


async def test_abilities_follow_the_runtime_and_the_turn(engine: Engine, git_repo: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    running = await engine.talk.abilities(sid)
    assert (running.runtime, running.busy, running.steer, running.interrupt) == (
        "demo", True, "yes", "yes")
    assert "steer" not in running.why_not
    await engine.wait_session(sid)
    done = await engine.talk.abilities(sid)
    assert (done.busy, done.can_send) == (False, True)
    assert "No turn is running" in done.why_not["steer"]


async def test_a_message_is_checked_and_scrubbed(engine: Engine, git_repo: Path) -> None:
    engine.config = load_config(demo_step_delay=0)
    row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    with pytest.raises(MessageRefusedError, match="empty"):
        await engine.talk.say(row.id, "   ")
    with pytest.raises(MessageRefusedError, match="outside"):
        await engine.talk.say(row.id, "look", attachments=["../../etc/passwd"])
    with pytest.raises(MessageRefusedError, match="No such file"):
        await engine.talk.say(row.id, "look", attachments=["missing.txt"])
    with pytest.raises(RelayError, match="not a way"):
        await engine.talk.say(row.id, "x", mode="shout")  # type: ignore[arg-type]
    secret = "sk-ant-api03-" + "A1b2C3d4E5" * 9
    sent = await engine.talk.say(row.id, f"use {secret} and read this",
                                 attachments=["RELAY_DEMO_NOTES.md"])
    assert secret not in sent.text
    assert sent.attachments == [str(Path(row.workdir or "") / "RELAY_DEMO_NOTES.md")]
    await engine.wait_session(row.id)
    stored = await engine.store.conn.execute_fetchall("SELECT body FROM session_messages")
    assert stored
    assert all(secret not in r[0] for r in stored)
    events = await engine.store.conn.execute_fetchall(
        "SELECT payload FROM events WHERE kind='message'")
    assert events
    assert all(secret not in str(r[0]) for r in events)
    runs = await engine.runs(row.id)
    assert "Attached:" in await said(engine, row.id, runs[-1].id)


async def test_an_opening_engine_delivers_what_finished_sessions_queued(
        relay_home: Path, vault_env: None, git_repo: Path) -> None:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        row = await engine.run_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
        # queued while no engine ran the session (the host stopped before delivering it)
        left = await engine.inbox.add(row.id, "Finish the notes.", source="cli")
    finally:
        await engine.close()
    engine = await Engine.open(load_config(demo_step_delay=0), recover=True)
    try:
        final = await engine.wait_session(row.id)
        runs = await engine.runs(row.id)
        assert final.state == "completed"
        assert len(runs) == 2
        got = await engine.inbox.get(row.id, left.id)
        assert (got.state, got.how, got.run_id) == ("delivered", "resume", runs[1].id)
    finally:
        await engine.close()


class KeptDemo(DemoAdapter):
    """The demo agent keeping its process between turns (as Claude's stream-json input
    does): at each turn end it asks ``next_input`` and works on what it gets."""

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        ended: AgentEvent | None = None
        async for event in super().run(request):
            if isinstance(event, SessionEnded):
                ended = event
                continue
            yield event
        while request.next_input is not None and (text := await request.next_input()):
            yield self._ev(AssistantText(text=f"(simulated) Next turn: {text}"))
            yield self._ev(TurnCompleted(model="relay-demo-scripted"))
        if ended is not None:
            yield ended


async def test_a_runtime_that_keeps_its_process_gets_queued_messages_at_the_turns_end(
        engine: Engine, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry._ADAPTERS, "demo", f"{__name__}:KeptDemo")
    spec = SessionSpec(repo=git_repo, task="notes", runtime="demo", verify=[["git", "status"]])
    sid = await engine.start_session(spec)
    await busy(engine, sid)
    queued = await engine.talk.say(sid, "One more thing: add a date.")
    row = await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert row.state == "completed", row.reason
    assert len(runs) == 1  # the same agent process took it: no second run
    got = (await engine.talk.messages(sid))[0]
    assert (got.id, got.state, got.how, got.run_id) == (queued.id, "delivered", "turn",
                                                        runs[0].id)
    assert "Next turn: One more thing: add a date." in await said(engine, sid, runs[0].id)
    verified = [r for r in await engine.session_events(sid) if isinstance(r.event, VerifyResult)]
    assert len(verified) == 1  # after the last turn


async def test_a_stopped_session_keeps_its_queue_and_is_not_started_again(
        engine: Engine, git_repo: Path) -> None:
    sid = await engine.start_session(SessionSpec(repo=git_repo, task="notes", runtime="demo"))
    await busy(engine, sid)
    queued = await engine.talk.say(sid, "Also list the files.")
    await engine.cancel_session(sid)
    row = await engine.wait_session(sid)
    assert row.state == "cancelled"
    assert len(await engine.runs(sid)) == 1  # the queue did not start a new run
    assert [(m.id, m.state) for m in await engine.talk.messages(sid, pending=True)] == [
        (queued.id, "queued")]
    notes = [r.event.message for r in await engine.session_events(sid)
             if r.event.kind == "notice" and "not sent" in r.event.message]
    assert notes == ["The session was stopped, so 1 queued message was not sent. Send a "
                     "message to continue with them, or cancel them."]
    # the user's next message carries the kept one: one follow-up run with both
    await engine.talk.say(sid, "And say hello.")
    row = await engine.wait_session(sid)
    runs = await engine.runs(sid)
    assert (row.state, len(runs)) == ("completed", 2)
    assert "Also list the files. And say hello." in await said(engine, sid, runs[1].id)
