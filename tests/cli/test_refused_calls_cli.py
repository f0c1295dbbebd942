"""A refused tool call is in a session's end state wherever relay-cli shows one: the
footer, the stream's final state line, the sessions table and ``sessions --json``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.models import SessionRow, SessionSpec
from relay.core.present import end_state, refused_note
from relay.engine.engine import Engine

CLI = [sys.executable, "-m", "relay.cli.main"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc


async def _sessions(repo: Path) -> tuple[SessionRow, SessionRow]:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:  # the demo asks before it writes; the deny policy refuses
        refused = await engine.run_session(SessionSpec(
            repo=repo, task="notes", runtime="demo", demo_ask=True, approvals="deny"))
        clean = await engine.run_session(SessionSpec(repo=repo, task="more", runtime="demo"))
    finally:
        await engine.close()
    return refused, clean


@pytest.fixture
def sessions(git_repo: Path) -> tuple[SessionRow, SessionRow]:
    return asyncio.run(_sessions(git_repo))


def test_the_words() -> None:
    assert [refused_note(n) for n in (None, 0, 1, 3)] == [
        "", "", "1 tool call refused", "3 tool calls refused"]
    assert end_state("completed", 1) == "completed · 1 tool call refused"
    assert end_state("failed", 0) == end_state("failed", None) == "failed"
    assert end_state("completed", 2, short=True) == "completed · 2 refused"


def test_show_ends_with_the_refused_count(sessions: tuple[SessionRow, SessionRow]) -> None:
    refused, clean = sessions
    shown = cli("show", refused.id)
    assert shown.returncode == 0, shown.stderr
    assert "state → completed · 1 tool call refused" in shown.stdout  # the final state line
    assert f"COMPLETED · 1 tool call refused · session {refused.id}" in shown.stdout
    plain = cli("show", clean.id).stdout
    assert f"COMPLETED session {clean.id}" in plain
    assert "refused" not in plain


def test_the_sessions_list_and_its_json(sessions: tuple[SessionRow, SessionRow]) -> None:
    refused, clean = sessions
    table = cli("sessions")
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if refused.id in x)
    assert "completed · 1 refused" in line  # the table's short form
    rows = [json.loads(x) for x in cli("sessions", "--json").stdout.splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert (by_id[refused.id]["state"], by_id[refused.id]["refused_calls"]) == ("completed", 1)
    assert by_id[clean.id]["refused_calls"] == 0
    assert [r["id"] for r in rows] == [clean.id, refused.id]  # newest first


def test_sessions_json_with_none_prints_nothing() -> None:
    listed = cli("sessions", "--json")
    assert (listed.returncode, listed.stdout) == (0, "")
