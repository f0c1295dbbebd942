"""relay-cli as a user runs it: a real subprocess, real data folder, real git."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "relay.cli.main"]


def cli(*args: str, env_extra: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "160", **(env_extra or {})}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=timeout, check=False)


def assert_no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout


def test_demo_runs_a_complete_labelled_session() -> None:
    proc = cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "SIMULATION" in proc.stdout
    assert "COMPLETED" in proc.stdout
    assert "write_file" in proc.stdout
    assert "$0.0377" in proc.stdout  # the demo's total cost, summed from its turns


def test_demo_limit_hands_off_to_the_backup_account() -> None:
    proc = cli("demo", "--limit-after", "1", env_extra={
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "RELAY_VAULT_PASSPHRASE": "demo-passphrase"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "usage limit" in proc.stdout
    assert "demo:primary → demo:backup" in proc.stdout
    assert "handoff" in proc.stdout
    assert " done:" in proc.stdout
    assert "COMPLETED" in proc.stdout


def test_a_real_chain_without_a_way_to_sign_stops_before_it_starts(
        git_repo: Path, fakes_on_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "fake.log"
    proc = cli("run", "t", "--repo", str(git_repo), "--provider", "claude:a", "--provider",
               "codex", env_extra={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                                   "RELAY_VAULT_PASSPHRASE": "", "RELAY_FAKE_LOG": str(log)})
    assert proc.returncode == 2
    said = " ".join(proc.stderr.split())
    assert said.startswith("error: This run can hand off between accounts")
    assert "Set RELAY_VAULT_PASSPHRASE" in said
    assert not log.exists()  # no agent was started: nothing ran, nothing to clean up
    assert "Relay session" not in proc.stdout
    assert_no_traceback(proc)


def test_json_mode_prints_one_event_per_line(git_repo: Path) -> None:
    proc = cli("run", "do it", "--repo", str(git_repo), "--provider", "demo", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [line["event"]["kind"] for line in lines]
    assert kinds[0] == "state_changed"
    assert kinds[-1] == "state_changed"
    assert kinds.count("session_ended") == 1
    assert all(line["event"]["simulated"] for line in lines)
    ids = [line["id"] for line in lines]
    assert ids == sorted(ids)


def test_show_replays_the_stored_session_and_sessions_lists_it(git_repo: Path) -> None:
    run = cli("run", "replay me", "--repo", str(git_repo), "--provider", "demo", "--json")
    session_id = json.loads(run.stdout.splitlines()[0])["session_id"]
    shown = cli("show", session_id[:6], "--json")
    assert shown.returncode == 0, shown.stderr
    replayed = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [r["id"] for r in replayed] == [json.loads(x)["id"] for x in run.stdout.splitlines()]
    assert all(r["event"]["replay"] for r in replayed)
    listed = cli("sessions")
    assert session_id in listed.stdout
    assert "replay me" in listed.stdout


def test_missing_repository_is_a_clear_error() -> None:
    proc = cli("run", "x", "--repo", "/definitely/not/here")
    assert proc.returncode == 2
    assert "not a folder" in proc.stderr
    assert_no_traceback(proc)


@pytest.mark.parametrize("kind", ["plain", "unborn"])
def test_a_folder_a_worktree_cannot_start_from_exits_2_and_creates_no_session(
        kind: str, tmp_path: Path, relay_home: Path) -> None:
    folder = tmp_path / kind
    folder.mkdir()
    if kind == "unborn":
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
    proc = cli("run", "x", "--repo", str(folder))
    assert proc.returncode == 2, proc.stdout + proc.stderr  # the README's "not a repository"
    assert ("not a git repository" if kind == "plain" else "no commits yet") in proc.stderr
    assert "--no-worktree" in proc.stderr
    assert_no_traceback(proc)
    with sqlite3.connect(relay_home / "relay.db") as conn:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone() == (0,)


def test_unknown_session_is_a_clear_error() -> None:
    proc = cli("show", "nope")
    assert proc.returncode == 2
    assert "No session" in proc.stderr
    assert_no_traceback(proc)


def test_missing_agent_cli_names_it_and_how_to_install(git_repo: Path, tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {"PATH": f"{empty_bin}{os.pathsep}{Path(sys.executable).parent}",
           "RELAY_CLAUDE_BIN": ""}
    proc = cli("run", "x", "--repo", str(git_repo), "--provider", "claude", env_extra=env)
    assert proc.returncode == 1
    assert "claude" in proc.stdout
    assert "npm install" in proc.stdout
    assert_no_traceback(proc)


def test_database_from_a_newer_build_is_refused(relay_home: Path) -> None:
    assert cli("sessions").returncode == 0
    with sqlite3.connect(relay_home / "relay.db") as db:
        db.execute("INSERT INTO schema_version VALUES (999, 0)")
    proc = cli("sessions")
    assert proc.returncode == 2
    assert "newer Relay" in proc.stderr
    assert_no_traceback(proc)


def test_doctor_reports_runtimes_and_data_folder(relay_home: Path, tmp_path: Path) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    proc = cli("doctor", env_extra={"PATH": str(empty_bin)})
    assert proc.returncode == 0, proc.stderr
    assert str(relay_home) in proc.stdout.replace("\n", "")
    for runtime in ("claude", "codex", "demo"):
        assert runtime in proc.stdout
    assert "missing" in proc.stdout
    assert "scripted demo" in proc.stdout


@pytest.mark.parametrize("args", [["run"], ["run", "x", "--provider", "nope"], ["bogus"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    assert "usage:" in proc.stderr


def test_doctor_lists_capabilities_per_runtime() -> None:
    proc = cli("doctor")
    assert proc.returncode == 0, proc.stderr
    assert "Capabilities" in proc.stdout
    for capability in ("resume", "send_input", "safe_pause", "cost"):
        assert capability in proc.stdout
