"""The History dock follows the shown session live, reads nothing while hidden, and shows
errors in place; the finish dialog refuses a merge with its reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.history_backend import HostHistoryBackend
from relay.gui.history_dialogs import FinishDialog
from relay.gui.shell import RelayShell
from relay.history.model import FinishSummary, Timeline
from tests.gui.test_history_dock import open_history, run_handoff

Runner = Callable[..., Any]


class CountingBackend(HostHistoryBackend):
    """The real backend, counting the timelines it reads."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.timelines = 0

    async def timeline(self, session_id: str) -> Timeline:
        self.timelines += 1
        return await super().timeline(session_id)


def test_the_dock_follows_a_running_session_live(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    shell.window.show()
    qtbot.waitExposed(shell.window)
    shell.history_dock.raise_()
    assert shell.history_dock.pages.currentIndex() == 0  # nothing shown yet
    session_id = run_handoff(shell, qtbot, git_repo)
    vm = shell.history_vm
    # no refresh asked for: the session's records made the dock read it again
    qtbot.waitUntil(lambda: vm.timeline is not None and vm.timeline.state == "completed"
                    and len(vm.timeline.stints) == 2, timeout=15_000)
    assert vm.session_id == session_id
    assert shell.history_dock.pages.currentIndex() == 1
    assert vm.model.item(2).text() == "2 · demo:backup — completed"
    qtbot.waitUntil(lambda: bool(shell.history_dock.diff.rows.files), timeout=10_000)
    assert shell.history_dock.diff_title.text().startswith("The whole session: main @ ")


def test_a_hidden_dock_reads_nothing_until_shown(
        arun: Runner, engine: Engine, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    backend = CountingBackend(engine)
    shell = RelayShell(engine, history=backend)
    try:
        shell.window.show()
        qtbot.waitExposed(shell.window)
        # tabbed behind the stream: in the window, out of sight
        assert shell.history_dock.visibleRegion().isEmpty()
        assert not shell.history_vm.active
        run_handoff(shell, qtbot, git_repo)
        assert shell.history_vm.session_id is not None
        assert backend.timelines == 0
        assert shell.history_vm.timeline is None
        open_history(shell, qtbot)
        assert backend.timelines >= 1
    finally:
        arun(shell.aclose())


def test_errors_show_in_the_dock(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=git_repo, task="in place", runtime="demo",
                                        worktree=False))
    assert started.args is not None
    vm = shell.stream_vm
    qtbot.waitUntil(lambda: vm.session is not None and vm.session.finished, timeout=20_000)
    open_history(shell, qtbot, stints=1)
    dock = shell.history_dock
    # the whole session's diff needs a branch: the refusal is shown here, not raised
    qtbot.waitUntil(lambda: not dock.error.isHidden(), timeout=10_000)
    assert dock.error.text().startswith(f"Session {vm.session.id} has no branch to compare."
                                        if vm.session else "?")
    assert "→ It ran in place" in dock.error.text()
    assert not dock.finish_button.isEnabled()
    assert "Traceback" not in dock.error.text()


def test_the_finish_dialog_refuses_a_merge_with_the_reason(qtbot: QtBot) -> None:
    summary = FinishSummary("s1", "relay/s1", "main", "b" * 40, "c" * 40, 1,
                            [("a.py", "modified", 2, 1)], ["codex — 1 run, 1 file changed"],
                            can_merge=False, why_not="main has uncommitted changes")
    dialog = FinishDialog(summary)
    qtbot.addWidget(dialog)
    assert dialog.merge.text() == "Merge into main"
    assert not dialog.merge.isEnabled()
    assert dialog.merge.toolTip() == "Cannot merge: main has uncommitted changes"
    assert not dialog.why_not.isHidden()
    assert dialog.why_not.text() == "Cannot merge into main: main has uncommitted changes"
    with qtbot.waitSignal(dialog.actionChosen) as chosen:
        dialog.keep.click()
    assert chosen.args == ["keep"]
