"""CodexAdapter end to end against the fake ``codex`` (tests/fakes/bin/codex)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.core.errors import CliNotFoundError, UnsupportedCapabilityError
from relay.core.events import (
    AgentEvent,
    AssistantText,
    LimitHit,
    SessionStarted,
    ToolCall,
    TurnCompleted,
    Usage,
)
from relay.core.models import PermissionPolicy
from relay.core.procs import AgentProcess, StdinMode
from relay.runtimes.base import RunRequest
from relay.runtimes.codex import (
    CodexAdapter,
    find_rollout,
    process_timezone,
    rollout_thread_total,
)
from tests.runtimes.run_helpers import collect, ended, invocations, only

A_THREAD = "01a22bed-0904-78e3-b9c9-4d5201b401bf"  # thread id recorded in a_text
F_THREAD = "01a22bee-46dd-78e3-889b-43b6b667eb33"  # thread id recorded in f_resume_by_id


@pytest.fixture
def fake_codex(fakes_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake on PATH, an isolated CODEX_HOME and an argv log; returns the log path."""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    monkeypatch.setenv("TZ", "UTC")
    log = tmp_path / "fake-codex.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    return log


async def test_text_answer(fake_codex: Path, git_repo: Path) -> None:
    adapter = CodexAdapter()
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo))
    assert only(events, SessionStarted)[0].agent_session_id == A_THREAD
    assert [t.text for t in only(events, AssistantText) if not t.reasoning] == [
        "Hello from the mock model."]
    end = ended(events)
    assert (end.outcome, end.result_text) == ("completed", "Hello from the mock model.")
    assert adapter.thread_id == A_THREAD
    argv = invocations(fake_codex)[-1]["argv"]
    assert argv[1:] == ["exec", "--json", "--sandbox", "workspace-write",
                        "--skip-git-repo-check", "-C", str(git_repo), "--", "Say hello"]


async def test_tool_and_patch_change_the_worktree(fake_codex: Path, git_repo: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "b_tool_shell_and_patch")
    before = (git_repo / "README.md").read_text()
    events = await collect(CodexAdapter(), RunRequest(prompt="patch", cwd=git_repo))
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert (git_repo / "README.md").read_text() != before
    calls = only(events, ToolCall)
    assert [c.name for c in calls] == ["shell", "file_change"]
    assert calls[1].input["changes"][1]["path"] == f"{git_repo}/hello.txt"
    assert ended(events).outcome == "completed"


async def test_usage_limit_is_a_limit_hit_and_a_failure(fake_codex: Path, git_repo: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "d_usage_limit_pro")
    events = await collect(CodexAdapter(), RunRequest(prompt="hi", cwd=git_repo))
    limits = only(events, LimitHit)
    assert [x.limit for x in limits] == ["usage_limit"]
    resets_at = limits[0].resets_at
    assert resets_at is not None  # "try again at 1:08 PM" in the process TZ (UTC here)
    assert (resets_at.tzinfo, resets_at.hour, resets_at.minute) == (UTC, 13, 8)
    assert resets_at.date() == datetime.now(UTC).date()
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 1)


async def test_resume_passes_id_and_sandbox_and_reports_turn_usage(
        fake_codex: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "f_resume_by_id")
    first = CodexAdapter()
    await collect(first, RunRequest(prompt="Remember", cwd=git_repo, model="gpt-5.5"))
    assert first.thread_id == F_THREAD
    second = CodexAdapter()
    events = await collect(second, RunRequest(prompt="What was the word?", cwd=git_repo,
                                              model="gpt-5.5", resume_id=first.thread_id))
    argv = invocations(fake_codex)[-1]["argv"]
    assert argv[1:4] == ["exec", "resume", "--json"]
    assert argv[-2:] == [F_THREAD, "What was the word?"]
    assert argv[argv.index("-c"):argv.index("-c") + 2] == ["-c", 'sandbox_mode="workspace-write"']
    assert argv[argv.index("-m"):argv.index("-m") + 2] == ["-m", "gpt-5.5"]
    assert "--sandbox" not in argv
    # codex reports 2400 (cumulative); the rollout the first run left says 1200 before.
    assert only(events, TurnCompleted)[0].usage.input_tokens == 1200
    assert second.thread_total is not None
    assert second.thread_total.input_tokens == 2400
    assert ended(events).outcome == "completed"


async def test_resume_uses_the_runners_previous_total(fake_codex: Path, git_repo: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "f_resume_by_id/run2")
    known = Usage(input_tokens=2000, output_tokens=70)  # no rollout on disk: this is used
    request = RunRequest(prompt="again", cwd=git_repo, resume_id=F_THREAD,
                         options={"previous_total": known})
    events = await collect(CodexAdapter(), request)
    usage = only(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.output_tokens) == (400, 10)


async def test_resume_replaces_the_thread_id(fake_codex: Path, git_repo: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "f_resume_by_id")
    events = await collect(CodexAdapter(), RunRequest(prompt="x", cwd=git_repo,
                                                      resume_id="0199aaaa-bbbb"))
    assert only(events, SessionStarted)[0].agent_session_id == "0199aaaa-bbbb"


async def test_unknown_resume_id_fails_with_a_resume_error(
        fake_codex: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "f3_resume_unknown_id")
    events = await collect(CodexAdapter(), RunRequest(prompt="x", cwd=git_repo,
                                                      resume_id="0199-gone"))
    end = ended(events)
    assert end.outcome == "failed"
    assert end.reason is not None
    assert "no rollout found for thread id 0199-gone" in end.reason
    assert [e.category for e in events if e.kind == "error"] == ["resume"]


async def test_stdin_is_dev_null(fake_codex: Path, git_repo: Path) -> None:
    # With stdin left open the fake (like codex) would wait for EOF forever.
    assert CodexAdapter.stdin_mode == StdinMode.DEVNULL
    events = await collect(CodexAdapter(), RunRequest(prompt="x", cwd=git_repo))
    assert ended(events).outcome == "completed"
    assert invocations(fake_codex)[-1]["stdin_isatty"] is False


async def test_the_fake_blocks_on_an_open_stdin_like_codex(fake_codex: Path,
                                                           git_repo: Path) -> None:
    """Guards the test above: an open pipe really does hang the fake until EOF."""
    proc = await asyncio.create_subprocess_exec(
        "codex", "exec", "--json", "hi", cwd=git_repo, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    assert proc.stdin is not None
    assert proc.stdout is not None
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(proc.stdout.readline(), 0.5)
    proc.stdin.close()
    first = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert b'"thread.started"' in first
    await proc.stdout.read()
    assert await proc.wait() == 0


async def test_stop_mid_turn_cancels_with_one_session_ended(
        fake_codex: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "e8_sigint_midturn")
    adapter = CodexAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="x", cwd=git_repo)):
        events.append(event)
        if isinstance(event, SessionStarted):
            await adapter.stop(grace=10)
    end = ended(events)
    assert end.outcome == "cancelled"
    assert end.exit_code == 1  # SIGINT: codex aborts the turn and exits 1


async def test_the_fake_dies_by_sigterm_like_codex(fake_codex: Path, git_repo: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_SCENARIO", "e7_sigterm_midturn")
    proc = AgentProcess(["codex", "exec", "--json", "--skip-git-repo-check", "hi"], git_repo,
                        dict(os.environ))
    await proc.start()
    async for line in proc.lines():
        if '"thread.started"' in line.text:
            await proc.stop(grace=10, sig=signal.SIGTERM)
    result = await proc.wait()
    assert (result.signal, result.stopped) == (signal.SIGTERM, True)


async def test_extra_env_reaches_codex(fake_codex: Path, git_repo: Path) -> None:
    request = RunRequest(prompt="x", cwd=git_repo,
                         extra_env={"RELAY_FAKE_SCENARIO": "d6_insufficient_quota_sse"})
    events = await collect(CodexAdapter(), request)
    assert [x.limit for x in only(events, LimitHit)] == ["quota"]
    # CODEX_HOME passed through untouched: the fake wrote its rollout there.
    assert list((Path(os.environ["CODEX_HOME"]) / "sessions").rglob("rollout-*.jsonl"))


async def test_missing_executable_names_codex(tmp_path: Path, git_repo: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RELAY_CODEX_BIN", raising=False)
    adapter = CodexAdapter()
    with pytest.raises(CliNotFoundError) as caught:
        await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    assert "codex" in str(caught.value)
    assert "npm install -g @openai/codex" in str(caught.value)
    info = adapter.info()
    assert (info.executable, info.version) == (None, None)
    assert info.problem is not None
    assert "codex" in info.problem


async def test_relay_codex_bin_override(fakes_on_path: Path, fake_codex: Path, tmp_path: Path,
                                        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = str(fakes_on_path / "codex")
    python_dir = Path(sys.executable).parent
    monkeypatch.setenv("PATH", str(python_dir))  # the fake's shebang needs python3, not codex
    monkeypatch.setenv("RELAY_CODEX_BIN", fake)
    adapter = CodexAdapter()
    events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    assert ended(events).outcome == "completed"
    assert invocations(fake_codex)[-1]["argv"][0] == fake
    info = adapter.info()
    assert (info.executable, info.version, info.problem) == (fake, "0.171.0", None)


def test_info_reports_the_version(fake_codex: Path) -> None:
    info = CodexAdapter().info()
    assert (info.runtime, info.version, info.problem) == ("codex", "0.171.0", None)
    assert info.executable is not None
    assert info.executable.endswith("codex")


def test_info_never_raises_on_a_broken_executable(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "codex"
    broken.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setenv("RELAY_CODEX_BIN", str(broken))
    info = CodexAdapter().info()
    assert (info.executable, info.version) == (str(broken), None)
    assert info.problem is not None
    assert "boom" in info.problem


# ---------------------------------------------------------------------------
# argv and helpers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("permission", "flags"), [
    (PermissionPolicy.READ_ONLY, ["--sandbox", "read-only"]),
    (PermissionPolicy.WORKSPACE, ["--sandbox", "workspace-write"]),
    (PermissionPolicy.FULL, ["--dangerously-bypass-approvals-and-sandbox"]),
])
def test_new_thread_argv(fake_codex: Path, permission: PermissionPolicy,
                         flags: list[str]) -> None:
    argv = CodexAdapter().build_argv(RunRequest(prompt="-p", cwd=Path("/w"), model="m",
                                                permission=permission))
    assert argv[1:] == ["exec", "--json", *flags, "--skip-git-repo-check", "-m", "m",
                        "-C", "/w", "--", "-p"]


@pytest.mark.parametrize(("permission", "flags"), [
    (PermissionPolicy.READ_ONLY, ["-c", 'sandbox_mode="read-only"']),
    (PermissionPolicy.WORKSPACE, ["-c", 'sandbox_mode="workspace-write"']),
    (PermissionPolicy.FULL, ["--dangerously-bypass-approvals-and-sandbox"]),
])
def test_resume_argv(fake_codex: Path, permission: PermissionPolicy, flags: list[str]) -> None:
    argv = CodexAdapter().build_argv(RunRequest(prompt="go on", cwd=Path("/w"),
                                                permission=permission, resume_id="t-1"))
    assert argv[1:] == ["exec", "resume", "--json", "--skip-git-repo-check", *flags,
                        "--", "t-1", "go on"]


def test_choosing_a_session_id_is_refused(fake_codex: Path, git_repo: Path) -> None:
    with pytest.raises(UnsupportedCapabilityError):
        CodexAdapter().preflight(RunRequest(prompt="x", cwd=git_repo, agent_session_id="mine"))


def test_sigint_is_the_stop_signal() -> None:
    assert CodexAdapter.stop_signal == signal.SIGINT


def test_rollout_lookup_and_total(tmp_path: Path) -> None:
    home = tmp_path / "ch"
    day = home / "sessions" / "2026" / "11" / "30"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-11-30T10-09-25-abc-1.jsonl"
    records = [
        {"type": "token_usage_record", "payload": {"thread_token_usage": {
            "input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 2}}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 30, "output_tokens": 5}}}},
        {"type": "event_msg", "payload": {"type": "task_complete"}},
    ]
    rollout.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    assert find_rollout(home, "abc-1") == rollout
    assert find_rollout(home, "other") is None
    assert find_rollout(home, "../*") is None
    assert rollout_thread_total(rollout) == Usage(input_tokens=30, output_tokens=5)


def test_process_timezone() -> None:
    assert str(process_timezone({"TZ": "Europe/Paris"})) == "Europe/Paris"
    assert process_timezone({"TZ": "Not/AZone"}) is None
    assert process_timezone({}) is None
