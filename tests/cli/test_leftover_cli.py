"""relay-cli run with an agent that exits leaving a detached grandchild on its stdout:
the run ends ``completed`` and relay-cli exits at once, and the grandchild is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

CLI = [sys.executable, "-m", "relay.cli.main"]


@pytest.mark.parametrize("mode", ["background", "setsid"])
def test_relay_cli_run_completes_and_exits_despite_a_detached_grandchild(
        git_repo: Path, fakes_on_path: Path, tmp_path: Path, mode: str) -> None:
    pidfile = tmp_path / "grandchild.pid"
    env = {**os.environ, "COLUMNS": "160", "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "RELAY_FAKE_LEAVE_CHILD": mode, "RELAY_FAKE_CHILD_PIDFILE": str(pidfile)}
    env.pop("RELAY_FAKE_SCENARIO", None)
    started = time.monotonic()
    try:
        proc = subprocess.run([*CLI, "run", "Say hello", "--repo", str(git_repo),
                               "--provider", "claude", "--json"], capture_output=True,
                              text=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
                              check=False)
    finally:  # a failing run must not leave the 300 s grandchild behind
        pid = int(pidfile.read_text()) if pidfile.exists() else None
        alive = pid is not None and psutil.pid_exists(pid) \
            and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        if alive:
            os.kill(pid, signal.SIGKILL)  # type: ignore[arg-type]
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    events = [json.loads(line)["event"] for line in proc.stdout.splitlines()]
    (end,) = [e for e in events if e["kind"] == "session_ended"]
    assert (end["outcome"], end["exit_code"]) == ("completed", 0)
    assert [e["state"] for e in events if e["kind"] == "state_changed"][-1] == "completed"
    assert took < 30
    assert pid is not None
    assert not alive, f"the agent's grandchild {pid} outlived relay-cli"
