"""A client window whose host goes: attached through the data folder's host.json, it becomes
the host itself (the window, its selection and its docks stay); attached with ``--connect``,
it says it is disconnected and carries on when the host comes back. Neither prints a
traceback (issue 19)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytestqt.qtbot import QtBot

from relay.api.client import RelayClient
from relay.core.errors import HostGoneError
from relay.core.hostfile import read_host, read_token
from relay.core.models import SessionSpec
from relay.gui.shell import RelayShell
from tests.api.test_host_process import _serve, _stop
from tests.gui.conftest import Runner, Started


def _row(shell: RelayShell, task: str) -> Any:
    rows = [r for r in shell.sessions_vm.rows() if r.task == task]
    return rows[0] if rows else None


def _state(shell: RelayShell, task: str) -> str | None:
    row = _row(shell, task)
    return str(row.state) if row is not None else None


def _start_over_api(arun: Runner, client: RelayClient, repo: Path, task: str) -> str:
    return str(arun(client.start_session(SessionSpec(repo=repo, task=task, runtime="demo"))))


#: an "Exception ignored in …" (an async generator of httpx's closed by the garbage
#: collector, from no task) fails the test: pytest reports those as this warning
QUIET = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")


def _quiet(err: str, caplog: pytest.LogCaptureFixture) -> None:
    """No traceback on the terminal, no error logged: the host's stop is expected."""
    gc.collect()  # a generator left unclosed is finalized now, if there is one
    assert "Exception ignored" not in err, err
    assert "Traceback" not in err, err
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [r.getMessage() for r in loud]


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    """Host processes the test starts; any still running at the end is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@QUIET
def test_a_client_window_whose_host_stops_becomes_the_host(
        window: Started, relay_home: Path, git_repo: Path, arun: Runner, qtbot: QtBot,
        procs: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")
    procs.append(_serve(relay_home))
    _task, shell = window()
    assert not shell.hosting
    api = RelayClient.for_home(relay_home)
    assert api is not None
    try:
        sid = _start_over_api(arun, api, git_repo, "before")
    finally:
        arun(api.aclose())
    qtbot.waitUntil(lambda: _state(shell, "before") == "completed", timeout=30_000)
    shell.show_session(sid)
    qtbot.waitUntil(lambda: shell.stream_vm.session_id == sid, timeout=5000)

    _stop(procs[0])  # the host stops: this window hosts now
    qtbot.waitUntil(lambda: shell.hosting, timeout=30_000)
    info = read_host(relay_home)
    assert info is not None
    assert (info.pid, info.kind) == (os.getpid(), "window")
    assert shell.window.home_label.text() == f"Hosting {relay_home} at {info.url}"
    assert shell.stream_vm.session_id == sid  # the selection stays
    assert shell.wallet_dock.isVisibleTo(shell.window)
    assert shell.services is shell.engine  # the feature docks use the engine now
    assert "The host stopped; this window hosts now" in shell.window.statusBar().currentMessage()

    api = RelayClient.for_home(relay_home)
    assert api is not None
    try:
        assert api.url == info.url
        after = _start_over_api(arun, api, git_repo, "after")
        qtbot.waitUntil(lambda: _state(shell, "after") == "completed", timeout=30_000)
        assert _row(shell, "after").id == after
    finally:
        arun(api.aclose())
    _quiet(capfd.readouterr().err, caplog)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@QUIET
def test_a_connected_window_says_it_is_disconnected_and_carries_on_when_the_host_is_back(
        window: Started, tmp_path: Path, git_repo: Path, arun: Runner, qtbot: QtBot,
        procs: list[subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    remote = tmp_path / "remote-home"  # another data folder: never hosted by this window
    port = _free_port()
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0"}
    procs.append(_serve(remote, env, port))
    info = read_host(remote)
    assert info is not None
    token = read_token(remote)
    assert token is not None
    _task, shell = window("--connect", info.url, "--token", token)
    assert not shell.hosting
    assert shell.window.home_label.text() == f"Connected to {info.url}"

    _stop(procs[0])
    qtbot.waitUntil(lambda: shell.window.home_label.text()
                    == f"Disconnected from {info.url} — retrying", timeout=30_000)
    assert not shell.hosting

    procs.append(_serve(remote, env, port))  # the host is back on the same URL
    assert getattr(read_host(remote), "url", None) == info.url
    qtbot.waitUntil(lambda: shell.window.home_label.text() == f"Connected to {info.url}",
                    timeout=30_000)
    api = RelayClient.connect(info.url, token)
    try:
        _start_over_api(arun, api, git_repo, "after the break")
    finally:
        arun(api.aclose())
    qtbot.waitUntil(lambda: _state(shell, "after the break") == "completed", timeout=30_000)
    assert not shell.hosting
    assert not (tmp_path / "relay-home" / "host.json").exists()
    _quiet(capfd.readouterr().err, caplog)


@QUIET
def test_following_a_host_that_stops_ends_quietly_on_the_windows_loop(
        relay_home: Path, arun: Runner, procs: list[subprocess.Popen[str]],
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    # on the window's loop (qasync: no async-generator hooks, so a stream must be closed by
    # the task that reads it), following ends with the host's stop: said, nothing printed
    procs.append(_serve(relay_home))
    client = RelayClient.for_home(relay_home)
    assert client is not None

    linked = asyncio.Event()

    def on_link(up: bool) -> None:
        if up:
            linked.set()

    async def follow() -> str:
        try:
            async for _record in client.follow(None, after=0, on_link=on_link):
                pass
        except HostGoneError as exc:
            return exc.message
        return "ended"

    async def stop_while_following() -> str:
        following = asyncio.ensure_future(follow())
        await linked.wait()
        await asyncio.to_thread(_stop, procs[0])
        return await following

    try:
        assert "has stopped" in arun(stop_while_following(), timeout=60)
    finally:
        arun(client.aclose())
    _quiet(capfd.readouterr().err, caplog)
