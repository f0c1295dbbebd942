"""The verifier gate: a task's acceptance commands, run in its worktree.

Each command is an argument array (never a shell line), run in its own process
group with the user's environment, cut off after ``limit_s`` seconds. A run is
accepted only when every command exits 0; a command that cannot start or times
out fails the gate like a red test does. Commands run in order and stop at the
first failure (later checks usually depend on earlier ones, e.g. build → test).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path

from relay.core.errors import RelayError
from relay.core.events import VerifyResult
from relay.core.procs import AgentProcess

#: how much of a command's output the VerifyResult keeps (its end)
OUTPUT_TAIL_CHARS = 4000


async def run_check(command: Sequence[str], cwd: Path, *, limit_s: float,
                    env: Mapping[str, str] | None = None) -> VerifyResult:
    """Run one acceptance command; never raises for the command's own failure."""
    argv = list(command)
    started = time.monotonic()
    proc = AgentProcess(argv, cwd, dict(os.environ if env is None else env))
    tail: deque[str] = deque(maxlen=200)
    try:
        await proc.start()
    except RelayError as exc:
        return VerifyResult(command=argv, passed=False, problem=exc.message,
                            duration_s=time.monotonic() - started)

    async def read() -> None:
        async for line in proc.lines():
            tail.append(line.text)

    timed_out = False
    reader = asyncio.create_task(read())
    try:
        await asyncio.wait_for(asyncio.shield(reader), limit_s)
    except TimeoutError:
        timed_out = True
        await proc.stop(grace=2.0)
        with contextlib.suppress(Exception):
            await reader
    except BaseException:
        await proc.stop(grace=1.0)
        reader.cancel()
        with contextlib.suppress(BaseException):
            await reader
        raise
    result = await proc.wait()
    output = "\n".join([*tail, result.stderr_tail.rstrip()]).strip()[-OUTPUT_TAIL_CHARS:]
    duration = time.monotonic() - started
    if timed_out:
        return VerifyResult(command=argv, passed=False, output=output, duration_s=duration,
                            problem=f"did not finish within {limit_s:g} s and was stopped")
    return VerifyResult(command=argv, passed=result.exit_code == 0, exit_code=result.exit_code,
                        output=output, duration_s=duration,
                        problem=f"killed by signal {result.signal}" if result.signal else None)


async def run_checks(commands: list[list[str]], cwd: Path, limit_s: float,
                     report: Callable[[VerifyResult], Awaitable[None]]) -> str | None:
    """Run ``commands`` in order, reporting each result; stop at the first red one.

    Returns why the work is not accepted, or None when every check passed.
    """
    for command in commands:
        result = await run_check(command, cwd, limit_s=limit_s)
        await report(result)
        if not result.passed:
            why = result.problem or f"exit {result.exit_code}"
            return f"the acceptance check `{' '.join(command)}` failed ({why})"
    return None
