"""The REAL Gemini CLI 0.61.0 driven through Relay against the project's loopback mock of the
Gemini API (tests/fakes/mock_gemini.py): the adapter directly, and `relay-cli run` end to end.

The CLI comes from scripts/install-agent-clis.sh (``RELAY_REAL_GEMINI`` overrides; a missing
one fails the test unless ``RELAY_SKIP_INTEGRATION=1``, see tests/integration/helpers.py).
Each test gets its own ``GEMINI_CLI_HOME`` (not ``HOME``: that is what a Relay account sets)
whose ``.gemini/settings.json`` pins the auth type — with ``GOOGLE_GEMINI_BASE_URL`` set the
CLI would otherwise derive ``gateway`` and refuse to run, which one test checks — and sets
``general.maxAttempts`` to 1 so failures surface without the CLI's 5-30 s backoff.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil
import pytest

from relay.core.errors import ConfigError
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    Notice,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.gemini import GeminiAdapter
from relay.runtimes.gemini_files import find_chat, read_chat
from tests.conftest import fixtures_root
from tests.fakes import mock_gemini
from tests.fakes.mock_gemini import MockGemini
from tests.integration.helpers import RELAY, CliRun, locate_cli, run_cli

pytestmark = pytest.mark.integration

GEMINI_VERSION = "0.61.0"
MODEL = "gemini-2.5-pro"
KEY = "mock-gemini-key"
CAPTURES = fixtures_root() / "gemini" / "captures"


@pytest.fixture(scope="session", name="real_gemini")
def real_gemini_fixture() -> Path:
    """The real Gemini CLI (pinned version)."""
    return locate_cli("gemini", GEMINI_VERSION)


def settings(*, pin: bool = True, max_attempts: int = 1) -> dict[str, Any]:
    """What the NOTES harness used: no auto-update, no usage statistics, few attempts."""
    found: dict[str, Any] = {
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                    "maxAttempts": max_attempts},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}
    if pin:
        found["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    return found


def gemini_home(root: Path, *, pin: bool = True, max_attempts: int = 1) -> Path:
    """A folder for ``GEMINI_CLI_HOME`` holding ``.gemini/settings.json``."""
    home = root / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(settings(pin=pin, max_attempts=max_attempts)))
    return home


def gemini_env(tmp_path: Path, mock: MockGemini, exe: Path, *, pin: bool = True,
               max_attempts: int = 1, key: str | None = KEY) -> dict[str, str]:
    """A complete environment from scratch (only PATH inherited), pointing at the mock."""
    home, tmpdir = tmp_path / "home", tmp_path / "tmp"
    for folder in (home, tmpdir):
        folder.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "TMPDIR": str(tmpdir), "LANG": "C.UTF-8", "TZ": "UTC", "TERM": "dumb",
           "USER": os.environ.get("USER", "root"),
           "GEMINI_CLI_HOME": str(gemini_home(tmp_path, pin=pin, max_attempts=max_attempts)),
           "GOOGLE_GEMINI_BASE_URL": mock.base_url, "RELAY_GEMINI_BIN": str(exe)}
    if key is not None:
        env["GEMINI_API_KEY"] = key
    return env


async def collect(adapter: GeminiAdapter, request: RunRequest) -> list[AgentEvent]:
    return [event async for event in adapter.run(request)]


def run_adapter(env: Mapping[str, str], request: RunRequest) -> tuple[GeminiAdapter,
                                                                      list[AgentEvent]]:
    adapter = GeminiAdapter(env)
    adapter.preflight(request)
    return adapter, asyncio.run(collect(adapter, request))


def of(events: list[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def ended(events: list[AgentEvent]) -> SessionEnded:
    assert len(of(events, SessionEnded)) == 1
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


def recorded(scenario: str) -> dict[str, Any]:
    """A capture's mock script (what the recorded run was answered with)."""
    script: dict[str, Any] = json.loads((CAPTURES / scenario / "mock_script.json").read_text())
    return script


def texts_sent(request: Mapping[str, Any]) -> list[str]:
    body = request["body"] or {}
    return [str(part["text"]) for content in body.get("contents", [])
            for part in content.get("parts", []) if "text" in part]


def tools_offered(request: Mapping[str, Any]) -> set[str]:
    body = request["body"] or {}
    return {d["name"] for tool in body.get("tools", []) for d in tool.get("functionDeclarations", [])}


# =========================================================================== the adapter


def test_text_answer_usage_and_the_chat_in_gemini_cli_home(real_gemini: Path, git_repo: Path,
                                                           tmp_path: Path) -> None:
    with mock_gemini.serve(recorded("a_text_stream_json")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        adapter, events = run_adapter(env, RunRequest(prompt="Say hello", cwd=git_repo,
                                                      model=MODEL))
        (request,) = mock.stream_requests()
    assert request["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert request["headers"]["x-goog-api-key"] == KEY
    assert texts_sent(request)[-1] == "Say hello"  # stdin was /dev/null: nothing prepended
    started = of(events, SessionStarted)[0]
    assert started.agent_session_id == adapter.session_id
    assert [t.text for t in of(events, AssistantText)] == ["Hello from the mock Gemini model."]
    usage = of(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens,
            usage.reasoning_tokens, usage.cost_usd) == (500, 1000, 60, 30, None)
    end = ended(events)
    assert (end.outcome, end.exit_code, end.result_text) == (
        "completed", 0, "Hello from the mock Gemini model.")
    # GEMINI_CLI_HOME (what an account sets) holds the chat, under the id Relay chose
    chat = find_chat(Path(env["GEMINI_CLI_HOME"]) / ".gemini", started.agent_session_id)
    assert chat is not None
    assert not (Path(env["HOME"]) / ".gemini").exists()


def shell_call(command: str, **args: str) -> dict[str, Any]:
    """A scripted model turn asking for ``run_shell_command``."""
    return {"parts": [{"functionCall": {"name": "run_shell_command",
                                        "args": {"command": command, **args}}}]}


def tool_call(name: str, **args: str) -> dict[str, Any]:
    return {"parts": [{"functionCall": {"name": name, "args": args}}]}


def test_workspace_policy_edits_and_runs_the_shell(real_gemini: Path, git_repo: Path,
                                                   tmp_path: Path) -> None:
    # g2 was recorded with auto_edit alone: the shell call answered tool_not_registered
    with mock_gemini.serve(recorded("g2_auto_edit_write_and_shell")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        _, events = run_adapter(env, RunRequest(prompt="Write and run", cwd=git_repo, model=MODEL))
        first = mock.stream_requests()[0]
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert {"write_file", "replace", "run_shell_command"} <= tools_offered(first)
    assert [c.name for c in of(events, ToolCall)] == ["write_file", "run_shell_command"]
    assert [(r.output, r.is_error) for r in of(events, ToolResult)] == [("", False), ("hi", False)]
    assert not of(events, PermissionDenied)
    assert of(events, SessionStarted)[0].permission_mode == "auto_edit + run_shell_command"
    assert ended(events).outcome == "completed"


def test_workspace_shell_keeps_geminis_own_refusals(real_gemini: Path, git_repo: Path,
                                                    tmp_path: Path) -> None:
    """What the allow rule does not open: a working folder outside the worktree, the
    commands Gemini calls dangerous, a file tool aimed outside. Each needs a confirmation
    nobody can give headless, is refused, and is a PermissionDenied. What it does not
    confine: the command itself may leave the worktree (``cd``), and the dangerous-command
    check looks at a lone command only (``mkdir b && rm -rf b`` runs)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (git_repo / "build").mkdir()
    script = {"turns": [shell_call("pwd", dir_path=str(outside)),
                        shell_call("rm -rf build"),
                        tool_call("write_file", file_path=str(outside / "w.txt"), content="x"),
                        shell_call(f"cd {outside} && echo out > by-cd.txt"),
                        shell_call("mkdir -p b && rm -rf b"),
                        {"text": "Done."}]}
    with mock_gemini.serve(script) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        _, events = run_adapter(env, RunRequest(prompt="Try", cwd=git_repo, model=MODEL))
    denied = of(events, PermissionDenied)
    assert [d.tool for d in denied] == ["run_shell_command", "run_shell_command", "write_file"]
    assert "Path not in workspace" in denied[0].detail
    assert "not supported in non-interactive mode" in denied[1].detail
    assert "Path not in workspace" in denied[2].detail
    assert not (outside / "w.txt").exists()
    assert (git_repo / "build").is_dir()
    assert (outside / "by-cd.txt").read_text() == "out\n"  # not confined: said in the docs
    assert [r.is_error for r in of(events, ToolResult)][3:] == [False, False]
    assert ended(events).outcome == "completed"


def test_read_only_policy_offers_no_write_tool(real_gemini: Path, git_repo: Path,
                                               tmp_path: Path) -> None:
    with mock_gemini.serve(recorded("g4_plan_mode_write")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        _, events = run_adapter(env, RunRequest(prompt="Write", cwd=git_repo, model=MODEL,
                                                permission=PermissionPolicy.READ_ONLY))
        offered = tools_offered(mock.stream_requests()[0])
    assert not {"write_file", "replace", "run_shell_command"} & offered
    assert not (git_repo / "hello.txt").exists()
    assert [d.tool for d in of(events, PermissionDenied)] == ["write_file"]


def test_full_policy_runs_the_shell(real_gemini: Path, git_repo: Path, tmp_path: Path) -> None:
    with mock_gemini.serve(recorded("b_tools_yolo")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        _, events = run_adapter(env, RunRequest(prompt="Run echo hi and create hello.txt",
                                                cwd=git_repo, model=MODEL,
                                                permission=PermissionPolicy.FULL))
    assert [(r.output, r.is_error) for r in of(events, ToolResult)] == [("hi", False), ("", False)]
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert ended(events).result_text == "Done: ran echo and wrote hello.txt."


def test_resume_continues_the_same_session(real_gemini: Path, git_repo: Path,
                                           tmp_path: Path) -> None:
    with mock_gemini.serve(recorded("f_resume_latest")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        first, _ = run_adapter(env, RunRequest(prompt="Remember the word PINEAPPLE",
                                               cwd=git_repo, model=MODEL))
        second, events = run_adapter(env, RunRequest(prompt="What was the word?", cwd=git_repo,
                                                     model=MODEL, resume_id=first.session_id))
        history = texts_sent(mock.stream_requests()[1])
    assert of(events, SessionStarted)[0].agent_session_id == first.session_id == second.session_id
    assert "Remember the word PINEAPPLE" in history
    assert "Noted: the word is PINEAPPLE." in history
    assert history[-1] == "What was the word?"
    assert ended(events).result_text == "The word was PINEAPPLE."


def test_a_rolled_back_prompt_is_sent_again(real_gemini: Path, git_repo: Path,
                                            tmp_path: Path) -> None:
    script = {"turns": [mock_gemini.quota_error(per_day=True, retry_s=43),
                        {"text": "Notes written."}]}
    with mock_gemini.serve(script) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        failed, first = run_adapter(env, RunRequest(prompt="Write the notes", cwd=git_repo,
                                                    model=MODEL))
        chat = find_chat(Path(env["GEMINI_CLI_HOME"]) / ".gemini", failed.session_id or "")
        assert chat is not None
        state = read_chat(chat)
        retry, events = run_adapter(env, RunRequest(
            prompt="Continue the task from where you stopped.", cwd=git_repo, model=MODEL,
            resume_id=failed.session_id))
        sent = texts_sent(mock.stream_requests()[1])
    # the real CLI rolled the prompt back and kept nothing to resume
    assert state is not None
    assert (state.resumable, state.rolled_back) == (False, "Write the notes")
    assert [x.limit for x in of(first, LimitHit)] == ["quota"]
    assert retry.session_id != failed.session_id
    assert sent[-1] == "Write the notes\n\nContinue the task from where you stopped."
    assert any("dropped the last prompt" in n.message for n in of(events, Notice))
    assert ended(events).outcome == "completed"


def test_a_dropped_stream_keeps_only_the_clean_answer(real_gemini: Path, git_repo: Path,
                                                      tmp_path: Path) -> None:
    with mock_gemini.serve(recorded("e3_midstream_disconnect")) as mock:
        env = gemini_env(tmp_path, mock, real_gemini, max_attempts=3)
        _, events = run_adapter(env, RunRequest(prompt="Say hello", cwd=git_repo, model=MODEL))
        assert len(mock.stream_requests()) == 2  # the CLI retried the dropped stream
    assert [t.text for t in of(events, AssistantText)] == ["Recovered answer after retry."]
    assert ended(events).result_text == "Recovered answer after retry."


@pytest.mark.parametrize(("turn", "limit", "status", "code"), [
    (mock_gemini.quota_error(per_day=True, retry_s=43), "quota", 429, 173),
    (mock_gemini.quota_error(per_day=False, retry_s=2), "rate_limit", 429, 173),
    (mock_gemini.overloaded_error(), "overloaded", 503, 247)])
def test_limits_and_the_exit_code_trap(real_gemini: Path, git_repo: Path, tmp_path: Path,
                                       turn: dict[str, Any], limit: str, status: int,
                                       code: int) -> None:
    with mock_gemini.serve({"turns": [{**turn, "repeat": -1}]}) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        before = time.time()
        _, events = run_adapter(env, RunRequest(prompt="Say hello", cwd=git_repo, model=MODEL))
    (hit,) = of(events, LimitHit)
    assert (hit.limit, hit.blocking) == (limit, True)
    if limit == "rate_limit":  # "Suggested retry after 2s."
        assert hit.resets_at is not None
        assert before + 1 < hit.resets_at.timestamp() < time.time() + 3
    else:
        assert hit.resets_at is None  # Gemini names no reset time
    error = next(e for e in of(events, AgentError) if e.fatal)
    assert error.http_status == status
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", code)  # the HTTP status mod 256


def test_a_missing_key_is_a_clear_auth_error(real_gemini: Path, git_repo: Path,
                                             tmp_path: Path) -> None:
    with mock_gemini.serve({"turns": []}) as mock:
        env = gemini_env(tmp_path, mock, real_gemini, key=None)
        _, events = run_adapter(env, RunRequest(prompt="Say hello", cwd=git_repo, model=MODEL))
        assert mock.requests == []
    error = of(events, AgentError)[0]
    assert error.category == "auth"
    assert "you must specify the GEMINI_API_KEY environment variable" in error.message
    assert "relay-cli accounts add gemini" in error.message
    assert (ended(events).outcome, ended(events).exit_code) == ("failed", 41)


def test_an_unpinned_auth_type_with_a_base_url_is_refused(real_gemini: Path, git_repo: Path,
                                                          tmp_path: Path) -> None:
    with mock_gemini.serve({"turns": [{"text": "unused"}]}) as mock:
        env = gemini_env(tmp_path, mock, real_gemini, pin=False)
        # the trap, as the real CLI springs it
        raw = run_cli([real_gemini, "-p", "Say hello", "-o", "stream-json", "-m", MODEL,
                       "--skip-trust"], env=env, cwd=git_repo)
        assert (raw.returncode, raw.stdout) == (41, ""), raw.describe()
        assert "Invalid auth method selected." in raw.stderr
        # Relay refuses before starting anything, naming the fix
        with pytest.raises(ConfigError) as info:
            GeminiAdapter(env).preflight(RunRequest(prompt="Say hello", cwd=git_repo))
        assert mock.requests == []
    assert '"selectedType": "gemini-api-key"' in (info.value.hint or "")


def test_stop_mid_turn_cancels_and_leaves_no_process(real_gemini: Path, git_repo: Path,
                                                     tmp_path: Path) -> None:
    async def scenario(env: Mapping[str, str]) -> tuple[list[AgentEvent], list[psutil.Process]]:
        adapter = GeminiAdapter(env)
        events: list[AgentEvent] = []
        tree: list[psutil.Process] = []
        async for event in adapter.run(RunRequest(prompt="Take your time", cwd=git_repo,
                                                  model=MODEL)):
            events.append(event)
            if isinstance(event, SessionStarted):
                assert adapter.pid is not None
                tree = [psutil.Process(adapter.pid),
                        *psutil.Process(adapter.pid).children(recursive=True)]
                await adapter.stop(grace=10)
        return events, tree

    with mock_gemini.serve({"turns": [{"hang_s": 60}]}) as mock:
        env = gemini_env(tmp_path, mock, real_gemini)
        started = time.monotonic()
        events, tree = asyncio.run(scenario(env))
    assert time.monotonic() - started < 30
    end = ended(events)
    assert end.outcome == "cancelled"
    assert not of(events, AgentError)
    assert len(tree) >= 2  # gemini relaunches itself in a child node process
    assert not [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


# =========================================================================== relay-cli


def relay_env(agent_env: Mapping[str, str], relay_home: Path) -> dict[str, str]:
    env = dict(agent_env)
    env["RELAY_HOME"] = str(relay_home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    env["RELAY_VAULT_PASSPHRASE"] = "gemini-integration-vault"
    return env


def relay_run(env: Mapping[str, str], repo: Path, *args: str) -> CliRun:
    return run_cli([*RELAY, "run", *args, "--repo", str(repo), "--json"], env=env, cwd=repo,
                   timeout=180)


def events_of(run: CliRun) -> list[dict[str, Any]]:
    return [json.loads(line)["event"] for line in run.stdout.splitlines() if line.strip()]


def kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]


def test_relay_cli_run_with_gemini(real_gemini: Path, git_repo: Path, tmp_path: Path,
                                   relay_home: Path) -> None:
    with mock_gemini.serve(recorded("b_tools_yolo")) as mock:
        env = relay_env(gemini_env(tmp_path, mock, real_gemini), relay_home)
        run = relay_run(env, git_repo, "Run echo hi and create hello.txt", "--provider",
                        "gemini", "--model", MODEL, "--permission", "full")
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    started = kinds(events, "session_started")[0]
    session = json.loads(run.stdout.splitlines()[0])["session_id"]
    assert started["cwd"] == str(relay_home / "worktrees" / session)
    assert started["permission_mode"] == "yolo"
    assert [c["name"] for c in kinds(events, "tool_call")] == ["run_shell_command", "write_file"]
    assert kinds(events, "turn_completed")[0]["usage"]["input_tokens"] == 1500
    assert kinds(events, "state_changed")[-1]["state"] == "completed"
    assert (relay_home / "worktrees" / session / "hello.txt").read_text() == "hello world\n"


def test_relay_cli_default_permission_writes_a_file_with_the_shell(
        real_gemini: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    """Issue 16 item 12: with the default permission (workspace) and approvals (deny, as
    with --json) Gemini is given its shell and the command runs in the worktree."""
    script = {"turns": [shell_call("echo hi > made-by-shell.txt", description="Write it"),
                        {"text": "Wrote made-by-shell.txt."}]}
    with mock_gemini.serve(script) as mock:
        env = relay_env(gemini_env(tmp_path, mock, real_gemini), relay_home)
        run = relay_run(env, git_repo, "Write made-by-shell.txt with the shell", "--provider",
                        "gemini", "--model", MODEL)
        offered = tools_offered(mock.stream_requests()[0])
    assert run.returncode == 0, run.describe()
    assert "run_shell_command" in offered
    events = events_of(run)
    session = json.loads(run.stdout.splitlines()[0])["session_id"]
    assert kinds(events, "session_started")[0]["permission_mode"] == \
        "auto_edit + run_shell_command"
    assert [(r["output"], r["is_error"]) for r in kinds(events, "tool_result")] == [("", False)]
    assert not kinds(events, "permission_denied")
    final = kinds(events, "state_changed")[-1]
    assert (final["state"], final["refused_calls"]) == ("completed", 0)
    made = relay_home / "worktrees" / session / "made-by-shell.txt"
    assert made.read_text() == "hi\n"
    assert not (git_repo / "made-by-shell.txt").exists()  # in the worktree, not the checkout


def test_relay_cli_a_refused_tool_call_shows_in_the_end_state(
        real_gemini: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    script = {"turns": [shell_call("rm -rf build"),  # needs a confirmation: refused
                        {"text": "I could not clean the build folder."}]}
    with mock_gemini.serve(script) as mock:
        env = relay_env(gemini_env(tmp_path, mock, real_gemini), relay_home)
        run = relay_run(env, git_repo, "Clean the build", "--provider", "gemini",
                        "--model", MODEL)
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    session = json.loads(run.stdout.splitlines()[0])["session_id"]
    assert [d["tool"] for d in kinds(events, "permission_denied")] == ["run_shell_command"]
    final = kinds(events, "state_changed")[-1]
    assert (final["state"], final["refused_calls"]) == ("completed", 1)
    listed = run_cli([*RELAY, "sessions", "--json"], env=env, cwd=git_repo)
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["id"], row["state"], row["refused_calls"]) == (session, "completed", 1)
    shown = run_cli([*RELAY, "show", session], env={**env, "COLUMNS": "200"}, cwd=git_repo)
    assert f"COMPLETED · 1 tool call refused · session {session}" in shown.stdout, \
        shown.describe()


def test_relay_cli_hands_off_from_a_gemini_quota_to_the_next_entry(
        real_gemini: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    with mock_gemini.serve({"turns": [{**mock_gemini.quota_error(per_day=True, retry_s=43),
                                       "repeat": -1}]}) as mock:
        env = relay_env(gemini_env(tmp_path, mock, real_gemini), relay_home)
        run = relay_run(env, git_repo, "Add a greeting", "--provider", "gemini", "--provider",
                        "demo", "--model", MODEL)
    assert run.returncode == 0, run.describe()
    events = events_of(run)
    assert [(x["limit"], x["scope"]) for x in kinds(events, "limit_hit")] == [("quota", "daily")]
    steps = kinds(events, "handoff_step")
    assert (steps[0]["from_entry"], steps[0]["to_entry"]) == ("gemini", "demo")
    assert steps[-1]["state"] == "done"
    assert kinds(events, "state_changed")[-1]["state"] == "completed"


def test_relay_cli_api_key_account_sends_the_vaults_key(real_gemini: Path, git_repo: Path,
                                                        tmp_path: Path,
                                                        relay_home: Path) -> None:
    with mock_gemini.serve(recorded("a_text_stream_json")) as mock:
        env = relay_env(gemini_env(tmp_path, mock, real_gemini, key="the-exported-key"),
                        relay_home)
        folder = gemini_home(tmp_path / "account")
        added = subprocess.run(
            [*RELAY, "accounts", "add", "gemini", "work", "--auth", "api_key",
             "--api-key-stdin", "--config-dir", str(folder)], env=env, cwd=git_repo,
            input="vault-kept-gemini-key\n", capture_output=True, text=True, timeout=60,
            check=False)
        assert added.returncode == 0, added.stderr
        run = relay_run(env, git_repo, "Say hello", "--provider", "gemini:work", "--model", MODEL)
        (request,) = mock.stream_requests()
    assert run.returncode == 0, run.describe()
    assert request["headers"]["x-goog-api-key"] == "vault-kept-gemini-key"
    assert list((folder / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))
    assert "vault-kept-gemini-key" not in run.stdout
