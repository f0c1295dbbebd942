"""Kill Relay (SIGKILL) right after each committed handoff state; `relay-cli recover`
carries the handoff on: exactly once, nothing lost, no second snapshot."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pygit2
import pytest

from relay.core.audit import verify
from relay.sessions.snapshot import trailers_of

ROOT = Path(__file__).resolve().parents[2]  # where `tests` is importable


def relay(*args: str, env: dict[str, str],
          killed_after: str | None = None) -> subprocess.CompletedProcess[str]:
    """relay-cli ARGS; with ``killed_after``, SIGKILLed right after that state is committed."""
    command = (["-m", "tests.fakes.relay_killed_after", killed_after] if killed_after
               else ["-m", "relay.cli.main"])
    return subprocess.run([sys.executable, *command, *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, env=env, timeout=120, check=False,
                          cwd=ROOT)


@pytest.fixture
def env(relay_home: Path) -> dict[str, str]:
    return {**os.environ, "RELAY_DEMO_STEP_DELAY": "0",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
            "RELAY_VAULT_PASSPHRASE": "crash-test-passphrase"}


def only_session(env: dict[str, str]) -> str:
    """The one session of the data folder: a crashed ``demo`` is killed in its host, maybe
    before its client printed the first event (the stream reaches it a moment later)."""
    import sqlite3

    with sqlite3.connect(Path(env["RELAY_HOME"]) / "relay.db") as db:
        (session_id,), = db.execute("SELECT id FROM sessions").fetchall()
    return str(session_id)


def lines(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("killed_after", ["pausing", "snapshotted", "envelope_built",
                                          "dispatched"])
def test_the_handoff_completes_exactly_once_after_a_crash(killed_after: str,
                                                         env: dict[str, str]) -> None:
    crashed = relay("demo", "--limit-after", "1", "--json", env=env, killed_after=killed_after)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    session_id = only_session(env)

    recovered = relay("recover", "--json", env=env)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    shown = lines(relay("show", session_id, "--json", env=env))
    states = [e["event"]["state"] for e in shown if e["event"]["kind"] == "handoff_step"]
    # every state committed once, except a receiver cut off before it worked: dispatched again
    expected = ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]
    if killed_after == "dispatched":
        expected.insert(4, "dispatched")
    assert states == expected
    assert [e["event"]["state"] for e in shown if e["event"]["kind"] == "state_changed"][-1] \
        == "completed"
    handoff_id = next(e["event"]["handoff_id"] for e in shown
                      if e["event"]["kind"] == "handoff_step")
    # exactly one snapshot commit for this handoff on the session branch
    workdir = Path(env["RELAY_HOME"]) / "worktrees" / session_id
    repo = pygit2.Repository(str(workdir))
    snapshots = [c for c in repo.walk(repo.head.target)
                 if trailers_of(c).get("Relay-Handoff") == handoff_id]
    assert len(snapshots) == 1
    assert verify(Path(env["RELAY_HOME"]) / "audit.jsonl").ok
    assert relay("recover", env=env).stdout.startswith("Nothing to recover")


def test_a_receiver_already_working_is_not_started_twice(env: dict[str, str]) -> None:
    crashed = relay("demo", "--limit-after", "1", "--json", env=env, killed_after="resuming")
    assert crashed.returncode == -signal.SIGKILL
    session_id = only_session(env)
    recovered = relay("recover", "--json", env=env)
    assert recovered.returncode == 1  # the session waits for the user to resume it
    shown = lines(relay("show", session_id, "--json", env=env))
    states = [e["event"]["state"] for e in shown if e["event"]["kind"] == "handoff_step"]
    assert states[-1] == "done"
    assert states.count("dispatched") == 1
    done_at = max(i for i, e in enumerate(shown) if e["event"]["kind"] == "handoff_step")
    after = {e["event"]["kind"] for e in shown[done_at + 1:]}
    assert after <= {"state_changed"}  # recovery started no second receiver
    last_state = [e["event"] for e in shown if e["event"]["kind"] == "state_changed"][-1]
    assert last_state["state"] == "interrupted"
    assert "--resume" in last_state["reason"]


def test_one_shot_commands_leave_an_unfinished_handoff_for_recover(env: dict[str, str]) -> None:
    crashed = relay("demo", "--limit-after", "1", "--json", env=env, killed_after="snapshotted")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    session_id = only_session(env)
    assert relay("sessions", env=env).returncode == 0
    shown = lines(relay("show", session_id, "--json", env=env))
    states = [e["event"]["state"] for e in shown if e["event"]["kind"] == "handoff_step"]
    assert states == ["pausing", "snapshotted"]


def test_a_wait_for_a_reset_survives_a_crash(env: dict[str, str]) -> None:
    # the simulated limit resets in 1 s: near, so the session waits instead of handing off
    near = {**env, "RELAY_DEMO_RESET_AFTER": "1", "RELAY_RESET_MARGIN": "0"}
    crashed = relay("demo", "--limit-after", "1", "--json", env=near, killed_after="waiting")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    session_id = only_session(env)
    # a one-shot command leaves the wait as committed
    listed = relay("show", session_id, "--json", env=near)
    shown_states = [e["event"]["state"] for e in lines(listed) if e["event"]["kind"] == "state_changed"]
    assert shown_states[-1] == "waiting"

    recovered = relay("recover", "--json", env=near)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    shown = lines(relay("show", session_id, "--json", env=near))
    states = [e["event"]["state"] for e in shown if e["event"]["kind"] == "state_changed"]
    assert states[-1] == "completed"
    assert states.count("waiting") == 2  # before the crash, and carried on after it
    assert not [e for e in shown if e["event"]["kind"] == "handoff_step"]
    ended = [e["event"]["outcome"] for e in shown if e["event"]["kind"] == "session_ended"]
    assert ended == ["failed", "completed"]  # the same account, resumed after its reset
