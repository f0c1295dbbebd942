"""``relay`` paints its window before it imports the engine stack (issue 24), and the window
painted first is the one the shell then fills. No timing (``benchmarks/startup`` measures it):
which modules are loaded when the frame is painted, and what the frame becomes."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QMenu
from pytestqt.qtbot import QtBot

from relay.api.attach import attach
from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.gui import launch
from relay.gui.docks.sessions_dock import SessionsDock
from relay.gui.main_window import DOCKS, MainWindow
from relay.gui.shell import RelayShell
from tests.gui.conftest import Runner

#: not one of them is needed to paint the window's frame
HEAVY = ("relay.engine", "relay.api", "relay.sessions", "relay.runtimes", "relay.wallet",
         "relay.core.config", "relay.core.events", "relay.core.vault", "relay.gui.shell",
         "relay.gui.window_run", "pydantic", "pygit2", "cryptography", "keyring", "aiosqlite",
         "httpx", "fastapi", "asyncio", "qasync")

#: relay's own main(), stopped right after it painted the frame: what was loaded by then
_PROBE = """
import json, os, sys
from relay.gui import launch
painting = launch.paint_frame
def painted(app, args):
    frame = painting(app, args)
    heavy = json.loads(os.environ["PROBE_HEAVY"])
    loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
    from PySide6.QtWidgets import QDockWidget
    docks = [d.windowTitle() for d in frame.findChildren(QDockWidget)]
    print("PROBE " + json.dumps({"visible": frame.isVisible(), "loaded": loaded,
                                 "docks": docks}), flush=True)
    os._exit(0)
launch.paint_frame = painted
sys.exit(launch.main(sys.argv[1:]))
"""


def _first_paint(home: Path, *argv: str) -> tuple[dict[str, Any], str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PROBE_HEAVY": json.dumps(HEAVY),
           "RELAY_HOME": str(home), "QT_LOGGING_RULES": "qt.widgets.painting.debug=true"}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], env=env, timeout=120,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    lines = proc.stdout.splitlines()
    probe = [line for line in lines if line.startswith("PROBE ")]
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert probe, proc.stdout[-3000:]
    before = "\n".join(lines[:lines.index(probe[0])])  # Qt's log (stderr) up to the probe
    return json.loads(probe[0].removeprefix("PROBE ")), before


def test_the_frame_is_painted_before_the_engine_stack_is_imported(tmp_path: Path) -> None:
    result, log = _first_paint(tmp_path / "home")

    assert result["visible"] is True
    assert result["loaded"] == []
    assert "Flushing" in log  # Qt flushed the frame's backing store: it was painted
    assert "relayMainWindow" in log
    assert sorted(result["docks"]) == sorted(title for title, _name in DOCKS)


def test_relay_hidden_paints_nothing_and_imports_the_same(tmp_path: Path) -> None:
    result, log = _first_paint(tmp_path / "home", "--hidden")

    assert result["visible"] is False
    assert result["loaded"] == []
    assert "Flushing" not in log


def test_the_frame_s_docks_are_the_shell_s(shell: RelayShell) -> None:
    """The frame's waiting docks carry the titles and object names of the shell's docks, in
    the order MainWindow takes them: the real docks take their places."""
    placed = [shell.sessions_dock, shell.stream_dock, shell.handoff_dock, shell.wallet_dock,
              shell.detect_dock, shell.knowledge_dock, shell.board_dock, shell.designer_dock,
              shell.history_dock]
    assert [(d.windowTitle(), d.objectName()) for d in placed] == list(DOCKS)


def _layout(window: MainWindow) -> dict[str, object]:
    docks = {d.windowTitle(): d for d in window.findChildren(QDockWidget)}
    return {"docks": sorted(docks),
            "areas": {t: window.dockWidgetArea(d).name for t, d in docks.items()},
            "tabs": {t: sorted(x.windowTitle() for x in window.tabifiedDockWidgets(d))
                     for t, d in docks.items()},
            "visible": sorted(t for t, d in docks.items() if d.isVisible())}


def test_the_shell_fills_the_painted_frame_in_place(qapp: QApplication, qtbot: QtBot,
                                                    engine: Engine, arun: Runner) -> None:
    frame = MainWindow.frame(qapp.windowIcon())
    frame.show()
    qtbot.waitExposed(frame)
    texts = {label.text() for label in frame.findChildren(QLabel, "waitingLabel")}
    assert texts == {"Starting…"}
    painted = _layout(frame)
    size = frame.size()

    shell = RelayShell(engine, window=frame)
    try:
        assert shell.window is frame
        assert not frame.waiting
        assert not frame.findChildren(QLabel, "waitingLabel")
        assert frame.findChild(SessionsDock) is shell.sessions_dock
        assert _layout(frame) == painted  # every dock where the frame had it, the same tabs
        assert frame.size() == size
        view = next(m for m in frame.menuBar().findChildren(QMenu) if m.title() == "&View")
        switches = [a.text() for a in view.actions() if not a.isSeparator()]
        assert switches == [*(title for title, _name in DOCKS), "&Reset layout"]
        # errors reach the status bar and the panel through the frame's one Messages
        assert shell.messages is frame.messages
        shell.messages.error("sessions", "The repo is gone.")
        assert "The repo is gone." in frame.status.error_label.text()
        frame.reset_layout()
        assert _layout(frame) == painted
    finally:
        arun(shell.aclose())


def test_a_dock_closed_in_the_frame_stays_closed(qapp: QApplication, qtbot: QtBot,
                                                 engine: Engine, arun: Runner) -> None:
    frame = MainWindow.frame()
    frame.show()
    qtbot.waitExposed(frame)
    waiting_wallet = next(d for d in frame.findChildren(QDockWidget) if d.windowTitle() == "Wallet")
    waiting_wallet.close()

    shell = RelayShell(engine, window=frame)
    try:
        assert not shell.wallet_dock.isVisible()
        assert shell.sessions_dock.isVisible()
    finally:
        arun(shell.aclose())


def _run(qloop: asyncio.AbstractEventLoop, qapp: QApplication, home: Path, *argv: str,
         frame: MainWindow) -> asyncio.Task[int]:
    args = launch.build_parser().parse_args(["--home", str(home), *argv])
    return qloop.create_task(launch.amain(qapp, args, frame=frame))


def test_relay_fills_the_window_it_painted_and_runs_the_demo(
        qapp: QApplication, qtbot: QtBot, qloop: asyncio.AbstractEventLoop, relay_home: Path,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    monkeypatch.setenv("RELAY_PORT", "0")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    frame = launch.paint_frame(qapp, argparse.Namespace(home=relay_home, hidden=False))
    assert frame.isVisible()
    assert frame.waiting

    task = _run(qloop, qapp, relay_home, "--demo", frame=frame)
    qtbot.waitUntil(lambda: not frame.waiting, timeout=20_000)
    dock = frame.findChild(SessionsDock)
    assert dock is not None
    qtbot.waitUntil(lambda: dock.vm.rowCount() == 1
                    and dock.vm.session_at(0).state == "completed", timeout=20_000)
    assert frame.isVisible()
    frame.quit_action.trigger()
    qtbot.waitUntil(task.done, timeout=10_000)
    assert task.result() == 0
    assert not frame.isVisible()


def test_quit_while_the_frame_waits_quits_once_the_window_is_there(
        qapp: QApplication, qtbot: QtBot, qloop: asyncio.AbstractEventLoop, relay_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_PORT", "0")
    frame = launch.paint_frame(qapp, argparse.Namespace(home=relay_home, hidden=False))
    def attaching(*args: Any, **kwargs: Any) -> Any:
        frame.quit_action.trigger()  # while the engine opens: no shell is there to ask yet
        return attach(*args, **kwargs)

    monkeypatch.setattr("relay.gui.window_run.attach", attaching)
    task = _run(qloop, qapp, relay_home, frame=frame)
    qtbot.waitUntil(task.done, timeout=20_000)
    assert task.result() == 0
    assert not frame.waiting  # it got as far as the window, and quit from there
    assert not frame.isVisible()


@pytest.mark.parametrize(("env", "toml", "expected"), [
    ({}, None, "system"),
    ({"RELAY_THEME": "dark"}, None, "dark"),
    ({}, 'gui_theme = "light"\n', "light"),
    ({"RELAY_THEME": "dark"}, 'gui_theme = "light"\n', "dark"),
    ({}, 'gui_theme = "purple"\n', "system"),  # the settings, read in full, say what is wrong
    ({}, "not toml [", "system"),
])
def test_the_frame_is_painted_in_the_settings_theme(tmp_path: Path, env: dict[str, str],
                                                    toml: str | None, expected: str) -> None:
    if toml is not None:
        (tmp_path / "relay.toml").write_text(toml, encoding="utf-8")

    assert launch.frame_theme(tmp_path, env) == expected
    if expected != "system":  # the same as the settings' model says
        assert load_config(env=env, home=tmp_path).gui_theme == expected
