"""An agent left running by a Relay that was killed is stopped by the next engine."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from relay.core.config import load_config
from relay.engine.engine import Engine
from tests.conftest import wait_until

CLI = [sys.executable, "-m", "relay.cli.main"]


def recorded_pid(db: Path) -> int | None:
    if not db.exists():
        return None
    try:
        with sqlite3.connect(db) as conn:
            row = conn.execute("SELECT pid FROM runs WHERE pid IS NOT NULL").fetchone()
    except sqlite3.OperationalError:  # the schema is still being created
        return None
    return int(row[0]) if row else None


async def states_after_an_engine_opened() -> dict[str, str]:
    """Open an engine (it recovers orphans) and report every session's state."""
    engine = await Engine.open(load_config())
    try:
        return {row.id: row.state for row in await engine.list_sessions()}
    finally:
        await engine.close()


def test_the_orphaned_agent_of_a_killed_relay_is_stopped(
        relay_home: Path, git_repo: Path, fakes_on_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the fake claude prints its recorded output, then works on until it is signalled
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "r_signals/run1_sigterm")
    relay = subprocess.Popen([*CLI, "run", "t", "--repo", str(git_repo), "--provider", "claude"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    db = relay_home / "relay.db"
    try:
        wait_until(lambda: recorded_pid(db) is not None, within=30, what="the agent's pid")
    finally:
        os.kill(relay.pid, signal.SIGKILL)
        relay.wait()
    pid = recorded_pid(db)
    assert pid is not None
    agent = psutil.Process(pid)
    assert agent.is_running()
    assert "claude" in " ".join(agent.cmdline())

    assert list(asyncio.run(states_after_an_engine_opened()).values()) == ["interrupted"]
    gone, _ = psutil.wait_procs([agent], timeout=10)
    assert gone, "the orphaned agent is still running"


def test_a_reused_pid_is_left_alone(relay_home: Path) -> None:
    asyncio.run(states_after_an_engine_opened())  # creates the database
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    me = psutil.Process(bystander.pid)
    with sqlite3.connect(relay_home / "relay.db") as conn:  # a run whose pid now names another process
        conn.execute("INSERT INTO sessions (id, repo, task, runtime, state, permission, owner_pid,"
                     " spec_json, created_ms, updated_ms) VALUES ('s1', '/r', 't', 'claude', "
                     "'running', 'workspace', 999999999, '{}', 0, 0)")
        conn.execute("INSERT INTO runs (id, session_id, attempt, runtime, started_ms, pid,"
                     " pid_started) VALUES ('r1', 's1', 1, 'claude', 0, ?, ?)",
                     (me.pid, me.create_time() - 100))
    try:
        assert asyncio.run(states_after_an_engine_opened()) == {"s1": "interrupted"}
        assert me.is_running()
    finally:
        bystander.kill()
        bystander.wait()
