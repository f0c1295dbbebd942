"""The window's crash path: a raise in a Qt slot, a thread or a forgotten asyncio task
reaches the one handler once, is logged (scrubbed) and shown once — repeats only count."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from relay.core.crash import CRASH_EXIT, Crash, CrashHandler, log_path
from relay.engine.engine import Engine
from relay.gui import launch
from relay.gui.crash_dialog import MAX_DIALOGS, CrashDialogs, window_crash_handler
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner

FAKE_KEY = "sk-ant-api03-" + "Qw3Er4Ty" * 10


class Window:
    """A crash handler wired to the window's dialogs, as ``relay`` installs it."""

    def __init__(self, home: Path) -> None:
        self.handler, self.dialogs = window_crash_handler(log_path(home))
        self.shown: list[Crash] = []
        self.dialogs.shown.connect(self.shown.append)

    def boxes(self) -> list[QMessageBox]:
        return list(self.dialogs.dialogs.values())

    def log(self) -> str:
        return self.handler.log_file.read_text()

    def assert_shown_once(self, qtbot: QtBot, count: int = 1) -> QMessageBox:
        qtbot.waitUntil(lambda: len(self.shown) == 1 and self.shown[0].count == count, timeout=3000)
        qtbot.wait(20)  # let any late (queued) deliveries land
        assert len(self.shown) == 1
        boxes = self.boxes()
        assert len(boxes) == 1
        box = boxes[0]
        assert box.isVisible()
        for text in (box.text(), box.informativeText(), box.detailedText(), self.log()):
            assert FAKE_KEY not in text
        assert "[REDACTED:anthropic_key]" in box.text()
        assert str(self.handler.log_file) in box.informativeText()
        return box


@pytest.fixture
def window(relay_home: Path) -> Iterator[Window]:
    made = Window(relay_home)
    with made.handler.installed():
        yield made
    made.dialogs.close_all()


class Emitter(QObject):
    fired = Signal()


def test_a_raise_in_a_qt_slot_is_shown_once_with_a_count(window: Window, qtbot: QtBot) -> None:
    emitter = Emitter()

    def slot() -> None:
        raise ValueError(f"the slot broke on {FAKE_KEY}")

    emitter.fired.connect(slot)
    for _ in range(3):
        emitter.fired.emit()

    box = window.assert_shown_once(qtbot, count=3)
    qtbot.waitUntil(lambda: "(it happened 3 times)" in box.text(), timeout=2000)
    assert "ValueError: the slot broke on" in box.text()
    assert "in slot" in box.detailedText()
    log = window.log()
    assert log.count("Traceback") == 1
    assert "crash in the main thread" in log


def test_a_raise_in_a_timer_callback_is_shown(window: Window, qtbot: QtBot) -> None:
    def tick() -> None:
        raise KeyError(FAKE_KEY)

    QTimer.singleShot(0, tick)

    box = window.assert_shown_once(qtbot)
    assert "KeyError" in box.text()


def test_a_raise_in_a_thread_is_shown_once(window: Window, qtbot: QtBot) -> None:
    def work() -> None:
        raise RuntimeError(f"worker lost {FAKE_KEY}")

    for _ in range(2):
        thread = threading.Thread(target=work, name="relay-scan")
        thread.start()
        thread.join()

    box = window.assert_shown_once(qtbot, count=2)
    assert "thread relay-scan" in box.informativeText()
    assert "crash in thread relay-scan" in window.log()


def test_a_forgotten_asyncio_task_s_raise_is_shown_once(
        window: Window, qtbot: QtBot, qloop: asyncio.AbstractEventLoop) -> None:
    async def forgotten() -> None:
        raise LookupError(f"nobody awaited {FAKE_KEY}")

    with window.handler.watching(qloop):
        qloop.create_task(forgotten(), name="forgotten")  # dropped on purpose
        qtbot.wait(20)
        gc.collect()
        box = window.assert_shown_once(qtbot)

    assert "asyncio task forgotten" in box.informativeText()
    assert "LookupError" in window.log()


def test_a_crash_storm_of_distinct_crashes_opens_few_dialogs(window: Window,
                                                             qtbot: QtBot) -> None:
    empty: dict[str, int] = {}
    makers: list[Callable[[], object]] = [lambda: 1 / 0, lambda: [][1], lambda: empty["x"],
                                          lambda: int("x"), lambda: next(iter([]))]
    for make in makers:
        try:
            make()
        except Exception as exc:  # noqa: BLE001 — each maker raises a different type
            window.handler.handle(exc, "a test")

    qtbot.waitUntil(lambda: len(window.shown) == len(makers), timeout=3000)
    assert len(window.boxes()) == MAX_DIALOGS
    assert "2 more internal errors" in window.boxes()[-1].informativeText()


def test_a_window_task_s_crash_is_logged_shown_and_said_in_its_panel(
        engine: Engine, relay_home: Path, arun: Runner, qtbot: QtBot) -> None:
    made = Window(relay_home)
    shell = RelayShell(engine, crashes=made.handler)

    async def broken() -> None:
        raise ValueError(f"a view broke on {FAKE_KEY}")

    try:
        shell.bridge.tasks.start(broken(), context="sessions")
        box = made.assert_shown_once(qtbot)
        assert "a window task (sessions)" in box.informativeText()
        panel = shell.sessions_dock.error.text()
        assert panel.startswith("Internal error: ValueError: a view broke on [REDACTED")
        assert str(made.handler.log_file) in panel
        assert "Internal error" in shell.window.status.error_label.text()
    finally:
        arun(shell.aclose())
        made.dialogs.close_all()


def test_dialogs_of_a_closed_crash_stay_closed(relay_home: Path, qtbot: QtBot) -> None:
    dialogs = CrashDialogs(relay_home / "relay.log")
    handler = CrashHandler(relay_home / "relay.log", dialogs.show, dialogs.again)
    try:
        raise ValueError("once")
    except ValueError as exc:
        first = exc
    handler.handle(first, "here")
    qtbot.waitUntil(lambda: len(dialogs.dialogs) == 1, timeout=2000)
    box = next(iter(dialogs.dialogs.values()))
    box.close()
    handler.handle(first, "here")
    qtbot.waitUntil(lambda: "2 times" in box.text(), timeout=2000)
    assert not box.isVisible()
    dialogs.close_all()


def test_relay_exits_70_with_one_line_when_the_window_itself_crashes(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        relay_home: Path) -> None:
    async def broken(*_args: object) -> int:
        raise ValueError(f"cannot start {FAKE_KEY}")

    monkeypatch.setattr(launch, "amain", broken)
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")

    assert launch.main(["--home", str(relay_home)]) == CRASH_EXIT

    err = capsys.readouterr().err.strip()
    assert err == (f"Relay crashed: ValueError: cannot start [REDACTED:anthropic_key]; the details "
                   f"are in {log_path(relay_home)}; please report it")
    assert "crash in the window's main coroutine" in log_path(relay_home).read_text()
