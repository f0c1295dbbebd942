"""The new-session dialog builds a spec and starts a demo session."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QDialogButtonBox
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.gui.new_session_dialog import NewSessionDialog, default_runtime, recent_repos
from relay.gui.shell import RelayShell
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.demo import NOTES_FILE
from tests.conftest import make_repo
from tests.gui.conftest import Runner


def _start(dialog: NewSessionDialog, qtbot: QtBot) -> None:
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    QTest.mouseClick(ok, Qt.MouseButton.LeftButton)


def test_the_dialog_starts_a_demo_session(shell: RelayShell, qtbot: QtBot, git_repo: Path) -> None:
    shell.start()
    qtbot.waitUntil(lambda: shell.bridge.tasks.pending == 0, timeout=10_000)  # runtimes probed
    dialog = shell.open_new_session_dialog()
    qtbot.waitExposed(dialog)

    QTest.keyClicks(dialog.repo, str(git_repo))
    QTest.keyClicks(dialog.task, "Write the demo notes")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("demo"))
    assert dialog.worktree.isChecked()
    assert dialog.policy.currentData() == "workspace"
    assert "SIMULATION" in dialog.runtime.currentText()
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        _start(dialog, qtbot)
    assert not dialog.isVisible()
    assert started.args is not None
    session_id = started.args[0]

    vm = shell.sessions_vm
    qtbot.waitUntil(lambda: vm.row_of(session_id) is not None
                    and vm.session_at(vm.row_of(session_id) or 0).state == "completed",
                    timeout=15_000)
    row = vm.session_at(vm.row_of(session_id) or 0)
    assert (row.runtime, row.task, row.simulated) == ("demo", "Write the demo notes", True)
    assert row.workdir is not None
    assert Path(row.workdir) != git_repo
    assert (Path(row.workdir) / NOTES_FILE).is_file()
    listed = vm.index_of(session_id, 2)  # the Account column; the tooltip says SIMULATION
    assert listed.data() == "demo"
    assert "SIMULATION" in listed.data(Qt.ItemDataRole.ToolTipRole)
    # the new session is selected and followed in the stream
    assert shell.sessions_dock.selected_id() == session_id
    assert shell.stream_vm.session_id == session_id
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed", timeout=5000)


def test_invalid_input_is_shown_in_the_dialog(shell: RelayShell, qtbot: QtBot,
                                              tmp_path: Path) -> None:
    dialog = shell.open_new_session_dialog()
    qtbot.waitExposed(dialog)
    _start(dialog, qtbot)
    assert dialog.isVisible()
    assert not dialog.error.isHidden()
    assert "repository" in dialog.error.text()

    QTest.keyClicks(dialog.repo, str(tmp_path / "missing"))
    _start(dialog, qtbot)
    assert "is not a folder" in dialog.error.text()

    dialog.repo.setText(str(tmp_path))
    _start(dialog, qtbot)
    assert "Describe the task" in dialog.error.text()
    assert dialog.isVisible()
    assert dialog.spec() is None
    assert shell.bridge.tasks.pending == 0


def test_the_policy_explanation_follows_the_choice(qtbot: QtBot, qapp: object) -> None:
    dialog = NewSessionDialog([RuntimeInfo("demo", "(built in)", "scripted demo")])
    qtbot.addWidget(dialog)
    dialog.policy.setCurrentIndex(dialog.policy.findData("read_only"))
    assert "no edits" in dialog.policy_help.text()
    dialog.policy.setCurrentIndex(dialog.policy.findData("full"))
    assert "No restrictions" in dialog.policy_help.text()


def test_demo_is_the_default_only_without_an_installed_agent() -> None:
    missing = RuntimeInfo("claude", None, None, problem="claude is not installed.")
    installed = RuntimeInfo("codex", "/usr/bin/codex", "0.1")
    demo = RuntimeInfo("demo", "(built in)", "scripted demo")
    assert default_runtime([missing, demo]) == "demo"
    assert default_runtime([missing, installed, demo]) == "codex"


def test_checks_limit_policy_and_preempt_reach_the_spec(shell: RelayShell, qtbot: QtBot,
                                                        git_repo: Path) -> None:
    dialog = shell.open_new_session_dialog()
    QTest.keyClicks(dialog.repo, str(git_repo))
    QTest.keyClicks(dialog.task, "t")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("demo"))
    QTest.keyClicks(dialog.verify, "pytest -q; ruff check 'src dir'")
    dialog.on_limit.setCurrentIndex(dialog.on_limit.findData("wait"))
    dialog.preempt.setChecked(True)
    spec = dialog.build_spec()
    assert spec.verify == [["pytest", "-q"], ["ruff", "check", "src dir"]]
    assert (spec.on_limit, spec.preempt) == ("wait", True)


def test_a_badly_quoted_check_is_shown_not_started(shell: RelayShell, qtbot: QtBot,
                                                    git_repo: Path) -> None:
    dialog = shell.open_new_session_dialog()
    QTest.keyClicks(dialog.repo, str(git_repo))
    QTest.keyClicks(dialog.task, "t")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("demo"))
    QTest.keyClicks(dialog.verify, "pytest 'unclosed")
    _start(dialog, qtbot)
    assert dialog.isVisible()
    assert dialog.error.isVisible()
    assert "Acceptance check" in dialog.error.text()


def test_ctrl_enter_starts_it_and_its_stream_comes_to_the_front(shell: RelayShell, qtbot: QtBot,
                                                                git_repo: Path) -> None:
    shell.window.resize(1024, 700)
    shell.show()
    qtbot.waitExposed(shell.window)
    shell.designer_dock.show()
    shell.designer_dock.raise_()  # the stream's tab is behind the designer's
    qtbot.waitUntil(lambda: shell.stream_dock.visibleRegion().isEmpty())
    dialog = shell.open_new_session_dialog()
    qtbot.waitExposed(dialog)
    assert "Ctrl+Enter" in dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).toolTip()
    QTest.keyClicks(dialog.repo, str(git_repo))
    QTest.keyClicks(dialog.task, "Write the demo notes")
    dialog.runtime.setCurrentIndex(dialog.runtime.findData("demo"))
    dialog.activateWindow()
    qtbot.waitActive(dialog)
    dialog.task.setFocus()
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        QTest.keyClick(dialog.task, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert not dialog.isVisible()
    spec = dialog.spec()
    assert spec is not None
    assert spec.task == "Write the demo notes"  # no new line typed
    assert started.args is not None
    assert shell.stream_vm.session_id == started.args[0]
    qtbot.waitUntil(lambda: not shell.stream_dock.visibleRegion().isEmpty())


def test_the_repository_box_lists_the_recent_sessions_repositories(
        shell: RelayShell, qtbot: QtBot, arun: Runner, tmp_path: Path) -> None:
    older, newer = make_repo(tmp_path / "older"), make_repo(tmp_path / "newer")
    for repo in (older, newer, older):
        arun(shell.engine.start_session(SessionSpec(repo=repo, task="t", runtime="demo")))
    shell.sessions_vm.refresh()
    qtbot.waitUntil(lambda: len(shell.sessions_vm.rows()) == 3)
    dialog = shell.open_new_session_dialog()
    qtbot.waitExposed(dialog)
    listed = [dialog.repos.itemText(i) for i in range(dialog.repos.count())]
    assert listed == [str(older), str(newer)]  # the newest session's first, each once
    assert dialog.repo.text() == str(older)
    dialog.repos.setCurrentIndex(1)
    assert dialog.repo.text() == str(newer)
    dialog.repo.setText(str(tmp_path))  # still a path to type
    assert dialog.repo.text() == str(tmp_path)


def test_recent_repositories_are_distinct_and_few() -> None:
    repos = ["/a", "/b", "/a", "", "/c", "/b"]
    assert recent_repos(repos) == ["/a", "/b", "/c"]
    assert recent_repos(repos, limit=2) == ["/a", "/b"]


def test_ctrl_enter_in_any_field_starts_it(qtbot: QtBot, qapp: object) -> None:
    dialog = NewSessionDialog([RuntimeInfo("demo", "(built in)", "scripted demo")])
    qtbot.addWidget(dialog)
    dialog.show()
    for field in (dialog.repo, dialog.model, dialog.verify):
        dialog.error.hide()
        QTest.keyClick(field, Qt.Key.Key_Enter, Qt.KeyboardModifier.ControlModifier)
        assert dialog.error.isVisible()  # Start was pressed: nothing to start yet
        assert "repository" in dialog.error.text()
