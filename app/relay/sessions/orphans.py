"""Agents a stopped Relay left running: found by their recorded pid, stopped.

Every run records its agent's pid and the process's start time (the runner
does it at the first event). When an engine finds a session whose owning
Relay process is gone, the agent it started may still be working in the
worktree — a second agent there would race it. Such a process is stopped (its
whole process group, as the runner would have) before anything else happens,
but only when its start time matches the record: a reused pid is left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import psutil

from relay.core.store.db import Store

#: start times are floats from /proc; equal within this many seconds means the same process
_SAME_PROCESS_SLACK = 1.0


async def stop_orphan_agents(store: Store, session_id: str, grace: float = 3.0) -> list[int]:
    """Stop the still-running agents of ``session_id``'s unfinished runs; returns their pids."""
    stopped = []
    for pid, started in await store.sessions.unfinished_agents(session_id):
        proc = _same_process(pid, started)
        if proc is not None:
            await asyncio.to_thread(_stop_group, proc, grace)
            stopped.append(pid)
    return stopped


def process_start_time(pid: int) -> float | None:
    """When process ``pid`` started (what a run records beside the pid), or None."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _same_process(pid: int, started: float | None) -> psutil.Process | None:
    if pid == os.getpid():
        return None
    try:
        proc = psutil.Process(pid)
        if started is None or abs(proc.create_time() - started) > _SAME_PROCESS_SLACK:
            return None
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return proc


def _stop_group(proc: psutil.Process, grace: float) -> None:
    try:
        tree = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)  # agents run as their own process group leader
    for p in tree:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(tree, timeout=grace)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=grace)
