"""relay-cli setup claude as a user runs it (a real process): plan, apply, check, remove, on
the default folder, a --config-dir and the wallet's accounts; doctor's line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from relay.board import claude_setup as cs
from tests.cli.test_accounts_cmd import accounts
from tests.cli.test_cli import CLI, assert_no_traceback

SETTINGS = b'{\n    "permissions": {"allow": ["Read"]},\n    "model": "opus"\n}\n'


def setup(*args: str, config: Path | None = None, columns: int = 160,
          ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    if config is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config)
    return subprocess.run([*CLI, "setup", "claude", *args], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120, check=False)


def test_plan_apply_check_remove_on_the_default_folder(tmp_path: Path) -> None:
    config = tmp_path / "claude"
    config.mkdir()
    (config / "settings.json").write_bytes(SETTINGS)

    dry = setup("--dry-run", config=config, columns=80)
    assert dry.returncode == 0, dry.stderr
    assert (config / "settings.json").read_bytes() == SETTINGS
    assert sorted(p.name for p in config.iterdir()) == ["settings.json"]
    for event in cs.HOOK_EVENTS:
        assert f"hook {event}" in dry.stdout
    assert cs.ALLOW_WHAT in dry.stdout
    assert all(len(line) <= 80 for line in dry.stdout.splitlines()), dry.stdout

    assert setup("--check", config=config).returncode == 1  # nothing in place yet

    done = setup(config=config, columns=80)
    assert done.returncode == 0, done.stderr
    assert "backup:" in done.stdout
    assert "written:" in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    settings = json.loads((config / "settings.json").read_text())
    assert set(cs.HOOK_EVENTS) <= set(settings["hooks"])
    assert settings["permissions"]["allow"] == ["Read", *cs.ALLOW_RULES]
    assert json.loads((config / ".claude.json").read_text())["mcpServers"]["relay"]["url"] == \
        "http://127.0.0.1:4748/mcp"

    check = setup("--check", config=config, columns=80)
    assert check.returncode == 0, check.stdout
    assert "not running" in check.stdout
    assert "missing" not in check.stdout

    again = setup(config=config)
    assert again.returncode == 0
    assert "Nothing to change." in again.stdout

    # registered while a host ran at another port; no host runs now: nothing to judge
    state_file = config / ".claude.json"
    state = json.loads(state_file.read_text())
    state["mcpServers"]["relay"]["url"] = "http://127.0.0.1:5123/mcp"
    state_file.write_text(json.dumps(state))
    moved = setup("--check", "--json", config=config)
    assert moved.returncode == 0, moved.stdout
    (server,) = [i for i in json.loads(moved.stdout)["checks"][0]["items"]
                 if i["what"] == "mcp server relay"]
    assert (server["state"], server["detail"]) == (
        "info", "host not running — the MCP server connects when a host runs at "
                "http://127.0.0.1:5123")
    shown = setup("--check", config=config)
    assert "host not running — the MCP server connects when a host runs at" in shown.stdout
    assert "stale" not in shown.stdout

    removed = setup("--remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert (config / "settings.json").read_bytes() == SETTINGS
    assert setup("--check", config=config).returncode == 1


def test_json_output_and_a_config_dir(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    proc = setup("--config-dir", str(folder), "--json")
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    result = answer["results"][0]
    assert result["plan"]["target"]["config_dir"] == str(folder)
    assert result["written"] == [str(folder / "settings.json"), str(folder / ".claude.json")]
    checked = json.loads(setup("--config-dir", str(folder), "--check", "--json").stdout)
    assert checked["checks"][0]["ok"] is True


def test_a_malformed_settings_file_is_an_error_without_a_traceback(tmp_path: Path) -> None:
    config = tmp_path / "claude"
    config.mkdir()
    (config / "settings.json").write_text('{"hooks": [')
    proc = setup(config=config)
    assert proc.returncode == 2
    assert "error:" in proc.stderr
    assert "settings.json is not valid JSON" in proc.stderr
    assert "nothing was changed" in proc.stderr
    assert_no_traceback(proc)
    assert (config / "settings.json").read_text() == '{"hooks": ['


def test_every_claude_account_in_the_wallet(tmp_path: Path) -> None:
    work, personal = tmp_path / "claude-work", tmp_path / "claude-personal"
    for folder in (work, personal):
        folder.mkdir()
        assert accounts("add", "claude", folder.name.removeprefix("claude-"),
                        "--config-dir", str(folder)).returncode == 0
    one = setup("--account", "work")
    assert one.returncode == 0, one.stderr
    assert (work / "settings.json").exists()
    assert not (personal / "settings.json").exists()
    assert "claude:work" in one.stdout
    both = setup("--all-accounts", "--check")
    assert both.returncode == 1  # personal is not set up yet
    assert setup("--all-accounts").returncode == 0
    assert setup("--all-accounts", "--check").returncode == 0
    unknown = setup("--account", "nope")
    assert unknown.returncode == 2
    assert "No Claude account 'nope'" in unknown.stderr


def test_doctor_says_whether_the_hooks_are_set_up(tmp_path: Path) -> None:
    config = tmp_path / "claude"
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "COLUMNS": "200"}
    before = subprocess.run([*CLI, "doctor"], capture_output=True, text=True, env=env,
                            timeout=120, check=False)
    assert "Claude Code hooks: not set up" in before.stdout
    assert setup(config=config).returncode == 0
    after = subprocess.run([*CLI, "doctor"], capture_output=True, text=True, env=env,
                           timeout=120, check=False)
    assert "Claude Code hooks: set up in" in after.stdout
