"""Cyclic garbage is collected on the GUI thread only while the window runs: a Qt object
destroyed by a worker thread's collection aborts the process."""

from __future__ import annotations

import gc
import threading
from typing import Any

from pytestqt.qtbot import QtBot

from relay.gui.main_thread_gc import MainThreadCollector


class Cycle:
    """A reference cycle that records the thread that destroys it."""

    def __init__(self, seen: list[int]) -> None:
        self.me: Any = self
        self.seen = seen

    def __del__(self) -> None:
        self.seen.append(threading.get_ident())


def test_a_worker_thread_never_collects_and_the_gui_thread_does(qtbot: QtBot) -> None:
    outer = gc.isenabled()  # the GUI tests' own collector may have it off already
    gc.enable()
    collector = MainThreadCollector()
    collector.start()
    try:
        assert not gc.isenabled()
        seen: list[int] = []
        made = gc.get_threshold()[0] * 3

        def allocate() -> None:  # unreachable cycles, far past the first threshold
            for _ in range(made):
                Cycle(seen)

        worker = threading.Thread(target=allocate)
        worker.start()
        worker.join()
        assert seen == []  # the worker's allocations collected nothing
        qtbot.waitUntil(lambda: len(seen) == made, timeout=5000)  # the GUI thread's timer did
        assert set(seen) == {threading.get_ident()}
    finally:
        collector.stop()
        back_on = gc.isenabled()
        if not outer:
            gc.disable()
    assert back_on  # as it was before this collector started


def test_check_collects_only_when_a_threshold_is_passed() -> None:
    collector = MainThreadCollector()
    collector.start()
    try:
        gc.collect()
        assert collector.check() == 0  # nothing due
        seen: list[int] = []
        for _ in range(gc.get_threshold()[0] + 1):
            Cycle(seen)
        assert collector.check() > 0
        assert len(seen) == gc.get_threshold()[0] + 1
    finally:
        collector.stop()
