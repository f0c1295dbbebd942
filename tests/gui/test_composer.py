"""The composer under the live stream: sends in the mode the user picks, the session's queued
rows (live from any client; Edit, Cancel), a runtime without steer, Esc, forks.

Here ``engine.talk`` is :class:`~tests.gui.talk_fakes.FakeTalk` (a given runtime's abilities,
message states on cue); it writes each message change through the real engine's writer, so
the window sees them as it sees the inbox's."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui.composer import ComposerEdit
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.composer import attachment_paths
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner
from tests.gui.talk_fakes import FakeTalk, abilities


def _shown(shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, repo: Path,
           fake: FakeTalk) -> str:
    """A finished demo session, shown in the window, its composer ready."""
    row = arun(engine.run_session(SessionSpec(repo=repo, task="Add the notes", runtime="demo")))
    shell.show()
    with qtbot.waitSignal(shell.stream_vm.loaded, timeout=5000):
        shell.show_session(row.id)
    qtbot.waitUntil(lambda: shell.composer_vm.abilities is not None, timeout=5000)
    assert fake.named("abilities")[-1]["session_id"] == row.id
    return str(row.id)


@pytest.fixture
def fake(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> FakeTalk:
    talk = FakeTalk(engine)
    monkeypatch.setattr(engine, "talk", talk)
    return talk


def _type(shell: RelayShell, text: str) -> None:
    box = shell.composer.text
    box.setFocus()
    QTest.keyClicks(box, text)


def test_ctrl_enter_queues_and_the_row_goes_on_delivery(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer
    assert panel.send_button.isEnabled()
    assert "Queue it" in panel.send_button.toolTip()  # a turn is running

    _type(shell, "also add a changelog")
    QTest.keyClick(panel.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)

    qtbot.waitUntil(lambda: len(panel.rows) == 1 and panel.text.toPlainText() == "",
                    timeout=5000)
    assert fake.named("say") == [{"session_id": session_id, "text": "also add a changelog",
                                  "mode": "queue", "source": "window", "attachments": []}]
    row = panel.rows[0]
    assert row.isVisible()
    assert "queued: also add a changelog" in row.label.text()
    assert "when this turn ends" in panel.status.text()
    # queued, it is not the user's turn in the stream yet
    assert "message" not in {shell.stream_vm.index(r, 0).data(Vm.KindRole)
                             for r in range(shell.stream_vm.rowCount())}

    arun(fake.deliver_message(row.message_id))

    qtbot.waitUntil(lambda: not panel.rows, timeout=5000)
    vm = shell.stream_vm
    qtbot.waitUntil(lambda: vm.index(vm.rowCount() - 1, 0).data(Vm.KindRole) == "message",
                    timeout=5000)
    last = vm.index(vm.rowCount() - 1, 0)
    assert last.data(Vm.BadgeRole) == "YOU"
    assert "also add a changelog" in str(last.data(Vm.SummaryRole))


def test_a_message_from_another_client_appears_and_cancel_removes_it(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer

    arun(fake.say(session_id, "from the terminal", source="cli"))  # relay-cli say

    qtbot.waitUntil(lambda: len(panel.rows) == 1, timeout=5000)
    row = panel.rows[0]
    assert "from cli: from the terminal" in row.label.text()
    row.cancel_button.click()
    qtbot.waitUntil(lambda: not panel.rows, timeout=5000)
    assert fake.named("cancel") == [{"message_id": row.message_id}]
    assert fake.store[row.message_id].state == "cancelled"


def test_edit_changes_the_queued_text(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer
    arun(fake.say(session_id, "first wording", source="window"))
    qtbot.waitUntil(lambda: len(panel.rows) == 1, timeout=5000)

    panel.rows[0].edit_button.click()
    dialog = panel.edit_dialog
    assert dialog is not None
    assert dialog.body.toPlainText() == "first wording"
    dialog.body.setPlainText("second wording")
    dialog.ok.click()

    qtbot.waitUntil(lambda: bool(panel.rows) and "second wording" in panel.rows[0].label.text(),
                    timeout=5000)
    assert fake.named("edit") == [{"message_id": panel.rows[0].message_id,
                                   "text": "second wording"}]


def test_a_runtime_without_steer_offers_queue_or_interrupt(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    fake.able = abilities("any", steer="no", interrupt="partial", why_not={
        "steer": "codex exec takes no input while a turn runs."})
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer

    assert not panel.steer_button.isEnabled()
    tip = panel.steer_button.toolTip()
    assert "codex exec takes no input while a turn runs." in tip
    assert "Queue it" in tip
    assert "interrupt and send" in tip
    assert panel.send_button.isEnabled()
    assert panel.interrupt_button.isEnabled()

    _type(shell, "stop and do this instead")
    panel.interrupt_button.click()

    qtbot.waitUntil(lambda: bool(fake.named("say")), timeout=5000)
    assert fake.named("say")[0]["mode"] == "interrupt"
    assert fake.named("say")[0]["session_id"] == session_id


def test_steer_now_sends_into_the_turn_and_a_refusal_shows_in_the_panel(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk, monkeypatch: pytest.MonkeyPatch) -> None:
    _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer
    assert panel.steer_button.isEnabled()
    _type(shell, "look at the tests first")
    panel.steer_button.click()
    qtbot.waitUntil(lambda: panel.text.toPlainText() == "", timeout=5000)
    assert fake.named("say")[0]["mode"] == "now"
    assert panel.status.text() == "Sent into the running turn."
    assert not panel.rows

    from relay.core.errors import UnsupportedCapabilityError

    async def refuse(*_a: object, **_k: object) -> None:
        raise UnsupportedCapabilityError("demo", "steer", "no")

    monkeypatch.setattr(fake, "say", refuse)
    _type(shell, "again")
    panel.steer_button.click()
    qtbot.waitUntil(panel.error.isVisible, timeout=5000)
    assert "does not support steer" in panel.error.text()
    assert panel.text.toPlainText() == "again"  # nothing lost
    assert panel.send_button.isEnabled()


def test_on_a_finished_session_only_send_is_offered(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    fake.able = abilities("any", busy=False)
    _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer
    assert panel.send_button.isEnabled()
    assert "Continue the session" in panel.send_button.toolTip()
    assert not panel.steer_button.isEnabled()
    assert not panel.interrupt_button.isEnabled()
    assert "No turn is running" in panel.steer_button.toolTip()


def test_esc_in_the_stream_interrupts(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    notices: list[str] = []
    shell.messages.noticeShown.connect(notices.append)
    view = shell.stream_dock.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Escape)

    qtbot.waitUntil(lambda: bool(notices), timeout=5000)
    assert fake.named("interrupt") == [{"session_id": session_id}]
    assert notices == ["Interrupted the turn; the session waits for your next message."]
    assert shell.composer.status.text() == notices[0]


def test_fork_from_a_stream_row(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    other = arun(engine.run_session(SessionSpec(repo=git_repo, task="the fork",
                                                runtime="demo")))
    fake.fork_to = other.id
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    view, vm = shell.stream_dock.view, shell.stream_vm
    index = vm.index(2, 0)
    event_id = int(index.data(Vm.RecordIdRole))

    menu = shell.stream_dock.row_menu(view.visualRect(index).center())
    action = next(a for a in menu.actions() if a.objectName() == "forkFromHere")
    assert action.isEnabled()
    action.trigger()
    dialog = shell.composer.fork_dialog
    assert dialog is not None
    assert dialog.ok.isEnabled()  # the prompt is optional
    dialog.body.setPlainText("try it with a database instead")
    dialog.ok.click()

    qtbot.waitUntil(lambda: shell.stream_vm.session_id == other.id, timeout=5000)
    assert fake.named("fork") == [{"session_id": session_id, "at_event": event_id,
                                   "at_commit": None,
                                   "prompt": "try it with a database instead"}]
    menu.close()


def test_up_walks_the_sent_texts_and_a_pasted_path_is_an_attachment(
        qtbot: QtBot, tmp_path: Path) -> None:
    box = ComposerEdit()
    qtbot.addWidget(box)
    box.past = ["first", "second\nline"]
    attached: list[list[str]] = []
    box.attached.connect(attached.append)
    QTest.keyClicks(box, "draft")
    QTest.keyClick(box, Qt.Key.Key_Up)
    assert box.toPlainText() == "second\nline"
    box.moveCursor(box.textCursor().MoveOperation.Start)
    QTest.keyClick(box, Qt.Key.Key_Up)
    assert box.toPlainText() == "first"
    QTest.keyClick(box, Qt.Key.Key_Down)
    assert box.toPlainText() == "second\nline"
    QTest.keyClick(box, Qt.Key.Key_Down)
    assert box.toPlainText() == "draft"  # past the newest, the draft comes back

    image = tmp_path / "screen shot.png"
    image.write_bytes(b"\x89PNG")
    data = QMimeData()
    data.setText(str(image))
    box.insertFromMimeData(data)
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(image))])
    box.insertFromMimeData(dropped)
    assert attached == [[str(image)], [str(image)]]
    assert box.toPlainText() == "draft"  # not pasted as text
    plain = QMimeData()
    plain.setText("not a file")
    box.insertFromMimeData(plain)
    assert box.toPlainText().endswith("not a file")
    assert attachment_paths(f"file://{str(image).replace(' ', '%20')}") == [str(image)]
    assert attachment_paths(f"{image}\nand words") == []


def test_attachments_go_with_the_message(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    session_id = _shown(shell, engine, arun, qtbot, git_repo, fake)
    panel = shell.composer
    shot = git_repo / "shot.png"
    shot.write_bytes(b"\x89PNG")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(shot))])
    panel.text.insertFromMimeData(data)
    assert [c.property("path") for c in panel.chip_buttons] == [str(shot)]
    assert panel.chip_buttons[0].isVisible()
    _type(shell, "what is wrong in this screenshot?")
    panel.send_button.click()
    qtbot.waitUntil(lambda: bool(fake.named("say")), timeout=5000)
    assert fake.named("say")[0]["attachments"] == [str(shot)]
    assert fake.named("say")[0]["session_id"] == session_id
    qtbot.waitUntil(lambda: not panel.chip_buttons, timeout=5000)


def test_esc_on_a_session_without_a_running_turn_asks_nothing(
        shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
        fake: FakeTalk) -> None:
    fake.able = abilities("any", busy=False)
    _shown(shell, engine, arun, qtbot, git_repo, fake)
    view = shell.stream_dock.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Escape)
    assert shell.composer.status.text() == "No turn is running: nothing to interrupt."
    assert fake.named("interrupt") == []
    assert not shell.composer.error.isVisible()
