"""The permission table's cells (docs/architecture.md) against the REAL agent CLIs and the
project's loopback mocks: what each runtime's agent may do under a policy, and that a call
it was refused is in the session's end state.

Gemini's own cells are in test_gemini_real.py (headless) and here (ACP mode); Pi's in
test_pi_real.py. The CLIs come from scripts/install-agent-clis.sh (see helpers.py: a
missing one fails, ``RELAY_SKIP_INTEGRATION=1`` skips the tier).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from relay.core.events import AgentEvent, NeedsInput, PermissionDenied, SessionEnded, ToolResult
from relay.core.models import PermissionPolicy
from relay.runtimes.acp_agents import GeminiAcpAdapter
from relay.runtimes.base import RunRequest
from tests.fakes import mock_anthropic, mock_gemini, mock_openai
from tests.integration.helpers import (
    CliRun,
    claude_env,
    codex_env,
    events_of,
    kinds,
    locate_cli,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    real_codex_fixture,  # noqa: F401  (fixture "real_codex")
    relay_env,
    relay_run,
)

pytestmark = pytest.mark.integration

GEMINI_VERSION = "0.61.0"
#: a command Claude's acceptEdits alone does not let through ("This command requires approval")
PYTHON_WRITE = "python3 -c \"open('made-by-bash.txt', 'w').write('hi')\""


def worktree(relay_home: Path, run: CliRun) -> Path:
    return relay_home / "worktrees" / str(json.loads(run.stdout.splitlines()[0])["session_id"])


def bash_turns(command: str) -> dict[str, Any]:
    return {"turns": [{"tool_use": {"name": "Bash", "id": "toolu_bash_1",
                                    "input": {"command": command, "description": "Run it"}}},
                      {"text": "Done."}]}


# ------------------------------------------------------------------------- Claude Code


def test_claude_workspace_runs_a_command(real_claude: Path, git_repo: Path, tmp_path: Path,
                                         relay_home: Path) -> None:
    with mock_anthropic.serve(bash_turns(PYTHON_WRITE)) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "Write the file with python")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    assert kinds(events, "session_started")[0]["permission_mode"] == "acceptEdits"
    assert [r["is_error"] for r in kinds(events, "tool_result")] == [False]
    assert not kinds(events, "permission_denied")
    assert kinds(events, "state_changed")[-1]["refused_calls"] == 0
    assert (worktree(relay_home, run) / "made-by-bash.txt").read_text() == "hi"


def test_claude_read_only_refuses_a_command_and_the_end_state_says_so(
        real_claude: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    with mock_anthropic.serve(bash_turns(PYTHON_WRITE)) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        run = relay_run(env, git_repo, "claude", "Write the file with python",
                        "--permission", "read_only")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    assert [d["tool"] for d in kinds(events, "permission_denied")] == ["Bash"]
    final = kinds(events, "state_changed")[-1]
    assert (final["state"], final["refused_calls"]) == ("completed", 1)
    assert not (worktree(relay_home, run) / "made-by-bash.txt").exists()


# ------------------------------------------------------------------------- Codex


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside /tmp and $TMPDIR (which Codex's workspace-write sandbox allows)."""
    folder = Path(tempfile.mkdtemp(prefix="relay-outside-", dir="/var/tmp"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_codex_workspace_sandbox_keeps_writes_in_the_worktree(
        real_codex: Path, git_repo: Path, tmp_path: Path, relay_home: Path,
        outside_tmp: Path) -> None:
    outside = outside_tmp
    script = {"turns": [
        {"items": [{"type": "function_call", "name": "exec_command",
                    "arguments": {"cmd": "echo in > inside.txt", "yield_time_ms": 1000}}]},
        {"items": [{"type": "function_call", "name": "exec_command",
                    "arguments": {"cmd": f"echo out > {outside}/outside.txt",
                                  "yield_time_ms": 1000}}]},
        {"text": "Done."}]}
    with mock_openai.serve(script) as mock:
        env = relay_env(codex_env(tmp_path, mock), relay_home, "codex", real_codex)
        run = relay_run(env, git_repo, "codex", "Write both files")
        last = mock.response_requests()[-1]["body"]["input"]
    assert run.returncode == 0, run.describe()
    outputs = [str(i.get("output")) for i in last if i.get("type") == "function_call_output"]
    assert len(outputs) == 2
    assert "Read-only file system" in outputs[1], outputs  # what the model was told
    assert (worktree(relay_home, run) / "inside.txt").read_text() == "in\n"
    assert not (outside / "outside.txt").exists()  # the sandbox: writes stay in the worktree
    # the first command's result; the blocked one may leave no item event at all (codex
    # NOTES: "Tool calls that the sandbox or policy blocks produce no item event")
    assert kinds(events_of(run), "tool_result")[0]["is_error"] is False


# ------------------------------------------------------------------------- Gemini CLI, ACP mode


async def test_gemini_acp_workspace_runs_the_shell_without_asking(tmp_path: Path,
                                                                  git_repo: Path) -> None:
    exe = locate_cli("gemini", GEMINI_VERSION)
    home = tmp_path / "gemini-home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "general": {"enableAutoUpdate": False, "maxAttempts": 1},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}}}))
    script = {"turns": [{"parts": [{"functionCall": {"name": "run_shell_command", "args": {
        "command": "echo hi > made-by-shell.txt", "description": "Write it"}}}]},
        {"text": "Wrote it."}]}
    events: list[AgentEvent] = []
    with mock_gemini.serve(script) as mock:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home"),
               "GEMINI_CLI_HOME": str(home), "TMPDIR": str(tmp_path), "TZ": "UTC",
               "GEMINI_API_KEY": "mock-key", "GOOGLE_GEMINI_BASE_URL": mock.base_url,
               "RELAY_GEMINI_ACP_BIN": str(exe)}
        adapter = GeminiAcpAdapter(env)
        async for event in adapter.run(RunRequest(
                prompt="Write it with the shell", cwd=git_repo, model="gemini-2.5-pro",
                permission=PermissionPolicy.WORKSPACE, inactivity_timeout=120)):
            events.append(event)
            if isinstance(event, NeedsInput):  # the bug: it asked (refuse, so the test ends)
                reject = next(o.id for o in event.options if o.kind.startswith("reject"))
                await adapter.answer_input(event.request_id, reject)
    assert not [e for e in events if isinstance(e, NeedsInput | PermissionDenied)]
    assert [r.is_error for r in events if isinstance(r, ToolResult)] == [False]
    assert (git_repo / "made-by-shell.txt").read_text() == "hi\n"
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert end.outcome == "completed", end.reason
