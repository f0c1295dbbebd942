"""relay-cli handoff / accounts / run --verify, as a user runs them: real processes."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cli import CLI, assert_no_traceback, cli
from tests.conftest import wait_until

VAULT = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
         "RELAY_VAULT_PASSPHRASE": "cli-test-passphrase"}


def running_session_with_a_tool_call(db: Path) -> str | None:
    if not db.exists():
        return None
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT session_id FROM events WHERE kind='tool_call'").fetchone()
    except sqlite3.OperationalError:
        return None
    return str(row[0]) if row else None


def test_handoff_pauses_a_session_another_relay_runs(relay_home: Path, git_repo: Path) -> None:
    env = {**os.environ, **VAULT, "RELAY_DEMO_STEP_DELAY": "0.5"}
    runner = subprocess.Popen([*CLI, "run", "task", "--repo", str(git_repo), "--provider",
                               "demo:primary", "--provider", "demo:backup"],
                              env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        db = relay_home / "relay.db"
        wait_until(lambda: running_session_with_a_tool_call(db) is not None, within=30,
                   what="the agent's first tool call")
        session = running_session_with_a_tool_call(db) or ""
        asked = cli("handoff", session[:6], env_extra=VAULT)
        assert asked.returncode == 0, asked.stdout + asked.stderr
        assert "then handing off to demo:backup" in asked.stdout
        # a safe point, whichever came first after the request (the tool call's end, or the
        # turn's when the request arrived after the tool's result)
        assert re.search(r"paused at (the end of tool call|a turn boundary)", asked.stdout)
        assert "done" in asked.stdout
        out, err = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 0, out + err
    assert "COMPLETED" in out

    again = cli("handoff", session, env_extra=VAULT)
    assert again.returncode == 2
    assert "nothing is running to hand off" in again.stderr
    assert_no_traceback(again)


def test_handoff_of_an_unknown_session_is_a_clear_error(relay_home: Path) -> None:
    proc = cli("handoff", "nope")
    assert proc.returncode == 2
    assert "No session 'nope'" in proc.stderr
    assert_no_traceback(proc)


def test_run_verify_red_fails_the_session(relay_home: Path, git_repo: Path) -> None:
    red = shlex.join([sys.executable, "-c", "import sys; print('3 failed'); sys.exit(1)"])
    proc = cli("run", "t", "--repo", str(git_repo), "--verify", red)
    assert proc.returncode == 1
    assert "FAILED (exit 1)" in proc.stdout
    assert "acceptance check" in proc.stdout
    green = shlex.join([sys.executable, "-c", "pass"])
    ok = cli("run", "t", "--repo", str(git_repo), "--verify", green)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "passed" in ok.stdout


def test_accounts_add_list_remove(relay_home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "claude-work"
    folder.mkdir()
    added = cli("accounts", "add", "claude", "work", "--config-dir", str(folder))
    assert added.returncode == 0, added.stderr
    listed = cli("accounts", "list")
    assert "claude:work" in listed.stdout
    assert str(folder) in listed.stdout.replace("\n", "")
    missing = cli("accounts", "add", "codex", "x", "--config-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert "is not a folder" in missing.stderr
    assert cli("accounts", "remove", "claude", "work").returncode == 0
    assert "No accounts yet" in cli("accounts", "list").stdout
    gone = cli("accounts", "remove", "claude", "work")
    assert gone.returncode == 2
    assert_no_traceback(gone)
