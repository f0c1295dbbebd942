"""ACP interrupt (issue 22): ``session/cancel`` ends the prompt turn, the session stays —
against the fake ACP agent, which honours the cancel as the ACP spec has it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.errors import UnsupportedCapabilityError
from relay.core.events import AgentEvent, AssistantText, Notice, SessionStarted, ToolCall
from relay.runtimes.acp import AcpAdapter
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from tests.conftest import FAKES_DIR
from tests.runtimes.run_helpers import ended, only


@pytest.fixture
def fake_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RELAY_ACP_BIN", str(FAKES_DIR / "bin" / "fake-acp-agent"))
    monkeypatch.setenv("RELAY_FAKE_ACP_HOME", str(tmp_path / "acp-home"))
    log = tmp_path / "fake-acp.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "hang")  # works until cancelled
    return log


def methods(log: Path) -> list[str]:
    return [json.loads(line).get("method", "") for line in log.read_text().splitlines()]


async def run_and_interrupt(adapter: AcpAdapter, request: RunRequest) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    interrupter: asyncio.Task[None] | None = None
    async for event in adapter.run(request):
        events.append(event)
        if isinstance(event, ToolCall):  # mid-turn: the agent is running a command
            interrupter = asyncio.create_task(adapter.interrupt())
    assert interrupter is not None
    await interrupter
    return events


async def test_interrupt_cancels_the_turn_and_the_session_goes_on(
        fake_log: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = await run_and_interrupt(AcpAdapter(), RunRequest(prompt="build it", cwd=git_repo))
    end = ended(events)
    assert (end.outcome, end.reason) == ("interrupted", INTERRUPTED_REASON)
    sent = methods(fake_log)
    assert sent.count("session/cancel") == 1
    cancel = next(json.loads(line) for line in fake_log.read_text().splitlines()
                  if '"session/cancel"' in line)
    sid = only(events, SessionStarted)[0].agent_session_id
    assert cancel["params"] == {"sessionId": sid}
    assert "id" not in cancel  # a notification, as the spec has it

    # the session stays: a later message loads it, with the interrupted turn in it
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "basic")
    resumed = [e async for e in AcpAdapter().run(RunRequest(prompt="go on", cwd=git_repo,
                                                               resume_id=sid))]
    replayed = [e for e in resumed if e.replay]
    assert [n.message for n in only(replayed, Notice)] == ["Earlier prompt: build it"]
    assert [t.text for t in only(replayed, AssistantText)] == ["Working on it…"]
    assert ended(resumed).outcome == "completed"


async def test_a_stop_is_still_a_cancel(fake_log: Path, git_repo: Path) -> None:
    adapter = AcpAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="x", cwd=git_repo)):
        events.append(event)
        if isinstance(event, ToolCall):
            asyncio.get_running_loop().create_task(adapter.stop(grace=10.0))
    assert ended(events).outcome == "cancelled"


def test_acp_levels() -> None:
    caps = AcpAdapter().capabilities
    assert caps.level(Cap.INTERRUPT) == Level.PARTIAL
    assert caps.level(Cap.STEER) == Level.NO


async def test_steer_is_refused() -> None:
    with pytest.raises(UnsupportedCapabilityError):
        await AcpAdapter().steer("now")
