"""GUI test fixtures: offscreen Qt, failing on Qt warnings, one qasync loop per test.

* ``QT_QPA_PLATFORM=offscreen`` is set here, before any QApplication exists.
* Every Qt warning / critical message fails the test that caused it (after
  qutebrowser's logfail): a message handler records them; the call phase is
  marked failed in ``pytest_runtest_makereport``; messages during teardown fail
  the teardown.
* ``qloop`` makes a qasync ``QEventLoop`` the running asyncio loop for the test,
  so Qt event processing (``qtbot.waitUntil`` / ``waitSignal``) also drives the
  engine's coroutines; ``arun`` runs one coroutine to completion that way.
  At teardown, tasks still pending and threads still alive fail the test.
"""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("QT_API", "pyside6")

import asyncio
import gc
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QMessageLogContext, QtMsgType, qInstallMessageHandler
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

# relay's window imports the host after its first paint (gui/launch.py): loaded here, so
# that no test's timeout around amain's start counts its import
import relay.gui.window_run  # noqa: F401
from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.gui import launch
from relay.gui.main_thread_gc import MainThreadCollector
from relay.gui.shell import RelayShell

T = TypeVar("T")
Runner = Callable[..., Any]
#: ``window(*argv)`` (the fixture): a running ``relay``'s task and its shell
Started = Callable[..., tuple["asyncio.Task[int]", RelayShell]]

_FAILING = (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)
#: messages the offscreen platform plugin prints for what it cannot do (not our bugs).
#: Exact text only: anything else still fails.
_PLATFORM_NOISE = frozenset({
    "This plugin does not support propagateSizeHints()",
    "This plugin does not support raise()",
})


class QtWarningRecorder:
    """A Qt message handler that records warnings (and passes everything on)."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._previous: Any = None

    def __call__(self, kind: QtMsgType, context: QMessageLogContext, message: str) -> None:
        if kind in _FAILING and message not in _PLATFORM_NOISE:
            where = f" [{context.category}]" if context.category else ""
            self.messages.append(f"{kind.name}{where}: {message}")
        if callable(self._previous):
            self._previous(kind, context, message)

    def install(self) -> None:
        self._previous = qInstallMessageHandler(self)

    def uninstall(self) -> None:
        qInstallMessageHandler(self._previous)

    def take(self) -> list[str]:
        taken, self.messages = self.messages, []
        return taken


_RECORDER = pytest.StashKey[QtWarningRecorder]()


@pytest.fixture(autouse=True)
def gui_thread_gc(qapp: QApplication) -> Iterator[None]:
    """As in the window (gui/launch.py): garbage is collected on the GUI thread only, so a
    worker thread's collection never destroys a Qt object (that aborts the process).

    The collector's stop collects every generation. What survives that is the worker's
    long-lived state (modules, classes, Qt's and pydantic's caches): it is frozen
    (:func:`gc.freeze`), so the next test's collection walks only what that test made — a
    full walk of the whole heap took ~0.3 s per test, and there are hundreds of GUI tests."""
    collector = MainThreadCollector()
    collector.start()
    yield
    collector.stop()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def gc_unfrozen_at_the_end() -> Iterator[None]:
    """The frozen objects go back to the collector when the session ends (a library that
    looks at :func:`gc.get_referrers` then — hypothesis at its summary — sees them again)."""
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def qt_warnings(request: pytest.FixtureRequest) -> Iterator[QtWarningRecorder]:
    """Record Qt warnings for this test; any left at teardown fail it."""
    recorder = QtWarningRecorder()
    recorder.install()
    request.node.stash[_RECORDER] = recorder
    yield recorder
    recorder.uninstall()
    late = recorder.take()
    if late:
        pytest.fail("Qt warnings during teardown:\n" + "\n".join(late))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    recorder = item.stash.get(_RECORDER, None)
    if call.when == "call" and recorder is not None:
        messages = recorder.take()
        if messages and report.passed:
            report.outcome = "failed"
            report.longrepr = "The test emitted Qt warnings:\n" + "\n".join(messages)
    return report


@pytest.fixture
def qloop(qapp: QApplication, qtbot: QtBot) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop, running for the whole test (Qt events drive it)."""
    threads_before = set(threading.enumerate())
    loop = qasync.QEventLoop(qapp, already_running=True)
    try:
        yield loop
    finally:
        leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in leftovers:
            task.cancel()
        qtbot.waitUntil(lambda: all(t.done() for t in leftovers), timeout=5000)
        asyncio.events._set_running_loop(None)
        # QEventLoop.stop() would call QApplication.exit(); no exec() runs here,
        # so only mark the loop stopped, then close it (joins its executor threads).
        loop._QEventLoop__is_running = False
        loop.close()
        qtbot.waitUntil(lambda: set(threading.enumerate()) <= threads_before, timeout=5000)
    if leftovers:
        pytest.fail(f"asyncio tasks outlived the test: {leftovers}")


@pytest.fixture
def arun(qloop: asyncio.AbstractEventLoop, qtbot: QtBot) -> Runner:
    """``arun(coro, timeout=10.0)``: run a coroutine on the test loop, return its result."""

    def run(coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        task = qloop.create_task(coro)
        qtbot.waitUntil(task.done, timeout=int(timeout * 1000))
        return task.result()

    return run


@pytest.fixture
def open_engine(arun: Runner) -> Iterator[Callable[..., Engine]]:
    """``open_engine(**config_flags)``; every engine opened is closed at teardown."""
    engines: list[Engine] = []

    def factory(**flags: Any) -> Engine:
        engine: Engine = arun(Engine.open(load_config(**flags)))
        engines.append(engine)
        return engine

    yield factory
    for engine in engines:
        arun(engine.close())


@pytest.fixture
def engine(open_engine: Callable[..., Engine]) -> Engine:
    """An engine whose demo runs without pauses."""
    return open_engine(demo_step_delay=0)


@pytest.fixture
def make_shell(arun: Runner, open_engine: Callable[..., Engine]
               ) -> Iterator[Callable[[Engine], RelayShell]]:
    """``make_shell(engine)``: a wired window; closed (tasks cancelled) at teardown.

    Depends on ``open_engine`` so shells are closed before their engines.
    """
    shells: list[RelayShell] = []

    def factory(engine: Engine) -> RelayShell:
        shell = RelayShell(engine)
        shells.append(shell)
        return shell

    yield factory
    for shell in shells:
        arun(shell.aclose())


@pytest.fixture
def shell(make_shell: Callable[[Engine], RelayShell], engine: Engine) -> RelayShell:
    return make_shell(engine)



@pytest.fixture
def window(qapp: QApplication, qtbot: QtBot, qloop: asyncio.AbstractEventLoop,
           relay_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Started]:
    """``window(*argv)``: run ``relay`` (amain) on the test loop; returns its task and shell.
    Every window still open at the end is quit, its question answered "stop"."""
    monkeypatch.setenv("RELAY_PORT", "0")
    made: list[RelayShell] = []

    class Recorded(RelayShell):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(launch, "RelayShell", Recorded)
    tasks: list[asyncio.Task[int]] = []

    def start(*argv: str) -> tuple[asyncio.Task[int], RelayShell]:
        args = launch.build_parser().parse_args(["--home", str(relay_home), *argv])
        before = len(made)
        task = qloop.create_task(launch.amain(qapp, args))
        tasks.append(task)
        qtbot.waitUntil(lambda: len(made) > before or task.done(), timeout=10_000)
        assert not task.done(), task.result()
        shell = made[before]
        qtbot.waitUntil(shell.window.isVisible, timeout=5000)
        return task, shell

    yield start
    for task, shell in reversed(list(zip(tasks, made, strict=False))):
        if not task.done():
            shell.keep_running = False
            shell.quitRequested.emit()
        qtbot.waitUntil(task.done, timeout=20_000)
