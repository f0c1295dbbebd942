"""Interrupt on the one-process-per-turn CLIs (issue 22): Gemini and Pi take no input
mid-turn (STEER no); an interrupt stops the process (INTERRUPT partial: that turn's work is
lost), the run ends ``interrupted`` and the next message resumes the agent's own session —
against the fake ``gemini`` and ``pi``."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.core.agent_homes import PiHome
from relay.core.capabilities import Cap, Level
from relay.core.errors import UnsupportedCapabilityError
from relay.core.events import AgentEvent, SessionStarted
from relay.runtimes.base import INTERRUPTED_REASON, CliAdapter, RunRequest
from relay.runtimes.gemini import GeminiAdapter
from relay.runtimes.gemini_files import find_chat
from relay.runtimes.pi import PiAdapter
from tests.runtimes.run_helpers import collect, ended, invocations, only


async def run_and_interrupt(adapter: CliAdapter, request: RunRequest) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    async for event in adapter.run(request):
        events.append(event)
        if isinstance(event, SessionStarted):  # the turn is running
            await adapter.interrupt()
    return events


@pytest.mark.parametrize("runtime", [GeminiAdapter, PiAdapter])
async def test_the_table(runtime: type[CliAdapter]) -> None:
    adapter = runtime()
    assert adapter.capabilities.level(Cap.STEER) == Level.NO
    assert adapter.capabilities.level(Cap.INTERRUPT) == Level.PARTIAL
    with pytest.raises(UnsupportedCapabilityError):
        await adapter.steer("now")


async def test_gemini_interrupt_then_resume_carries_the_conversation(
        fakes_on_path: Path, tmp_path: Path, git_repo: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "gemini-home"
    home.mkdir()
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-test-key-1")
    monkeypatch.setenv("RELAY_FAKE_LOG", str(tmp_path / "fake.log"))
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "f_resume_latest")
    monkeypatch.setenv("RELAY_FAKE_GEMINI_HANG", "1")
    first = GeminiAdapter()
    events = await run_and_interrupt(first, RunRequest(prompt="Remember the word PINEAPPLE",
                                                       cwd=git_repo))
    end = ended(events)
    assert (end.outcome, end.reason) == ("interrupted", INTERRUPTED_REASON)
    sid = first.session_id
    assert sid

    monkeypatch.delenv("RELAY_FAKE_GEMINI_HANG")
    resumed = await collect(GeminiAdapter(), RunRequest(prompt="What was the word?",
                                                        cwd=git_repo, resume_id=sid))
    argv = invocations(tmp_path / "fake.log")[-1]["argv"]
    assert argv[argv.index("--resume") + 1] == sid
    assert only(resumed, SessionStarted)[0].agent_session_id == sid
    assert ended(resumed).outcome == "completed"
    chat = find_chat(home / ".gemini", sid)
    assert chat is not None
    texts = chat.read_text()
    assert "Remember the word PINEAPPLE" in texts  # the interrupted turn's prompt stays
    assert "What was the word?" in texts


async def test_pi_interrupt_then_resume_carries_the_conversation(
        fakes_on_path: Path, tmp_path: Path, git_repo: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    monkeypatch.setenv("RELAY_FAKE_LOG", str(tmp_path / "fake.log"))
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "f_resume")
    monkeypatch.setenv("RELAY_FAKE_PI_HANG", "1")
    first = PiAdapter()
    events = await run_and_interrupt(first, RunRequest(prompt="Remember PINEAPPLE",
                                                       cwd=git_repo))
    end = ended(events)
    assert (end.outcome, end.reason) == ("interrupted", INTERRUPTED_REASON)
    sid = first.session_id
    assert sid

    monkeypatch.delenv("RELAY_FAKE_PI_HANG")
    resumed = await collect(PiAdapter(), RunRequest(prompt="What was the word?", cwd=git_repo,
                                                    resume_id=sid))
    argv = invocations(tmp_path / "fake.log")[-1]["argv"]
    assert argv[argv.index("--session") + 1] == sid
    assert ended(resumed).outcome == "completed"
    (session,) = PiHome(tmp_path / "pi-agent").session_folder(git_repo).glob("*.jsonl")
    # the interrupted turn's user message and the resumed one, in one session file
    assert session.read_text().count('"role":"user"') == 2
