"""A burst never holds the window's loop: the stream view-model applies it in bounded
flushes (all of it shown in the end), a tree no longer shown leaves no cycles behind, and
the GUI thread's collector walks a burst's objects once, young, leaving its full passes to a
quiet moment."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from relay.core.events import AgentEvent, AssistantText, EventRecord, Notice, ToolCall, ToolResult
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui import main_thread_gc
from relay.gui.main_thread_gc import MainThreadCollector
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream_tree import StreamTree, Touched
from tests.gui.conftest import Runner
from tests.gui.helpers import rows_in_display_order


def _burst(session_id: str, first_id: int, n: int) -> list[EventRecord]:
    """``n`` records: text, and calls each followed by its result."""
    events: list[AgentEvent] = []
    for i in range(n):
        if i % 3 == 1:
            events.append(ToolCall(call_id=f"c{i}", name="ls"))
        elif i % 3 == 2:
            events.append(ToolResult(call_id=f"c{i - 1}", output="ok"))
        else:
            events.append(AssistantText(text=f"line {i}"))
    return [EventRecord(id=first_id + i, session_id=session_id, run_id=None, event=e)
            for i, e in enumerate(events)]


def test_a_burst_is_applied_in_bounded_flushes_and_shown_whole(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    row = arun(engine.run_session(SessionSpec(repo=git_repo, task="burst", runtime="demo")))
    stored = arun(engine.session_events(row.id))
    vm = shell.stream_vm
    with qtbot.waitSignal(vm.loaded, timeout=5000):
        vm.load(row.id)
    vm.FLUSH_BUDGET_MS = 0.0  # every flush is over budget after its first chunk
    sizes: list[int] = []
    vm.rowsInserted.connect(lambda _parent, first, last: sizes.append(last - first + 1))
    flushes: list[int] = []
    vm.headerChanged.connect(lambda: flushes.append(vm.event_count()))
    burst = _burst(row.id, stored[-1].id + 1, 1000)

    vm.on_records(burst)  # one batch from the bridge
    qtbot.waitUntil(lambda: vm.event_count() == len(stored) + len(burst), timeout=20_000)

    assert flushes[0] == len(stored) + vm.FLUSH_CHUNK  # a chunk at a time, not the batch
    assert len(flushes) == math.ceil(len(burst) / vm.FLUSH_CHUNK)
    assert max(b - a for a, b in zip([len(stored), *flushes], flushes, strict=False)) \
        == vm.FLUSH_CHUNK
    assert max(sizes) <= vm.FLUSH_CHUNK
    shown = rows_in_display_order(vm)
    assert sorted(shown) == [r.id for r in stored] + [r.id for r in burst]
    assert len(shown) == len(set(shown))


def test_a_tree_no_longer_shown_leaves_no_cycles() -> None:
    tree = StreamTree()
    end = EventRecord(id=301, session_id="s", run_id=None, event=Notice(message="end"))
    for change in tree.add([*_burst("s", 1, 300), end], "s"):
        if not isinstance(change, Touched):
            tree.apply(change)
    assert tree.count == 301
    gc.collect()
    tree.release()
    del tree
    assert gc.collect() == 0  # reference counting freed every node


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations collected, in order (gc.callbacks)."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    yield seen
    gc.callbacks.remove(note)


def test_a_burst_is_walked_young_once_and_swept_at_a_quiet_moment(collections: list[int]) -> None:
    collector = MainThreadCollector()
    collector.start()
    kept: list[list[object]] = []
    try:
        gc.collect()
        young, older = gc.get_threshold()[:2]
        for _ in range(older * 2):  # a burst: every check finds new objects, and they survive
            kept.append([[] for _ in range(young + 1)])
            collections.clear()
            collector.check()
            assert collections == [0]  # the young generation only
        assert gc.get_count()[1] > older  # generation 1 is due, but the process is busy

        collections.clear()
        for _ in range(main_thread_gc.QUIET_CHECKS):
            collector.check()
        assert collections == [1]  # quiet: the generation that was due (not swept yet)
        collections.clear()
        for _ in range(main_thread_gc.SETTLED_CHECKS - main_thread_gc.QUIET_CHECKS - 1):
            collector.check()
        assert collections == []
        settled_before = collector.settled
        collector.check()
        assert (settled_before, collector.settled) == (False, True)
        assert collections == [2]  # settled: everything, once
        frozen = gc.get_freeze_count()
        assert frozen > sum(len(k) for k in kept)  # what survived is not walked again

        collections.clear()
        collector.check()
        assert collections == []  # nothing new is due

        for _ in range(older * main_thread_gc.OVERDUE * 2):  # the next burst, longer
            kept.append([[] for _ in range(young + 1)])
            collector.check()
        assert set(collections) == {0}  # young only, however long it lasts …
        assert gc.get_freeze_count() > frozen + (young + 1) * older  # … its survivors frozen
    finally:
        collector.stop()
    assert gc.get_freeze_count() == 0  # stop gives the frozen objects back


def test_a_busy_process_still_collects_an_overdue_generation(collections: list[int]) -> None:
    collector = MainThreadCollector()
    collector.start()
    kept: list[list[object]] = []
    try:
        gc.collect()
        young, older = gc.get_threshold()[:2]
        for _ in range(older * main_thread_gc.OVERDUE + 2):
            kept.append([[] for _ in range(young + 1)])
            collector.check()
        assert 1 in collections  # busy all along, and generation 1 was collected anyway
    finally:
        collector.stop()
