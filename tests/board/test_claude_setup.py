"""Relay's entries in a Claude Code configuration folder (relay.board.claude_setup): the user's
settings untouched, apply idempotent, check read-only, apply + remove byte-identical."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from relay.board import claude_setup as cs
from relay.board import settings_file
from relay.board.model import TOOL_NAMES
from relay.core import fsutil
from relay.core.accounts import Account
from relay.core.errors import AccountError, SetupError

USER_SETTINGS: dict[str, Any] = {
    "zeta": {"nested": [3, 2, 1]},
    "permissions": {"deny": ["Bash(rm -rf *)"], "allow": ["Bash(ls:*)", "Read"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "~/bin/check-bash.sh", "timeout": 30}]}],
    },
    "model": "opus",
    "alpha": "ünïcode ✓",
}
TOKEN = "secret-token-never-in-settings"


def _encodings() -> dict[str, bytes]:
    no_permissions = {k: v for k, v in USER_SETTINGS.items() if k != "permissions"}
    deny_only = {**USER_SETTINGS, "permissions": {"deny": ["Read(./.env)"]}}
    return {
        "two-spaces": json.dumps(USER_SETTINGS, indent=2, ensure_ascii=False).encode() + b"\n",
        "four-spaces": json.dumps(USER_SETTINGS, indent=4).encode(),
        "tab": json.dumps(USER_SETTINGS, indent="\t").encode() + b"\n",
        "crlf": json.dumps(USER_SETTINGS, indent=2).replace("\n", "\r\n").encode() + b"\r\n",
        "one-line": json.dumps(USER_SETTINGS).encode(),
        "no-permissions": json.dumps(no_permissions, indent=2).encode() + b"\n",
        "no-allow-list": json.dumps(deny_only, indent=2).encode() + b"\n",
        # what json.dumps cannot write: spacing before colons, 1.0, escapes
        "odd": b'{ "zeta" : {"nested":[3,2,1]} ,\n  "permissions":{"deny":["Bash(rm -rf *)"],'
               b'"allow":["Bash(ls:*)","Read"]},\n "limit" : 1.0, "esc": "\\u00e9"}\n',
    }


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "relay-data"
    data.mkdir()
    (data / "api-token").write_text(TOKEN)
    return data


@pytest.fixture
def target(tmp_path: Path) -> cs.ClaudeTarget:
    config = tmp_path / "claude-config"
    config.mkdir()
    return cs.folder_target(config, env={}, home=tmp_path / "home")


@pytest.fixture
def wiring(data_dir: Path) -> cs.Wiring:
    return cs.Wiring.make(data_dir, "http://127.0.0.1:4748")


def _without_relay(settings: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(settings))
    hooks = out.get("hooks", {})
    for event in list(hooks):
        groups = [{**g, "hooks": [h for h in g["hooks"] if not cs.is_relay_hook(h)]}
                  for g in hooks[event]]
        hooks[event] = [g for g in groups if g["hooks"]]
        if not hooks[event]:
            del hooks[event]
    permissions = out.get("permissions", {})
    if "allow" in permissions:
        permissions["allow"] = [r for r in permissions["allow"] if not cs.is_relay_rule(r)]
    return out


def _stamp(path: Path) -> tuple[bytes, int] | None:
    return (path.read_bytes(), path.stat().st_mtime_ns) if path.exists() else None


def test_apply_adds_one_relay_hook_per_event_and_leaves_the_users_settings(
        target: cs.ClaudeTarget, wiring: cs.Wiring) -> None:
    target.settings.write_text(json.dumps(USER_SETTINGS, indent=2))
    done = cs.apply(target, wiring)
    settings = json.loads(target.settings.read_text())
    assert list(settings) == list(USER_SETTINGS)  # key order kept
    assert _without_relay(settings) == USER_SETTINGS
    assert list(settings["hooks"])[:2] == ["Stop", "PreToolUse"]
    for event in cs.HOOK_EVENTS:
        ours = [h for g in settings["hooks"][event] for h in g["hooks"] if cs.is_relay_hook(h)]
        assert ours == [wiring.hook()], event
    # the board's tools are allowed one by one, after the user's own rules
    assert settings["permissions"]["allow"] == ["Bash(ls:*)", "Read", *cs.ALLOW_RULES]
    assert settings["permissions"]["deny"] == USER_SETTINGS["permissions"]["deny"]
    # the user's own PreToolUse group is first and untouched
    assert settings["hooks"]["PreToolUse"][0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    hook = wiring.hook()
    assert hook["args"][-2:] == ["--data-dir", str(wiring.data_dir)]
    assert "relay.cli.hook_client" in " ".join(hook["args"])
    assert hook["timeout"] == cs.HOOK_TIMEOUT_S
    state = json.loads(target.state_file.read_text())
    assert state["mcpServers"]["relay"] == {
        "type": "http", "url": "http://127.0.0.1:4748/mcp",
        "headersHelper": wiring.headers_helper}
    assert "--headers" in wiring.headers_helper
    for path in (target.settings, target.state_file):
        assert TOKEN not in path.read_text()
    assert [Path(b).name.startswith("settings.json.relay-backup-") for b in done.backups] == [True]
    assert Path(done.backups[0]).read_text() == json.dumps(USER_SETTINGS, indent=2)


def test_applying_twice_changes_nothing_the_second_time(target: cs.ClaudeTarget,
                                                       wiring: cs.Wiring) -> None:
    target.settings.write_text(json.dumps(USER_SETTINGS, indent=4))
    cs.apply(target, wiring)
    before = [_stamp(target.settings), _stamp(target.state_file)]
    backups = sorted(target.config_dir.iterdir())
    again = cs.apply(target, wiring)
    assert (again.written, again.backups) == ([], [])
    assert not again.plan.changes
    assert {i.action for i in again.plan.items} == {"keep"}
    assert [_stamp(target.settings), _stamp(target.state_file)] == before
    assert sorted(target.config_dir.iterdir()) == backups


@pytest.mark.parametrize("layout", list(_encodings()))
def test_apply_then_remove_leaves_the_file_byte_identical(
        target: cs.ClaudeTarget, wiring: cs.Wiring, layout: str) -> None:
    original = _encodings()[layout]
    target.settings.write_bytes(original)
    cs.apply(target, wiring)
    assert target.settings.read_bytes() != original
    if layout not in ("odd",):  # the layout is kept while Relay's entries are in
        assert settings_file.Style.of(target.settings.read_bytes()) == \
            settings_file.Style.of(original)
    rules = json.loads(target.settings.read_bytes().decode("utf-8-sig"))["permissions"]["allow"]
    assert rules[-len(cs.ALLOW_RULES):] == list(cs.ALLOW_RULES)
    removed = cs.remove(target)
    assert [i.action for i in removed.plan.items if i.what == cs.ALLOW_WHAT] == ["remove"]
    assert target.settings.read_bytes() == original
    assert removed.backups  # taken before the removal too
    assert not target.state_file.exists()  # apply made it: remove takes it away


def test_remove_keeps_what_the_user_changed_meanwhile(target: cs.ClaudeTarget,
                                                      wiring: cs.Wiring) -> None:
    target.settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    cs.apply(target, wiring)
    changed = json.loads(target.settings.read_text())
    changed["model"] = "sonnet"
    target.settings.write_text(json.dumps(changed, indent=2) + "\n")
    cs.remove(target)
    assert target.settings.read_text() == json.dumps(
        {**USER_SETTINGS, "model": "sonnet"}, indent=2, ensure_ascii=False) + "\n"


def test_remove_on_a_relay_free_folder_writes_nothing(target: cs.ClaudeTarget) -> None:
    target.settings.write_text('{"hooks": {}, "model": "opus"}')
    before = _stamp(target.settings)
    done = cs.remove(target)
    assert (done.written, done.backups) == ([], [])
    assert {i.action for i in done.plan.items} == {"absent"}
    assert _stamp(target.settings) == before


def test_check_reports_each_item_and_never_writes(target: cs.ClaudeTarget,
                                                  wiring: cs.Wiring, data_dir: Path) -> None:
    target.settings.write_text(json.dumps(USER_SETTINGS))
    missing = cs.check(target, wiring, None)
    assert not missing.ok
    assert {i.state for i in missing.items} == {"missing"}
    assert len(missing.items) == len(cs.HOOK_EVENTS) + 2
    assert [i.what for i in missing.items][-2:] == [cs.ALLOW_WHAT, "mcp server relay"]
    cs.apply(target, wiring)
    files = [_stamp(target.settings), _stamp(target.state_file)]
    listing = sorted(target.config_dir.iterdir())
    ok = cs.check(target, wiring, "http://127.0.0.1:4748")
    assert ok.ok
    assert {i.state for i in ok.items} == {"ok"}
    assert ok.host_url == "http://127.0.0.1:4748"
    moved = cs.check(target, wiring, "http://127.0.0.1:5000")  # the host took another port
    assert [i.state for i in moved.items if i.what.startswith("mcp")] == ["stale"]
    assert "5000" in moved.items[-1].detail
    assert not moved.ok
    other = cs.Wiring.make(data_dir.parent / "other-data", "http://127.0.0.1:4748")
    stale = cs.check(target, other, None)
    assert {i.state for i in stale.items if i.what != cs.ALLOW_WHAT} == {"stale"}
    assert [i.state for i in stale.items if i.what == cs.ALLOW_WHAT] == ["ok"]
    assert [_stamp(target.settings), _stamp(target.state_file)] == files
    assert sorted(target.config_dir.iterdir()) == listing


def test_an_outdated_relay_hook_is_replaced_where_it_is(target: cs.ClaudeTarget,
                                                        wiring: cs.Wiring) -> None:
    old = {"type": "command", "command": "/old/python -I -m relay.cli.hook_client --data-dir /x"}
    target.settings.write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "mine"}, old]}]}}))
    the_plan = cs.plan(target, wiring)
    assert [i.action for i in the_plan.items if i.what == "hook Stop"] == ["change"]
    cs.apply(target, wiring)
    stop = json.loads(target.settings.read_text())["hooks"]["Stop"]
    assert stop == [{"hooks": [{"type": "command", "command": "mine"}, wiring.hook()]}]


def test_with_no_host_running_the_registered_url_is_only_reported(
        target: cs.ClaudeTarget, wiring: cs.Wiring, data_dir: Path) -> None:
    cs.apply(target, wiring)  # registered for a host at 4748
    for registered_for in (wiring, cs.Wiring.make(data_dir, "http://127.0.0.1:5000")):
        down = cs.check(target, registered_for, None)  # what the next host's port is: unknown
        (server,) = [i for i in down.items if i.what == "mcp server relay"]
        assert (server.state, server.detail) == (
            "info", "host not running — the MCP server connects when a host runs at "
                    "http://127.0.0.1:4748")
        assert down.ok  # nothing to fix
    assert not cs.check(target, wiring, "http://127.0.0.1:5000").ok  # a host elsewhere: stale


def test_only_the_board_tools_are_allowed_and_only_relays_rules_are_touched(
        target: cs.ClaudeTarget, wiring: cs.Wiring) -> None:
    assert tuple(f"mcp__relay__{name}" for name in TOOL_NAMES) == cs.ALLOW_RULES
    assert "mcp__relay__board_ack_comments" in cs.ALLOW_RULES
    theirs = ["mcp__relay", "mcp__relay__start_session", "Read"]  # the user's, kept
    target.settings.write_text(json.dumps({"permissions": {"allow": [
        theirs[0], "mcp__relay__board_gone", theirs[1], "mcp__relay__board_tasks", theirs[2]],
        "defaultMode": "default"}}))
    assert [(i.state, i.detail) for i in cs.check(target, wiring, None).items
            if i.what == cs.ALLOW_WHAT] == [("stale", "lacks: " + ", ".join(
                r for r in cs.ALLOW_RULES if r != "mcp__relay__board_tasks")
                + "; unknown: mcp__relay__board_gone")]
    assert [i.action for i in cs.plan(target, wiring).items if i.what == cs.ALLOW_WHAT] == \
        ["change"]
    cs.apply(target, wiring)
    permissions = json.loads(target.settings.read_text())["permissions"]
    assert permissions == {"allow": [*theirs, *cs.ALLOW_RULES], "defaultMode": "default"}
    assert [i.state for i in cs.check(target, wiring, None).items
            if i.what == cs.ALLOW_WHAT] == ["ok"]
    cs.remove(target)
    assert json.loads(target.settings.read_text())["permissions"] == {
        "allow": theirs, "defaultMode": "default"}


@pytest.mark.parametrize("content", [b'{"hooks": ', b"[1, 2]", b'{"hooks": []}',
                                     b'{"permissions": []}',
                                     b'{"permissions": {"allow": "Read"}}',
                                     b'{"hooks": {"Stop": {}}}', b"\xff\xfe{}",
                                     b'{// a comment\n"a": 1}'])
def test_a_malformed_settings_file_is_a_clear_error_and_nothing_is_lost(
        target: cs.ClaudeTarget, wiring: cs.Wiring, content: bytes) -> None:
    target.settings.write_bytes(content)
    for act in (lambda: cs.apply(target, wiring), lambda: cs.remove(target),
                lambda: cs.check(target, wiring, None)):
        with pytest.raises(SetupError) as caught:
            act()
        assert str(target.settings) in caught.value.message
        assert caught.value.hint
    assert target.settings.read_bytes() == content
    assert sorted(p.name for p in target.config_dir.iterdir()) == ["settings.json"]


def test_a_failed_write_puts_back_what_was_written(target: cs.ClaudeTarget, wiring: cs.Wiring,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    original = json.dumps(USER_SETTINGS, indent=2).encode()
    target.settings.write_bytes(original)
    real = fsutil.write_atomic

    def full_disk_for_the_state_file(path: Path, data: bytes, mode: int = 0o600) -> None:
        if path == target.state_file:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data, mode)

    monkeypatch.setattr(settings_file, "write_atomic",  # the one the module calls
                        full_disk_for_the_state_file)
    with pytest.raises(SetupError, match="Could not write"):
        cs.apply(target, wiring)
    assert target.settings.read_bytes() == original


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="needs POSIX permissions that bind (root ignores them)")
def test_an_unwritable_folder_is_a_clear_error(target: cs.ClaudeTarget,
                                               wiring: cs.Wiring) -> None:
    target.settings.write_text("{}")
    target.config_dir.chmod(0o500)
    try:
        with pytest.raises(SetupError):
            cs.apply(target, wiring)
    finally:
        target.config_dir.chmod(0o700)
    assert target.settings.read_text() == "{}"


def test_a_users_own_mcp_server_named_relay_is_not_overwritten(
        target: cs.ClaudeTarget, wiring: cs.Wiring) -> None:
    theirs = {"mcpServers": {"relay": {"type": "stdio", "command": "some-other-tool"}}}
    target.state_file.write_text(json.dumps(theirs))
    assert cs.check(target, wiring, None).items[-1].state == "conflict"
    with pytest.raises(SetupError, match="not Relay's"):
        cs.apply(target, wiring)
    assert json.loads(target.state_file.read_text()) == theirs
    assert not target.settings.exists()


def test_relays_stdio_server_under_that_name_is_replaced(target: cs.ClaudeTarget,
                                                         wiring: cs.Wiring) -> None:
    target.state_file.write_text(json.dumps({"numStartups": 3, "mcpServers": {
        "relay": {"type": "stdio", "command": "relay-cli", "args": ["mcp"]},
        "other": {"type": "http", "url": "http://x"}}}, indent=2))
    cs.apply(target, wiring)
    state = json.loads(target.state_file.read_text())
    assert state["numStartups"] == 3
    assert state["mcpServers"] == {"relay": wiring.server(), "other": {"type": "http",
                                                                       "url": "http://x"}}


def test_where_each_folder_keeps_its_user_scope_mcp_servers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    default = cs.default_target({}, home=home)
    assert (default.config_dir, default.state_file) == (home / ".claude", home / ".claude.json")
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    configured = cs.default_target(env, home=home)
    assert configured.state_file == tmp_path / "cfg" / ".claude.json"
    assert cs.folder_target(home / ".claude", env={}, home=home).state_file == \
        home / ".claude.json"
    work = Account("claude", "work", tmp_path / "work")
    assert cs.account_target(work, env={}, home=home) == cs.ClaudeTarget(
        tmp_path / "work", tmp_path / "work" / ".claude.json", "claude:work")
    (tmp_path / "work" / ".config.json").parent.mkdir()
    (tmp_path / "work" / ".config.json").write_text("{}")  # the legacy file wins
    assert cs.account_target(work, env={}, home=home).state_file.name == ".config.json"
    accounts = [work, Account("codex", "work", tmp_path / "c"),
                Account("claude", "twin", tmp_path / "work")]
    assert cs.find_account(accounts, "claude:work") is work
    with pytest.raises(AccountError, match="claude:work, claude:twin"):
        cs.find_account(accounts, "nope")
    targets = cs.unique_targets(cs.account_target(a) for a in cs.claude_accounts(accounts))
    assert [t.label for t in targets] == ["claude:work"]


def test_the_frozen_build_runs_relay_cli_hook_claude(tmp_path: Path) -> None:
    frozen = cs.Wiring.make(tmp_path, None, frozen=True,
                            executable=str(tmp_path / "bundle" / "relay"))
    assert frozen.hook_argv == (str(tmp_path / "bundle" / "relay-cli"), "hook", "claude",
                                "--data-dir", str(tmp_path))
    assert cs.is_relay_hook(frozen.hook())
    assert frozen.url == cs.default_url()
    assert cs.default_url({"RELAY_PORT": "5001"}) == "http://127.0.0.1:5001"
