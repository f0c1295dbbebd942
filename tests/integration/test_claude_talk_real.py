"""Talking to the real Claude Code 2.1.197 while it works (stream-json input) against the
loopback mock: follow-ups, a message queued during a slow turn, two queued as one, steer
mid-turn, interrupt, a fork cut at turn 2 of 4 (docs/claude-talk.md)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from relay.core.config import load_config
from relay.core.events import AgentError, AgentEvent, SessionEnded, SessionStarted, ToolCall, TurnCompleted
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from tests.conftest import make_repo
from tests.fakes.mock_anthropic import MockAnthropic, serve
from tests.integration.helpers import (
    claude_env,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
)

pytestmark = pytest.mark.integration
ANSWER = {"text": "ok", "match": {"has_tools": True}}


def adapter_for(real_claude: Path, tmp_path: Path, mock: MockAnthropic) -> ClaudeAdapter:
    return ClaudeAdapter(env={**claude_env(tmp_path, mock), "RELAY_CLAUDE_BIN": str(real_claude)})


def conversation(request: dict[str, Any]) -> str:
    """Everything the model was sent in one request, as one string."""
    return json.dumps(request["body"]["messages"])


async def run(adapter: ClaudeAdapter, request: RunRequest,
              on_event: Callable[[AgentEvent], Awaitable[None]] | None = None,
              ) -> list[AgentEvent]:
    events: list[AgentEvent] = []

    async def drive() -> None:
        async for event in adapter.run(request):
            events.append(event)
            if on_event is not None:
                await on_event(event)
    await asyncio.wait_for(drive(), 90)
    return events


def inputs(*texts: str) -> Callable[[], Awaitable[str | None]]:
    queue = list(texts)

    async def next_input() -> str | None:
        return queue.pop(0) if queue else None
    return next_input


async def asked(mock: MockAnthropic, n: int = 1) -> None:
    """Return once Claude's ``n``-th request reached the mock (polled, with a deadline)."""
    deadline = time.monotonic() + 30
    while len(mock.message_requests()) < n:
        assert time.monotonic() < deadline, f"the mock never saw {n} requests"
        await asyncio.sleep(0.05)


def turns(events: list[AgentEvent]) -> list[TurnCompleted]:
    return [e for e in events if isinstance(e, TurnCompleted)]


def end(events: list[AgentEvent]) -> SessionEnded:
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


async def test_a_follow_up_continues_the_conversation(real_claude: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with serve({"turns": [], "default": ANSWER}) as mock:
        events = await run(adapter_for(real_claude, tmp_path, mock), RunRequest(
            prompt="Remember PINEAPPLE.", cwd=repo, next_input=inputs("Which word?")))
        requests = mock.message_requests()
    assert len(turns(events)) == 2
    assert end(events).outcome == "completed"
    assert "PINEAPPLE" in conversation(requests[-1])
    assert "Which word?" in conversation(requests[-1])
    assert len({e.agent_session_id for e in events if isinstance(e, SessionStarted)}) == 1


async def test_queued_during_a_slow_turn_arrives_after_it_once_two_as_one(
        real_claude: Path, tmp_path: Path) -> None:
    """The runner's inbox hands the queued messages over at the turn end, joined."""
    repo = make_repo(tmp_path / "repo")
    queued: list[str] = []

    async def queue_while_busy(event: AgentEvent) -> None:
        if isinstance(event, SessionStarted):  # the first turn waits 3 s on the mock
            queued.extend(["also check the README", "and the licence"])

    async def next_input() -> str | None:
        text = "\n\n".join(queued) or None
        queued.clear()
        return text
    script = {"turns": [{**ANSWER, "delay_s": 3}], "default": ANSWER}
    with serve(script) as mock:
        events = await run(adapter_for(real_claude, tmp_path, mock), RunRequest(
            prompt="Read the code.", cwd=repo, next_input=next_input), queue_while_busy)
        requests = mock.message_requests()
    assert len(requests) == 2
    assert len(turns(events)) == 2
    assert "README" not in conversation(requests[0])
    last_user = [m for m in requests[1]["body"]["messages"] if m["role"] == "user"][-1]
    assert "also check the README" in json.dumps(last_user)
    assert "licence" in json.dumps(last_user)
    assert conversation(requests[1]).count("also check the README") == 1


async def test_steer_reaches_claude_mid_turn(real_claude: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script = {"turns": [{"tool_use": {"name": "Bash", "input": {"command": "sleep 2; echo hi"}},
                         "match": {"has_tools": True}}], "default": ANSWER}
    with serve(script) as mock:
        adapter = adapter_for(real_claude, tmp_path, mock)

        async def steer_at_the_tool(event: AgentEvent) -> None:
            if isinstance(event, ToolCall):  # the Bash call takes 2 s
                await adapter.steer("STEER: use the other file")
        events = await run(adapter, RunRequest(prompt="Run it.", cwd=repo,
                                               next_input=inputs()), steer_at_the_tool)
        requests = mock.message_requests()
    # one turn, one result: the message went into that turn's next request
    assert len(turns(events)) == 1
    assert len(requests) == 2
    assert "STEER: use the other file" in conversation(requests[1])
    assert "tool_result" in conversation(requests[1])


async def test_interrupt_ends_the_turn_and_the_session_continues(
        real_claude: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script = {"turns": [{**ANSWER, "delay_s": 30}], "default": ANSWER}
    with serve(script) as mock:
        adapter = adapter_for(real_claude, tmp_path, mock)

        async def interrupt_when_asked(event: AgentEvent) -> None:
            if isinstance(event, SessionStarted):
                await asked(mock)
                await adapter.interrupt()
        started = time.monotonic()
        events = await run(adapter, RunRequest(prompt="Think slowly.", cwd=repo,
                                               next_input=inputs("Carry on, briefly.")),
                           interrupt_when_asked)
        requests = mock.message_requests()
    assert time.monotonic() - started < 25  # the 30 s turn did not run out
    assert len(turns(events)) == 2
    assert not [e for e in events if isinstance(e, AgentError)]
    assert end(events).outcome == "completed"
    assert "[Request interrupted by user]" in conversation(requests[-1])
    assert "Carry on, briefly." in conversation(requests[-1])


async def test_interrupt_as_the_last_turn_ends_the_run_interrupted(
        real_claude: Path, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    with serve({"turns": [{**ANSWER, "delay_s": 30}], "default": ANSWER}) as mock:
        adapter = adapter_for(real_claude, tmp_path, mock)

        async def interrupt_when_asked(event: AgentEvent) -> None:
            if isinstance(event, SessionStarted):
                await asked(mock)
                await adapter.interrupt()
        events = await run(adapter, RunRequest(prompt="Think slowly.", cwd=repo,
                                               next_input=inputs()), interrupt_when_asked)
    assert (end(events).outcome, end(events).reason) == ("interrupted", "the turn was interrupted")


@pytest.mark.parametrize("new_worktree", [False, True])
async def test_a_fork_at_turn_2_of_4_has_turns_1_and_2(real_claude: Path, tmp_path: Path,
                                                      new_worktree: bool) -> None:
    repo = make_repo(tmp_path / "repo")
    with serve({"turns": [], "default": ANSWER}) as mock:
        adapter = adapter_for(real_claude, tmp_path, mock)
        events = await run(adapter, RunRequest(
            prompt="turn 1 question", cwd=repo,
            next_input=inputs("turn 2 question", "turn 3 question", "turn 4 question")))
        parent = next(e.agent_session_id for e in events if isinstance(e, SessionStarted))
        assert parent
        assert len(turns(events)) == 4
        anchor = ClaudeAdapter.fork_anchor(parent, 2, repo, adapter.env)
        assert anchor is not None
        cwd = make_repo(tmp_path / "fork") if new_worktree else repo
        fork = await run(adapter_for(real_claude, tmp_path, mock), RunRequest(
            prompt="forked question", cwd=cwd, resume_id=parent, fork=True, resume_at=anchor))
        sent = conversation(mock.message_requests()[-1])
    child = next(e.agent_session_id for e in fork if isinstance(e, SessionStarted))
    assert end(fork).outcome == "completed"
    assert child != parent
    assert "turn 1 question" in sent
    assert "turn 2 question" in sent
    assert "turn 3 question" not in sent
    assert "turn 4 question" not in sent
    assert "forked question" in sent


# -- through the engine (h-inbox's runner and inbox) -------------------------------------


@pytest.fixture
async def engine(relay_home: Path) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


def point_engine_at(real_claude: Path, tmp_path: Path, mock: MockAnthropic,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in claude_env(tmp_path, mock).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("RELAY_CLAUDE_BIN", str(real_claude))


async def test_through_the_engine_queued_go_as_one_turn_and_steer_reaches_the_turn(
        real_claude: Path, tmp_path: Path, engine: Engine,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One Claude process: two messages queued during a slow first turn go as the second
    turn (how="turn", once, together); a steer during that turn's tool call reaches it."""
    repo = make_repo(tmp_path / "repo")
    script = {"turns": [
        {**ANSWER, "text": "first turn done", "delay_s": 4},
        {"tool_use": {"name": "Bash", "input": {"command": "sleep 3; echo hi"}},
         "match": {"has_tools": True}},
    ], "default": ANSWER}
    with serve(script) as mock:
        point_engine_at(real_claude, tmp_path, mock, monkeypatch)
        sid = await engine.start_session(SessionSpec(repo=repo, task="Read the code.",
                                                     runtime="claude", worktree=False))
        await asked(mock)
        assert (await engine.talk.abilities(sid)).busy
        first = await engine.talk.say(sid, "QUEUED: also check the README")
        second = await engine.talk.say(sid, "QUEUED: and the licence")
        assert (first.state, second.state) == ("queued", "queued")
        await asked(mock, 2)  # the queued turn's tool call runs for 3 s
        steered = await engine.talk.say(sid, "STEER: skip the tests", mode="now")
        row = await asyncio.wait_for(engine.wait_session(sid), 90)
        requests = mock.message_requests()
    assert row.state == "completed", row.reason
    assert steered.how == "steer"
    assert len(requests) == 3  # turn 1; turn 2 (queued) asks for Bash; its tool result
    assert "QUEUED" not in conversation(requests[0])
    last_user = [m for m in requests[1]["body"]["messages"] if m["role"] == "user"][-1]
    assert "also check the README" in json.dumps(last_user)
    assert "and the licence" in json.dumps(last_user)
    assert conversation(requests[2]).count("also check the README") == 1
    assert "STEER: skip the tests" in conversation(requests[2])
    delivered = {m.id: m for m in await engine.talk.messages(sid)}
    assert {delivered[first.id].how, delivered[second.id].how} == {"turn"}
    assert delivered[first.id].run_id == delivered[second.id].run_id == steered.run_id


async def test_through_the_engine_interrupt_and_send(
        real_claude: Path, tmp_path: Path, engine: Engine,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """"Interrupt & send" stops a 30 s turn; the message goes next in the same process; a
    bare interrupt of the next slow turn leaves the session interrupted, not failed."""
    repo = make_repo(tmp_path / "repo")
    script = {"turns": [{**ANSWER, "delay_s": 30}, ANSWER, {**ANSWER, "delay_s": 30}],
              "default": ANSWER}
    with serve(script) as mock:
        point_engine_at(real_claude, tmp_path, mock, monkeypatch)
        started = time.monotonic()
        sid = await engine.start_session(SessionSpec(repo=repo, task="Think slowly.",
                                                     runtime="claude", worktree=False))
        await asked(mock)
        sent = await engine.talk.say(sid, "INSTEAD: answer briefly", mode="interrupt")
        await asked(mock, 2)
        row = await asyncio.wait_for(engine.wait_session(sid), 60)
        requests = mock.message_requests()
        assert row.state == "completed", row.reason
        assert time.monotonic() - started < 25  # the 30 s turn was cut short
        assert "[Request interrupted by user]" in conversation(requests[1])
        assert "INSTEAD: answer briefly" in conversation(requests[1])
        (message,) = await engine.talk.messages(sid)
        assert (message.id, message.how) == (sent.id, "turn")

        await engine.talk.say(sid, "Now think slowly again.")  # a follow-up: a new run
        await asked(mock, 3)
        await engine.talk.interrupt(sid)
        row = await asyncio.wait_for(engine.wait_session(sid), 60)
    assert row.state == "interrupted", row.reason


async def test_through_the_engine_a_fork_at_turn_2_of_4(
        real_claude: Path, tmp_path: Path, engine: Engine,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """h-fork's Talk.fork on the real CLI: the fork (its own worktree and branch) resumes a
    copy of the conversation cut after turn 2 (fork_anchor on the parent's transcript)."""
    repo = make_repo(tmp_path / "repo")
    with serve({"turns": [], "default": ANSWER}) as mock:
        point_engine_at(real_claude, tmp_path, mock, monkeypatch)
        row = await engine.run_session(SessionSpec(repo=repo, task="turn 1 question",
                                                   runtime="claude"))
        assert row.state == "completed", row.reason
        for n in (2, 3, 4):
            await engine.continue_session(row.id, f"turn {n} question")
            row = await asyncio.wait_for(engine.wait_session(row.id), 60)
            assert row.state == "completed", row.reason
        ends = [r for r in await engine.session_events(row.id)
                if r.event.kind == "turn_completed" and r.event.result_text is not None]
        assert len(ends) == 4
        result = await engine.talk.fork(row.id, at_event=ends[1].id, prompt="forked question")
        fork = await asyncio.wait_for(engine.wait_session(result.session_id), 60)
        sent = conversation(mock.message_requests()[-1])
    assert (result.how, result.turns) == ("conversation", 2)
    assert fork.state == "completed", fork.reason
    assert fork.workdir != row.workdir
    assert "turn 1 question" in sent
    assert "turn 2 question" in sent
    assert "turn 3 question" not in sent
    assert "turn 4 question" not in sent
    assert "forked question" in sent
