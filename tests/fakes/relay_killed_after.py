"""``python -m tests.fakes.relay_killed_after STATE ARGS…``: relay-cli ARGS with a fault
injected — the process SIGKILLs itself right after the handoff state STATE (or ``waiting``)
is committed; STATE ``snapshot_commit``: in the middle of the handoff's snapshot commit,
with the worktree's ``index.lock`` taken, as git takes it to write the index. The crash
tests run it; Relay's own code reads no such switch: the fault is
passed to the engine (:data:`relay.sessions.coordinator.FaultHook`)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from relay.cli.main import main
from relay.engine.engine import Engine


def die_mid_snapshot_commit() -> None:
    """SIGKILL inside the handoff's snapshot commit, holding ``index.lock``."""
    from relay.sessions import snapshot

    stage, commit = snapshot.stage_everything, snapshot.commit_everything
    snapshotting = False

    def stage_then_die(repo: Any) -> bool:
        changed = stage(repo)
        if snapshotting:
            os.open(os.path.join(repo.path, "index.lock"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            os.kill(os.getpid(), signal.SIGKILL)
        return changed

    def commit_watching(worktree: Any, session_id: str, message: str, *args: Any,
                        **kwargs: Any) -> Any:
        nonlocal snapshotting
        snapshotting = message.startswith("relay: snapshot of session")
        return commit(worktree, session_id, message, *args, **kwargs)

    snapshot.stage_everything = stage_then_die
    snapshot.commit_everything = commit_watching


def run(state: str, argv: list[str]) -> int:
    if state == "snapshot_commit":
        die_mid_snapshot_commit()
    def kill_after(reached: str) -> None:
        if reached == state:
            os.kill(os.getpid(), signal.SIGKILL)

    opener = Engine.open

    async def open_with_fault(*args: Any, **kwargs: Any) -> Engine:
        return await opener(*args, **{**kwargs, "fault": kill_after})

    Engine.open = open_with_fault  # type: ignore[method-assign]
    return main(argv)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2:]))
