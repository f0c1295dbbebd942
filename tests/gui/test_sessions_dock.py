"""The sessions list, state first: plain words with colour and icon, account chain,
pipeline steps under their run, filters, archive, and a context menu that works on a
finished session too; the tray's badge and its sessions that need the user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionRow, SessionSpec
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.resources import app_icon
from relay.gui.shell import RelayShell
from relay.gui.state_look import look, time_left
from relay.gui.tray import RelayTray
from relay.gui.viewmodels.sessions import COLUMNS, SessionsViewModel
from tests.gui.conftest import Runner

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def row(sid: str, state: str = "completed", minute: int = 0, **kw: object) -> SessionRow:
    values: dict[str, object] = dict(
        id=sid, repo="/src/app", task=f"task of {sid}\nmore", runtime="claude", model=None,
        state=state, permission="workspace", workdir=None, branch=None, agent_session_id=None,
        reason=None, simulated=False, created_at=T0 + timedelta(minutes=minute),
        updated_at=T0 + timedelta(minutes=minute))
    values.update(kw)
    return SessionRow.model_validate(values)


def cell(vm: SessionsViewModel, sid: str, column: str, role: int = 0) -> object:
    return vm.index_of(sid, COLUMNS.index(column)).data(role or Qt.ItemDataRole.DisplayRole)


def visible_ids(shell: RelayShell) -> list[str]:
    proxy, out = shell.sessions_dock.proxy, []

    def walk(parent: QModelIndex) -> None:
        for r in range(proxy.rowCount(parent)):
            index = proxy.index(r, 0, parent)
            sid = index.data(SessionsViewModel.SessionIdRole)
            if sid:
                out.append(sid)
            walk(index)
    walk(QModelIndex())
    return out


def test_the_words_colours_and_icons_of_each_state(qapp: object) -> None:
    now = T0
    assert look("needs_input").word == "needs input"
    assert look("completed").word == "done"
    assert look("waiting", resume_at=now + timedelta(seconds=192), now=now).word \
        == "waiting · 3m 12s"
    assert look("quota_blocked", reset_at=T0).word.startswith("quota-blocked · resets ")
    assert look("running", handed_to="claude:personal").word == "handed off → personal"
    assert time_left(now + timedelta(hours=4, seconds=61), now) == "4h 01m 01s"
    assert look("failed").colour() == QColor(theme.ERROR)
    assert look("needs_input").colour() == QColor(theme.NEEDS_INPUT)
    icons = {s: look(s).qicon().pixmap(16, 16).toImage() for s in
             ("running", "needs_input", "waiting", "completed", "failed", "cancelled")}
    assert all(not i.isNull() for i in icons.values())
    assert len({bytes(i.constBits()) for i in icons.values()}) == len(icons)  # all differ


def test_state_first_account_chain_and_pipeline_steps_under_their_run(
        shell: RelayShell) -> None:
    vm = shell.sessions_vm
    vm.set_rows([
        row("a", "needs_input", 1, entries=["claude:work", "claude:personal", "ollama"]),
        row("b", "waiting", 2, wait_until=datetime.now(UTC) + timedelta(minutes=3)),
        row("c", "running", 3, handing_to="codex:personal", entries=["claude:work"]),
        row("s1", "completed", 4, pipeline_step="run1/plan", pipeline_name="release"),
        row("s2", "running", 5, pipeline_step="run1/build", pipeline_name="release"),
    ])

    assert cell(vm, "a", "State") == "needs input"
    assert cell(vm, "a", "Account") == "work → personal → ollama"
    assert cell(vm, "a", "Task") == "task of a"  # the first line
    assert str(cell(vm, "b", "State")).startswith("waiting · ")
    assert cell(vm, "c", "State") == "handed off → personal"
    assert cell(vm, "a", "State", Qt.ItemDataRole.ForegroundRole) == QColor(theme.NEEDS_INPUT)
    assert COLUMNS[0] == "State"
    # the run's row holds its steps, oldest first, and takes its busiest step's state
    run = vm.index(0, 0)
    assert run.data(SessionsViewModel.RunRole) == "run1"
    assert vm.index(0, 1).data() == "pipeline release · 2 steps"
    assert run.data() == "running"
    assert [vm.index(i, 1, run).data() for i in range(vm.rowCount(run))] == [
        "plan · task of s1", "build · task of s2"]
    assert vm.parent(vm.index_of("s2")) == run
    assert vm.rowCount() == 4  # three sessions and one run
    assert shell.sessions_dock.table.isExpanded(shell.sessions_dock.proxy.mapFromSource(run))
    assert "1 needs you" not in shell.sessions_dock.count.text()
    assert "2 need you" in shell.sessions_dock.count.text()


def test_filter_by_state_repository_and_text(shell: RelayShell, qtbot: QtBot) -> None:
    dock = shell.sessions_dock
    shell.sessions_vm.set_rows([
        row("a", "needs_input", 1, repo="/src/app"),
        row("b", "completed", 2, repo="/src/lib", task="Fix the parser"),
        row("s1", "failed", 3, repo="/src/app", pipeline_step="r/x", pipeline_name="nightly"),
    ])
    assert visible_ids(shell) == ["s1", "b", "a"]

    dock.state_filter.setCurrentText("Failed or stopped")
    assert visible_ids(shell) == ["s1"]  # under its run, which shows for it
    dock.state_filter.setCurrentText("All states")
    dock.repo_filter.setCurrentIndex(dock.repo_filter.findData("/src/lib"))
    assert visible_ids(shell) == ["b"]
    dock.repo_filter.setCurrentIndex(0)
    QTest.keyClicks(dock.search, "PARSER")
    assert visible_ids(shell) == ["b"]
    dock.search.setText("nightly")
    assert visible_ids(shell) == ["s1"]
    dock.search.clear()
    assert len(visible_ids(shell)) == 3


def test_the_menu_works_on_a_finished_session(shell: RelayShell, qtbot: QtBot,
                                              tmp_path: Path) -> None:
    dock = shell.sessions_dock
    shell.sessions_vm.set_rows([row("done1", "completed", workdir=str(tmp_path)),
                                row("run1", "running", 1)])
    menu = dock.menu_for(shell.sessions_vm.session("done1") or row("x"))
    enabled = {a.objectName(): a.isEnabled() for a in menu.actions() if a.objectName()}

    assert enabled == {"openStream": True, "viewHistory": True, "continueSession": True,
                       "forkSession": True, "stopSession": False, "handoffNow": False,
                       "handoffTo": False, "archiveSession": True, "copySessionId": True,
                       "openWorktree": True}
    actions = {a.objectName(): a for a in menu.actions()}
    for name, signal in (("openStream", dock.openRequested),
                         ("viewHistory", dock.historyRequested),
                         ("continueSession", dock.continueRequested)):
        with qtbot.waitSignal(signal, timeout=1000) as seen:
            actions[name].trigger()
        assert seen.args == ["done1"]
    actions["copySessionId"].trigger()
    assert QGuiApplication.clipboard().text() == "done1"
    opened: list[str] = []

    def opener(path: str) -> bool:
        opened.append(path)
        return True
    dock.open_folder = opener
    actions["openWorktree"].trigger()
    assert opened == [str(tmp_path)]
    # a running one: stop and hand off, not archive
    running = dock.context_menu(shell.sessions_vm.row_of("run1") or 0)
    on = {a.objectName(): a.isEnabled() for a in running.actions() if a.objectName()}
    assert (on["stopSession"], on["handoffNow"], on["archiveSession"]) == (True, True, False)


def test_archive_from_the_menu_hides_it_and_show_archived_brings_it_back(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path) -> None:
    done = arun(engine.run_session(SessionSpec(repo=git_repo, task="old work", runtime="demo")))
    vm, dock = shell.sessions_vm, shell.sessions_dock
    with qtbot.waitSignal(vm.refreshed, timeout=5000):
        vm.refresh()
    menu = dock.context_menu(vm.row_of(done.id) or 0)
    archive = next(a for a in menu.actions() if a.objectName() == "archiveSession")
    assert archive.text() == "Archive"

    archive.trigger()

    qtbot.waitUntil(lambda: vm.row_of(done.id) is None, timeout=5000)
    assert arun(engine.get_session(done.id)).archived_at is not None
    dock.archived.setChecked(True)
    qtbot.waitUntil(lambda: vm.row_of(done.id) is not None, timeout=5000)
    assert str(cell(vm, done.id, "State")).endswith("· archived")
    assert cell(vm, done.id, "Task", Qt.ItemDataRole.ForegroundRole) == QColor(theme.MUTED)
    menu = dock.context_menu(vm.row_of(done.id) or 0)
    unarchive = next(a for a in menu.actions() if a.objectName() == "archiveSession")
    assert unarchive.text() == "Unarchive"
    unarchive.trigger()
    qtbot.waitUntil(lambda: cell(vm, done.id, "State") == "done", timeout=5000)
    dock.archived.setChecked(False)
    qtbot.waitUntil(lambda: not vm.show_archived and vm.row_of(done.id) is not None,
                    timeout=5000)
    # Continue… shows its stream with the composer focused, to write to its agent
    shell.window.show()
    qtbot.waitExposed(shell.window)
    continue_ = next(a for a in dock.context_menu(vm.row_of(done.id) or 0).actions()
                     if a.objectName() == "continueSession")
    continue_.trigger()
    qtbot.waitUntil(lambda: shell.composer.text.isEnabled()
                    and shell.window.focusWidget() is shell.composer.text, timeout=5000)
    assert shell.stream_vm.session_id == done.id


def _badge_pixel(tray: RelayTray) -> QColor:
    image: QImage = tray.icon().pixmap(64, 64).toImage()
    return image.pixelColor(int(64 * 0.71), int(64 * 0.9))  # inside the dot, below its digit


def test_the_tray_wears_a_badge_and_lists_the_sessions_that_need_you(
        qtbot: QtBot, qapp: object) -> None:
    tray = RelayTray(app_icon())
    plain = tray.icon().pixmap(64, 64).toImage()
    asks = row("q1", "needs_input", task="Which database?")
    waits = row("w1", "waiting", 1, wait_until=datetime.now(UTC) + timedelta(hours=1))

    tray.set_attention([asks, waits])

    texts = [a.text() for a in tray.menu.actions() if not a.isSeparator()]
    assert texts[0] == "needs input — Which database?"
    assert texts[1].startswith("waiting · ")
    assert texts[2:] == ["Show window", "New session…", "Quit"]
    assert tray.icon().pixmap(64, 64).toImage() != plain
    assert _badge_pixel(tray) == QColor(theme.NEEDS_INPUT)
    assert "2 need you" in tray.toolTip()
    with qtbot.waitSignal(tray.sessionRequested, timeout=1000) as clicked:
        tray.menu.actions()[0].trigger()
    assert clicked.args == ["q1"]

    tray.set_attention([waits])
    assert _badge_pixel(tray) == QColor(theme.WARNING)
    tray.set_attention([])
    assert [a.text() for a in tray.menu.actions() if not a.isSeparator()] == [
        "Show window", "New session…", "Quit"]
    assert tray.icon().pixmap(64, 64).toImage() == plain


def test_the_shell_feeds_the_tray_and_a_click_shows_the_session(
        shell: RelayShell, qtbot: QtBot) -> None:
    shell.sessions_vm.set_rows([row("q1", "needs_input"), row("d1", "completed", 1)])
    assert [s.id for s in shell.tray.attention] == ["q1"]
    shell.tray.menu.actions()[0].trigger()
    assert shell.stream_vm.session_id == "q1"
    assert shell.sessions_dock.selected_id() == "q1"
