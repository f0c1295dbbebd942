"""relay-cli after an internal error: one line on stderr, the details logged, exit 70.

The errors are injected in-process (a command function patched), never by a variable that
production code reads.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from relay.cli import main as cli_main
from relay.core.crash import CRASH_EXIT, log_path
from relay.core.errors import RelayError

FAKE_KEY = "sk-ant-api03-" + "Zx9Yw8Vu" * 10


def _one_crash_line(err: str, home: Path) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert FAKE_KEY not in err
    assert lines[0].startswith("Relay crashed: ")
    assert lines[0].endswith(f"; the details are in {log_path(home)}; please report it")
    return lines[0]


def _log(home: Path) -> str:
    text = log_path(home).read_text()
    assert FAKE_KEY not in text
    return text


def _patch(monkeypatch: pytest.MonkeyPatch, dispatch: Any) -> None:
    monkeypatch.setattr(cli_main, "_dispatch", dispatch)


def test_an_internal_error_in_a_command_exits_70_with_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        relay_home: Path) -> None:
    async def broken(_args: argparse.Namespace, _console: object) -> int:
        raise ValueError(f"cannot use {FAKE_KEY}")

    _patch(monkeypatch, broken)

    assert cli_main.main(["sessions", "--json"]) == CRASH_EXIT

    line = _one_crash_line(capsys.readouterr().err, relay_home)
    assert "ValueError: cannot use [REDACTED:anthropic_key]" in line
    log = _log(relay_home)
    assert "crash in relay-cli sessions" in log
    assert "in broken" in log


def test_a_crash_in_a_quick_command_exits_70(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        relay_home: Path) -> None:
    def broken(_args: argparse.Namespace, _console: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli_main, "_quick", broken)

    assert cli_main.main(["sessions"]) == CRASH_EXIT
    assert "ZeroDivisionError" in _one_crash_line(capsys.readouterr().err, relay_home)


def test_a_thread_that_crashes_twice_is_one_line_and_exit_70(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        relay_home: Path) -> None:
    def work() -> None:
        raise RuntimeError(f"worker lost {FAKE_KEY}")

    async def command(_args: argparse.Namespace, _console: object) -> int:
        for _ in range(2):
            thread = threading.Thread(target=work, name="relay-worker")
            thread.start()
            thread.join()
        return 0  # the command itself "succeeded"

    _patch(monkeypatch, command)

    assert cli_main.main(["sessions", "--json"]) == CRASH_EXIT
    assert "RuntimeError: worker lost" in _one_crash_line(capsys.readouterr().err, relay_home)
    log = _log(relay_home)
    assert "crash in thread relay-worker" in log
    assert "crash again (2 times)" in log


def test_an_unawaited_task_s_crash_exits_70(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        relay_home: Path) -> None:
    async def forgotten() -> None:
        raise LookupError(f"nobody awaited {FAKE_KEY}")

    async def command(_args: argparse.Namespace, _console: object) -> int:
        asyncio.get_running_loop().create_task(forgotten(), name="forgotten")  # dropped on purpose
        await asyncio.sleep(0.01)  # it ran, failed and was dropped
        return 0

    _patch(monkeypatch, command)

    assert cli_main.main(["sessions", "--json"]) == CRASH_EXIT
    assert "LookupError" in _one_crash_line(capsys.readouterr().err, relay_home)
    assert "asyncio task forgotten" in _log(relay_home)


def test_a_relay_error_keeps_its_message_and_ctrl_c_keeps_130(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    async def refused(_args: argparse.Namespace, _console: object) -> int:
        raise RelayError("No such thing.", "Try another.")

    async def interrupted(_args: argparse.Namespace, _console: object) -> int:
        raise KeyboardInterrupt

    _patch(monkeypatch, refused)
    assert cli_main.main(["sessions", "--json"]) == 2
    err = capsys.readouterr().err
    assert "No such thing." in err
    assert "Relay crashed" not in err

    _patch(monkeypatch, interrupted)
    assert cli_main.main(["sessions", "--json"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_the_installed_hooks_are_put_back() -> None:
    before = sys.excepthook, threading.excepthook
    assert cli_main.main(["sessions", "--json"]) == 0
    assert (sys.excepthook, threading.excepthook) == before


_FORCED = """
import sys
from relay.cli import main as cli_main

async def broken(args, console):
    raise KeyError({key!r})

cli_main._dispatch = broken
sys.exit(cli_main.main(["sessions", "--json"]))
"""


def test_relay_cli_crashing_in_its_own_process_prints_no_traceback(relay_home: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _FORCED.format(key=FAKE_KEY)],
                          capture_output=True, text=True, timeout=60, check=False)

    assert proc.returncode == CRASH_EXIT, proc.stderr
    assert "KeyError" in _one_crash_line(proc.stderr, relay_home)
    assert "Traceback" in _log(relay_home)  # the details are in the log, not on stderr
