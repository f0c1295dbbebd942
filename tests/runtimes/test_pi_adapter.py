"""PiAdapter end to end against the fake ``pi`` (tests/fakes/bin/pi), alone and through
Relay sessions (a completed task with usage and cost, resume, a 429 handoff)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.agent_homes import PiHome, pi_home
from relay.core.capabilities import Cap, Level
from relay.core.config import load_config
from relay.core.errors import CliNotFoundError, ConfigError, SessionNotFoundError
from relay.core.events import (
    LimitHit,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy, SessionSpec
from relay.engine.engine import Engine
from relay.runtimes.base import RunRequest
from relay.runtimes.pi import PiAdapter, find_session, safe_prompt
from relay.runtimes.registry import available_runtimes, make_adapter
from tests.runtimes.run_helpers import collect, only


@pytest.fixture
def fake_pi(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake on PATH, an isolated PI_CODING_AGENT_DIR and an argv log; returns the log."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    log = tmp_path / "fake-pi.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    for var in ("RELAY_FAKE_SCENARIO", "RELAY_FAKE_PI_SCENARIO", "MOCK_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return log


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def write_models(folder: Path, key: str = "MOCK_API_KEY") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.json").write_text(json.dumps({"providers": {"mock": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": key,
        "models": [{"id": "mock-model"}]}}}))


async def test_text_answer_with_usage_and_cost(fake_pi: Path, git_repo: Path) -> None:
    adapter = PiAdapter()
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo,
                                               model="mock-model",
                                               options={"provider": "mock"}))
    started = only(events, SessionStarted)[0]
    assert started.agent_session_id == adapter.session_id
    (turn,) = only(events, TurnCompleted)
    assert turn.usage.cost_usd == pytest.approx(0.000725)
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert (end.outcome, end.result_text) == ("completed", "Hello from the mock chat model.")
    call = calls(fake_pi)[-1]
    assert call["argv"][1:] == ["--mode", "json", "--provider", "mock", "--model", "mock-model",
                                "-p", "Say hello"]
    assert call["pi_offline"] == "1"
    assert call["stdin_isatty"] is False
    # the session file is where the adapter looks for it on resume
    assert find_session(pi_home({"PI_CODING_AGENT_DIR": str(fake_pi.parent / "pi-agent")}).root,
                        git_repo, started.agent_session_id or "") is not None


async def test_tools_stream_and_change_the_worktree(fake_pi: Path, git_repo: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "b_tools_bash_write_edit")
    events = await collect(PiAdapter(), RunRequest(prompt="Do the tool things", cwd=git_repo))
    assert [c.name for c in only(events, ToolCall)] == ["bash", "write", "edit"]
    assert len(only(events, ToolResult)) == 3
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]


async def test_exhausted_429_with_exit_0_is_a_failure(fake_pi: Path, git_repo: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "c2_429_exhausted")
    events = await collect(PiAdapter(), RunRequest(prompt="Say hello", cwd=git_repo))
    assert only(events, LimitHit)[0].limit == "rate_limit"
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert (end.outcome, end.exit_code) == ("failed", 0)


async def test_resume_continues_the_session(fake_pi: Path, git_repo: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "f_resume")
    first = PiAdapter()
    await collect(first, RunRequest(prompt="Remember PINEAPPLE", cwd=git_repo))
    sid = first.session_id
    assert sid
    second = PiAdapter()
    events = await collect(second, RunRequest(prompt="What was the word?", cwd=git_repo,
                                              resume_id=sid))
    assert second.session_id == sid
    assert "PINEAPPLE" in (events[-1].result_text or "")  # type: ignore[union-attr]
    argv = calls(fake_pi)[-1]["argv"]
    assert argv[argv.index("--session") + 1] == sid
    folder = PiHome(fake_pi.parent / "pi-agent").session_folder(git_repo)
    (session,) = folder.glob("*.jsonl")
    assert session.read_text().count('"role":"user"') == 2


async def test_unknown_session_fails_before_starting(fake_pi: Path, git_repo: Path) -> None:
    with pytest.raises(SessionNotFoundError, match="no session"):
        await collect(PiAdapter(), RunRequest(prompt="x", cwd=git_repo, resume_id="0000abcd"))
    assert calls(fake_pi) == []


async def test_unset_key_variable_is_named_and_pi_never_starts(
        fake_pi: Path, git_repo: Path, tmp_path: Path) -> None:
    write_models(tmp_path / "pi-agent")
    request = RunRequest(prompt="x", cwd=git_repo, model="mock/mock-model")
    with pytest.raises(ConfigError) as raised:
        await collect(PiAdapter(), request)
    assert "MOCK_API_KEY" in raised.value.message
    assert raised.value.hint
    assert calls(fake_pi) == []
    # set (through the account's variables, as Relay passes keys) it starts
    ok = RunRequest(prompt="x", cwd=git_repo, model="mock/mock-model",
                    extra_env={"MOCK_API_KEY": "sk-test"})
    events = await collect(PiAdapter(), ok)
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]
    assert calls(fake_pi)[-1]["key_variables"] == {"MOCK_API_KEY": True}
    assert "sk-test" not in json.dumps(calls(fake_pi))


async def test_literal_keys_are_left_alone(fake_pi: Path, git_repo: Path, tmp_path: Path) -> None:
    write_models(tmp_path / "pi-agent", key="ollama")
    events = await collect(PiAdapter(), RunRequest(prompt="x", cwd=git_repo,
                                                   options={"provider": "mock"}))
    assert events[-1].outcome == "completed"  # type: ignore[union-attr]


async def test_missing_cli_names_the_npm_package(git_repo: Path, tmp_path: Path) -> None:
    adapter = PiAdapter(env={"PATH": str(tmp_path)})
    with pytest.raises(CliNotFoundError) as raised:
        await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    assert "npm install -g @mariozechner/pi-coding-agent@0.73.1" in (raised.value.hint or "")
    assert adapter.info().problem


def test_read_only_is_the_tool_allowlist(fake_pi: Path, git_repo: Path) -> None:
    argv = PiAdapter().build_argv(RunRequest(prompt="-x", cwd=git_repo,
                                             permission=PermissionPolicy.READ_ONLY))
    assert argv[argv.index("--tools") + 1] == "read,grep,find,ls"
    assert argv[-2:] == ["-p", " -x"]
    full = PiAdapter().build_argv(RunRequest(prompt="y", cwd=git_repo,
                                             permission=PermissionPolicy.FULL))
    assert "--tools" not in full
    assert safe_prompt("@file") == " @file"


def test_brief_goes_into_the_system_prompt(fake_pi: Path, git_repo: Path) -> None:
    (git_repo / "brief.md").write_text("Continue the task.")
    argv = PiAdapter().build_argv(RunRequest(prompt="y", cwd=git_repo,
                                             brief_file=Path("brief.md")))
    assert argv[argv.index("--append-system-prompt") + 1] == str(git_repo / "brief.md")


def test_info_reads_the_version_pi_prints_on_stderr(fake_pi: Path) -> None:
    info = PiAdapter().info()
    assert (info.version, info.problem) == ("0.73.1", None)


def test_registered_with_honest_capabilities() -> None:
    assert "pi" in available_runtimes()
    caps = make_adapter("pi").capabilities
    assert caps.level(Cap.COST) == Level.YES
    assert caps.level(Cap.SEND_INPUT) == Level.NO
    assert caps.level(Cap.PERMISSION_POLICY) == Level.PARTIAL


# ------------------------------------------------------------------ through Relay sessions


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


async def test_session_completes_with_usage_and_cost_then_continues(
        engine: Engine, git_repo: Path, fake_pi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", "f_resume")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Remember PINEAPPLE",
                                               chain=["pi"]))
    assert row.state == "completed", row.reason
    turns = [r.event for r in await engine.session_events(row.id)
             if r.event.kind == "turn_completed"]
    assert turns
    assert turns[0].usage.cost_usd == pytest.approx(0.000725)
    await engine.continue_session(row.id, "What was the word?")
    row = await engine.wait_session(row.id)
    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [r.outcome for r in runs] == ["completed", "completed"]
    resumed = calls(fake_pi)[-1]["argv"]
    assert "--session" in resumed


@pytest.mark.parametrize(("scenario", "reason"), [("d_usage_limit_codex_style", "usage_limit"),
                                                 ("c2_429_exhausted", "rate_limit")])
async def test_exhausted_429_hands_off_to_the_next_entry(
        engine: Engine, git_repo: Path, fake_pi: Path, monkeypatch: pytest.MonkeyPatch,
        scenario: str, reason: str) -> None:
    monkeypatch.setenv("RELAY_FAKE_PI_SCENARIO", scenario)
    spec = SessionSpec(repo=git_repo, task="Say hello", chain=["pi", "demo"])
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    runs = [(r.runtime, r.outcome) for r in await engine.runs(row.id)]
    # a short rate limit ("try again in 1s") is retried on Pi first, a usage limit is not
    assert runs[-1] == ("demo", "completed")
    assert set(runs[:-1]) == {("pi", "failed")}
    assert len(runs) == (2 if reason == "usage_limit" else len(runs))
    steps = [r.event for r in await engine.session_events(row.id)
             if r.event.kind == "handoff_step"]
    assert steps[0].reason == reason
    assert all(c["argv"][1:3] == ["--mode", "json"] for c in calls(fake_pi))
