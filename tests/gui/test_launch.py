"""Startup: the display check, and amain's open → demo → quit → close cycle."""

from __future__ import annotations

import asyncio
import concurrent.futures
import runpy
import tempfile
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from relay.core.config import load_config
from relay.core.vault import PASSPHRASE_ENV, ScryptParams, Vault
from relay.engine.engine import Engine
from relay.gui import launch
from relay.gui.docks.sessions_dock import SessionsDock
from relay.gui.main_window import MainWindow
from relay.gui.passphrase import PassphrasePrompter
from relay.runtimes.demo import NOTES_FILE
from tests.gui.conftest import Runner


def test_no_display_is_explained(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    assert launch.main([]) == 2
    err = capsys.readouterr().err
    assert "No display" in err
    assert "relay-cli demo" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "No display"),
    ({"DISPLAY": ":4242"}, "Cannot open the X display"),
    ({"WAYLAND_DISPLAY": "wayland-0"}, None),
    ({"QT_QPA_PLATFORM": "offscreen"}, None),
    ({"QT_QPA_PLATFORM": "xcb", "DISPLAY": ""}, "No display"),
])
def test_display_problem(env: dict[str, str], expected: str | None) -> None:
    problem = launch.display_problem(env, platform="linux")
    assert (problem is None) if expected is None else (expected in (problem or ""))


def test_other_platforms_are_not_checked() -> None:
    assert launch.display_problem({}, platform="darwin") is None
    assert launch.display_problem({}, platform="win32") is None


def _demo_window_done(qapp: QApplication, qtbot: QtBot,
                      timeout: int) -> tuple[MainWindow, SessionsDock]:
    """The window amain opened, once its one demo session has completed."""
    def window() -> MainWindow | None:
        found = [w for w in qapp.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        return found[0] if found else None

    qtbot.waitUntil(lambda: window() is not None, timeout=5000)
    main = window()
    assert main is not None
    dock = main.findChild(SessionsDock)
    assert dock is not None
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 1
                    and dock.vm.session_at(0).state == "completed", timeout=timeout)
    return main, dock


def test_amain_opens_the_window_runs_the_demo_and_closes_on_quit(
        qapp: QApplication, qtbot: QtBot, arun: Runner, relay_home: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    args = launch.build_parser().parse_args(["--demo", "--home", str(relay_home)])
    task = asyncio.get_running_loop().create_task(launch.amain(qapp, args))

    main, dock = _demo_window_done(qapp, qtbot, timeout=15_000)
    row = dock.vm.session_at(0)
    assert row.simulated
    assert row.workdir is not None
    assert (Path(row.workdir) / NOTES_FILE).is_file()

    main.quit_action.trigger()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    assert not main.isVisible()
    # the engine was closed: a fresh one opens the same store and sees the session finished
    engine = arun(Engine.open(load_config(home=relay_home)))
    try:
        assert arun(engine.get_session(row.id)).state == "completed"
    finally:
        arun(engine.close())


def test_the_window_demo_hands_off_without_ever_asking_for_a_passphrase(
        qapp: QApplication, qtbot: QtBot, qloop: asyncio.AbstractEventLoop,
        relay_home: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.delenv(PASSPHRASE_ENV, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # a vault file the window would ask to unlock at start — `relay --demo` never does
    Vault.open(load_config(home=relay_home), lambda _creating: "theirs", env={},
               kdf=ScryptParams(log2_n=10)).signing_key()
    asked: list[str] = []

    def no_dialog(self: PassphrasePrompter, text: str, problem: str,
                  future: concurrent.futures.Future[str | None]) -> None:
        asked.append(text)
        future.set_result(None)

    monkeypatch.setattr(PassphrasePrompter, "_open_dialog", no_dialog)
    args = launch.build_parser().parse_args(["--demo", "--demo-limit-after", "1",
                                             "--home", str(relay_home)])
    task = asyncio.get_running_loop().create_task(launch.amain(qapp, args))

    main, dock = _demo_window_done(qapp, qtbot, timeout=20_000)
    assert dock.vm.session_at(0).simulated
    main.quit_action.trigger()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    assert asked == []  # not at start, not at the handoff, not for its contract


def test_python_dash_m_relay_calls_the_gui_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    def fake_main(argv: list[str] | None = None) -> int:
        calls.append(argv)
        return 0

    monkeypatch.setattr(launch, "main", fake_main)
    with pytest.raises(SystemExit) as done:
        runpy.run_module("relay", run_name="__main__")
    assert done.value.code == 0
    assert calls == [None]
