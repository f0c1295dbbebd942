"""The window fits a laptop (issue 23): with every dock shown and the longest task of the test
data — a session whose task is a 4 KB markdown contract, handed off once, and a pipeline
step whose task is the same contract — the main window's minimum size is at most 1024×640,
it can be resized to exactly that, and no dock asks for more than 640 px of width (its
toolbars overflow into a menu, its panels scroll, its long labels are elided)."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDockWidget, QLabel, QScrollArea, QToolButton, QWidget
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.gui.fit import ElidedLabel, tool_row
from relay.gui.shell import RelayShell

WIDTH, HEIGHT = 1024, 640
DOCK_WIDTH = 640


def contract(size: int = 4096) -> str:
    """A continuation contract in raw markdown, ``size`` characters at least, with long
    unbreakable lines (paths, a commit) as real contracts have."""
    parts = ["# Continuation contract c-61f8fabb493\n\nYou are taking over a task another agent "
             "started. Its work so far is committed as b9f0930af3bbb449cddb6c8c4b4bed0568e63b9d "
             "in this worktree; continue from there.\n\n"]
    section = 0
    while sum(map(len, parts)) < size:
        section += 1
        parts.append(
            f"## Step {section}\n\n- **Goal:** implement `relay/features/module_{section}.py` and its "
            "tests, keeping the public API stable and describing each change in "
            "docs/architecture.md.\n- **Constraint:** work only in this worktree; commit often.\n"
            f"- See app/relay/gui/docks/very/long/path/to/a/file/in/the/repository_{section}.py\n\n")
    return "".join(parts)


def _long_pipeline(repo: Path, task: str) -> None:
    path = repo / ".relay" / "pipelines.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pipelines": [{"name": "contract-pipeline", "nodes": [
        {"id": "plan", "provider": "demo", "task": task, "position": {"x": 0, "y": 0}},
        {"id": "implement", "provider": "demo", "dependsOn": ["plan"],
         "task": f"Implement the plan:\n\n{task}", "position": {"x": 250, "y": 0}},
    ]}]}))


def _show_everything(shell: RelayShell, qtbot: QtBot, repo: Path) -> list[QDockWidget]:
    """The longest task in every dock that shows it; every dock visible."""
    task = contract()
    _long_pipeline(repo, task)
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=repo, task=task, runtime="demo",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=1))
    assert started.args is not None
    session_id = str(started.args[0])
    window = shell.window
    window.show()
    qtbot.waitExposed(window)
    stream = shell.stream_vm
    qtbot.waitUntil(lambda: stream.session is not None and stream.session.id == session_id
                    and stream.session.state == "completed", timeout=30_000)
    designer = shell.designer_vm
    qtbot.waitUntil(lambda: any(p.name == "contract-pipeline" for p in designer.saved),
                    timeout=10_000)
    designer.open("contract-pipeline")
    qtbot.waitUntil(lambda: "plan" in {n.id for n in designer.pipeline.nodes}, timeout=10_000)
    designer.select(["implement"])  # the step panel shows its task
    shell.wallet_vm.refresh()
    qtbot.waitUntil(lambda: shell.wallet_vm.loaded, timeout=10_000)
    shell.history_dock.raise_()
    qtbot.waitUntil(lambda: shell.history_vm.timeline is not None
                    and shell.history_vm.timeline.state == "completed", timeout=15_000)
    docks = window.findChildren(QDockWidget)
    for dock in docks:
        assert not dock.isFloating()
        dock.show()
        dock.raise_()
        qtbot.waitUntil(dock.isVisible, timeout=2000)
    qtbot.waitUntil(lambda: not shell.bridge.tasks.pending, timeout=10_000)
    return docks


def _content(dock: QDockWidget) -> QWidget:
    """What the dock shows, inside the scroll area it may be wrapped in."""
    widget = dock.widget()
    inner = widget.widget() if isinstance(widget, QScrollArea) else widget
    assert inner is not None, dock.windowTitle()
    return inner


def test_the_window_fits_1024_by_640_with_every_dock_and_the_longest_task(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    window = shell.window
    docks = _show_everything(shell, qtbot, git_repo)
    too_big: dict[str, tuple[int, int]] = {}
    for dock in docks:  # each raised in turn: a tabbed dock counts when it is the one shown
        dock.raise_()
        qtbot.waitUntil(dock.isVisible, timeout=2000)
        least = window.minimumSizeHint()
        if least.width() > WIDTH or least.height() > HEIGHT:
            too_big[f"window with {dock.windowTitle()} raised"] = least.toTuple()
        for name, hint in (("dock", dock.minimumSizeHint()),
                           ("content", _content(dock).minimumSizeHint())):
            if hint.width() > DOCK_WIDTH:
                too_big[f"{dock.windowTitle()} ({name})"] = hint.toTuple()
    assert not too_big, (f"at least (w, h) over {WIDTH}×{HEIGHT} (window) or {DOCK_WIDTH} wide "
                         f"(dock): {too_big}")
    effective = window.minimumSize().expandedTo(window.minimumSizeHint())
    assert effective.width() <= WIDTH
    assert effective.height() <= HEIGHT

    window.resize(WIDTH, HEIGHT)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (WIDTH, HEIGHT), timeout=3000)
    assert window.size().toTuple() == (WIDTH, HEIGHT)
    # a message naming the long task in the status bar does not widen the window either
    shell.messages.notice(f"Handoff done: {contract()}")
    shell.messages.error("history", f"Could not read {contract()}", "Try again.")
    assert window.minimumSizeHint().width() <= WIDTH


def test_a_long_title_is_two_cut_lines_whole_on_hover_and_expands(qtbot: QtBot) -> None:
    label = ElidedLabel(lines=2, expandable=True)
    qtbot.addWidget(label)
    text = contract()
    label.setText(text)
    label.resize(400, label.heightForWidth(400))
    label.show()
    qtbot.waitExposed(label)
    shown = painted(label)
    assert len(shown.splitlines()) == 2
    assert shown.endswith("…")
    assert all(label.fontMetrics().horizontalAdvance(line) <= label.contentsRect().width()
               for line in shown.splitlines())
    assert label.text() == text  # the whole text for whoever reads it
    assert label.toolTip().startswith(text[:1000])
    assert label.minimumSizeHint().width() < 200  # it never widens its dock
    assert label.heightForWidth(400) == 2 * label.fontMetrics().lineSpacing()
    QTest.mouseClick(label, Qt.MouseButton.LeftButton, pos=QPoint(5, 5))
    assert label.expanded
    assert len(painted(label).splitlines()) > 2
    QTest.mouseClick(label, Qt.MouseButton.LeftButton, pos=QPoint(5, 5))
    assert len(painted(label).splitlines()) == 2
    label.setText("short")
    assert painted(label) == "short"


def painted(label: ElidedLabel) -> str:
    """What the label paints (Qt's own copy of the text, not the whole text)."""
    return QLabel.text(label)


def test_a_tool_row_overflows_into_a_menu(qtbot: QtBot) -> None:
    buttons = []
    for name in ("New", "Plan…", "Save", "Import…", "Export…", "Undo", "Redo", "Auto-layout"):
        button = QToolButton()
        button.setText(name)
        buttons.append(button)
    row = tool_row(*buttons[:4], None, *buttons[4:])
    qtbot.addWidget(row)
    assert row.minimumSizeHint().width() < row.sizeHint().width() // 2
    row.resize(row.minimumSizeHint().width() + 40, row.sizeHint().height())
    row.show()
    qtbot.waitExposed(row)
    more = row.findChild(QToolButton, "qt_toolbar_ext_button")
    assert more is not None
    qtbot.waitUntil(more.isVisible, timeout=2000)
    assert not buttons[-1].isVisible()  # behind the » button
    row.resize(row.sizeHint())
    qtbot.waitUntil(lambda: buttons[-1].isVisible(), timeout=2000)
    assert not more.isVisible()
