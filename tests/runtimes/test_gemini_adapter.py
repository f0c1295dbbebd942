"""GeminiAdapter end to end against the fake ``gemini`` (tests/fakes/bin/gemini)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from relay.core.capabilities import Cap, Level
from relay.core.errors import CliNotFoundError, ConfigError
from relay.core.events import (
    AgentError,
    AgentEvent,
    AssistantText,
    LimitHit,
    Notice,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.models import PermissionPolicy
from relay.core.procs import StdinMode
from relay.runtimes.base import RunRequest
from relay.runtimes.gemini import APPROVAL_MODES, INSTALL_HINT, GeminiAdapter, plan_session
from relay.runtimes.gemini_files import find_chat, read_chat
from relay.runtimes.registry import adapter_class, make_adapter
from tests.runtimes.run_helpers import collect, ended, invocations, only

KEY = "gemini-test-key-1"


@pytest.fixture
def gemini_home(tmp_path: Path) -> Path:
    home = tmp_path / "gemini-home"
    home.mkdir()
    return home


@pytest.fixture
def fake_gemini(fakes_on_path: Path, gemini_home: Path, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake on PATH, an isolated GEMINI_CLI_HOME, a key, an argv log (returned)."""
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    for name in ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_GCA",
                 "GOOGLE_GENAI_USE_VERTEXAI", "GEMINI_CLI_TRUST_WORKSPACE",
                 "RELAY_FAKE_SCENARIO", "RELAY_FAKE_GEMINI_SCENARIO", "RELAY_FAKE_GEMINI_HANG"):
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "fake-gemini.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    return log


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


# ---------------------------------------------------------------------------
# Registration and argv
# ---------------------------------------------------------------------------


def test_registered_as_gemini_with_an_honest_table() -> None:
    assert adapter_class("gemini") is GeminiAdapter
    caps = make_adapter("gemini", env={}).capabilities
    assert caps.level(Cap.RESUME) is Level.YES
    assert caps.level(Cap.CHOOSE_SESSION_ID) is Level.YES
    assert caps.level(Cap.COST) is Level.NO
    assert caps.level(Cap.SEND_INPUT) is Level.NO
    assert caps.level(Cap.LIMIT_EVENTS) is Level.PARTIAL
    assert GeminiAdapter.brief_injection(resuming=False) is None  # the brief goes in the prompt
    assert GeminiAdapter.stdin_mode == StdinMode.DEVNULL


@pytest.mark.parametrize(("policy", "mode"), [
    (PermissionPolicy.READ_ONLY, "default"), (PermissionPolicy.WORKSPACE, "auto_edit"),
    (PermissionPolicy.FULL, "yolo")])
def test_permission_policy_is_an_approval_mode(fake_gemini: Path, git_repo: Path,
                                               policy: PermissionPolicy, mode: str) -> None:
    argv = GeminiAdapter().build_argv(RunRequest(prompt="x", cwd=git_repo, permission=policy))
    assert option(argv, "--approval-mode") == mode == APPROVAL_MODES[policy]


def test_argv_of_a_new_session(fake_gemini: Path, git_repo: Path) -> None:
    adapter = GeminiAdapter()
    argv = adapter.build_argv(RunRequest(prompt="Say hello", cwd=git_repo, model="gemini-2.5-pro"))
    sid = option(argv, "--session-id")
    assert argv[1:] == ["-p", "Say hello", "--output-format", "stream-json", "--approval-mode",
                        "auto_edit", "--allowed-tools", "run_shell_command", "--skip-trust",
                        "-m", "gemini-2.5-pro", "--session-id", sid]
    assert adapter.session_id == sid
    chosen = GeminiAdapter().build_argv(RunRequest(
        prompt="x", cwd=git_repo, agent_session_id="11111111-2222-4333-8444-555555555555"))
    assert option(chosen, "--session-id") == "11111111-2222-4333-8444-555555555555"
    assert "-m" not in chosen  # gemini's own default model ("auto")


@pytest.mark.parametrize("prompt", ["-v", "/help", "--version"])
def test_a_prompt_is_never_an_option_or_a_slash_command(fake_gemini: Path, git_repo: Path,
                                                        prompt: str) -> None:
    argv = GeminiAdapter().build_argv(RunRequest(prompt=prompt, cwd=git_repo))
    assert option(argv, "-p") == " " + prompt


def test_missing_cli_names_the_pinned_npm_package(git_repo: Path, tmp_path: Path) -> None:
    adapter = GeminiAdapter(env={"PATH": str(tmp_path), "GEMINI_API_KEY": KEY})
    with pytest.raises(CliNotFoundError) as info:
        adapter.preflight(RunRequest(prompt="x", cwd=git_repo))
    assert "npm install -g @google/gemini-cli@0.61.0" in (info.value.hint or "")
    assert "npm install -g @google/gemini-cli@0.61.0" in INSTALL_HINT
    found = adapter.info()
    assert found.executable is None
    assert "npm install -g @google/gemini-cli@0.61.0" in (found.hint or "")


def test_info_reports_the_version(fake_gemini: Path) -> None:
    found = GeminiAdapter().info()
    assert (found.version, found.problem) == ("0.61.0", None)


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


async def test_text_answer(fake_gemini: Path, git_repo: Path, gemini_home: Path) -> None:
    adapter = GeminiAdapter()
    events = await collect(adapter, RunRequest(prompt="Say hello", cwd=git_repo))
    started = only(events, SessionStarted)[0]
    argv = invocations(fake_gemini)[-1]["argv"]
    assert started.agent_session_id == option(argv, "--session-id") == adapter.session_id
    assert (started.cwd, started.permission_mode) == (str(git_repo),
                                                      "auto_edit + run_shell_command")
    assert [t.text for t in only(events, AssistantText)] == ["Hello from the mock Gemini model."]
    usage = only(events, TurnCompleted)[0].usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens,
            usage.reasoning_tokens, usage.cost_usd) == (500, 1000, 60, 30, None)
    end = ended(events)
    assert (end.outcome, end.result_text) == ("completed", "Hello from the mock Gemini model.")
    # gemini kept the chat in the account's folder, under the session id Relay chose
    assert find_chat(gemini_home / ".gemini", started.agent_session_id or "") is not None


async def test_tools_stream_and_change_the_worktree(fake_gemini: Path, git_repo: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "b_tools_yolo")
    events = await collect(GeminiAdapter(), RunRequest(
        prompt="Run echo hi and create hello.txt", cwd=git_repo, permission=PermissionPolicy.FULL))
    assert (git_repo / "hello.txt").read_text() == "hello world\n"
    assert [c.name for c in only(events, ToolCall)] == ["run_shell_command", "write_file"]
    assert [r.is_error for r in only(events, ToolResult)] == [False, False]
    assert option(invocations(fake_gemini)[-1]["argv"], "--approval-mode") == "yolo"
    assert ended(events).result_text == "Done: ran echo and wrote hello.txt."


async def test_resume_continues_the_same_session(fake_gemini: Path, git_repo: Path,
                                                 gemini_home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "f_resume_latest")
    first = GeminiAdapter()
    await collect(first, RunRequest(prompt="Remember the word PINEAPPLE", cwd=git_repo))
    sid = first.session_id
    assert sid
    second = GeminiAdapter()
    events = await collect(second, RunRequest(prompt="What was the word?", cwd=git_repo,
                                              resume_id=sid))
    argv = invocations(fake_gemini)[-1]["argv"]
    assert option(argv, "--resume") == sid
    assert "--session-id" not in argv
    assert option(argv, "-p") == "What was the word?"
    assert only(events, SessionStarted)[0].agent_session_id == sid == second.session_id
    assert ended(events).result_text == "The word was PINEAPPLE."
    assert not only(events, Notice)
    # one chat file holds both prompts and both answers
    chat = find_chat(gemini_home / ".gemini", sid)
    assert chat is not None
    texts = chat.read_text()
    assert "Remember the word PINEAPPLE" in texts
    assert "What was the word?" in texts
    state = read_chat(chat)
    assert state is not None
    assert (state.resumable, state.last_answer) == (True, "The word was PINEAPPLE.")


async def test_a_dropped_stream_keeps_only_the_clean_answer(fake_gemini: Path, git_repo: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "e3_midstream_disconnect")
    events = await collect(GeminiAdapter(), RunRequest(prompt="Say hello", cwd=git_repo))
    assert [t.text for t in only(events, AssistantText)] == ["Recovered answer after retry."]
    assert ended(events).result_text == "Recovered answer after retry."


async def test_daily_quota_is_a_limit_hit_and_a_failure(fake_gemini: Path, git_repo: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "d_429_daily_quota")
    events = await collect(GeminiAdapter(), RunRequest(prompt="Say hello", cwd=git_repo))
    (limit,) = only(events, LimitHit)
    assert (limit.limit, limit.scope, limit.blocking) == ("quota", "daily", True)
    error = next(e for e in only(events, AgentError) if e.fatal)
    assert (error.category, error.http_status) == ("usage_limit", 429)
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 173)


async def test_resuming_after_a_rolled_back_first_prompt_starts_afresh_with_it(
        fake_gemini: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "d_429_daily_quota")
    failed = GeminiAdapter()
    await collect(failed, RunRequest(prompt="Write the notes", cwd=git_repo))
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "a_text_stream_json")
    retry = GeminiAdapter()
    events = await collect(retry, RunRequest(
        prompt="Continue the task from where you stopped.", cwd=git_repo,
        resume_id=failed.session_id))
    argv = invocations(fake_gemini)[-1]["argv"]
    # --resume would be refused (exit 42): gemini kept nothing of that session
    assert "--resume" not in argv
    assert option(argv, "--session-id") not in (None, failed.session_id)
    assert option(argv, "-p") == "Write the notes\n\nContinue the task from where you stopped."
    notices = [n.message for n in only(events, Notice)]
    assert any("dropped the last prompt" in n for n in notices)
    assert any("starts a new Gemini session" in n for n in notices)
    assert ended(events).outcome == "completed"


async def test_resuming_after_a_rolled_back_later_prompt_sends_it_again(
        fake_gemini: Path, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = GeminiAdapter()
    await collect(first, RunRequest(prompt="First", cwd=git_repo))
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "c2_429_rate_limit_exhausted")
    limited = await collect(GeminiAdapter(), RunRequest(prompt="Second", cwd=git_repo,
                                                        resume_id=first.session_id))
    assert [x.limit for x in only(limited, LimitHit)] == ["rate_limit"]
    monkeypatch.setenv("RELAY_FAKE_GEMINI_SCENARIO", "f_resume_latest/run2")
    events = await collect(GeminiAdapter(), RunRequest(
        prompt="Continue the task from where you stopped.", cwd=git_repo,
        resume_id=first.session_id))
    argv = invocations(fake_gemini)[-1]["argv"]
    assert option(argv, "--resume") == first.session_id
    assert option(argv, "-p") == "Second\n\nContinue the task from where you stopped."
    assert ended(events).outcome == "completed"


async def test_an_unknown_resume_id_is_a_resume_error(fake_gemini: Path, git_repo: Path) -> None:
    events = await collect(GeminiAdapter(), RunRequest(
        prompt="x", cwd=git_repo, resume_id="99999999-2222-4333-8444-555555555555"))
    assert [e.category for e in only(events, AgentError)] == ["resume"]
    assert ended(events).exit_code == 42


async def test_stdin_is_dev_null(fake_gemini: Path, git_repo: Path) -> None:
    events = await collect(GeminiAdapter(), RunRequest(prompt="Only this", cwd=git_repo))
    assert ended(events).outcome == "completed"
    call = invocations(fake_gemini)[-1]
    assert call["stdin_isatty"] is False
    chat = find_chat(Path(call["gemini_cli_home"]) / ".gemini",
                     only(events, SessionStarted)[0].agent_session_id)
    assert chat is not None
    assert "Only this" in chat.read_text()  # nothing prepended from a stdin


async def test_the_fake_prepends_a_piped_stdin_like_gemini(fake_gemini: Path,
                                                           git_repo: Path) -> None:
    """Guards the test above: a piped stdin really does reach the prompt."""
    proc = await asyncio.create_subprocess_exec(
        "gemini", "-p", "Summarize the input", "-o", "stream-json", "--skip-trust",
        cwd=git_repo, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate(b"line one from stdin\n")
    user = next(json.loads(line) for line in out.splitlines() if b'"role":"user"' in line)
    assert user["content"] == "line one from stdin\n\n\nSummarize the input"


# ---------------------------------------------------------------------------
# Accounts, keys and the auth trap
# ---------------------------------------------------------------------------


async def test_the_accounts_folder_and_key_reach_the_agent_and_nothing_else(
        fake_gemini: Path, git_repo: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "the-users-own-key")
    monkeypatch.setenv("GOOGLE_API_KEY", "another-google-key")
    account_home = tmp_path / "account"
    account_home.mkdir()
    request = RunRequest(prompt="x", cwd=git_repo,
                         extra_env={"GEMINI_CLI_HOME": str(account_home),
                                    "GEMINI_API_KEY": "the-accounts-key"},
                         drop_env=frozenset({"GEMINI_API_KEY", "GOOGLE_API_KEY"}))
    events = await collect(GeminiAdapter(), request)
    assert ended(events).outcome == "completed"
    call = invocations(fake_gemini)[-1]
    assert call["gemini_cli_home"] == str(account_home)
    assert call["credentials"]["GEMINI_API_KEY"] == digest("the-accounts-key")
    assert call["credentials"]["GOOGLE_API_KEY"] is None
    assert call["auth_type"] == "gemini-api-key"
    assert "the-accounts-key" not in repr(request)


async def test_a_missing_key_is_a_clear_auth_error(fake_gemini: Path, git_repo: Path,
                                                   gemini_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    (gemini_home / ".gemini").mkdir()
    (gemini_home / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    events = await collect(GeminiAdapter(), RunRequest(prompt="x", cwd=git_repo))
    error = only(events, AgentError)[0]
    assert error.category == "auth"
    assert "you must specify the GEMINI_API_KEY environment variable" in error.message
    assert "relay-cli accounts add gemini" in error.message
    end = ended(events)
    assert (end.outcome, end.exit_code) == ("failed", 41)


async def test_no_sign_in_at_all_is_an_auth_error(fake_gemini: Path, git_repo: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    events = await collect(GeminiAdapter(), RunRequest(prompt="x", cwd=git_repo))
    assert [e.category for e in only(events, AgentError)] == ["auth"]
    assert ended(events).exit_code == 41


def test_a_base_url_without_a_pinned_auth_type_is_refused_before_the_start(
        fake_gemini: Path, git_repo: Path, gemini_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    request = RunRequest(prompt="x", cwd=git_repo)
    with pytest.raises(ConfigError) as info:
        GeminiAdapter().preflight(request)
    assert "gateway" in info.value.message
    assert str(gemini_home / ".gemini" / "settings.json") in (info.value.hint or "")
    assert '"selectedType": "gemini-api-key"' in (info.value.hint or "")
    # pinned, the same environment runs
    (gemini_home / ".gemini").mkdir()
    (gemini_home / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    GeminiAdapter().preflight(request)


async def test_the_fake_refuses_the_gateway_like_gemini(fake_gemini: Path, git_repo: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the preflight check prevents (checked against the real CLI in the
    integration tier): exit 41, "Invalid auth method selected."."""
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    adapter = GeminiAdapter()
    adapter.preflight = lambda request: None  # type: ignore[method-assign]
    events = await collect(adapter, RunRequest(prompt="x", cwd=git_repo))
    error = only(events, AgentError)[0]
    assert (error.category, ended(events).exit_code) == ("auth", 41)
    assert error.message.startswith("Invalid auth method selected.")


def test_an_account_key_that_the_settings_would_ignore_is_refused(
        fake_gemini: Path, git_repo: Path, gemini_home: Path) -> None:
    (gemini_home / ".gemini").mkdir()
    (gemini_home / ".gemini" / "settings.json").write_text(
        '{"security": {"auth": {"selectedType": "oauth-personal"}}}')
    keyed = RunRequest(prompt="x", cwd=git_repo, extra_env={"GEMINI_API_KEY": "k"})
    with pytest.raises(ConfigError) as info:
        GeminiAdapter().preflight(keyed)
    assert "oauth-personal" in info.value.message
    # a cli_login account (no key from Relay) uses that sign-in as it should
    GeminiAdapter().preflight(RunRequest(prompt="x", cwd=git_repo))


# ---------------------------------------------------------------------------
# Stop
# ---------------------------------------------------------------------------


async def test_stop_mid_turn_cancels_with_one_session_ended(fake_gemini: Path, git_repo: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_FAKE_GEMINI_HANG", "1")
    adapter = GeminiAdapter()
    events: list[AgentEvent] = []
    async for event in adapter.run(RunRequest(prompt="x", cwd=git_repo)):
        events.append(event)
        if isinstance(event, SessionStarted):
            await adapter.stop(grace=10)
    end = ended(events)
    assert end.outcome == "cancelled"
    assert not only(events, AgentError)


def test_a_rolled_back_prompt_the_user_sends_again_is_not_doubled(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "repo" / "chats"
    chats.mkdir(parents=True)
    sid = "33333333-2222-4333-8444-555555555555"
    records = [{"sessionId": sid, "projectHash": "h"},
               {"$set": {"messages": [{"id": "ctx", "type": "user",
                                       "content": [{"text": "<session_context>…"}]}]}},
               {"id": "u1", "type": "user", "content": [{"text": "Write the notes"}]},
               {"$set": {"messages": [{"id": "ctx", "type": "user",
                                       "content": [{"text": "<session_context>…"}]}]}}]
    (chats / f"session-2026-11-30T10-09-{sid[:8]}.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records))
    same = plan_session(RunRequest(prompt="Write the notes", cwd=tmp_path, resume_id=sid),
                        tmp_path / ".gemini")
    assert (same.resume, same.prompt) == (False, "Write the notes")
    assert same.session_id != sid
    assert len(same.notes) == 1  # a new session, nothing sent twice
    unknown = plan_session(RunRequest(prompt="x", cwd=tmp_path,
                                      resume_id="44444444-2222-4333-8444-555555555555"),
                           tmp_path / ".gemini")
    assert (unknown.args, unknown.prompt, unknown.notes) == (
        ["--resume", "44444444-2222-4333-8444-555555555555"], "x", ())
