"""relay-cli accounts …, as a user runs it: real processes, the encrypted-file vault, fake CLIs."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import CLI, assert_no_traceback, cli
from tests.conftest import FAKES_DIR

VAULT = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
         "RELAY_VAULT_PASSPHRASE": "accounts-cli-passphrase"}
FAKES = {**VAULT, "PATH": f"{FAKES_DIR / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
KEY = "sk-ant-api03-" + "cl1k3y" * 14


def accounts(*args: str, stdin: str | None = None,
             env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if stdin is None:
        return cli("accounts", *args, env_extra={**VAULT, **(env_extra or {})})
    env = {**os.environ, "COLUMNS": "160", **VAULT, **(env_extra or {})}
    return subprocess.run([*CLI, "accounts", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60, check=False)


def listed() -> list[dict[str, object]]:
    proc = accounts("list", "--json")
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, object]] = json.loads(proc.stdout)
    return rows


def test_the_help_says_only_your_own_accounts() -> None:
    proc = cli("accounts", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())  # argparse wraps lines
    assert "Only your own accounts" in text
    assert "no pooling, no sharing" in text
    assert "GEMINI_CLI_HOME" in text
    assert "PI_CODING_AGENT_DIR" in text
    add = " ".join(cli("accounts", "add", "--help").stdout.split())
    assert "Only your own accounts" in add
    assert "--api-key-stdin" in add


def test_add_prefer_pause_edit_remove(tmp_path: Path) -> None:
    work, other = tmp_path / "claude-work", tmp_path / "claude-other"
    work.mkdir()
    other.mkdir()
    assert accounts("add", "claude", "work", "--config-dir", str(work)).returncode == 0
    assert accounts("add", "codex", "ci").returncode == 0
    assert [r["entry"] for r in listed()] == ["claude:work", "codex:ci"]
    assert accounts("prefer", "claude", "work").returncode == 0
    assert accounts("pause", "codex", "ci").returncode == 0
    rows = {str(r["entry"]): r for r in listed()}
    assert rows["claude:work"]["preferred"] is True
    assert rows["codex:ci"]["paused"] is True
    table = accounts("list").stdout
    assert "preferred" in table
    assert "paused" in table
    assert accounts("resume", "codex", "ci").returncode == 0
    assert listed()[1]["paused"] is False
    edited = accounts("edit", "claude", "work", "--config-dir", str(other), "--rename", "main")
    assert edited.returncode == 0, edited.stderr
    rows = {str(r["entry"]): r for r in listed()}
    assert rows["claude:main"]["config_dir"] == str(other.resolve())
    assert rows["claude:main"]["preferred"] is True
    assert accounts("edit", "claude", "main", "--default-dir").returncode == 0
    assert {str(r["entry"]): r for r in listed()}["claude:main"]["config_dir"] is None
    assert accounts("remove", "claude", "main").returncode == 0
    assert [r["entry"] for r in listed()] == ["codex:ci"]
    assert work.is_dir()
    assert other.is_dir()
    missing = accounts("prefer", "claude", "main")
    assert missing.returncode == 2
    assert "No account claude:main" in missing.stderr
    assert_no_traceback(missing)


def test_a_key_is_read_from_stdin_and_never_printed(relay_home: Path) -> None:
    added = accounts("add", "claude", "api", "--api-key-stdin", stdin=KEY + "\n")
    assert added.returncode == 0, added.stderr
    assert "API key in the vault" in added.stdout
    [row] = listed()
    assert (row["auth_kind"], row["has_key"]) == ("api_key", True)
    shown = [added, accounts("list"), accounts("list", "--json")]
    for proc in shown:
        assert KEY not in proc.stdout + proc.stderr
    replaced = accounts("edit", "claude", "api", "--api-key-stdin", stdin="sk-ant-api03-new\n")
    assert replaced.returncode == 0, replaced.stderr
    assert "sk-ant-api03-new" not in replaced.stdout + replaced.stderr
    for path in relay_home.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
            assert b"sk-ant-api03-new" not in path.read_bytes(), path


def test_a_key_is_never_taken_from_the_command_line() -> None:
    proc = accounts("add", "claude", "api", "--api-key", KEY)
    assert proc.returncode == 2
    assert "unrecognized arguments" in proc.stderr
    no_tty = accounts("add", "claude", "api", "--auth", "api_key")
    assert no_tty.returncode == 2
    assert "No terminal to type the API key in" in no_tty.stderr
    assert "--api-key-stdin" in no_tty.stderr
    assert_no_traceback(no_tty)
    refused = accounts("add", "pi", "api", "--api-key-stdin", stdin=KEY)
    assert refused.returncode == 2
    assert "pi accounts cannot use an API key" in refused.stderr
    assert listed() == []


def test_test_says_whether_the_account_answers(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (bad / ".relay-fake-scenario").write_text("e5_401_auth")
    for label, folder in (("good", good), ("bad", bad)):
        assert accounts("add", "claude", label, "--config-dir", str(folder)).returncode == 0
    ok = accounts("test", "claude", "good", env_extra=FAKES)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "spends a few tokens" in ok.stdout
    assert "claude:good answers (claude-opus-4-8)" in ok.stdout
    refused = accounts("test", "claude", "bad", "--json", env_extra=FAKES)
    assert refused.returncode == 1
    result = json.loads(refused.stdout)
    assert (result["status"], result["ok"]) == ("auth", False)
    assert "accounts login claude bad" in result["hint"]
    assert "tokens" in result["note"]


def login_recorder(folder: Path) -> Path:
    """A stand-in CLI that records how the login was started (argv, env, terminal)."""
    folder.mkdir()
    exe = folder / "claude"
    record = folder / "record.json"
    exe.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'config': os.environ.get('CLAUDE_CONFIG_DIR'),\n"
        "           'api_key': 'ANTHROPIC_API_KEY' in os.environ,\n"
        "           'stdin': os.path.realpath('/proc/self/fd/0')},\n"
        f"          open({str(record)!r}, 'w'))\n"
        "sys.exit(int(os.environ.get('LOGIN_EXIT', '0')))\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_login_runs_the_cli_login_in_the_foreground(tmp_path: Path) -> None:
    exe = login_recorder(tmp_path / "bin")
    work = tmp_path / "claude-work"
    work.mkdir()
    assert accounts("add", "claude", "work", "--config-dir", str(work)).returncode == 0
    env = {"RELAY_CLAUDE_BIN": str(exe), "ANTHROPIC_API_KEY": "sk-ant-api03-exported"}
    proc = accounts("login", "claude", "work", env_extra=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((exe.parent / "record.json").read_text())
    assert record["argv"] == ["auth", "login"]
    assert record["config"] == str(work.resolve())
    assert record["api_key"] is False  # an exported key would override the login
    assert record["stdin"] == "/dev/null"  # inherited from relay-cli (here: the test's)
    assert "CLAUDE_CONFIG_DIR=" in proc.stdout
    failed = accounts("login", "claude", "work", env_extra={**env, "LOGIN_EXIT": "3"})
    assert failed.returncode == 1
    assert "exit code 3" in failed.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("api", "--api-key-stdin"), "signs in with an API key, not a login"),
    (("default",), "uses the CLI's default folder"),
])
def test_login_without_a_login_flow_says_why(args: tuple[str, ...], message: str) -> None:
    assert accounts("add", "codex", *args, stdin=KEY).returncode == 0
    proc = accounts("login", "codex", args[0])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert_no_traceback(proc)
