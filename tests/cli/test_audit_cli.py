"""relay-cli audit verify / show as a user runs them: a real subprocess, a real data folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.core.audit import AuditLog

CLI = [sys.executable, "-m", "relay.cli.main"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def assert_no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout


@pytest.fixture
def audit_path(relay_home: Path) -> Path:
    path = relay_home / "audit.jsonl"
    log = AuditLog(path)
    for i in range(5):
        log.append("session_started" if i == 0 else "state_changed", {"session": "s1", "i": i})
    return path


def edit_line(path: Path, number: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[number - 1] = lines[number - 1].replace(b'"i":', b'"i":1')
    path.write_bytes(b"".join(lines))


def test_verify_an_intact_log(audit_path: Path) -> None:
    proc = cli("audit", "verify")
    assert proc.returncode == 0, proc.stderr
    assert "intact" in proc.stdout
    assert "5 entries" in proc.stdout
    assert str(audit_path) in proc.stdout.replace("\n", "")


def test_verify_a_missing_log_is_intact_and_empty(relay_home: Path) -> None:
    proc = cli("audit", "verify")
    assert proc.returncode == 0, proc.stderr
    assert "0 entries" in proc.stdout
    assert not (relay_home / "audit.jsonl").exists()


def test_verify_names_the_edited_line(audit_path: Path) -> None:
    edit_line(audit_path, 3)
    proc = cli("audit", "verify")
    assert proc.returncode == 1
    out = " ".join(proc.stdout.split())
    assert "broken at line 3" in out
    assert "edited" in out
    assert "2 entries before it verify" in out
    assert "Keep a copy" in out
    assert "move it aside" in out
    assert_no_traceback(proc)


def test_verify_names_a_truncated_last_line(audit_path: Path) -> None:
    audit_path.write_bytes(audit_path.read_bytes()[:-30])
    proc = cli("audit", "verify")
    assert proc.returncode == 1
    out = " ".join(proc.stdout.split())
    assert "broken at line 5" in out
    assert "incomplete" in out
    assert_no_traceback(proc)


def test_verify_json_reports(audit_path: Path) -> None:
    intact = cli("audit", "verify", "--json")
    assert intact.returncode == 0
    report = json.loads(intact.stdout)
    assert (report["ok"], report["entries"], report["brokenLine"], report["reason"]) == (True, 5, None, None)

    lines = audit_path.read_bytes().splitlines(keepends=True)
    audit_path.write_bytes(b"".join([lines[0], lines[2], lines[1], *lines[3:]]))
    broken = cli("audit", "verify", "--json")
    assert broken.returncode == 1
    report = json.loads(broken.stdout)
    assert (report["ok"], report["brokenLine"], report["reason"], report["entries"]) == (
        False, 2, "prev_hash_mismatch", 1)


def test_verify_another_file_with_path(tmp_path: Path, audit_path: Path) -> None:
    other = tmp_path / "elsewhere.jsonl"
    AuditLog(other).append("only", {})
    other.write_bytes(other.read_bytes() + b"garbage\n")
    proc = cli("audit", "verify", "--path", str(other))
    assert proc.returncode == 1
    assert "broken at line 2" in " ".join(proc.stdout.split())
    assert cli("audit", "verify").returncode == 0  # the default log is untouched


def test_an_unreadable_log_is_exit_2_without_traceback(tmp_path: Path) -> None:
    proc = cli("audit", "verify", "--path", str(tmp_path))
    assert proc.returncode == 2
    assert "Cannot read the audit log" in proc.stderr
    assert "→" in proc.stderr
    assert_no_traceback(proc)


def test_usage_errors_are_exit_2(audit_path: Path) -> None:
    assert cli("audit").returncode == 2
    bad_limit = cli("audit", "show", "--limit", "0")
    assert bad_limit.returncode == 2
    assert "must be 1 or more" in bad_limit.stderr
    assert_no_traceback(bad_limit)


def test_show_the_latest_entries(audit_path: Path) -> None:
    proc = cli("audit", "show", "--limit", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    entries = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [e["data"]["i"] for e in entries] == [3, 4]
    assert audit_path.read_text().splitlines()[-1] == proc.stdout.splitlines()[-1]

    table = cli("audit", "show", "--limit", "3")
    assert table.returncode == 0, table.stderr
    assert "state_changed" in table.stdout
    assert "session_started" not in table.stdout
    assert "audit verify" in table.stdout


def test_show_an_empty_log(relay_home: Path) -> None:
    proc = cli("audit", "show")
    assert proc.returncode == 0, proc.stderr
    assert "No audit entries yet" in proc.stdout


def test_show_stops_at_a_line_that_is_no_entry(audit_path: Path) -> None:
    audit_path.write_bytes(audit_path.read_bytes() + b"{oops\n")
    proc = cli("audit", "show")
    assert proc.returncode == 2
    assert "Line 6" in proc.stderr
    assert_no_traceback(proc)


def test_verify_catches_a_deleted_or_cut_log_the_database_anchored(relay_home: Path) -> None:
    demo = subprocess.run([sys.executable, "-m", "relay.cli.main", "demo"], capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "RELAY_DEMO_STEP_DELAY": "0"})
    assert demo.returncode == 0, demo.stderr
    log = relay_home / "audit.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) >= 2
    assert cli("audit", "verify").returncode == 0
    log.write_bytes(b"".join(lines[:-1]))  # the last entry removed: the file alone still chains
    cut = cli("audit", "verify")
    assert cut.returncode == 1, cut.stdout
    assert f"the database recorded {len(lines)} ending in" in " ".join(cut.stdout.split())
    log.unlink()
    gone = cli("audit", "verify")
    assert gone.returncode == 1, gone.stdout  # was "intact: 0 entries"
    assert "the log is missing or empty" in " ".join(gone.stdout.split())
    assert_no_traceback(gone)
