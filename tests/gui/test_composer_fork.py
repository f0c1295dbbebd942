"""Forks in the window on the real engine (the demo runtime: the signed brief carries the
work): "Fork from here…" on a stream row and "Fork session at this commit…" in History start
a new session in its own worktree, the window shows it, and its History names its parent."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.composer import TextDialog
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.history import HistoryViewModel
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner


def _accept(dialog: TextDialog | None, prompt: str = "") -> None:
    assert dialog is not None
    assert dialog.isVisible()
    dialog.body.setPlainText(prompt)
    dialog.ok.click()


def _shows_a_fork_of(shell: RelayShell, qtbot: QtBot, parent: str) -> str:
    """Wait for the window to show a new session forked from ``parent``; its id."""
    qtbot.waitUntil(lambda: shell.stream_vm.session_id not in (None, parent), timeout=10_000)
    fork_id = shell.stream_vm.session_id
    assert fork_id is not None
    shell.history_dock.raise_()
    vm = shell.history_vm
    qtbot.waitUntil(lambda: vm.timeline is not None and vm.timeline.session_id == fork_id
                    and vm.timeline.fork_of is not None, timeout=15_000)
    assert shell.history_dock.lineage.isVisible()
    assert shell.history_dock.lineage.text().startswith(f"Forked from {parent} at ")
    return fork_id


def test_fork_from_a_stream_row_starts_a_session_there(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    parent = arun(engine.run_session(SessionSpec(repo=git_repo, task="write the notes",
                                                 runtime="demo")))
    shell.show()
    with qtbot.waitSignal(shell.stream_vm.loaded, timeout=5000):
        shell.show_session(parent.id)
    vm, view = shell.stream_vm, shell.stream_dock.view
    turn = next(vm.index(r, 0) for r in range(vm.rowCount())
                if vm.index(r, 0).data(Vm.KindRole) == "turn_completed")
    event_id = int(turn.data(Vm.RecordIdRole))

    menu = shell.stream_dock.row_menu(view.visualRect(turn).center())
    [fork] = [a for a in menu.actions() if a.objectName() == "forkFromHere"]
    fork.trigger()
    menu.close()
    _accept(shell.composer.fork_dialog, "now add a changelog too")

    fork_id = _shows_a_fork_of(shell, qtbot, parent.id)
    spec = arun(engine.session_spec(fork_id))
    assert spec.fork_of is not None
    assert (spec.fork_of.session_id, spec.fork_of.at_event) == (parent.id, event_id)
    assert "now add a changelog too" in spec.task
    row = arun(engine.wait_session(fork_id), timeout=30)
    assert row.workdir != parent.workdir
    assert arun(engine.get_session(parent.id)).state == "completed"  # untouched


def test_fork_at_a_history_commit(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    parent = arun(engine.run_session(SessionSpec(repo=git_repo, task="write the notes",
                                                 runtime="demo")))
    shell.show()
    shell.show_session(parent.id)
    dock, vm = shell.history_dock, shell.history_vm
    dock.raise_()
    qtbot.waitUntil(lambda: vm.timeline is not None and vm.timeline.session_id == parent.id
                    and bool(vm.timeline.commits), timeout=15_000)
    assert vm.timeline is not None
    sha = vm.timeline.commits[-1].sha
    found = vm.model.match(vm.model.index(0, 0), HistoryViewModel.KeyRole, f"commit:{sha}", 1,
                           Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive)
    assert found
    dock.tree.expandAll()
    dock.tree.scrollTo(found[0])

    menu = dock.node_menu(dock.tree.visualRect(found[0]).center())
    [fork] = [a for a in menu.actions() if a.objectName() == "forkAtCommit"]
    assert fork.isEnabled()
    fork.trigger()
    menu.close()
    _accept(shell.composer.fork_dialog)  # no new prompt: the parent's task

    fork_id = _shows_a_fork_of(shell, qtbot, parent.id)
    spec = arun(engine.session_spec(fork_id))
    assert spec.fork_of is not None
    assert (spec.fork_of.session_id, spec.fork_of.at_commit, spec.fork_of.sha) == (
        parent.id, sha, sha)
    arun(engine.wait_session(fork_id), timeout=30)

