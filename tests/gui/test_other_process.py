"""Sessions that another process runs (a headless `relay-cli run`) show up live."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner


def test_a_session_run_from_the_terminal_appears_and_streams(shell: RelayShell, qtbot: QtBot,
                                                              git_repo: Path, arun: Runner) -> None:
    shell.bridge.follow_other_processes()
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0.05"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "relay.cli.main", "run", "from the terminal", "--repo",
         str(git_repo), "--provider", "demo"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        qtbot.waitUntil(lambda: any(r.task == "from the terminal" for r in shell.sessions_vm.rows()),
                        timeout=30_000)
        row = next(r for r in shell.sessions_vm.rows() if r.task == "from the terminal")
        shell.stream_vm.load(row.id)
        qtbot.waitUntil(lambda: any(r.task == "from the terminal" and r.state == "completed"
                                    for r in shell.sessions_vm.rows()), timeout=30_000)
        assert proc.wait(timeout=30) == 0
        # every event the other process stored is in the stream, once, in order
        stored = [r.id for r in arun(shell.engine.session_events(row.id))]
        qtbot.waitUntil(lambda: shell.stream_vm.event_count() == len(stored), timeout=10_000)
        assert [r.id for r in shell.stream_vm.records()] == stored
        assert shell.stream_vm.records()[-1].event.kind == "state_changed"
        assert not shell.stream_vm.can_stop  # not this process's session
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()
