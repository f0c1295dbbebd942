"""An agent that exits leaving a detached grandchild on its stdout: the agent's exit and
result decide the run, and nothing of its process tree outlives it.

The fake ``claude`` replays a real successful stream-json capture, then forks a grandchild
that keeps stdout and stderr open for 300 s (``RELAY_FAKE_LEAVE_CHILD``): ``background``
stays in the agent's session and process group, ``setsid`` leaves both.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from relay.core.events import SessionEnded
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from tests.runtimes.run_helpers import collect, ended

#: a failure bound, far above the exit grace and far below the grandchild's 300 s
BOUND_S = 30.0


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int, within: float = 10.0) -> bool:
    """Bounded poll of kernel process state (nothing can signal us about another's death)."""
    try:
        psutil.Process(pid).wait(timeout=within)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return gone(pid)
    return True


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where the fake writes its grandchild's pid; a failing test's grandchild is killed."""
    path = tmp_path / "grandchild.pid"
    yield path
    if path.exists():
        pid = int(path.read_text())
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("mode", ["background", "setsid"])
async def test_a_detached_grandchild_on_stdout_does_not_hold_a_completed_run(
    fakes_on_path: Path,
    git_repo: Path,
    tmp_path: Path,
    pidfile: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.delenv("RELAY_FAKE_SCENARIO", raising=False)
    monkeypatch.setenv("RELAY_FAKE_LEAVE_CHILD", mode)
    monkeypatch.setenv("RELAY_FAKE_CHILD_PIDFILE", str(pidfile))
    started = time.monotonic()
    events = await asyncio.wait_for(
        collect(ClaudeAdapter(), RunRequest(prompt="Say hello", cwd=git_repo)), BOUND_S
    )
    took = time.monotonic() - started
    end = ended(events)
    assert isinstance(end, SessionEnded)
    assert (end.outcome, end.exit_code, end.reason) == ("completed", 0, None)
    assert end.result_text
    assert "42" in end.result_text
    assert not [e for e in events if getattr(e, "category", None) == "stalled"]
    assert took < BOUND_S / 2
    grandchild = int(pidfile.read_text())
    if mode == "setsid":
        assert grandchild != os.getpgid(0)
    assert wait_gone(grandchild), f"the agent's grandchild {grandchild} outlived the run"
