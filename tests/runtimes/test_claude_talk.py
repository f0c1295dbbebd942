"""Talking to a running Claude Code through the fake CLI (stream-json input, as the real
2.1.197 does it: docs/claude-talk.md): follow-ups at each result, steer, interrupt, the
fork anchor from a transcript."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from relay.core.agent_homes import ClaudeHome
from relay.core.errors import RelayError
from relay.core.events import AgentError, AgentEvent, AssistantText, TurnCompleted
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from tests.conftest import fixtures_root
from tests.runtimes.run_helpers import ended

CAPTURES = fixtures_root() / "claude" / "captures"


@pytest.fixture
def stdin_log(tmp_path: Path, fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "stdin.jsonl"
    monkeypatch.setenv("RELAY_FAKE_STDIN_LOG", str(log))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "a_text_stream_json")
    monkeypatch.delenv("RELAY_FAKE_CLAUDE_TURN_DELAY", raising=False)
    return log


def lines_of(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def replies(texts: list[str | None]) -> Callable[[], Any]:
    queue = list(texts)

    async def next_input() -> str | None:
        return queue.pop(0) if queue else None
    return next_input


async def run_all(adapter: ClaudeAdapter, request: RunRequest,
                  on_event: Callable[[AgentEvent], Any] | None = None) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    async for event in adapter.run(request):
        events.append(event)
        if on_event is not None:
            await on_event(event)
    return events


async def test_follow_ups_at_each_result_then_eof(stdin_log: Path, git_repo: Path) -> None:
    events = await run_all(ClaudeAdapter(), RunRequest(
        prompt="first", cwd=git_repo, next_input=replies(["second", "third"])))
    assert len([e for e in events if isinstance(e, TurnCompleted)]) == 3
    assert ended(events).outcome == "completed"
    assert [line["line"]["message"]["content"] for line in lines_of(stdin_log)] == [
        "first", "second", "third"]
    assert not any(line["during_turn"] for line in lines_of(stdin_log))


async def test_no_callback_is_one_turn(stdin_log: Path, git_repo: Path) -> None:
    events = await run_all(ClaudeAdapter(), RunRequest(prompt="only", cwd=git_repo))
    assert len([e for e in events if isinstance(e, TurnCompleted)]) == 1
    assert ended(events).outcome == "completed"


async def test_waiting_for_the_user_is_no_stall(stdin_log: Path, git_repo: Path) -> None:
    async def slow_user() -> str | None:
        await asyncio.sleep(1.5)  # the user types for longer than the inactivity timeout
        return None
    events = await run_all(ClaudeAdapter(), RunRequest(
        prompt="first", cwd=git_repo, inactivity_timeout=0.5, next_input=slow_user))
    assert not [e for e in events if isinstance(e, AgentError)]
    assert ended(events).outcome == "completed"


async def test_steer_reaches_the_running_turn(stdin_log: Path, git_repo: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_TURN_DELAY", "3,0")
    adapter = ClaudeAdapter()

    async def steer_once(event: AgentEvent) -> None:
        if isinstance(event, AssistantText) and len(lines_of(stdin_log)) == 1:
            await adapter.steer("look at the tests too")
    events = await run_all(adapter, RunRequest(prompt="first", cwd=git_repo,
                                               next_input=replies([])), steer_once)
    steered = lines_of(stdin_log)[1]
    assert steered["line"]["message"]["content"] == "look at the tests too"
    assert steered["during_turn"] is True  # written before the first turn's result
    assert len([e for e in events if isinstance(e, TurnCompleted)]) == 2
    with pytest.raises(RelayError):  # the run is over
        await adapter.steer("late")


async def test_interrupt_ends_the_turn_and_the_session_goes_on(
        stdin_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_TURN_DELAY", "30,0")
    adapter = ClaudeAdapter()

    async def interrupt_once(event: AgentEvent) -> None:
        if isinstance(event, AssistantText) and len(lines_of(stdin_log)) == 1:
            await adapter.interrupt()
    events = await run_all(adapter, RunRequest(prompt="first", cwd=git_repo,
                                               next_input=replies(["go on"])), interrupt_once)
    turns = [e for e in events if isinstance(e, TurnCompleted)]
    assert len(turns) == 2
    assert not [e for e in events if isinstance(e, AgentError)]  # not a failure
    assert [line["line"]["type"] for line in lines_of(stdin_log)] == [
        "user", "control_request", "user"]
    assert ended(events).outcome == "completed"


async def test_interrupt_as_the_last_turn_ends_interrupted(
        stdin_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_TURN_DELAY", "30")
    adapter = ClaudeAdapter()

    async def interrupt_once(event: AgentEvent) -> None:
        if isinstance(event, AssistantText):
            await adapter.interrupt()
    events = await run_all(adapter, RunRequest(prompt="first", cwd=git_repo,
                                               next_input=replies([])), interrupt_once)
    end = ended(events)
    assert (end.outcome, end.reason) == ("interrupted", "the turn was interrupted")


def test_fork_anchor_cuts_after_n_turns(tmp_path: Path) -> None:
    cwd = tmp_path / "repo"
    cwd.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    source = next((CAPTURES / "k_stream_json_input" / "config" / "projects" / "CWD_ENCODED")
                  .glob("*.jsonl"))
    target = ClaudeHome(tmp_path / "config").transcript(cwd, "S")
    target.parent.mkdir(parents=True)
    shutil.copy(source, target)
    entries = [json.loads(line) for line in source.read_text().splitlines()]
    prompts = [e for e in entries if e.get("type") == "user"]
    assert len(prompts) == 2
    assert ClaudeAdapter.fork_anchor("S", 1, cwd, env) == prompts[1]["parentUuid"]
    assert ClaudeAdapter.fork_anchor("S", 2, cwd, env) is None  # all of it
    assert ClaudeAdapter.fork_anchor("missing", 1, cwd, env) is None


async def test_stop_while_waiting_for_the_user_ends_the_run(stdin_log: Path,
                                                            git_repo: Path) -> None:
    adapter = ClaudeAdapter()
    never = asyncio.Event()

    async def forever() -> str | None:
        await never.wait()  # the user never answers
        return "unreachable"

    async def stop_at_the_result(event: AgentEvent) -> None:
        if isinstance(event, TurnCompleted):
            asyncio.get_running_loop().call_soon(
                lambda: asyncio.ensure_future(adapter.stop(grace=2.0)))
    events = await asyncio.wait_for(run_all(adapter, RunRequest(
        prompt="first", cwd=git_repo, next_input=forever), stop_at_the_result), 20)
    assert ended(events).outcome in ("completed", "cancelled")
    assert len(lines_of(stdin_log)) == 1  # nothing more was written


async def test_interrupt_between_turns_sends_nothing(stdin_log: Path, git_repo: Path) -> None:
    adapter = ClaudeAdapter()

    async def interrupt_then_done() -> str | None:
        await adapter.interrupt()  # nothing runs while Relay waits for the user
        return None
    events = await run_all(adapter, RunRequest(prompt="first", cwd=git_repo,
                                               next_input=interrupt_then_done))
    assert ended(events).outcome == "completed"
    assert [line["line"]["type"] for line in lines_of(stdin_log)] == ["user"]


def test_an_interrupted_prompt_stays_with_the_turn_before(tmp_path: Path) -> None:
    """Shaped like 2.1.197's transcript after an interrupt (docs/claude-talk.md (b))."""
    def user(uuid: str, parent: str | None, content: object) -> dict[str, object]:
        return {"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                "promptSource": "sdk", "message": {"role": "user", "content": content}}
    entries = [
        user("u1", None, "one"),
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1"},
        user("u2", "a1", "two, interrupted"),
        user("m2", "u2", [{"type": "text", "text": "[Request interrupted by user]"}]),
        user("u3", "m2", "three"),
        {"type": "user", "uuid": "t3", "parentUuid": "u3", "toolUseResult": {},
         "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}},
        {"type": "assistant", "uuid": "a3", "parentUuid": "t3"},
        user("u4", "a3", "four"),
    ]
    cwd = tmp_path / "repo"
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    path = ClaudeHome(tmp_path / "config").transcript(cwd, "S")
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert ClaudeAdapter.fork_anchor("S", 1, cwd, env) == "m2"  # turn 1 + the interrupted one
    assert ClaudeAdapter.fork_anchor("S", 2, cwd, env) == "a3"
    assert ClaudeAdapter.fork_anchor("S", 3, cwd, env) is None
