"""The Handoff panel with a real Engine and the demo runtime: states live, contract, tray."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from relay.core.models import SessionSpec
from relay.core.vault import PASSPHRASE_ENV
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.handoff_text import STEPS
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.handoffs import HandoffsViewModel as Hvm
from relay.sessions.contract import ENVELOPE_JSON
from relay.sessions.demo_key import DEMO_KEY_FILE
from tests.gui.helpers import top_level_kinds

CHAIN = ["demo:primary", "demo:backup"]
CLOCK = re.compile(r"\d\d:\d\d:\d\d")
MakeShell = Callable[[Engine], RelayShell]


@pytest.fixture
def real_chain(fakes_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A real chain (fake CLIs): claude:a hits its usage limit, codex takes the task over."""
    monkeypatch.setenv("RELAY_FAKE_CLAUDE_SCENARIO", "f_usage_limit/run1_subscriber_five_hour")
    monkeypatch.setenv("RELAY_FAKE_CODEX_SCENARIO", "a_text")
    return ["claude:a", "codex"]


@pytest.fixture
def no_passphrase(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OS keyring and no passphrase in the environment."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)


def flip_a_byte(envelope: Path, inside: bytes) -> None:
    data = bytearray(envelope.read_bytes())
    data[data.index(inside)] ^= 0x20  # "A" → "a": one byte, still valid JSON
    envelope.write_bytes(bytes(data))


def start(shell: RelayShell, qtbot: QtBot, spec: SessionSpec) -> str:
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(spec)
    assert started.args is not None
    return str(started.args[0])


def finished(shell: RelayShell) -> bool:
    row = shell.stream_vm.session
    return row is not None and row.finished


def cells(vm: Hvm, row: int) -> list[str]:
    return [str(vm.index(row, col).data()) for col in range(vm.columnCount())]


def test_an_automatic_handoff_shows_each_state_live_with_its_time(
        open_engine: Callable[..., Engine], make_shell: MakeShell, qtbot: QtBot,
        git_repo: Path, vault_env: None) -> None:
    engine = open_engine(demo_step_delay=0.1)
    shell = make_shell(engine)
    vm, dock = shell.handoffs_vm, shell.handoff_dock
    seen: list[str | None] = []
    vm.handoffChanged.connect(lambda hid: seen.append(vm.line(vm.row_of(hid) or 0).state))

    start(shell, qtbot, SessionSpec(repo=git_repo, task="Add the notes", chain=CHAIN,
                                    demo_limit_after=1))
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)

    # every state reached, one after the other, as the steps were committed
    states = [s for i, s in enumerate(seen) if s is not None and (i == 0 or s != seen[i - 1])]
    assert states == list(STEPS)
    line = vm.line(0)
    assert line.title == "demo:primary → demo:backup"
    times = [line.reached[s] for s in STEPS]
    assert times == sorted(times)
    shown = cells(vm, 0)
    assert shown[0] == "demo:primary → demo:backup"
    assert all(CLOCK.fullmatch(text) for text in shown[1:]), shown
    marks = [vm.index(0, col).data(Hvm.CellStateRole) for col in range(1, vm.columnCount())]
    assert marks == ["reached"] * 5 + ["current"]  # done is the current state
    assert not dock.splitter.isHidden()
    assert dock.none_label.isHidden()
    assert dock.selected_handoff() == line.id  # the newest handoff is shown
    detail = dock.detail.toPlainText()
    assert "Why: usage limit" in detail
    assert "Pause: none needed — the agent had already stopped" in detail  # it hit the limit
    assert "Snapshot: commit " in detail


def test_a_real_contract_is_verified_then_a_flipped_byte_reads_tampered(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None,
        real_chain: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    vm, dock, contract = shell.handoffs_vm, shell.handoff_dock, shell.contract_vm
    start(shell, qtbot, SessionSpec(repo=git_repo, task="Add the notes", chain=real_chain))
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)
    qtbot.waitUntil(lambda: contract.status == "verified", timeout=10_000)
    folder = Path(vm.line(0).contract_dir or "")
    assert contract.folder == str(folder)
    assert dock.signature.text() == "signature verified"
    assert theme.OK in dock.signature.styleSheet()
    text = dock.browser.toPlainText()
    assert text.startswith("Continuation contract")  # rendered from markdown: no '#'
    assert "Add the notes" in text

    flip_a_byte(folder / ENVELOPE_JSON, b"Add the notes")
    dock.check_again.click()
    qtbot.waitUntil(lambda: contract.status == "tampered", timeout=10_000)
    assert dock.signature.text().startswith("TAMPERED: The contract's signature does not match")
    assert theme.ERROR in dock.signature.styleSheet()
    assert "Unverified text" in dock.browser.toPlainText()

    monkeypatch.delenv(PASSPHRASE_ENV)  # no passphrase and no prompt: the key is out of reach
    dock.check_again.click()
    qtbot.waitUntil(lambda: contract.status == "unchecked", timeout=10_000)
    assert dock.signature.text() == ("cannot check: vault locked — The vault file needs a "
                                     "passphrase and none was given.")
    assert "Unverified text" in dock.browser.toPlainText()


def test_a_demo_contract_is_shown_as_a_simulation_and_needs_no_vault(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, no_passphrase: None) -> None:
    vm, dock, contract = shell.handoffs_vm, shell.handoff_dock, shell.contract_vm
    start(shell, qtbot, SessionSpec(repo=git_repo, task="Add the notes", chain=CHAIN,
                                    demo_limit_after=1))
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)
    qtbot.waitUntil(lambda: contract.status == "simulated", timeout=10_000)
    assert dock.signature.text() == ("signed with a throwaway demo key — a simulation: it "
                                     "matches that key, which proves nothing")
    assert theme.WARNING in dock.signature.styleSheet()
    shown = dock.browser.toPlainText()
    assert "Add the notes" in shown
    assert shown.rstrip().endswith("contract v2 · signed with a throwaway demo key — a simulation")
    folder = Path(vm.line(0).contract_dir or "")
    assert not (shell.engine.config.home / "vault.bin").exists()  # the vault never opened

    flip_a_byte(folder / ENVELOPE_JSON, b"Add the notes")
    dock.check_again.click()
    qtbot.waitUntil(lambda: contract.status == "tampered", timeout=10_000)
    assert "Unverified text" in dock.browser.toPlainText()
    (folder / DEMO_KEY_FILE).unlink()
    dock.check_again.click()
    qtbot.waitUntil(lambda: contract.status == "unreadable", timeout=10_000)
    assert dock.signature.text().startswith("cannot read the contract: No demo key beside")


def test_html_in_a_contract_shows_as_text(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, no_passphrase: None) -> None:
    """The contract quotes the task: markup in it is shown, never rendered."""
    vm, dock, contract = shell.handoffs_vm, shell.handoff_dock, shell.contract_vm
    task = "Add <b>bold</b> notes <img src='file:///etc/passwd'>"
    start(shell, qtbot, SessionSpec(repo=git_repo, task=task, chain=CHAIN, demo_limit_after=1))
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)
    qtbot.waitUntil(lambda: contract.status == "simulated", timeout=10_000)
    shown = dock.browser.toPlainText()
    assert "<b>bold</b>" in shown
    assert "<img src='file:///etc/passwd'>" in shown
    assert "<img" not in dock.browser.toHtml().replace("&lt;img", "")


def test_a_failed_handoff_shows_where_it_failed_and_why(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, no_passphrase: None,
        real_chain: list[str]) -> None:
    vm, dock = shell.handoffs_vm, shell.handoff_dock  # no prompter: the contract cannot be signed
    sid = start(shell, qtbot, SessionSpec(repo=git_repo, task="t", chain=real_chain))
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "failed", timeout=20_000)
    why = "The vault file needs a passphrase and none was given."
    shown = cells(vm, 0)
    assert all(CLOCK.fullmatch(t) for t in shown[1:3]), shown  # pausing, snapshotted
    assert re.fullmatch(r"✗ failed \d\d:\d\d:\d\d", shown[3]), shown  # at the contract
    assert shown[4:] == ["·", "·", "·"]
    assert vm.index(0, 3).data(Hvm.CellStateRole) == "failed"
    assert f"Failed: {why}" in dock.detail.toPlainText()
    assert dock.contract.status == "none"  # no contract was written
    assert [(n.title, n.warning) for n in shell.tray.notifications] == [("Handoff failed", True)]
    assert shell.tray.notifications[0].message == (
        f"Session “t” ({sid}) could not be handed off from claude:a to codex: {why}")


def test_the_tray_announces_each_handoff_once_and_history_is_not_announced(
        shell: RelayShell, engine: Engine, make_shell: MakeShell, qtbot: QtBot,
        git_repo: Path, vault_env: None) -> None:
    sid = start(shell, qtbot, SessionSpec(repo=git_repo, task="Add the notes", chain=CHAIN,
                                          demo_limit_after=1))
    qtbot.waitUntil(lambda: finished(shell), timeout=20_000)
    assert [n.title for n in shell.tray.notifications] == ["Handoff done"]
    note = shell.tray.notifications[0]
    assert note.message == (f"Session “Add the notes” ({sid}) handed off from demo:primary "
                            "to demo:backup.")
    assert not note.warning
    assert note.message in shell.window.statusBar().currentMessage()  # no tray offscreen

    # a second window reads the same handoff from history: same rows, no notification
    other = make_shell(engine)
    other.show_session(sid)
    qtbot.waitUntil(lambda: other.handoffs_vm.rowCount() == 1
                    and other.handoffs_vm.line(0).state == "done", timeout=5000)
    assert cells(other.handoffs_vm, 0) == cells(shell.handoffs_vm, 0)
    assert other.tray.notifications == []
    assert len(shell.tray.notifications) == 1


def test_hand_off_now_from_the_toolbar_shows_the_answer_and_the_pause(
        open_engine: Callable[..., Engine], make_shell: MakeShell, qtbot: QtBot,
        git_repo: Path, vault_env: None) -> None:
    shell = make_shell(open_engine(demo_step_delay=0.2))
    vm, dock, window = shell.handoffs_vm, shell.handoff_dock, shell.window
    start(shell, qtbot, SessionSpec(repo=git_repo, task="t", chain=CHAIN))
    qtbot.waitUntil(lambda: "tool_call" in top_level_kinds(shell.stream_vm), timeout=5000)
    assert window.handoff_action.isEnabled()
    assert dock.hand_off_button.isEnabled()

    window.handoff_action.trigger()
    qtbot.waitUntil(lambda: not dock.answer.isHidden(), timeout=5000)
    assert dock.answer.text().startswith("Hand off now: pausing at the next safe point")
    assert dock.answer.text().endswith("then handing off to demo:backup")
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)
    line = vm.line(0)
    assert line.reason == "requested by the user"
    assert "Pause: paused at the end of tool call list_files" in dock.detail.toPlainText()
    qtbot.waitUntil(lambda: finished(shell), timeout=20_000)
    assert not window.handoff_action.isEnabled()
    assert not dock.hand_off_button.isEnabled()
    assert [n.title for n in shell.tray.notifications] == ["Handoff done"]


def test_a_refused_hand_off_shows_its_message_in_the_panel(
        open_engine: Callable[..., Engine], make_shell: MakeShell, qtbot: QtBot,
        git_repo: Path, vault_env: None) -> None:
    shell = make_shell(open_engine(demo_step_delay=0.2))
    vm, dock = shell.handoffs_vm, shell.handoff_dock
    start(shell, qtbot, SessionSpec(repo=git_repo, task="t", runtime="demo"))
    qtbot.waitUntil(lambda: "tool_call" in top_level_kinds(shell.stream_vm), timeout=5000)

    dock.hand_off_button.click()
    qtbot.waitUntil(lambda: not dock.error.isHidden(), timeout=5000)
    assert dock.error.text() == ("demo is the last entry of this session's chain.\n"
                                 "→ Name where to hand off to: --to provider[:account].")
    assert "last entry" in shell.window.status.error_label.text()
    assert vm.rowCount() == 0
    assert dock.answer.isHidden()

    dock.target.setText("codex:")  # checked here, never sent
    dock.hand_off_button.click()
    assert dock.error.text().startswith("'codex:': name the account after the colon")
    assert "name the account" in shell.window.status.error_label.text()  # one message path

    dock.target.setText("demo:spare")
    dock.hand_off_button.click()
    qtbot.waitUntil(lambda: not dock.answer.isHidden(), timeout=5000)
    assert dock.error.isHidden()
    qtbot.waitUntil(lambda: vm.rowCount() == 1 and vm.line(0).state == "done", timeout=20_000)
    assert vm.line(0).title == "demo → demo:spare"
    qtbot.waitUntil(lambda: finished(shell), timeout=20_000)


def test_a_waiting_session_counts_down_and_is_handed_off_from_its_context_menu(
        shell: RelayShell, qtbot: QtBot, git_repo: Path, vault_env: None) -> None:
    sessions = shell.sessions_vm
    sid = start(shell, qtbot, SessionSpec(repo=git_repo, task="t", chain=CHAIN,
                                          demo_limit_after=1, on_limit="wait",
                                          max_wait_s=6 * 3600))

    def state_cell() -> str:
        row = sessions.row_of(sid)
        return "" if row is None else str(sessions.index(row, 0).data())

    qtbot.waitUntil(lambda: state_cell().startswith("waiting · "), timeout=10_000)
    first = state_cell()
    assert re.fullmatch(r"waiting · 5h 00m \d\ds", first), first  # 5 h + the margin
    tip = str(sessions.index(sessions.row_of(sid) or 0, 0).data(Qt.ItemDataRole.ToolTipRole))
    assert "quota-blocked: resumes at the limit's reset" in tip
    assert sessions.ticking
    wait = shell.stream_dock.wait
    qtbot.waitUntil(lambda: not wait.isHidden(), timeout=5000)
    assert shell.stream_dock.ticking
    assert re.match(r"Waiting for the limit's reset — resumes in 5:00:\d\d \(at \d\d:\d\d:\d\d\)",
                    wait.text()), wait.text()
    before = wait.text()
    row = sessions.row_of(sid)

    def a_tick(top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> bool:
        # the timer repaints only the State cell's text (a refresh would repaint whole rows)
        return (top.row(), top.column(), bottom.row(), bottom.column()) == (row, 0, row, 0) \
            and roles == [Qt.ItemDataRole.DisplayRole]

    with qtbot.waitSignal(sessions.dataChanged, timeout=2500, check_params_cb=a_tick):
        pass
    qtbot.waitUntil(lambda: state_cell() != first and wait.text() != before, timeout=2500)
    assert [n.title for n in shell.tray.notifications] == ["Waiting for a limit's reset"]
    until = shell.stream_vm.session.wait_until if shell.stream_vm.session else None
    assert until is not None
    assert f"it resumes at {until.astimezone():%H:%M}" in shell.tray.notifications[0].message

    menu = shell.sessions_dock.context_menu(sessions.row_of(sid) or 0)
    actions = {a.text(): a for a in menu.actions()}
    assert actions["Hand off now"].isEnabled()
    actions["Hand off now"].trigger()
    qtbot.waitUntil(lambda: finished(shell), timeout=20_000)
    assert shell.stream_vm.session is not None
    assert shell.stream_vm.session.state == "completed"
    assert "the agent was not running" in shell.handoff_dock.detail.toPlainText()
    qtbot.waitUntil(lambda: not sessions.ticking and not shell.stream_dock.ticking
                    and wait.isHidden(), timeout=5000)
    assert [n.title for n in shell.tray.notifications] == ["Waiting for a limit's reset",
                                                           "Handoff done"]

    def offered() -> set[str]:
        # the sessions table refreshes after the stream's own state (its refresh is queued):
        # once its row is done too, the menu offers no stop or handoff, but the rest
        menu = shell.sessions_dock.context_menu(sessions.row_of(sid) or 0)
        return {a.text() for a in menu.actions() if a.isEnabled() and a.text()}

    qtbot.waitUntil(lambda: state_cell() == "done", timeout=5000)
    assert not offered() & {"Stop", "Hand off now", "Hand off to…"}
    assert {"Open stream", "Continue…", "Archive", "Copy session id"} <= offered()


def test_hand_off_to_opens_the_target_field(shell: RelayShell, qtbot: QtBot,
                                           git_repo: Path, vault_env: None) -> None:
    sid = start(shell, qtbot, SessionSpec(repo=git_repo, task="t", chain=CHAIN,
                                          demo_limit_after=1, on_limit="wait",
                                          max_wait_s=6 * 3600))
    shell.window.show()
    qtbot.waitExposed(shell.window)
    qtbot.waitUntil(lambda: shell.handoffs_vm.can_hand_off
                    and shell.stream_vm.session is not None
                    and shell.stream_vm.session.state == "waiting", timeout=10_000)
    shell.handoff_dock.target.setText("demo:old")
    menu = shell.sessions_dock.context_menu(shell.sessions_vm.row_of(sid) or 0)
    {a.text(): a for a in menu.actions()}["Hand off to…"].trigger()
    assert shell.handoff_dock.target.selectedText() == "demo:old"  # ready to be typed over
    QTest.keyClicks(shell.handoff_dock.target, "demo:spare")
    QTest.keyClick(shell.handoff_dock.target, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: finished(shell), timeout=20_000)
    assert shell.handoffs_vm.line(0).to_entry == "demo:spare"

