"""Needs input in the window: the question with its options under the stream's header, a
tray notification, an answer by click; answered elsewhere, it disappears."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner


def _start_asking(shell: RelayShell, qtbot: QtBot, repo: Path) -> str:
    notes: list[tuple[str, str]] = []
    shell.notifier.notify.connect(lambda title, message, _w: notes.append((title, message)))
    panel = shell.question_panel
    shown: list[list[bool]] = []  # connected after the panel: right after it rebuilt its buttons
    shell.questions_vm.changed.connect(
        lambda: shown.append([b.isVisibleTo(panel) for b in panel.option_buttons]))
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=repo, task="notes", runtime="demo", demo_ask=True,
                                        approvals="ask"))
    assert started.args is not None
    session_id: str = started.args[0]
    qtbot.waitUntil(lambda: shell.question_panel.isVisible(), timeout=10_000)
    # the option buttons are on screen the moment they exist (no queued "show later")
    assert [True, True] in shown, shown
    assert all(all(s) for s in shown), shown
    qtbot.waitUntil(lambda: any(t == "Needs your input" for t, _ in notes), timeout=5000)
    message = next(m for t, m in notes if t == "Needs your input")
    assert "asks: (simulated) Allow write_file" in message
    assert "(Allow once / Reject)" in message
    return session_id


def test_the_question_shows_with_its_options_and_a_click_answers(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, arun: Runner) -> None:
    shell.show()
    session_id = _start_asking(shell, qtbot, git_repo)
    panel = shell.question_panel

    assert [b.text() for b in panel.option_buttons] == ["Allow once", "Reject"]
    assert "write_file" in panel.title.text()
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "needs_input", timeout=5000)
    assert "needs_input" in shell.stream_dock.meta.text()

    panel.option_buttons[0].click()

    qtbot.waitUntil(lambda: not panel.isVisible(), timeout=10_000)
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed", timeout=10_000)
    row = arun(shell.engine.get_session(session_id))
    assert row.workdir
    assert (Path(row.workdir) / "RELAY_DEMO_NOTES.md").is_file()


def test_answered_elsewhere_the_question_disappears(shell: RelayShell, qtbot: QtBot,
                                                   git_repo: Path, arun: Runner) -> None:
    shell.show()
    session_id = _start_asking(shell, qtbot, git_repo)
    question = shell.questions_vm.current
    assert question is not None

    arun(shell.engine.answer_input(session_id, question.request_id, "reject"))

    qtbot.waitUntil(lambda: not shell.question_panel.isVisible(), timeout=10_000)
    assert shell.questions_vm.questions == {}
    qtbot.waitUntil(lambda: shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "completed", timeout=10_000)
