"""Secrets never reach the store, the audit log or the CLI; the audit chain tells the story."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.core.audit import iter_entries, verify

PRINT_FILE = Path(__file__).resolve().parents[1] / "fakes" / "bin" / "print-file"
# Fake secrets built from pieces, so the repository holds no secret-looking literal.
ANTHROPIC = "sk-ant-" + "api03-" + "Zq9" * 31
GITHUB = "ghp_" + "R2d2C3po" * 4 + "Ab12"
PASSWORD = "hunter" + "2-Very-Secret"


def stream_with_secrets() -> str:
    session = "11111111-1111-4111-8111-111111111111"
    lines = [
        {"type": "system", "subtype": "init", "session_id": session, "model": "m", "tools": []},
        {"type": "assistant", "session_id": session, "message": {"id": "m1", "model": "m", "content": [
            {"type": "text", "text": f"I found ANTHROPIC_API_KEY={ANTHROPIC} in .env"},
            {"type": "tool_use", "id": "t1", "name": "Bash",
             "input": {"command": f"curl https://bot:{PASSWORD}@example.com -H 'X: {GITHUB}'"}}]}},
        {"type": "user", "session_id": session, "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": f"token={GITHUB}"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "session_id": session,
         "result": "done", "usage": {"input_tokens": 1, "output_tokens": 1},
         "total_cost_usd": 0.001},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


@pytest.fixture
def agent_printing_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = tmp_path / "stream.ndjson"
    lines.write_text(stream_with_secrets())
    monkeypatch.setenv("RELAY_CLAUDE_BIN", str(PRINT_FILE))
    monkeypatch.setenv("RELAY_BENCH_LINES", str(lines))


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "relay.cli.main", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, env=dict(os.environ), timeout=60,
                          check=False)


def test_secrets_from_the_agent_are_scrubbed_everywhere(agent_printing_secrets: None,
                                                        git_repo: Path, relay_home: Path) -> None:
    run = run_cli("run", "look around", "--repo", str(git_repo), "--provider", "claude", "--json")
    assert run.returncode == 0, run.stderr
    shown = run_cli("show", json.loads(run.stdout.splitlines()[0])["session_id"])
    assert shown.returncode == 0, shown.stderr
    assert "[REDACTED:" in run.stdout
    files = [p for p in relay_home.rglob("*") if p.is_file()]
    assert any(p.name == "relay.db" for p in files)
    for secret in (ANTHROPIC, GITHUB, PASSWORD):
        assert secret not in run.stdout + run.stderr + shown.stdout + shown.stderr
        for path in files:  # the database, its WAL, the audit log …
            assert secret.encode() not in path.read_bytes(), f"{secret[:8]}… in {path.name}"


def test_the_audit_log_records_the_session_lifecycle(git_repo: Path, relay_home: Path) -> None:
    env_run = run_cli("run", "t", "--repo", str(git_repo), "--provider", "demo", "--json")
    assert env_run.returncode == 0
    session_id = json.loads(env_run.stdout.splitlines()[0])["session_id"]
    audit = relay_home / "audit.jsonl"
    assert verify(audit).ok
    entries = [e for e in iter_entries(audit) if e.data.get("session_id") == session_id]
    states = [e.data["state"] for e in entries if e.event == "session.state_changed"]
    assert states == ["pending", "starting", "running", "completed"]
    assert [e.event for e in entries].count("session.session_ended") == 1
    checked = run_cli("audit", "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
