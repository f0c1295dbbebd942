"""``relay --smoke-test`` as the installers' smoke test runs it: a real process, offscreen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def smoke(env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", **env_extra}
    return subprocess.run([sys.executable, "-m", "relay", "--smoke-test"], capture_output=True,
                          text=True, env=env, stdin=subprocess.DEVNULL, timeout=120, check=False)


def test_the_smoke_test_passes_and_leaves_the_data_folder_alone(relay_home: Path) -> None:
    proc = smoke({})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    docks = next(line for line in lines if line.startswith("smoke: ok   9 docks open: "))
    assert set(docks.rpartition("docks open: ")[2].split(", ")) == {
        "Sessions", "Live stream", "Handoff", "Wallet", "Detect", "Pipelines", "History",
        "Knowledge", "Board"}
    assert "smoke: ok   the demo's handoff: demo:primary → demo:backup done" in lines
    assert not [line for line in lines if line.startswith("smoke: FAIL")]
    assert not relay_home.exists() or not (relay_home / "relay.db").exists()


def test_a_broken_setup_fails_the_smoke_test_without_a_dialog(relay_home: Path) -> None:
    proc = smoke({"RELAY_STOP_GRACE": "-1"})
    assert proc.returncode == 2
    assert "smoke: FAIL Relay cannot start: Invalid setting 'stop_grace'" in proc.stderr
    assert "Traceback" not in proc.stderr
