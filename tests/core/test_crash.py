"""The Qt-free crash path: described, scrubbed, logged with its context, shown once."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import threading
from pathlib import Path

import pytest

from relay.core.crash import (
    CRASH_EXIT,
    Crash,
    CrashHandler,
    crash_key,
    describe,
    log_path,
    report_line,
)

#: a fake Anthropic key; the scrubber knows the shape
FAKE_KEY = "sk-ant-api03-" + "a1B2c3D4" * 10


class Shown:
    def __init__(self) -> None:
        self.new: list[Crash] = []
        self.again: list[int] = []

    def handler(self, log_file: Path) -> CrashHandler:
        return CrashHandler(log_file, self.new.append, lambda c: self.again.append(c.count),
                            context={"command": "test"})


def _raise(text: str) -> None:
    raise ValueError(text)


def _caught(text: str = f"the key {FAKE_KEY} was refused") -> ValueError:
    try:
        _raise(text)
    except ValueError as exc:
        return exc
    raise AssertionError("unreachable")


def test_the_log_file_is_in_the_data_folder(relay_home: Path) -> None:
    assert log_path(relay_home) == relay_home / "logs" / "relay.log"
    assert CRASH_EXIT == 70


def test_a_crash_is_logged_scrubbed_with_its_context_and_shown_once(tmp_path: Path) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "logs" / "relay.log")

    crash = crashes.handle(_caught(), "thread worker")

    assert [c.what for c in shown.new] == ["ValueError: the key [REDACTED:anthropic_key] was refused"]
    assert crash.where == "thread worker"
    log = (tmp_path / "logs" / "relay.log").read_text()
    assert "crash in thread worker: ValueError" in log
    assert "command test" in log
    assert "relay 0." in log
    assert "in _raise" in log  # the traceback
    assert FAKE_KEY not in log
    assert FAKE_KEY not in crash.details
    assert "sk-ant-api03" not in log


def test_the_same_crash_again_is_counted_not_shown_again(tmp_path: Path) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")

    for n in range(25):
        crashes.handle(_caught(f"attempt {n}"), "a timer")  # same frames, other message

    assert len(shown.new) == 1
    assert shown.again == list(range(2, 26))
    assert shown.new[0].count == 25
    log = (tmp_path / "relay.log").read_text()
    assert log.count("Traceback") == 1
    assert log.count("crash again") == 9  # 2…10 times; then only at powers of ten


def test_crashes_from_other_places_are_distinct(tmp_path: Path) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")
    try:
        raise KeyError("x")
    except KeyError as exc:
        other = exc

    crashes.handle(_caught(), "a")
    crashes.handle(other, "b")

    assert len(shown.new) == 2
    assert crash_key(other) != crash_key(_caught())


def test_describe_is_one_short_scrubbed_line() -> None:
    assert describe(RuntimeError()) == "RuntimeError"
    assert describe(RuntimeError("first\nsecond")) == "RuntimeError: first"
    assert len(describe(RuntimeError("x" * 5000))) <= 300
    assert FAKE_KEY not in describe(RuntimeError(FAKE_KEY))


def test_report_line_says_what_where_and_to_report_it(tmp_path: Path) -> None:
    crashes = CrashHandler(tmp_path / "relay.log")
    crash = crashes.handle(_caught("boom"), "here")

    line = report_line(crash, crashes.log_file)

    assert line == (f"Relay crashed: ValueError: boom; the details are in {tmp_path / 'relay.log'}; "
                    "please report it")


def test_a_thread_s_crash_reaches_the_handler_once(tmp_path: Path) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")

    with crashes.installed():
        thread = threading.Thread(target=_raise, args=(f"worker {FAKE_KEY}",), name="worker-1")
        thread.start()
        thread.join()
    assert threading.excepthook is not crashes.thread_excepthook  # put back

    assert [c.where for c in shown.new] == ["thread worker-1"]
    log = (tmp_path / "relay.log").read_text()
    assert "thread worker-1" in log
    assert FAKE_KEY not in log


def test_sys_excepthook_handles_errors_and_leaves_ctrl_c_to_python(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")
    exc = _caught()
    with crashes.installed():
        sys.excepthook(type(exc), exc, exc.__traceback__)
        sys.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)
    assert sys.excepthook is not crashes.excepthook

    assert len(shown.new) == 1
    assert "KeyboardInterrupt" in capsys.readouterr().err  # Python's own hook printed it


def test_an_unawaited_task_s_exception_reaches_the_handler_once(tmp_path: Path) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")

    async def forgotten() -> None:
        raise ValueError(f"nobody awaits this {FAKE_KEY}")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with crashes.watching(loop):
            loop.create_task(forgotten(), name="forgotten")  # noqa: RUF006 (dropped on purpose)
            await asyncio.sleep(0.01)
            gc.collect()  # the task is gone: "exception was never retrieved"
        assert loop.get_exception_handler() is None

    asyncio.run(main())

    assert len(shown.new) == 1
    assert "asyncio task forgotten" in shown.new[0].where
    assert FAKE_KEY not in (tmp_path / "relay.log").read_text()


def test_loop_reports_without_an_exception_go_to_the_default_handler(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    shown = Shown()
    crashes = shown.handler(tmp_path / "relay.log")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with crashes.watching(loop):
            loop.call_exception_handler({"message": "an unclosed transport"})

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(main())

    assert shown.new == []
    assert "an unclosed transport" in caplog.text


def test_every_record_the_log_file_takes_is_scrubbed(tmp_path: Path) -> None:
    crashes = CrashHandler(tmp_path / "relay.log")
    with crashes.installed():
        logging.getLogger("relay.test").warning("the key is %s", FAKE_KEY)

    text = (tmp_path / "relay.log").read_text()
    assert "the key is [REDACTED:anthropic_key]" in text


def test_a_log_file_that_cannot_be_written_is_said_not_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    crashes = CrashHandler(blocker / "relay.log")

    crashes.handle(_caught(), "here")

    assert not crashes.logged
    assert capsys.readouterr().err == ""
