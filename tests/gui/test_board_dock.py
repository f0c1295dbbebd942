"""The Board dock: cards per stage, dragged between columns (the stage is set in the store),
kept live from another client's changes over the host's API, opening their sessions; the
tray's announcement of a hooked session that needs input; the Integrations dialog."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, QPointF, Qt
from PySide6.QtGui import QDropEvent
from pytestqt.qtbot import QtBot

from relay.api.client import RelayClient
from relay.board.model import SessionLink
from relay.core.events import BOARD_SESSION, BoardChanged, EventRecord, LiveStateChanged
from relay.detect.ambient import Announcement
from relay.engine.engine import Engine
from relay.gui.docks.board_dock import BoardDock
from relay.gui.integrations_dialog import IntegrationsDialog
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.board import CARD_MIME, BoardViewModel, decode_card, encode_card
from tests.gui.board_fakes import FakeBoard, card, hooked
from tests.gui.conftest import Runner, Started


@pytest.fixture
def fake_shell(arun: Runner, engine: Engine) -> Iterator[tuple[RelayShell, FakeBoard]]:
    board = FakeBoard()
    shell = RelayShell(engine, board=board)
    shell.board_vm.refresh()
    yield shell, board
    arun(shell.aclose())


def cell(dialog: IntegrationsDialog, row: int, col: int) -> str:
    item = dialog.table.item(row, col)
    return item.text() if item is not None else ""


def loaded(qtbot: QtBot, vm: BoardViewModel) -> None:
    qtbot.waitUntil(lambda: vm.loaded, timeout=10_000)


def drop(dock: BoardDock, key: str, to_stage: str) -> bool:
    """Drop ``key``'s card on ``to_stage``'s column the way the view does on a real drop:
    the source column's mime data, a QDropEvent on the target view."""
    from_stage = dock.vm.stage_of(key)
    assert from_stage is not None
    source = dock.lists[from_stage].model()
    data = source.mimeData([source.index(dock.vm.keys(from_stage).index(key), 0)])
    target = dock.lists[to_stage]
    event = QDropEvent(QPointF(5, 5), Qt.DropAction.MoveAction, data,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    target.dropEvent(event)
    return event.isAccepted()


def test_a_dragged_card_carries_its_key_and_the_stage_it_left() -> None:
    data = encode_card("SHOP-2", "dev")
    assert data.formats() == [CARD_MIME]
    assert decode_card(data) == ("SHOP-2", "dev")
    data.setData(CARD_MIME, b"SHOP-2\nnowhere")
    assert decode_card(data) is None


def test_dragging_a_card_from_dev_to_review_sets_its_stage_in_the_store(
        shell: RelayShell, engine: Engine, git_repo: Path, arun: Runner, qtbot: QtBot) -> None:
    made = arun(engine.board.create_task(str(git_repo), "Checkout page", stage="dev"))
    other = arun(engine.board.create_task(str(git_repo), "Cart page", stage="plan"))
    vm, dock = shell.board_vm, shell.board_dock
    shell.window.resize(1024, 700)
    shell.show()
    dock.show()
    dock.raise_()
    vm.refresh()
    # a read started before "Cart page" existed may show first: wait for the view to settle
    qtbot.waitUntil(lambda: vm.keys("dev") == [made.key] and vm.keys("plan") == [other.key],
                    timeout=10_000)
    assert dock.heads["dev"].text() == "Dev  1"
    # the source column cannot take its own card back
    source = vm.columns["dev"]
    data = source.mimeData([source.index(0)])
    assert not source.canDropMimeData(data, Qt.DropAction.MoveAction, -1, -1, QModelIndex())
    assert vm.columns["review"].canDropMimeData(data, Qt.DropAction.MoveAction, -1, -1,
                                                QModelIndex())

    assert drop(dock, made.key, "review")
    assert vm.keys("review") == [made.key]  # at once, before the host answers
    assert vm.keys("dev") == []
    qtbot.waitUntil(lambda: arun(engine.board.task(made.key)).card.task.stage == "review",
                    timeout=10_000)
    assert dock.heads["review"].text() == "Review  1"
    assert vm.card(made.key).task.stage == "review"  # type: ignore[union-attr]
    assert not dock.error.isVisible()


def test_a_refused_move_puts_the_card_back_and_says_why(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, board = fake_shell
    vm, dock = shell.board_vm, shell.board_dock
    loaded(qtbot, vm)
    assert vm.keys("dev") == ["SHOP-2", "SHOP-3"]
    board.refuse = "SHOP-3 changed since you loaded it."
    with qtbot.waitSignal(shell.messages.errorShown, timeout=10_000) as shown:
        assert vm.columns["test"].dropMimeData(encode_card("SHOP-3", "dev"),
                                               Qt.DropAction.MoveAction, -1, -1, QModelIndex())
        assert vm.stage_of("SHOP-3") == "test"
    assert shown.args[0] == "board"
    assert "changed since you loaded it" in shown.args[1]
    assert vm.keys("dev") == ["SHOP-2", "SHOP-3"]  # back where it was, in its place
    assert vm.keys("test") == ["SHOP-5"]
    assert "changed since you loaded it" in dock.error.text()
    assert board.cards_by_key["SHOP-3"].task.stage == "dev"


def test_a_drag_from_a_stale_board_is_refused_not_applied(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    """The drag sends the version the dock showed: a task changed since is not moved."""
    shell, board = fake_shell
    vm = shell.board_vm
    loaded(qtbot, vm)
    card = board.cards_by_key["SHOP-3"]
    changed = dataclasses.replace(card.task, version=card.task.version + 1)  # unseen change
    board.cards_by_key["SHOP-3"] = dataclasses.replace(card, task=changed)
    with qtbot.waitSignal(shell.messages.errorShown, timeout=10_000) as shown:
        assert vm.columns["test"].dropMimeData(encode_card("SHOP-3", "dev"),
                                               Qt.DropAction.MoveAction, -1, -1, QModelIndex())
    assert "changed since you loaded it" in shown.args[1]
    assert vm.stage_of("SHOP-3") == "dev"
    assert board.cards_by_key["SHOP-3"].task.stage == "dev"


def test_a_stage_set_by_another_client_moves_the_card_in_the_hosting_window(
        window: Started, relay_home: Path, git_repo: Path, arun: Runner, qtbot: QtBot) -> None:
    _task, host = window()
    vm = host.board_vm
    loaded(qtbot, vm)
    api = RelayClient.for_home(relay_home)
    assert api is not None
    try:
        made = arun(api.board.create_task(str(git_repo), "Search ranking", stage="dev"))
        qtbot.waitUntil(lambda: vm.stage_of(made.key) == "dev", timeout=10_000)
        assert [p.repo for p in vm.projects] == [str(git_repo)]
        arun(api.board.set_stage(made.key, "review", note="ready for a look"))
        qtbot.waitUntil(lambda: vm.stage_of(made.key) == "review", timeout=10_000)
        assert vm.keys("dev") == []
        arun(api.board.add_report(made.key, "Ranking by recency is in", author="agent:x"))
        qtbot.waitUntil(lambda: (c := vm.card(made.key)) is not None
                        and c.last_report is not None, timeout=10_000)
        assert vm.card(made.key).last_report.summary == "Ranking by recency is in"  # type: ignore[union-attr]
    finally:
        arun(api.aclose())


def test_the_project_picker_shows_one_project_or_all(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, _board = fake_shell
    vm, dock = shell.board_vm, shell.board_dock
    loaded(qtbot, vm)
    assert [dock.picker.itemText(i) for i in range(dock.picker.count())] == [
        "All projects", "Api", "Shop"]
    assert vm.keys("done") == ["API-1"]
    dock.picker.setCurrentIndex(1)
    dock.picker.activated.emit(1)
    qtbot.waitUntil(lambda: vm.keys("dev") == [], timeout=10_000)
    assert vm.project == "api"
    assert vm.keys("done") == ["API-1"]
    assert dock.count.text() == "1 task"


def test_only_the_card_an_event_names_is_read_again(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, board = fake_shell
    vm = shell.board_vm
    loaded(qtbot, vm)
    board.cards_by_key["SHOP-5"] = card(
        "SHOP-5", "Stock sync", "test",
        links=[SessionLink("1d1e", "claude", hooked("1d1e", "needs_input", detail="Edit?"))])
    vm.on_records([EventRecord(1, BOARD_SESSION, None, LiveStateChanged(
        agent_session_id="1d1e", state="needs_input", previous="idle"))])
    qtbot.waitUntil(lambda: vm.card("SHOP-5").needs_input, timeout=10_000)  # type: ignore[union-attr]
    assert board.card_reads == ["SHOP-5"]
    assert "2 need input" in shell.board_dock.count.text()


def test_the_sessions_without_a_task_show_in_one_line_under_the_picker(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, board = fake_shell
    vm, dock = shell.board_vm, shell.board_dock
    loaded(qtbot, vm)
    assert dock.unlinked.isHidden()  # none yet
    board.free = [hooked("5e55104a-aaaa", "needs_input", detail="Bash?"),
                  hooked("0ddba11-bbbb", "working")]
    vm.on_records([EventRecord(1, BOARD_SESSION, None, LiveStateChanged(
        agent_session_id="5e55104a-aaaa", state="needs_input", previous="working"))])
    qtbot.waitUntil(lambda: not dock.unlinked.isHidden(), timeout=10_000)
    assert dock.unlinked.text() == ("2 sessions without a task: needs input 5e55104a · "
                                    "working 0ddba11-")
    assert "/home/me/src/shop" in dock.unlinked.toolTip()
    # one is linked to a task: the link event reads them again
    board.free = board.free[1:]
    vm.on_records([EventRecord(2, BOARD_SESSION, None, BoardChanged(
        entity="link", action="created", project="shop", task="SHOP-1",
        fields={"session": "5e55104a-aaaa"}))])
    qtbot.waitUntil(lambda: dock.unlinked.text().startswith("1 session without"),
                    timeout=10_000)
    board.free = []
    vm.on_records([EventRecord(3, BOARD_SESSION, None, LiveStateChanged(
        agent_session_id="0ddba11-bbbb", state="ended", previous="working"))])
    qtbot.waitUntil(dock.unlinked.isHidden, timeout=10_000)
    # a project picked: only its sessions are asked for
    board.free = [hooked("5e55104a-aaaa", "idle")]
    dock.picker.activated.emit(dock.picker.findData("api"))
    qtbot.waitUntil(lambda: vm.project == "api" and vm.loaded, timeout=10_000)
    qtbot.waitUntil(lambda: vm.unlinked == [], timeout=10_000)
    assert dock.unlinked.isHidden()


def test_opening_a_card_shows_its_session(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, _board = fake_shell
    vm = shell.board_vm
    loaded(qtbot, vm)
    with qtbot.waitSignal(vm.sessionRequested) as relay:
        assert vm.open("SHOP-3")
    assert relay.args == ["r-42"]
    with qtbot.waitSignal(vm.detectedRequested) as detected:
        assert vm.open("SHOP-2")
    assert detected.args == ["claude:c1a0de"]
    assert shell.detect_vm.selected_id == "claude:c1a0de"  # the window selected it in Detect
    assert not vm.open("SHOP-1")  # nothing linked


def test_a_comment_from_the_context_menu_reaches_the_board(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot) -> None:
    shell, board = fake_shell
    loaded(qtbot, shell.board_vm)
    menu = shell.board_dock.context_menu("SHOP-2")
    titles = [a.text() for a in menu.actions()]
    assert titles == ["Open session", "Move to", "Comment…", "Open on the web board"]
    dialog = shell.board_dock.open_comment_dialog("SHOP-2")
    assert dialog is not None
    dialog.text.setPlainText("Use the existing card component")
    dialog.buttons.accepted.emit()
    qtbot.waitUntil(lambda: board.comments == [("SHOP-2", "Use the existing card component")],
                    timeout=10_000)


def test_open_on_the_web_board_asks_a_link_to_the_cards_page(
        fake_shell: tuple[RelayShell, FakeBoard], qtbot: QtBot,
        monkeypatch: pytest.MonkeyPatch) -> None:
    shell, board = fake_shell
    opened: list[str] = []

    def open_url(url: str) -> bool:
        opened.append(url)
        return True

    monkeypatch.setattr("relay.gui.shell.open_url", open_url)
    loaded(qtbot, shell.board_vm)
    (web,) = [a for a in shell.board_dock.context_menu("SHOP-2").actions()
              if a.text() == "Open on the web board"]
    with qtbot.waitSignal(shell.board_vm.linkReady, timeout=10_000):
        web.trigger()
    assert board.web_links == ["SHOP-2"]
    assert opened == ["http://127.0.0.1:9/board/login?code=one-time"]


def test_the_tray_announces_a_hooked_session_that_needs_input_once(
        shell: RelayShell, engine: Engine, git_repo: Path, arun: Runner, qtbot: QtBot) -> None:
    notes: list[tuple[str, str, bool]] = []
    shell.notifier.notify.connect(lambda *args: notes.append(args))
    sid = "5e55-1011"
    prompt = {"session_id": sid, "hook_event_name": "Notification", "cwd": str(git_repo),
              "notification_type": "permission_prompt",
              "message": "Claude needs your permission to use Bash"}
    arun(engine.board.hook({"session_id": sid, "hook_event_name": "SessionStart",
                            "cwd": str(git_repo), "source": "startup"}))
    with qtbot.waitSignal(shell.notifier.notify, timeout=10_000):
        arun(engine.board.hook(prompt))
    assert len(notes) == 1
    title, message, warning = notes[0]
    assert title == "Claude needs your permission"
    assert "permission to use Bash" in message
    assert warning
    # the transcript scan's later word on the same state is not a second notification
    shell.notifier.on_announcement(Announcement("needs_input", f"claude:{sid}",
                                                "Claude needs your input", "…"))
    assert len(notes) == 1
    # answered, then asked again: a new transition, a new announcement
    arun(engine.board.hook({"session_id": sid, "hook_event_name": "PreToolUse",
                            "cwd": str(git_repo), "tool_name": "Bash",
                            "tool_input": {"command": "ls"}}))
    with qtbot.waitSignal(shell.notifier.notify, timeout=10_000):
        arun(engine.board.hook(prompt))
    assert len(notes) == 2
    shell.notifier.clicked()
    qtbot.waitUntil(lambda: shell.detect_vm.selected_id == f"claude:{sid}", timeout=5000)


def test_integrations_sets_a_folder_up_after_showing_the_plan_and_removes_it_again(
        shell: RelayShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        qtbot: QtBot) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / "claude-default"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    mine = '{\n  "model": "opus",\n  "hooks": {"Stop": [{"hooks": [{"type": "command", ' \
           '"command": "notify-send done"}]}]}\n}\n'
    (folder / "settings.json").write_text(mine)
    dialog = shell.open_integrations()
    qtbot.waitUntil(lambda: cell(dialog, 0, 2) == "not set up", timeout=10_000)
    assert cell(dialog, 0, 0) == str(folder)
    assert cell(dialog, 0, 1) == "default"
    assert "✗ hook SessionStart: missing" in dialog.detail.toPlainText()

    dialog.setup_button.click()
    qtbot.waitUntil(lambda: dialog.pending is not None, timeout=10_000)
    assert "add  hook SessionStart" in dialog.detail.toPlainText()
    assert (folder / "settings.json").read_text() == mine  # nothing changed before Apply
    assert dialog.apply_button.isVisible()
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: cell(dialog, 0, 2) == "set up", timeout=10_000)
    settings = (folder / "settings.json").read_text()
    assert "relay.cli.hook_client" in settings
    assert "notify-send done" in settings  # the user's own hook stays
    assert "written: " in dialog.detail.toPlainText()

    dialog.remove_button.click()
    qtbot.waitUntil(lambda: dialog.pending == (folder, True), timeout=10_000)
    assert "remove  hook SessionStart" in dialog.detail.toPlainText()
    dialog.apply_button.click()
    qtbot.waitUntil(lambda: cell(dialog, 0, 2) == "not set up", timeout=10_000)
    assert "relay.cli.hook_client" not in (folder / "settings.json").read_text()
    assert "notify-send done" in (folder / "settings.json").read_text()
    dialog.close()


def test_the_window_has_a_board_dock_and_an_integrations_menu(
        fake_shell: tuple[RelayShell, FakeBoard]) -> None:
    shell, _board = fake_shell
    menus = {a.text(): a.menu() for a in shell.window.menuBar().actions()}
    assert shell.board_dock.toggleViewAction() in menus["&View"].actions()  # type: ignore[attr-defined]
    assert shell.window.integrations_action in menus["&Tools"].actions()  # type: ignore[attr-defined]
    assert shell.window.integrations_action.text() == "&Integrations…"


def test_the_detect_dock_shows_a_hooked_sessions_state_first_as_soon_as_it_changes(
        shell: RelayShell, engine: Engine, git_repo: Path, tmp_path: Path, arun: Runner,
        qtbot: QtBot) -> None:
    from tests.gui.test_client_docks import LIMITED, claude_folder

    arun(engine.accounts.add("claude", "work", claude_folder(tmp_path, git_repo)))
    vm = shell.detect_vm
    vm.set_show_all(True)
    vm.refresh()
    qtbot.waitUntil(lambda: (s := vm.session(f"claude:{LIMITED}")) is not None
                    and s.state == "blocked", timeout=10_000)  # the transcript's word
    assert not vm.session(f"claude:{LIMITED}").hooked  # type: ignore[union-attr]
    vm.stop()  # no poll from here on: only the live_state record can bring the change
    arun(engine.board.hook({"session_id": LIMITED, "hook_event_name": "SessionStart",
                            "cwd": str(git_repo), "source": "resume"}))
    arun(engine.board.hook({"session_id": LIMITED, "hook_event_name": "Notification",
                            "cwd": str(git_repo), "notification_type": "permission_prompt",
                            "message": "Claude needs your permission to use Bash"}))
    qtbot.waitUntil(lambda: vm.session(f"claude:{LIMITED}").state == "needs_input",  # type: ignore[union-attr]
                    timeout=10_000)
    row = vm.row_of(f"claude:{LIMITED}")
    assert row is not None
    assert vm.index(row, 2).data() == "needs input · hooks"
    shell.detect_dock.select(f"claude:{LIMITED}")
    assert shell.detect_dock.badge.text() == "needs input · hooks"
    assert "permission to use Bash" in shell.detect_dock.body.toPlainText()


def test_a_client_windows_board_follows_the_host_and_moves_cards_through_it(
        window: Started, vault_env: None, git_repo: Path, arun: Runner, qtbot: QtBot) -> None:
    _task, host = window()
    _task, client = window()
    assert not client.hosting
    made = arun(host.engine.board.create_task(str(git_repo), "Invoice export", stage="plan"))
    vm = client.board_vm
    qtbot.waitUntil(lambda: vm.stage_of(made.key) == "plan", timeout=10_000)
    arun(host.engine.board.set_stage(made.key, "dev"))  # the host's change, over its stream
    qtbot.waitUntil(lambda: vm.stage_of(made.key) == "dev", timeout=10_000)
    assert vm.set_stage(made.key, "test")  # the client's move, through the host's API
    qtbot.waitUntil(lambda: arun(host.engine.board.task(made.key)).card.task.stage == "test",
                    timeout=10_000)
    qtbot.waitUntil(lambda: host.board_vm.stage_of(made.key) == "test", timeout=10_000)
