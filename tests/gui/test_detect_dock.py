"""The Detect dock over in-memory detection: table, detail, actions, watcher, tray."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextDocument
from PySide6.QtWidgets import QDialogButtonBox, QHeaderView, QLabel
from pytestqt.qtbot import QtBot

from relay.core.events import LimitHit
from relay.core.models import SessionSpec
from relay.detect.ambient import Announcement
from relay.detect.lift import _limit_why
from relay.detect.model import Intent
from relay.detect.present import short_path
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.bridge import EngineBridge
from relay.gui.detect_backend import AdoptAnswer
from relay.gui.detect_text import detail_html
from relay.gui.docks.detect_dock import EMPTY_TEXT, DetectDock
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.detect import DetectViewModel
from relay.runtimes.base import RuntimeInfo
from tests.conftest import make_repo
from tests.gui.conftest import Runner
from tests.gui.detect_fakes import HOUR, MIN, NOW, FakeDetect, blocked, refused, session, waiting
from tests.gui.wallet_fakes import codex_key


class Opener:
    """A desktop that opens (or not) what it is given."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.opened: list[Path] = []

    def __call__(self, path: Path) -> bool:
        self.opened.append(path)
        return self.answer


@pytest.fixture
def backend() -> FakeDetect:
    return FakeDetect()


@pytest.fixture
def opener() -> Opener:
    return Opener(False)


@pytest.fixture
def dock(engine: Engine, backend: FakeDetect, opener: Opener, arun: Runner,
         qtbot: QtBot) -> Iterator[DetectDock]:
    bridge = EngineBridge(engine)
    vm = DetectViewModel(bridge, backend, clock=lambda: NOW, opener=opener)
    dock = DetectDock(vm)
    bridge.tasks.failed.connect(lambda _c, m, h: dock.show_error(m, h))  # as the shell does
    qtbot.addWidget(dock)
    dock.resize(720, 900)
    dock.show()
    vm.start()
    qtbot.waitUntil(lambda: vm.rowCount() == 7 and bool(vm.targets()), timeout=5000)
    yield dock
    vm.stop()
    arun(bridge.aclose())


def idle(dock: DetectDock) -> bool:
    return dock.vm._bridge.tasks.pending == 0


def cells(dock: DetectDock, row: int) -> list[str]:
    return [str(dock.vm.index(row, col).data()) for col in range(dock.vm.columnCount())]


def clock(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).astimezone().strftime("%H:%M")


def state_of(shell: RelayShell, session_id: str) -> str | None:
    """A Relay session's state as the Sessions list has it."""
    row = shell.sessions_vm.row_of(session_id)
    return None if row is None else shell.sessions_vm.session_at(row).state


def select(dock: DetectDock, session_id: str) -> None:
    row = dock.vm.row_of(session_id)
    assert row is not None
    dock.table.selectRow(row)


# -- the table ------------------------------------------------------------------------------

def test_each_session_is_a_row_with_its_state_age_usage_account_and_task(
        dock: DetectDock) -> None:
    vm = dock.vm
    assert [vm.headerData(c, Qt.Orientation.Horizontal) for c in range(7)] == [
        "Runtime", "Repository", "State", "Age", "Usage", "Account", "Task"]
    # on screen the task comes second: what tells the rows apart, even in a narrow dock
    header = dock.table.horizontalHeader()
    assert [header.logicalIndex(v) for v in range(7)] == [0, 6, 1, 2, 3, 4, 5]
    assert dock.pages.currentIndex() == 1
    assert cells(dock, 0) == ["Claude", "shop", "working", "1m", "1.2M", "claude",
                              "Add a cart page"]
    assert cells(dock, 1) == ["Codex", "api", "needs input", "1m", "58.0k", "codex",
                              "Upgrade the ORM"]
    assert cells(dock, 2) == ["Claude", "shop", f"blocked until {clock(NOW + 2 * HOUR + 10 * MIN)}",
                              "20m", "1.1M", "claude:work",  # its first prompt, on one line
                              "Port the billing module to the new API and keep the old "
                              "endpoints working"]
    assert cells(dock, 3)[1:4] == ["docs", "idle", "1m"]
    assert cells(dock, 4) == ["Pi", short_path("/home/me/notes"), "ended", "5h", "—",
                              "pi", "Summarise the notes"]  # not in a repository; no usage: —
    assert cells(dock, 5)[2] == "crashed"
    assert cells(dock, 6)[1:3] == ["—", "unknown"]
    assert cells(dock, 6)[6] == "—"  # no prompt recorded
    header = dock.table.horizontalHeader()  # the task takes the room left
    assert header.sectionResizeMode(6) == QHeaderView.ResizeMode.Stretch
    state = vm.index(1, 2)
    assert state.data(Qt.ItemDataRole.ForegroundRole) == QColor(theme.WARNING)
    assert state.data(Qt.ItemDataRole.FontRole).bold()
    assert vm.index(0, 2).data(Qt.ItemDataRole.FontRole) is None
    tip = vm.index(2, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("Port the billing module to the new API and keep the old endpoints")
    assert "last turn ended on a usage limit" in tip
    assert "no live process" in tip
    assert dock.count.text() == "7 sessions · 3 live · scanned in 0.0 s"


def test_blocked_with_its_reset_past_or_unknown(dock: DetectDock, backend: FakeDetect,
                                                qtbot: QtBot) -> None:
    due = replace(blocked(), resets_at_ms=NOW - MIN)
    unknown = replace(blocked(), agent_session_id="other", resets_at_ms=None)
    backend.sessions = [due, unknown]
    dock.vm.refresh()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 2, timeout=5000)
    assert cells(dock, 0)[2] == "blocked · reset due"
    assert cells(dock, 1)[2] == "blocked"


def test_no_sessions_says_where_they_come_from(engine: Engine, arun: Runner,
                                               qtbot: QtBot) -> None:
    bridge = EngineBridge(engine)
    vm = DetectViewModel(bridge, FakeDetect([]), clock=lambda: NOW)
    dock = DetectDock(vm)
    qtbot.addWidget(dock)
    assert dock.empty.text() == "Looking for agent sessions…"
    vm.refresh()
    qtbot.waitUntil(lambda: dock.empty.text() == EMPTY_TEXT, timeout=5000)
    assert dock.pages.currentIndex() == 0
    assert dock.count.text() == "0 sessions · 0 live · scanned in 0.0 s"
    assert not dock.adopt_button.isVisibleTo(dock)
    arun(bridge.aclose())


def test_show_all_asks_for_every_session(dock: DetectDock, backend: FakeDetect,
                                         qtbot: QtBot) -> None:
    backend.older = [session("codex", "0ld", "ended", live=False, active_ago=40 * HOUR)]
    dock.show_all.click()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 8, timeout=5000)
    assert backend.scans[-1] is True
    assert cells(dock, 7)[2:4] == ["ended", "1d 16h"]
    dock.show_all.click()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 7, timeout=5000)
    assert backend.scans[-1] is False


def test_an_older_sessions_whole_intent_is_lifted_when_it_is_selected(
        dock: DetectDock, backend: FakeDetect, qtbot: QtBot) -> None:
    """--all gives the older sessions as summaries (the table's part of the intent); the
    detail pane asks for the rest when one is selected, once."""
    whole = blocked()
    summary = replace(whole, intent=Intent(initial_prompt=whole.intent.initial_prompt,
                                           last_message=whole.intent.last_message),
                      lifted=False, agent_session_id="0ld-b10cked", process=None)
    backend.older = [summary]
    backend.whole = {summary.id: replace(whole, agent_session_id="0ld-b10cked")}
    dock.show_all.click()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 8, timeout=5000)
    assert backend.details == []  # a scan lifts no summary
    select(dock, summary.id)
    qtbot.waitUntil(lambda: "Plan · 1 of 3 done" in dock.body.toPlainText(), timeout=5000)
    body = dock.body.toPlainText()
    for expected in ("Port the billing module", "Files touched · 2", "pytest -q tests/billing",
                     "I'll continue with the adapter once the limit resets."):
        assert expected in body, expected
    dock.vm.refresh()
    qtbot.waitUntil(lambda: idle(dock), timeout=5000)
    assert "Plan · 1 of 3 done" in dock.body.toPlainText()
    assert backend.details == [summary.id]  # unchanged since: not asked again


def test_a_lift_that_fails_shows_once_and_the_summary_stays(
        dock: DetectDock, backend: FakeDetect, qtbot: QtBot) -> None:
    summary = replace(session("codex", "g0ne", "ended", live=False, active_ago=40 * HOUR),
                      lifted=False)
    backend.older = [summary]  # and no whole version: its file went away meanwhile
    dock.show_all.click()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 8, timeout=5000)
    select(dock, summary.id)
    qtbot.waitUntil(lambda: dock.error.isVisibleTo(dock), timeout=5000)
    assert "Add a cart page" in dock.body.toPlainText()
    dock.vm.refresh()
    qtbot.waitUntil(lambda: idle(dock) and not dock.vm.status.scanning, timeout=5000)
    assert backend.details == [summary.id]  # not asked again until the session changes


def test_rescan_scans_now_and_the_interval_follows_visibility(dock: DetectDock,
                                                              backend: FakeDetect,
                                                              qtbot: QtBot) -> None:
    assert dock.vm.interval == DetectViewModel.VISIBLE_S
    before = len(backend.scans)
    backend.sessions.append(session("codex", "fr3sh", "working", active_ago=0))
    dock.rescan_button.click()
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 8, timeout=5000)
    assert len(backend.scans) > before
    dock.hide()
    assert dock.vm.interval == DetectViewModel.HIDDEN_S


def test_a_failing_scan_shows_once_and_the_watcher_goes_on(dock: DetectDock, backend: FakeDetect,
                                                            qtbot: QtBot) -> None:
    shown: list[str] = []
    dock.vm._bridge.tasks.failed.connect(lambda _c, m, _h: shown.append(m))
    backend.fail_with = refused()
    dock.rescan_button.click()
    qtbot.waitUntil(lambda: dock.error.isVisibleTo(dock), timeout=5000)
    assert dock.error.text() == ("The session's folder is not in a git repository.\n"
                                 "→ Adopt needs a commit to stand on: run `git init` and commit.")
    scans = len(backend.scans)
    dock.vm.refresh()
    qtbot.waitUntil(lambda: len(backend.scans) > scans and not dock.vm.status.scanning,
                    timeout=5000)
    assert len(shown) == 1  # the same failure again is not repeated
    backend.fail_with = None
    backend.sessions = backend.sessions[:2]
    dock.rescan_button.click()
    assert not dock.error.isVisibleTo(dock)
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 2, timeout=5000)
    assert dock.vm.watching


def test_problems_of_the_scan_show_above_the_table(dock: DetectDock, backend: FakeDetect,
                                                   qtbot: QtBot) -> None:
    assert not dock.problems.isVisibleTo(dock)
    backend.problems = ["/home/me/.codex/sessions: permission denied",
                        "state.vscdb: database is locked"]
    dock.vm.refresh()
    qtbot.waitUntil(lambda: dock.problems.isVisibleTo(dock), timeout=5000)
    assert dock.problems.text() == ("Could not read: /home/me/.codex/sessions: permission denied "
                                    "(and 1 more: hover for all)")
    assert "could not read: state.vscdb: database is locked" in dock.problems.toolTip()


# -- the detail -----------------------------------------------------------------------------

def test_the_selected_session_shows_its_intent(dock: DetectDock, qtbot: QtBot) -> None:
    assert not dock.adopt_button.isVisibleTo(dock)
    assert dock.body.placeholderText() == "Select a session to see what it was doing."
    select(dock, "claude:b10cked-5e55")
    assert dock.vm.selected_id == "claude:b10cked-5e55"
    assert dock.title.text() == "Claude · shop"
    assert dock.badge.text() == f"blocked until {clock(NOW + 2 * HOUR + 10 * MIN)}"
    assert dock.adopt_button.isVisibleTo(dock)
    body = dock.body.toPlainText()
    for expected in (
            f"Blocked by a usage limit until {clock(NOW + 2 * HOUR + 10 * MIN)} (in 2h 10m).",
            "last turn ended on a usage limit",
            "Initial prompt", "Port the billing module to the new API",
            "Plan · 1 of 3 done", "✓", "Read the billing module", "◐", "Write the adapter",
            "○", "Run the tests",
            "Tasks remaining · 2", "Files touched · 2", "billing/adapter.py",
            "Commands · 2", "pytest -q tests/billing",
            "Last words", "I'll continue with the adapter once the limit resets.",
            "Account", "claude:work", "Models", "claude-sonnet-4-5", "Skills", "refactor",
            "MCP servers", "github",
            "1.1M tokens: 12.3k in · 4.5k out · 1.1M cache read · 30.0k cache write",
            "Process", "none running", "/home/me/.claude/projects/b10cked-5e55.jsonl"):
        assert expected in body, expected
    assert "Problems" not in body

    select(dock, "cline:cr4sh")
    body = dock.body.toPlainText()
    assert "Crashed: no agent runs it any more" in body
    assert "could not read: line 812: not JSON (truncated)" in body
    select(dock, "copilot:unkn0wn")
    assert "none recorded" in dock.body.toPlainText()  # no prompt could be read


@pytest.mark.parametrize("reset_in", [None, -HOUR, 2 * HOUR])
def test_a_blocked_sessions_detail_never_contradicts_itself(reset_in: int | None) -> None:
    """The state sentence and the why, as the detector words them, for a limit whose reset
    is unknown, has passed, or is to come."""
    at = None if reset_in is None else datetime.fromtimestamp((NOW + reset_in) / 1000, UTC)
    why = _limit_why(LimitHit(limit="usage_limit", message="You've hit your limit",
                              resets_at=at), NOW)
    s = replace(blocked(), why=why,
                resets_at_ms=NOW + reset_in if reset_in is not None and reset_in > 0 else None)
    document = QTextDocument()
    document.setHtml(detail_html(s, NOW, theme.ERROR))
    first, second = document.toPlainText().splitlines()[:2]
    assert first.startswith("Blocked by a usage limit")
    if reset_in is None:
        assert "reset time unknown" in second
        assert "passed" not in first + second
    elif reset_in < 0:
        assert "has passed, so it may go on now" in second
        assert "unknown" not in first + second
    else:
        assert first == (f"Blocked by a usage limit until {clock(NOW + reset_in)} "
                         "(in 2h).")
        assert "unknown" not in first + second
        assert "passed" not in first + second


def test_the_detail_follows_the_next_scan(dock: DetectDock, backend: FakeDetect,
                                          qtbot: QtBot) -> None:
    select(dock, "codex:c0dex-ask")
    assert dock.badge.text() == "needs input"
    backend.sessions[1] = replace(waiting(), state="working", why="")
    backend.sessions.reverse()  # a new order: the model resets, the selection stays
    dock.vm.refresh()
    qtbot.waitUntil(lambda: dock.badge.text() == "working", timeout=5000)
    rows = dock.table.selectionModel().selectedRows()
    assert [r.data(DetectViewModel.SessionIdRole) for r in rows] == ["codex:c0dex-ask"]


def test_open_transcript_opens_it_or_shows_the_path(dock: DetectDock, opener: Opener) -> None:
    select(dock, "codex:c0dex-ask")
    dock.open_button.click()
    assert opener.opened == [Path("/home/me/.codex/projects/c0dex-ask.jsonl")]
    assert dock.note.text() == "No desktop viewer could open the transcript; its path:"
    assert dock.path.isVisibleTo(dock)
    assert dock.path.text() == "/home/me/.codex/projects/c0dex-ask.jsonl"
    assert dock.path.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse

    opener.answer = True
    dock.open_button.click()
    assert dock.note.text() == "Opened the transcript in the desktop's viewer."
    assert not dock.path.isVisibleTo(dock)

    select(dock, "copilot:unkn0wn")  # an editor's database: nothing to open it with
    dock.open_button.click()
    assert len(opener.opened) == 2
    assert dock.note.text().startswith("This session is kept in an editor's database")
    assert dock.path.text().endswith("state.vscdb")


# -- adopt ----------------------------------------------------------------------------------

def test_adopt_on_another_provider(dock: DetectDock, backend: FakeDetect, qtbot: QtBot) -> None:
    adopted: list[str] = []
    dock.vm.adopted.connect(adopted.append)
    select(dock, "claude:b10cked-5e55")
    dock.adopt_button.click()
    dialog = dock.dialog
    assert dialog is not None
    qtbot.waitExposed(dialog)
    assert [dialog.target.itemText(i) for i in range(dialog.target.count())] == [
        "claude", "claude:work", "codex", "codex:ci", "demo"]
    assert dialog.target.currentText() == "codex"  # another provider than the blocked one
    assert dialog.intro.text().startswith("Continue “Port the billing module to the new API")
    assert not dialog.live.isVisibleTo(dialog)
    assert "Your working tree is not touched." in dialog.explain.text()
    dialog.target.setCurrentText("codex:ci")
    dialog.in_place.click()
    assert "writes in your working tree" in dialog.explain.text()
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    assert dock.note.text().startswith("Adopting on codex:ci in place")
    assert not dock.adopt_button.isEnabled()
    qtbot.waitUntil(lambda: adopted == ["r3lay-se55"], timeout=5000)
    assert backend.adopted == [("claude:b10cked-5e55", "codex:ci", True)]
    assert dock.note.text() == ("Adopted: Relay session r3lay-se55 continues it on codex:ci "
                                "(selected in the Sessions list). The signed brief:")
    assert dock.path.text() == "/data/adopted/claude-b10cked/c1"
    assert dock.adopt_button.isEnabled()


def test_adopt_defaults_to_an_installed_runtime_and_marks_the_missing_ones(
        dock: DetectDock, qtbot: QtBot) -> None:
    missing = [RuntimeInfo(n, None, None, problem=f"The {n} CLI is not installed.")
               for n in ("claude", "codex")]
    dock.vm.set_runtime_infos([*missing, RuntimeInfo("demo", "(built in)", "scripted demo")])
    select(dock, "claude:b10cked-5e55")
    dialog = dock.open_adopt_dialog()
    assert dialog is not None
    qtbot.waitExposed(dialog)
    target = dialog.target
    listed = [(target.itemText(i), target.model().index(i, 0).flags()
               & Qt.ItemFlag.ItemIsEnabled == Qt.ItemFlag.ItemIsEnabled)
              for i in range(target.count())]
    assert listed == [("demo", True), ("claude (not installed)", False),
                      ("claude:work (not installed)", False), ("codex (not installed)", False),
                      ("codex:ci (not installed)", False)]
    assert target.currentData() == "demo"  # the only one installed, simulation or not
    # the doctor finds codex after all: the dialog follows, and offers it first
    dock.vm.set_runtime_infos([missing[0], RuntimeInfo("codex", "/usr/bin/codex", "0.1"),
                               RuntimeInfo("demo", "(built in)", "scripted demo")])
    assert [target.itemData(i) for i in range(3)] == ["codex", "codex:ci", "demo"]
    assert target.currentData() == "demo"  # what was chosen stays chosen
    dialog.close()
    dialog = dock.open_adopt_dialog()
    assert dialog is not None
    assert dialog.target.currentData() == "codex"  # another provider, installed


def test_adopting_a_working_session_warns_and_a_refusal_shows_in_place(
        dock: DetectDock, backend: FakeDetect, qtbot: QtBot) -> None:
    backend.adopt_error = refused()
    select(dock, "claude:w0rking")
    dialog = dock.open_adopt_dialog()
    assert dialog is not None
    assert dialog.live.isVisibleTo(dialog)
    assert dialog.target.currentText() == "codex"
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: dock.error.isVisibleTo(dock) and idle(dock), timeout=5000)
    assert dock.error.text().startswith("The session's folder is not in a git repository.")
    assert not dock.note.isVisibleTo(dock)
    assert dock.adopt_button.isEnabled()


def test_the_context_menu_adopts_and_opens(dock: DetectDock) -> None:
    menu = dock.context_menu(1)
    assert [a.text() for a in menu.actions()] == ["Adopt on…", "Open transcript"]
    menu.actions()[0].trigger()
    assert dock.dialog is not None
    assert dock.dialog.session_id == "codex:c0dex-ask"
    assert dock.dialog.target.currentText() == "claude"
    dock.dialog.reject()


# -- the watcher ----------------------------------------------------------------------------

def test_the_watcher_announces_news_once(dock: DetectDock, backend: FakeDetect,
                                         qtbot: QtBot) -> None:
    said: list[Announcement] = []
    dock.vm.announced.connect(said.append)
    qtbot.waitUntil(lambda: len(backend.scans) >= 2, timeout=5000)  # after the baseline
    assert said == []  # what was there before the window opened is not news
    backend.sessions.append(session("gemini", "n3w", "working", active_ago=0,
                                    prompt="Write the release notes"))
    backend.sessions[0] = replace(backend.sessions[0], state="needs_input",
                                  last_activity_ms=NOW)
    dock.vm.refresh()
    qtbot.waitUntil(lambda: len(said) == 2, timeout=5000)
    assert {(a.kind, a.session_id) for a in said} == {("needs_input", "claude:w0rking"),
                                                      ("new", "gemini:n3w")}
    new = next(a for a in said if a.kind == "new")
    assert new.title == "New Gemini session"
    scans = len(backend.scans)
    dock.vm.refresh()
    qtbot.waitUntil(lambda: len(backend.scans) > scans and idle(dock), timeout=5000)
    assert len(said) == 2


# -- in the window --------------------------------------------------------------------------

class AdoptingDetect(FakeDetect):
    """Adoption starts a real (demo) session in the engine."""

    def __init__(self, engine: Engine, repo: Path) -> None:
        super().__init__()
        self.engine, self.repo = engine, repo

    async def adopt(self, detected_id: str, to_entry: str, in_place: bool) -> AdoptAnswer:
        self.adopted.append((detected_id, to_entry, in_place))
        session_id = await self.engine.start_session(SessionSpec(
            repo=self.repo, task=f"Continue {detected_id}", chain=[to_entry]))
        return AdoptAnswer(session_id, to_entry, self.repo)


@pytest.fixture
def window_shell(engine: Engine, git_repo: Path, arun: Runner,
                 qtbot: QtBot) -> Iterator[tuple[RelayShell, AdoptingDetect]]:
    backend = AdoptingDetect(engine, git_repo)
    shell = RelayShell(engine, detect=backend)
    yield shell, backend
    arun(shell.aclose())


def test_the_window_has_the_detect_dock_next_to_the_handoff_panel(
        window_shell: tuple[RelayShell, AdoptingDetect], qtbot: QtBot) -> None:
    shell, _backend = window_shell
    window, dock = shell.window, shell.detect_dock
    assert dock in window.tabifiedDockWidgets(shell.handoff_dock)
    assert dock.findChild(QLabel, "placeholderLabel") is None
    assert window.findChild(DetectDock, "detectDock") is dock
    shell.start()
    qtbot.waitUntil(lambda: shell.detect_vm.rowCount() == 7, timeout=10_000)
    assert shell.detect_vm.watching


def test_a_tray_click_shows_the_session_in_the_detect_dock(
        window_shell: tuple[RelayShell, AdoptingDetect], qtbot: QtBot) -> None:
    shell, backend = window_shell
    shell.start()
    qtbot.waitUntil(lambda: shell.detect_vm.status.loaded, timeout=10_000)  # the baseline
    now = time.time_ns() // 1_000_000  # the window's own clock
    backend.sessions.append(replace(session("codex", "l1m1t", "blocked", repo="/home/me/src/api"),
                                    last_activity_ms=now + 1000, resets_at_ms=now + HOUR))
    shell.detect_vm.refresh()
    qtbot.waitUntil(lambda: any(n.title == "Codex hit its usage limit"
                                for n in shell.tray.notifications), timeout=10_000)
    note = next(n for n in shell.tray.notifications if n.title == "Codex hit its usage limit")
    assert note.warning
    assert "hit its usage limit — resets" in note.message
    assert "Codex hit its usage limit" in shell.window.statusBar().currentMessage()
    shell.handoff_dock.raise_()
    shell.tray.messageClicked.emit()
    assert shell.detect_vm.selected_id == "codex:l1m1t"
    qtbot.waitUntil(lambda: shell.detect_dock.badge.text().startswith("blocked until"),
                    timeout=5000)
    assert not shell.detect_dock.visibleRegion().isEmpty()  # raised over the Handoff panel
    shell.notifier.on_wallet([codex_key()], 0.9, NOW)  # another kind: a click opens nothing
    assert shell.tray.notifications[-1].title == "Account near its limit"
    shell.detect_vm.select(None)
    shell.tray.messageClicked.emit()
    assert shell.detect_vm.selected_id is None


def test_adopt_from_the_dock_selects_the_new_session(
        window_shell: tuple[RelayShell, AdoptingDetect], qtbot: QtBot) -> None:
    shell, backend = window_shell
    shell.start()
    qtbot.waitUntil(lambda: shell.detect_vm.rowCount() == 7, timeout=10_000)
    shell.detect_dock.select("claude:b10cked-5e55")
    dialog = shell.detect_dock.open_adopt_dialog()
    assert dialog is not None
    qtbot.waitUntil(lambda: dialog.target.count() == 5, timeout=5000)
    dialog.target.setCurrentText("demo")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: bool(backend.adopted) and shell.sessions_dock.selected_id()
                    is not None, timeout=10_000)
    new_id = shell.sessions_dock.selected_id()
    assert shell.stream_vm.session_id == new_id
    assert shell.detect_dock.note.text().startswith(f"Adopted: Relay session {new_id} ")
    qtbot.waitUntil(lambda: shell.bridge.tasks.pending == 0, timeout=20_000)


# -- with the real engine -------------------------------------------------------------------

def test_a_blocked_claude_session_is_adopted_from_the_window(
        shell: RelayShell, qtbot: QtBot, tmp_path: Path, fixtures_dir: Path,
        vault_env: None, arun: Runner) -> None:
    """A registered account's folder with recorded Claude sessions that hit their limits:
    the dock lists them, shows one, and adopts it onto the demo runtime."""
    repo = make_repo(tmp_path / "repo")
    folder = tmp_path / "claude-work"
    source = fixtures_dir / "claude" / "captures" / "f_usage_limit" / "config"
    for path in source.rglob("*.jsonl"):
        target = folder / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes().replace(b"<CWD>", str(repo).encode()))
    arun(shell.engine.accounts.add("claude", "work", folder))
    dock, vm = shell.detect_dock, shell.detect_vm
    shell.start()
    dock.show_all.click()  # the recordings are older than a day
    limited = "claude:8a2de846-6864-45b6-bc0a-af654af4dbe4"
    qtbot.waitUntil(lambda: vm.row_of(limited) is not None, timeout=20_000)
    session = vm.session(limited)
    assert session is not None
    assert (session.state, session.entry, session.repo) == ("blocked", "claude:work", str(repo))
    row = vm.row_of(limited)
    assert row is not None
    assert cells(dock, row)[:2] == ["Claude", "repo"]
    assert cells(dock, row)[5] == "claude:work"
    dock.select(limited)
    assert "usage limit" in dock.body.toPlainText()
    dialog = dock.open_adopt_dialog()
    assert dialog is not None
    qtbot.waitUntil(lambda: "claude:work" in [dialog.target.itemData(i)
                                             for i in range(dialog.target.count())],
                    timeout=10_000)
    dialog.target.setCurrentIndex(dialog.target.findData("demo"))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: shell.sessions_dock.selected_id() is not None, timeout=30_000)
    new_id = shell.sessions_dock.selected_id()
    assert shell.stream_vm.session_id == new_id
    assert dock.note.text().startswith(f"Adopted: Relay session {new_id} continues it on demo")
    assert Path(dock.path.text()).is_relative_to(shell.engine.config.home / "adopted")
    qtbot.waitUntil(lambda: state_of(shell, str(new_id)) == "completed", timeout=30_000)
    assert dock.error.isHidden()
