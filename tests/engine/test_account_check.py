"""check_account and login_command, through the fake CLIs replaying recorded captures."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from relay.core.accounts import Account
from relay.core.config import load_config
from relay.core.errors import CliNotFoundError
from relay.engine.account_check import (
    COST_NOTE,
    AccountCheck,
    LoginCommand,
    NoLogin,
    _clean,
    check_account,
    login_command,
)
from relay.engine.engine import Engine

KEY = "sk-ant-api03-" + "ch3ck" * 16


@pytest.fixture
async def engine(relay_home: Path, vault_env: None) -> AsyncIterator[Engine]:
    eng = await Engine.open(load_config())
    yield eng
    await eng.close()


async def account_with(engine: Engine, tmp_path: Path, provider: str, scenario: str | None,
                       **kwargs: Any) -> Account:
    """A registered account whose folder makes the fake CLI replay ``scenario``."""
    home = tmp_path / f"{provider}-home"
    home.mkdir()
    if scenario and provider == "claude":
        (home / ".relay-fake-scenario").write_text(scenario)
    return await engine.accounts.add(provider, "work", home, **kwargs)


def calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


# -- check_account --------------------------------------------------------------------

async def test_an_account_that_answers(engine: Engine, tmp_path: Path, fakes_on_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    account = await account_with(engine, tmp_path, "claude", "a_text_stream_json")
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == "ok", result
    assert result.ok
    assert result.model == "claude-opus-4-8"
    assert result.answer == "Hello from the mock. The answer is 42."
    assert result.latency_s is not None
    assert 0 < result.latency_s < 30
    assert result.cost_note == COST_NOTE
    assert "tokens" in COST_NOTE
    assert result.summary.startswith("claude:work answers (claude-opus-4-8) in ")
    [call] = calls(log)
    argv = call["argv"]
    assert argv[argv.index("--permission-mode") + 1] == "default"  # read-only: no edits
    assert Path(call["cwd"]).name.startswith("relay-account-check-")
    assert not Path(call["cwd"]).exists()  # the throw-away folder is gone


async def test_an_api_key_account_is_checked_with_its_key_only(
        engine: Engine, tmp_path: Path, fakes_on_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-user-exported")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-user-exported")
    account = await account_with(engine, tmp_path, "claude", None, auth_kind="api_key",
                                 api_key=KEY)
    result = await check_account(account, engine.accounts, engine.config)
    assert result.ok, result
    [call] = calls(log)
    assert call["credentials"]["ANTHROPIC_API_KEY"] == hashlib.sha256(KEY.encode()).hexdigest()[:16]
    assert call["credentials"]["CLAUDE_CODE_OAUTH_TOKEN"] is None
    assert KEY not in repr(result)


@pytest.mark.parametrize("auth_kind", ["cli_login", "api_key"])
async def test_a_refused_login_or_key(engine: Engine, tmp_path: Path, fakes_on_path: Path,
                                      auth_kind: str) -> None:
    account = await account_with(engine, tmp_path, "claude", "e5_401_auth", auth_kind=auth_kind,
                                 api_key=KEY if auth_kind == "api_key" else None)
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == "auth", result
    assert not result.ok
    assert result.message == "Invalid API key · Fix external API key"
    expected = "--api-key-stdin" if auth_kind == "api_key" else "accounts login claude work"
    assert expected in (result.hint or "")


async def test_an_account_over_its_limit_says_when_it_resets(engine: Engine, tmp_path: Path,
                                                             fakes_on_path: Path) -> None:
    account = await account_with(engine, tmp_path, "claude",
                                 "f_usage_limit/run1_subscriber_five_hour")
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == "limit", result
    assert result.resets_at == datetime(2026, 11, 30, 12, 5, 30, tzinfo=UTC)
    assert "five_hour" in result.message
    assert "until 2026-11-30 12:05" in result.summary


@pytest.mark.parametrize(("scenario", "status", "words", "hint"), [
    ("a_text", "ok", "The account answered.", ""),
    ("d_usage_limit_pro", "limit", "usage limit", "reset"),
    ("d6_insufficient_quota_sse", "limit", "Quota exceeded", "reset"),
    ("h2_missing_api_key_env", "auth", "Missing environment variable", "accounts login"),
    ("e_http500_retries", "failed", "high demand", "overloaded (not this account)"),
    ("e6_idle_timeout", "failed", "idle timeout", "Run the CLI in a terminal"),
])
async def test_codex_outcomes(engine: Engine, tmp_path: Path, fakes_on_path: Path,
                              monkeypatch: pytest.MonkeyPatch, scenario: str, status: str,
                              words: str, hint: str) -> None:
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", scenario)
    account = await account_with(engine, tmp_path, "codex", None)
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == status, result
    assert words in result.message
    assert hint in (result.hint or "")


async def test_a_missing_cli(engine: Engine, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("RELAY_CLAUDE_BIN", raising=False)
    account = await account_with(engine, tmp_path, "claude", None)
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == "cli_missing", result
    assert "npm install -g @anthropic-ai/claude-code" in (result.hint or "")


async def test_a_provider_relay_cannot_run_yet(engine: Engine, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from relay.runtimes import registry

    monkeypatch.delitem(registry._ADAPTERS, "gemini")  # every provider has an adapter now
    account = await account_with(engine, tmp_path, "gemini", None)
    result = await check_account(account, engine.accounts, engine.config)
    assert result.status == "unsupported", result
    assert f"GEMINI_CLI_HOME={tmp_path / 'gemini-home'} gemini" in (result.hint or "")


async def test_a_cli_that_never_answers_is_stopped(engine: Engine, tmp_path: Path,
                                                   fakes_on_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "fake.log"
    monkeypatch.setenv("RELAY_FAKE_LOG", str(log))
    # the capture prints its first lines and then waits for a signal that never comes
    account = await account_with(engine, tmp_path, "claude", "r_signals/run1_sigterm")
    result = await check_account(account, engine.accounts, engine.config, timeout_s=2.0)
    assert result.status == "timeout", result
    assert "did not answer within 2 s" in result.message
    assert calls(log), "the fake never started"
    assert running_with(account) == []


def running_with(account: Account) -> list[int]:
    """Processes started with this account's folder (only this test's fake can have it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CLAUDE_CONFIG_DIR") == str(account.config_dir):
                found.append(proc.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_messages_are_scrubbed_and_never_show_the_key() -> None:
    text = f"401 for key {KEY} (Authorization: Bearer {KEY})"
    cleaned = _clean(text, KEY)
    assert KEY not in cleaned
    assert "401 for key" in cleaned
    assert _clean("plain words", None) == "plain words"


def test_summaries() -> None:
    assert AccountCheck("codex:ci", "failed", "boom").summary == "codex:ci: boom"
    ok = AccountCheck("codex:ci", "ok", "The account answered.", latency_s=1.25)
    assert ok.summary == "codex:ci answers in 1.2 s."


# -- login_command ----------------------------------------------------------------------

def fake_cli(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    exe = folder / name
    exe.write_text(f"#!{sys.executable}\nimport sys; sys.exit(0)\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


@pytest.mark.parametrize(("provider", "args", "variable"), [
    ("claude", ["auth", "login"], "CLAUDE_CONFIG_DIR"),
    ("codex", ["login"], "CODEX_HOME"),
    ("gemini", [], "GEMINI_CLI_HOME"),
    ("pi", [], "PI_CODING_AGENT_DIR"),
])
def test_the_login_flow_of_each_cli(tmp_path: Path, provider: str, args: list[str],
                                    variable: str) -> None:
    exe = fake_cli(tmp_path / "bin", provider)
    account = Account(provider, "work", tmp_path)
    env = {"PATH": str(exe.parent), "ANTHROPIC_API_KEY": "exported", "CODEX_API_KEY": "x",
           "GEMINI_API_KEY": "y", "HOME": "/home/u"}
    plan = login_command(account, env)
    assert isinstance(plan, LoginCommand)
    assert plan.argv == [str(exe), *args]
    assert plan.env == {variable: str(tmp_path)}
    assert plan.how
    full = plan.environment(env)
    assert full[variable] == str(tmp_path)
    assert full["HOME"] == "/home/u"
    assert not set(full) & plan.unset
    assert plan.unset == account.drop_env()


def test_no_login_for_a_key_or_the_default_folder(tmp_path: Path) -> None:
    keyed = login_command(Account("claude", "api", tmp_path, "api_key"))
    assert isinstance(keyed, NoLogin)
    assert "API key" in keyed.reason
    assert "--api-key-stdin" in (keyed.hint or "")
    default = login_command(Account("codex", "d", None))
    assert isinstance(default, NoLogin)
    assert "default folder" in default.reason


def test_a_missing_cli_for_the_login(tmp_path: Path) -> None:
    with pytest.raises(CliNotFoundError) as caught:
        login_command(Account("gemini", "g", tmp_path), {"PATH": str(tmp_path)})
    assert "npm install -g @google/gemini-cli" in (caught.value.hint or "")
    override = fake_cli(tmp_path / "elsewhere", "my-claude")
    plan = login_command(Account("claude", "w", tmp_path),
                         {"PATH": "", "RELAY_CLAUDE_BIN": str(override)})
    assert isinstance(plan, LoginCommand)
    assert plan.argv[0] == str(override)
    assert os.access(plan.argv[0], os.X_OK)
