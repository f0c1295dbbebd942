"""How many worker processes a cold scan starts: the free cores, never fewer than one."""

from __future__ import annotations

import os

import pytest

from relay.wallet import usage_pool


@pytest.mark.parametrize(("running", "cores", "free"), [(1, 2, 2), (2, 2, 1), (3, 2, 1),
                                                        (9, 2, 1), (2, 8, 7), (1, 1, 1)])
def test_free_cores_are_the_cores_less_what_else_runs_now(
        monkeypatch: pytest.MonkeyPatch, running: int, cores: int, free: int) -> None:
    monkeypatch.setattr(usage_pool, "_running_now", lambda: running)  # this thread is one
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    assert usage_pool.free_cores() == free


def test_without_proc_the_load_average_says_how_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_pool, "_running_now", lambda: None)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.6, 1.0, 1.0))
    assert usage_pool.free_cores() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 1.0, 1.0))
    assert usage_pool.free_cores() == 4


def test_the_running_threads_are_read_from_proc() -> None:
    running = usage_pool._running_now()
    assert running is None or running >= 1  # at least the thread asking
