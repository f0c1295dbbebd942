"""A session another process starts goes to the window that hosts the data folder and shows
up live there — through the bus: the window polls no one (every session runs in it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pytestqt.qtbot import QtBot

from tests.gui.conftest import Runner, Started

#: another front end: a process that starts a demo session through the data folder's host
CLIENT = """
import asyncio, sys
from pathlib import Path
from relay.api.client import RelayClient
from relay.core.models import SessionSpec

async def main() -> None:
    client = RelayClient.for_home(Path(sys.argv[1]))
    assert client is not None, "no host"
    async with client:
        sid = await client.start_session(SessionSpec(repo=Path(sys.argv[2]),
                                                     task="from another process",
                                                     runtime="demo"))
        print(sid, (await client.wait_session(sid)).state)

asyncio.run(main())
"""


def test_a_session_another_process_starts_runs_in_the_window_and_streams(
        window: Started, relay_home: Path, git_repo: Path, arun: Runner, qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.05")
    _task, shell = window()
    assert shell.bridge._follower is None  # hosting: nothing to poll, so what shows up came
    # through this engine's bus — the session runs in the window's process
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, str(relay_home), str(git_repo)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        qtbot.waitUntil(lambda: any(r.task == "from another process"
                                    for r in shell.sessions_vm.rows()), timeout=30_000)
        row = next(r for r in shell.sessions_vm.rows() if r.task == "from another process")
        shell.stream_vm.load(row.id)
        qtbot.waitUntil(lambda: any(r.task == "from another process" and r.state == "completed"
                                    for r in shell.sessions_vm.rows()), timeout=30_000)
        # the host is this process's loop: wait for the client with the loop running
        qtbot.waitUntil(lambda: proc.poll() is not None, timeout=30_000)
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert out.split() == [row.id, "completed"]
        # every event the host stored is in the stream, once, in order
        stored = [r.id for r in arun(shell.engine.session_events(row.id))]
        qtbot.waitUntil(lambda: shell.stream_vm.event_count() == len(stored), timeout=10_000)
        assert [r.id for r in shell.stream_vm.records()] == stored
        assert shell.stream_vm.records()[-1].event.kind == "state_changed"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
