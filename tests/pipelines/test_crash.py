"""Engines as real processes on one database: SIGKILL, SIGSTOP, takeover, fenced writes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli import CLI, cli
from tests.conftest import make_repo, wait_until

PIPELINE = {"name": "three", "nodes": [
    {"id": "plan", "provider": "demo", "task": "plan"},
    {"id": "implement", "provider": "demo", "dependsOn": ["plan"], "task": "do it"},
    {"id": "review", "provider": "demo", "dependsOn": ["implement"], "task": "review"}]}


def _start(*args: str, env_extra: dict[str, str]) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "160", **env_extra}
    return subprocess.Popen([*CLI, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                            start_new_session=True)


def _db(home: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    with sqlite3.connect(home / "relay.db", timeout=10) as conn:
        return conn.execute(sql, params).fetchall()


def _running_with_session(home: Path, node: str) -> bool:
    if not (home / "relay.db").exists():
        return False
    try:
        rows = _db(home, "SELECT 1 FROM pipeline_steps WHERE node_id=? AND state='running'"
                         " AND session_id IS NOT NULL", node)
    except sqlite3.OperationalError:  # the schema is still being created
        return False
    return bool(rows)


def _steps(home: Path) -> dict[str, tuple[object, ...]]:
    return {str(r[0]): r[1:] for r in _db(
        home, "SELECT node_id, state, attempt, saves, epoch FROM pipeline_steps")}


def _repo_with_pipeline(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    (repo / "p.json").write_text(json.dumps(PIPELINE))
    return repo


def test_crash_demo_kills_engine_a_and_engine_b_finishes() -> None:
    proc = cli("pipeline", "crash-demo", "--lease", "1.5", "--step-delay", "0.4", timeout=180)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SIGKILL engine A" in text
    assert "build: taken over by engine B" in text
    assert "build: write by engine A with epoch 1 REFUSED" in text
    for check in ("the run succeeded", "every step's result was saved exactly once",
                  "engine A's late write was refused"):
        assert f"✓ {check}" in text


@pytest.mark.parametrize("again", [("pipeline", "resume", "{run}"), ("recover",)],
                         ids=["pipeline-resume", "recover"])
def test_killed_relay_started_again_finishes_the_run_with_every_step_once(
        tmp_path: Path, relay_home: Path, again: tuple[str, ...]) -> None:
    """A Relay killed mid-step, started again (``recover`` is what the window does when it
    opens): the step's lease is released at once, since its worker is gone."""
    repo = _repo_with_pipeline(tmp_path)
    env = {"RELAY_DEMO_STEP_DELAY": "0.3"}  # the default 30 s lease: only the release helps
    first = _start("pipeline", "run", str(repo / "p.json"), "--repo", str(repo), env_extra=env)
    try:
        wait_until(lambda: _running_with_session(relay_home, "implement"), 60,
                   "the first Relay to be in the middle of implement")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
    run_id = str(_db(relay_home, "SELECT id FROM pipeline_runs")[0][0])
    proc = cli(*(a.format(run=run_id) for a in again), env_extra=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = _steps(relay_home)
    assert steps == {"plan": ("succeeded", 1, 1, 1), "implement": ("succeeded", 2, 1, 2),
                     "review": ("succeeded", 1, 1, 1)}
    kinds = [r[0] for r in _db(relay_home, "SELECT kind FROM pipeline_log WHERE node_id="
                                           "'implement' ORDER BY id")]
    assert kinds == ["claimed", "session", "lease_released", "takeover", "session", "saved"]
    states = {str(k): str(v) for k, v in _db(relay_home, "SELECT id, state FROM sessions")}
    assert sorted(states.values()) == ["completed", "completed", "completed", "interrupted"]


def test_a_worker_whose_lease_expired_has_its_own_late_write_refused(
        tmp_path: Path, relay_home: Path) -> None:
    """Engine A is alive but never renews its lease (its heartbeat is longer than the lease,
    as a stalled worker's would be); engine B takes the step over, and A's own save of the
    step — made when its agent finishes — is refused by the fence."""
    repo = _repo_with_pipeline(tmp_path)
    env = {"RELAY_DEMO_STEP_DELAY": "0.3", "RELAY_PIPELINE_LEASE": "1", "RELAY_PIPELINE_POLL": "0.1"}
    first = _start("pipeline", "run", str(repo / "p.json"), "--repo", str(repo),
                   env_extra={**env, "RELAY_PIPELINE_HEARTBEAT": "3600"})
    try:
        wait_until(lambda: _running_with_session(relay_home, "implement"), 60,
                   "engine A to be in the middle of implement")
        run_id = str(_db(relay_home, "SELECT id FROM pipeline_runs")[0][0])
        second = cli("pipeline", "resume", run_id, env_extra=env, timeout=120)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "implement: taken over by this process" in " ".join(second.stdout.split())
        out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
    steps = _steps(relay_home)
    assert steps["implement"][:4] == ("succeeded", 2, 1, 2)
    assert all(s[2] == 1 for s in steps.values())
    log = _db(relay_home, "SELECT kind, owner, epoch FROM pipeline_log WHERE node_id='implement'"
                          " ORDER BY id")
    a_owner = log[0][1]
    assert [(k, e) for k, o, e in log if o == a_owner] == [
        ("claimed", 1), ("session", 1), ("fence_refused", 1)]
    assert [k for k, o, _ in log if o != a_owner] == ["takeover", "session", "saved"]
    assert "implement: write by this process with epoch 1 REFUSED" in " ".join(out.split())


async def test_a_long_lived_engine_takes_up_a_run_whose_engine_was_killed(
        tmp_path: Path, relay_home: Path) -> None:
    """The window (an engine opened with recover) adopts a run a killed relay-cli left."""
    import asyncio

    from relay.core.config import load_config
    from relay.core.engine import Engine

    repo = _repo_with_pipeline(tmp_path)
    engine = await Engine.open(load_config(demo_step_delay=0.05, pipeline_poll=0.05),
                               recover=True)
    try:
        first = _start("pipeline", "run", str(repo / "p.json"), "--repo", str(repo),
                       env_extra={"RELAY_DEMO_STEP_DELAY": "0.3"})
        try:
            deadline = asyncio.get_running_loop().time() + 60
            while not _running_with_session(relay_home, "implement"):  # another process's rows
                assert asyncio.get_running_loop().time() < deadline, "implement never started"
                await asyncio.sleep(0.02)
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)
        run_id = str(_db(relay_home, "SELECT id FROM pipeline_runs")[0][0])
        # nobody else is left to finish it: only the engine's watch can
        run = await asyncio.wait_for(engine.pipelines.wait(run_id, poll_s=0.05), 60)
        takeover = _db(relay_home, "SELECT owner FROM pipeline_log WHERE kind='takeover'")
        assert [str(o).split(":")[1] for (o,) in takeover] == [str(os.getpid())]
        assert run.state == "succeeded", run.reason
    finally:
        await engine.close()
    assert _steps(relay_home)["implement"][:3] == ("succeeded", 2, 1)
