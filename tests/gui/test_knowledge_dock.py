"""The Knowledge dock over a real index: scan a repository, search it, preview a hit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.docks.knowledge_dock import KnowledgeDock
from relay.gui.knowledge_backend import KnowledgeBackend
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.knowledge import RELEVANCE_COLUMN, KnowledgeViewModel
from tests.conftest import make_repo
from tests.gui.conftest import Runner

GREETER = '''"""Greetings."""

import os


def greet(name: str) -> str:
    """Say hello to someone by name."""
    return f"Hello, {name}!"


class Farewell:
    def wave(self) -> str:
        return "bye"
'''


@pytest.fixture
def dock(engine: Engine, arun: Runner, qtbot: QtBot) -> Iterator[KnowledgeDock]:
    bridge = EngineBridge(engine)
    dock = KnowledgeDock(KnowledgeViewModel(bridge, KnowledgeBackend(engine)))
    qtbot.addWidget(dock)
    dock.show()
    errors: list[tuple[str, str]] = []
    bridge.tasks.failed.connect(lambda ctx, msg, hint: errors.append((msg, hint)))
    bridge.tasks.failed.connect(lambda ctx, msg, hint: dock.show_error(msg, hint))
    yield dock
    arun(bridge.aclose())


def test_rescan_search_and_preview_the_lines(dock: KnowledgeDock, tmp_path: Path,
                                             qtbot: QtBot) -> None:
    repo = make_repo(tmp_path / "proj", {"greeter.py": GREETER, "README.md": "# proj\n"})
    dock.follow_repo(repo)
    assert dock.rescan.isEnabled()

    dock.rescan.click()
    qtbot.waitUntil(lambda: dock.status.text().startswith("Scanned"), timeout=10_000)
    assert "symbols" in dock.status.text()
    dock.only_repo.setChecked(True)
    dock.query.setText("greet name")
    dock.query.returnPressed.emit()
    qtbot.waitUntil(lambda: dock.vm.rowCount() > 0, timeout=10_000)

    assert dock.pages.currentIndex() == 1
    top = dock.vm.hits[0]
    assert top.path == "greeter.py"
    assert "greet" in top.title
    assert "hit" in dock.status.text()
    assert str(repo) in dock.status.text()
    dock.table.selectRow(0)
    qtbot.waitUntil(lambda: "def greet" in dock.preview.toPlainText(), timeout=10_000)
    assert dock.preview_title.text().startswith(f"greeter.py:{top.start}")
    shown = dock.preview.toPlainText().splitlines()
    assert shown[0].split()[0] == str(max(1, (top.start or 1) - 3))  # numbered from the file


def test_nothing_found_and_errors_show_in_place(dock: KnowledgeDock, tmp_path: Path,
                                                qtbot: QtBot) -> None:
    repo = make_repo(tmp_path / "never-scanned")
    dock.follow_repo(repo)
    dock.only_repo.setChecked(True)
    dock.query.setText("anything")
    dock.query.returnPressed.emit()
    qtbot.waitUntil(dock.error.isVisible, timeout=10_000)
    assert "nothing for" in dock.error.text()
    assert "Scan it first" in dock.error.text()

    dock.query.setText("   ")
    dock.query.returnPressed.emit()
    assert "Type words" in dock.status.text()


def test_the_window_scopes_the_dock_to_the_shown_session(shell: RelayShell, arun: Runner,
                                                          tmp_path: Path, qtbot: QtBot) -> None:
    repo = make_repo(tmp_path / "shown", {"greeter.py": GREETER})
    session_id = arun(shell.engine.start_session(SessionSpec(repo=repo, task="x", runtime="demo")))
    dock = shell.knowledge_dock
    assert not dock.rescan.isEnabled()

    with qtbot.waitSignal(shell.stream_vm.loaded, timeout=5000):
        shell.stream_vm.load(session_id)

    assert dock.rescan.isEnabled()
    dock.only_repo.setChecked(True)
    assert dock.vm.scope == repo.resolve()
    assert dock.vm.scan_repo == repo.resolve()
    arun(shell.engine.wait_session(session_id))


def bar_pixels(dock: KnowledgeDock, row: int) -> int:
    """How many pixels of the row's Relevance cell are the accent's (the bar's) hue."""
    index = dock.vm.index(row, RELEVANCE_COLUMN)
    image = dock.table.viewport().grab(dock.table.visualRect(index)).toImage()
    accent = QColor(theme.ACCENT)
    found = 0
    for y in range(image.height()):
        for x in range(image.width()):
            got = image.pixelColor(x, y)
            if got.blue() - got.red() > 60 and abs(got.hue() - accent.hue()) < 20:
                found += 1
    return found


def test_hits_show_a_rank_and_a_relative_bar_not_a_raw_score(
        dock: KnowledgeDock, tmp_path: Path, qtbot: QtBot) -> None:
    repo = make_repo(tmp_path / "proj", {"greeter.py": GREETER})
    dock.follow_repo(repo)
    dock.rescan.click()
    qtbot.waitUntil(lambda: dock.status.text().startswith("Scanned"), timeout=10_000)
    dock.query.setText("greet name wave")
    dock.query.returnPressed.emit()
    qtbot.waitUntil(lambda: dock.vm.rowCount() > 1, timeout=10_000)
    vm, last = dock.vm, dock.vm.rowCount() - 1
    assert vm.headerData(RELEVANCE_COLUMN, Qt.Orientation.Horizontal) == "Relevance"
    shown = [vm.index(r, RELEVANCE_COLUMN).data() for r in range(vm.rowCount())]
    assert shown == [f"#{r + 1}" for r in range(vm.rowCount())]
    assert not any("e-" in str(vm.index(r, c).data())
                   for r in range(vm.rowCount()) for c in range(vm.columnCount()))
    fractions = [vm.index(r, RELEVANCE_COLUMN).data(vm.RelativeRole) for r in range(last + 1)]
    assert fractions[0] == 1.0
    assert fractions == sorted(fractions, reverse=True)
    assert fractions[-1] < 1.0
    tip = vm.index(0, RELEVANCE_COLUMN).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith(f"Rank 1 of {last + 1}: 100% of the best match's score")
    dock.resize(900, 500)
    qtbot.waitUntil(lambda: bar_pixels(dock, 0) > 0)
    assert bar_pixels(dock, 0) > bar_pixels(dock, last)


def test_a_search_for_what_an_agent_did_shows_its_session(
        engine: Engine, dock: KnowledgeDock, arun: Runner, git_repo: Path,
        qtbot: QtBot) -> None:
    row = arun(engine.run_session(SessionSpec(repo=git_repo, task="Write the notes.",
                                              runtime="demo")))
    arun(engine.knowledge.wait_idle())
    dock.query.setText("edit_file")
    dock.query.returnPressed.emit()
    qtbot.waitUntil(lambda: dock.vm.rowCount() > 0, timeout=10_000)
    hits = [(dock.vm.index(r, 0).data(), dock.vm.index(r, 1).data(), dock.vm.index(r, 2).data())
            for r in range(dock.vm.rowCount())]
    assert ("Write the notes.", f"session {row.id}", "activity") in hits
