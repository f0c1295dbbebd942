"""Gemini through Relay sessions (Engine, runner, handoff, accounts) with the fake on PATH."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.events import AgentEvent
from relay.core.models import PermissionPolicy, SessionSpec
from relay.engine.engine import Engine

KEY = "gemini-session-test-key"


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config(demo_step_delay=0))
    yield eng
    await eng.close()


@pytest.fixture
def fake_gemini(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gemini-home"
    home.mkdir()
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    for name in ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY", "RELAY_FAKE_SCENARIO",
                 "RELAY_FAKE_GEMINI_SCENARIO", "RELAY_FAKE_GEMINI_HANG"):
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    return log


def calls_of(log: Path, name: str) -> list[dict[str, Any]]:
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in calls if Path(c["argv"][0]).name == name]


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


async def events_of(engine: Engine, session_id: str) -> list[AgentEvent]:
    return [r.event for r in await engine.session_events(session_id)]


async def test_a_task_completes_with_its_usage_recorded(engine: Engine, git_repo: Path,
                                                        fake_gemini: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "b_tools_yolo")
    spec = SessionSpec(repo=git_repo, task="Run echo hi and create hello.txt", chain=["gemini"],
                       permission=PermissionPolicy.FULL)
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    (run,) = await engine.runs(row.id)
    assert (run.runtime, run.outcome, run.exit_code) == ("gemini", "completed", 0)
    assert (run.usage.input_tokens, run.usage.cache_read_tokens, run.usage.output_tokens,
            run.usage.cost_usd) == (1500, 3000, 180, None)
    assert run.agent_session_id == row.agent_session_id
    events = await events_of(engine, row.id)
    kinds = [e.kind for e in events]
    assert kinds.count("tool_call") == kinds.count("tool_result") == 2
    assert kinds.index("session_started") < kinds.index("tool_call") < kinds.index("turn_completed")
    # the file the agent wrote is in the session's worktree and committed on its branch
    workdir = Path(row.workdir or "")
    assert workdir != git_repo
    assert (workdir / "hello.txt").read_text() == "hello world\n"
    repo = pygit2.Repository(str(workdir))
    assert "hello.txt" in repo.revparse_single(f"relay/{row.id}").peel(pygit2.Commit).tree
    argv = calls_of(fake_gemini, "gemini")[0]["argv"]
    assert option(argv, "--approval-mode") == "yolo"
    assert calls_of(fake_gemini, "gemini")[0]["cwd"] == str(workdir)


async def test_continue_resumes_the_same_gemini_session(engine: Engine, git_repo: Path,
                                                        fake_gemini: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "f_resume_latest")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Remember the word PINEAPPLE",
                                               chain=["gemini"]))
    assert row.state == "completed", row.reason
    first_id = row.agent_session_id
    assert first_id
    await engine.continue_session(row.id, "What was the word?")
    again = await engine.wait_session(row.id)
    assert again.state == "completed", again.reason
    runs = await engine.runs(row.id)
    assert [r.agent_session_id for r in runs] == [first_id, first_id]
    second = calls_of(fake_gemini, "gemini")[-1]["argv"]
    assert option(second, "--resume") == first_id
    assert option(second, "-p") == "What was the word?"
    texts = [e.result_text for e in await events_of(engine, row.id) if e.kind == "session_ended"]
    assert texts == ["Noted: the word is PINEAPPLE.", "The word was PINEAPPLE."]


async def test_a_quota_error_hands_the_task_to_the_next_entry(
        engine: Engine, git_repo: Path, fake_gemini: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "d_429_daily_quota")
    spec = SessionSpec(repo=git_repo, task="Add a greeting", chain=["gemini", "demo"])
    row = await engine.run_session(spec)
    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("gemini", "failed"), ("demo", "completed")]
    assert runs[0].exit_code == 173
    events = await events_of(engine, row.id)
    limit = next(e for e in events if e.kind == "limit_hit")
    assert (limit.limit, limit.scope) == ("quota", "daily")
    steps = [e for e in events if e.kind == "handoff_step"]
    assert [s.state for s in steps][-1] == "done"
    assert (steps[0].from_entry, steps[0].to_entry) == ("gemini", "demo")
    kinds = [e.kind for e in events]
    assert kinds.index("limit_hit") < kinds.index("handoff_step")


async def test_a_quota_error_hands_off_to_codex(engine: Engine, git_repo: Path,
                                                fake_gemini: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "d_429_daily_quota")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Add a greeting",
                                               chain=["gemini", "codex"]))
    assert row.state == "completed", row.reason
    runs = await engine.runs(row.id)
    assert [(r.runtime, r.outcome) for r in runs] == [("gemini", "failed"), ("codex", "completed")]
    codex_argv = calls_of(fake_gemini, "codex")[0]["argv"]
    assert "Add a greeting" in " ".join(codex_argv)


async def test_a_rate_limit_is_retried_on_gemini_then_handed_off(
        relay_home: Path, vault_env: None, git_repo: Path, fake_gemini: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """"Suggested retry after 2s": the same entry again (resumed, the dropped prompt sent
    again in a fresh session), then the next entry when the limit persists."""
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "c2_429_rate_limit_exhausted")
    eng = await Engine.open(load_config(demo_step_delay=0, max_retries=1))
    try:
        row = await eng.run_session(SessionSpec(repo=git_repo, task="Add a greeting",
                                                chain=["gemini", "demo"]))
        runs = await eng.runs(row.id)
        events = await events_of(eng, row.id)
    finally:
        await eng.close()
    assert row.state == "completed", row.reason
    assert [(r.runtime, r.outcome) for r in runs] == [
        ("gemini", "failed"), ("gemini", "failed"), ("demo", "completed")]
    limits = [e for e in events if e.kind == "limit_hit"]
    assert [x.limit for x in limits] == ["rate_limit", "rate_limit"]
    retry = calls_of(fake_gemini, "gemini")[1]["argv"]
    assert option(retry, "-p") == "Add a greeting\n\nContinue the task from where you stopped."
    assert "--resume" not in retry  # nothing to resume: gemini rolled the prompt back


async def test_an_api_key_account_brings_its_folder_and_key_from_the_vault(
        engine: Engine, git_repo: Path, fake_gemini: Path, tmp_path: Path) -> None:
    folder = tmp_path / "work-home"
    folder.mkdir()
    await engine.accounts.add("gemini", "work", folder, auth_kind="api_key",
                              api_key="vault-kept-gemini-key")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Say hello",
                                               chain=["gemini:work"]))
    assert row.state == "completed", row.reason
    call = calls_of(fake_gemini, "gemini")[0]
    assert call["gemini_cli_home"] == str(folder)
    # the vault's key, not the one exported in Relay's own environment
    assert call["credentials"]["GEMINI_API_KEY"] == hashlib.sha256(
        b"vault-kept-gemini-key").hexdigest()[:16]
    assert list((folder / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    stored = json.dumps([r.event.model_dump(mode="json")
                         for r in await engine.session_events(row.id)])
    assert "vault-kept-gemini-key" not in stored


async def test_a_missing_key_fails_the_session_saying_so(engine: Engine, git_repo: Path,
                                                         fake_gemini: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Say hello", chain=["gemini"]))
    assert row.state == "failed"
    assert "GEMINI_API_KEY" in (row.reason or "")
    errors = [e for e in await events_of(engine, row.id) if e.kind == "error"]
    assert [e.category for e in errors] == ["auth"]


async def test_a_missing_cli_fails_the_session_naming_the_package(
        engine: Engine, git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("RELAY_GEMINI_BIN", raising=False)
    row = await engine.run_session(SessionSpec(repo=git_repo, task="Say hello", chain=["gemini"]))
    assert (row.state, row.reason) == (
        "failed", "The gemini CLI (`gemini`) is not installed or not on PATH.")
    errors = [e for e in await events_of(engine, row.id) if e.kind == "error"]
    assert "npm install -g @google/gemini-cli@0.61.0" in errors[0].message


async def test_an_api_key_account_answers_the_account_check(engine: Engine, fake_gemini: Path,
                                                            tmp_path: Path) -> None:
    from relay.engine.account_check import check_account

    folder = tmp_path / "checked-home"
    folder.mkdir()
    account = await engine.accounts.add("gemini", "checked", folder, auth_kind="api_key",
                                        api_key="checked-gemini-key")
    result = await check_account(account, engine.accounts, engine.config)
    assert (result.status, result.model) == ("ok", "gemini-2.5-pro"), result
    call = calls_of(fake_gemini, "gemini")[0]
    assert option(call["argv"], "--approval-mode") == "default"  # a check only reads
    assert call["credentials"]["GEMINI_API_KEY"] == hashlib.sha256(
        b"checked-gemini-key").hexdigest()[:16]
