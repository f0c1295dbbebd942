"""Engines as real processes on one database: SIGKILL, SIGSTOP, takeover, fenced writes."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli.main import main as cli_main
from relay.core.events import AssistantText, SessionEnded
from relay.pipelines import crash_demo
from relay.runtimes.base import RunRequest
from relay.runtimes.demo import HOLD_ENV, HOLD_TEXT, NOTES_FILE, DemoAdapter
from tests.cli.test_cli import CLI, assert_no_traceback, cli
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


def test_crash_demo_kills_engine_a_and_engine_b_finishes(tmp_path: Path) -> None:
    """At its defaults (what a user runs; no test-only timing): A is killed mid-build —
    its claim, its session, its agent's first turn, nothing saved — and B takes build over."""
    proc = cli("pipeline", "crash-demo", env_extra={"TMPDIR": str(tmp_path)}, timeout=180)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert_no_traceback(proc)
    assert "SIGKILL engine A" in text
    assert "in the middle of build: its agent had done a turn" in text
    assert "build: taken over by engine B" in text
    assert "build: write by engine A with epoch 1 REFUSED" in text
    for check in ("the run succeeded", "every step's result was saved exactly once",
                  "engine A's late write was refused"):
        assert f"✓ {check}" in text
    root = Path(text.rpartition("both engines' output: ")[2].split()[0])
    assert root.parent == tmp_path
    home = root / "home"
    log = _db(home, "SELECT kind, owner, epoch FROM pipeline_log WHERE node_id='build'"
                    " ORDER BY id")
    a_owner = log[0][1]
    # B hosts once A is gone: its recovering engine sees A's worker dead and releases
    # A's lease at once (no wait for it to expire), then takes the step over
    assert [(k, e) for k, o, e in log if o == a_owner] == [
        ("claimed", 1), ("session", 1), ("lease_released", 1), ("fence_refused", 1)]
    assert [(k, e) for k, o, e in log if o != a_owner] == [
        ("takeover", 2), ("session", 2), ("saved", 2)]
    assert [k for (k,) in _db(home, "SELECT kind FROM pipeline_log WHERE node_id='report'"
                                    " ORDER BY id")] == ["claimed", "session", "saved"]
    # A's session of build did its first turn, held, and was cut there (interrupted)
    first = str(_db(home, "SELECT detail FROM pipeline_log WHERE node_id='build' AND"
                          " kind='session' ORDER BY id")[0][0])
    kinds = [str(k) for (k,) in _db(home, "SELECT kind FROM events WHERE session_id=?"
                                          " ORDER BY id", first)]
    assert "tool_call" in kinds
    assert "session_ended" not in kinds
    held = _db(home, "SELECT payload FROM events WHERE session_id=? AND kind='assistant_text'",
               first)
    assert any(HOLD_TEXT in str(p) for (p,) in held)


def test_the_command_without_flags_runs_the_demo_at_its_own_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``relay-cli pipeline crash-demo`` with no flags is the demo the tests run."""
    given: list[dict[str, object]] = []

    async def fake(say: object, **settings: object) -> int:
        given.append(settings)
        return 0

    defaults = inspect.signature(crash_demo.run_demo).parameters
    monkeypatch.setattr(crash_demo, "run_demo", fake)
    assert cli_main(["pipeline", "crash-demo"]) == 0
    assert given == [{"lease_s": crash_demo.LEASE_S, "step_delay": crash_demo.STEP_DELAY_S}]
    assert defaults["lease_s"].default == crash_demo.LEASE_S
    assert defaults["step_delay"].default == crash_demo.STEP_DELAY_S


async def test_an_engine_that_dies_early_ends_the_demo_with_one_line_and_exit_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No traceback, no wait for a deadline: what stopped, and what the engine printed."""
    monkeypatch.setattr(crash_demo, "relay_cli", lambda: [
        sys.executable, "-c", "print('no engine here'); raise SystemExit(3)"])
    said: list[str] = []
    code = await asyncio.wait_for(crash_demo.run_demo(said.append, root=tmp_path / "demo"), 60)
    assert code == 1
    text = "\n".join(said)
    assert "✗ The demo stopped: engine A exited with 3 before it started the run." in text
    assert "    no engine here" in text
    assert f"both engines' output: {tmp_path / 'demo'}" in text


async def test_the_demo_agent_of_the_held_step_stops_after_its_first_turn(
        tmp_path: Path) -> None:
    """RELAY_DEMO_HOLD=build: build's agent says it holds and goes no further until stopped;
    another step's agent runs through."""
    adapter = DemoAdapter({HOLD_ENV: "build"})
    request = RunRequest(prompt="Build.", cwd=tmp_path,
                         options={"step_delay": 0, "pipeline_step": "run1/build"})
    events = adapter.run(request)
    seen = []
    async for event in events:
        seen.append(event)
        if isinstance(event, AssistantText) and event.text.startswith(HOLD_TEXT):
            break
    assert [e.kind for e in seen].count("turn_completed") == 1  # its first turn, then the hold
    assert not (tmp_path / NOTES_FILE).exists()  # the second turn (the write) never started
    nxt = asyncio.ensure_future(anext(events))
    for _ in range(50):  # with no step delay a running agent would answer at once
        await asyncio.sleep(0)
    assert not nxt.done()
    await adapter.stop()
    ended = await asyncio.wait_for(nxt, 10)
    assert isinstance(ended, SessionEnded)
    assert ended.outcome == "cancelled"

    other = DemoAdapter({HOLD_ENV: "build"})
    done = [e async for e in other.run(RunRequest(
        prompt="Prepare.", cwd=tmp_path, options={"step_delay": 0,
                                                  "pipeline_step": "run1/prepare"}))]
    assert isinstance(done[-1], SessionEnded)
    assert done[-1].outcome == "completed"
    assert not any(isinstance(e, AssistantText) and HOLD_TEXT in e.text for e in done)


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


async def test_a_worker_whose_lease_expired_has_its_own_late_write_refused(
        tmp_path: Path, relay_home: Path) -> None:
    """Engine A is alive but never renews its lease (its heartbeat is longer than the lease,
    as a stalled worker's would be); engine B takes the step over, and A's own save of the
    step — made when its agent finishes — is refused by the fence.

    A is a ``relay-cli pipeline run`` (it hosts the data folder); B is an engine of this
    process beside it — not a host (a second relay-cli would be A's client): two engines on
    one ledger, as workers on several machines will be, held apart by the leases alone."""
    from relay.core.config import load_config
    from relay.engine.engine import Engine

    repo = _repo_with_pipeline(tmp_path)
    env = {"RELAY_DEMO_STEP_DELAY": "0.3", "RELAY_PIPELINE_POLL": "0.1"}
    first = _start("pipeline", "run", str(repo / "p.json"), "--repo", str(repo),
                   env_extra={**env, "RELAY_PIPELINE_LEASE": "1",
                              "RELAY_PIPELINE_HEARTBEAT": "3600"})
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while not _running_with_session(relay_home, "implement"):  # another process's rows
            assert loop.time() < deadline, "engine A never got to the middle of implement"
            await asyncio.sleep(0.02)
        run_id = str(_db(relay_home, "SELECT id FROM pipeline_runs")[0][0])
        # B's own leases are long: however late its heartbeat on a busy machine, A (which
        # polls on) never takes a step back from it — only A's 1 s lease is under test
        engine = await Engine.open(load_config(demo_step_delay=0.3, pipeline_poll=0.1,
                                               pipeline_lease=20))
        try:
            await engine.pipelines.resume(run_id)
            run = await asyncio.wait_for(engine.pipelines.wait(run_id, poll_s=0.05), 120)
        finally:
            await engine.close()
        assert run.state == "succeeded", run.reason
        out, _ = await asyncio.to_thread(first.communicate, timeout=60)
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
    takeover = [(k, o) for k, o, _ in log if o != a_owner]
    assert [k for k, _ in takeover] == ["takeover", "session", "saved"]
    assert {str(o).split(":")[1] for _, o in takeover} == {str(os.getpid())}  # B did it
    assert "implement: write by this process with epoch 1 REFUSED" in " ".join(out.split())


async def test_a_long_lived_engine_takes_up_a_run_whose_engine_was_killed(
        tmp_path: Path, relay_home: Path) -> None:
    """The window (an engine opened with recover) adopts a run a killed relay-cli left."""
    import asyncio

    from relay.core.config import load_config
    from relay.engine.engine import Engine

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
