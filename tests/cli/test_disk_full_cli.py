"""relay-cli on a real full (and nearly full) disk: every command exits in time with one clear
line or its answer, never a traceback, and nothing committed is lost. Each command is its own
process: a hang (a worker thread never closed) is the process not exiting."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from tests.fakes.small_disk import fill, free_up, small_disk

CLI = [sys.executable, "-m", "relay.cli.main"]
#: a command that has not exited by then hangs
DEADLINE_S = 60


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                              timeout=DEADLINE_S, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"relay-cli {' '.join(args)} did not exit within {DEADLINE_S} s on a full disk")


def _committed(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        return (conn.execute("SELECT id, state, task FROM sessions ORDER BY id").fetchall(),
                conn.execute("SELECT id, kind, payload FROM events ORDER BY id").fetchall())


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk", 6144) as mounted:
        yield mounted


@pytest.mark.parametrize("free", [0, 148 * 1024], ids=["full", "148KB-free"])
def test_a_full_disk_never_hangs_relay_cli_nor_loses_what_was_committed(
        disk: Path, tmp_path: Path, free: int) -> None:
    home = disk / "home"
    user = tmp_path / "user"  # no agent CLIs' transcripts: usage reads nothing of the machine's
    user.mkdir()
    env = {**os.environ, "RELAY_HOME": str(home), "HOME": str(user), "COLUMNS": "160",
           "RELAY_DEMO_STEP_DELAY": "0"}
    first = _run(env, "demo")
    assert first.returncode == 0, first.stderr
    (sid,) = (p.name for p in (home / "worktrees").iterdir())
    before = _committed(home / "relay.db")
    fill(disk, free)

    for args in (["sessions"], ["sessions", "--json"], ["show", sid], ["history", sid],
                 ["usage"]):
        done = _run(env, *args)
        assert "Traceback" not in done.stdout + done.stderr, (args, done.stderr)
        assert done.returncode == 0, (args, done.stderr)  # a read needs no write
        if args[0] != "usage":
            assert sid in done.stdout, args

    demo = _run(env, "demo")
    assert "Traceback" not in demo.stdout + demo.stderr, demo.stderr
    assert "crashed" not in demo.stderr, demo.stderr
    if demo.returncode != 0:  # a full disk is one clear message (and its hint), and an exit
        assert demo.returncode == 2, demo.stderr
        assert "is full" in demo.stderr, demo.stderr
        assert "Free disk space" in demo.stderr, demo.stderr
    if free == 0:
        assert demo.returncode != 0

    free_up(disk)
    sessions, events = _committed(home / "relay.db")
    assert set(before[0]) <= set(sessions)  # every committed session is still there
    assert set(before[1]) <= set(events)  # every committed event is still there
    assert (home / "knowledge.sqlite").stat().st_size > 0  # the derived index was kept
