"""``python -m tests.fakes.relay_killed_after STATE ARGS…``: relay-cli ARGS with a fault
injected — the process SIGKILLs itself right after the handoff state STATE (or ``waiting``)
is committed. The crash tests run it; Relay's own code reads no such switch: the fault is
passed to the engine (:data:`relay.sessions.coordinator.FaultHook`)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from relay.cli.main import main
from relay.engine.engine import Engine


def run(state: str, argv: list[str]) -> int:
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
