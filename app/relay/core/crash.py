"""Crashes: errors Relay did not expect, logged once with their context and shown once.

A *crash* is an exception that escaped every handler: a :class:`~relay.core.errors.RelayError`
has its own path (message + hint, no traceback) and is only a crash if nothing caught it.
Each front end holds one :class:`CrashHandler` and installs it where exceptions escape:

- ``sys.excepthook``: the main thread, and Qt slots (PySide6 reports their exceptions there);
- ``threading.excepthook``: worker threads;
- the asyncio loop's exception handler (:meth:`CrashHandler.watching`): a task whose exception
  nobody retrieved, a failing callback.

A crash is written to Relay's log file (:func:`log_path`: ``<data folder>/logs/relay.log``)
with where it happened, the versions and the traceback. Everything that file receives goes
through the secret scrubber (:mod:`relay.core.redact`), and so does what is shown: the one-line
:attr:`Crash.what`. The same crash again — same type, same frames — is counted, not shown or
logged in full again, so a failing timer is one report, not a storm. Showing is the front
end's part: relay-cli prints :func:`report_line` on stderr and exits :data:`CRASH_EXIT`; the
window opens one dialog per distinct crash.

The scrubber is imported when the first text is scrubbed, not before: relay-cli's startup
stays as quick as it was (benchmarks/cli_startup).
"""

from __future__ import annotations

import logging
import platform
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path
from types import TracebackType
from typing import Any

from relay import __version__
from relay.core.fsutil import private_file

#: relay-cli's exit code after a crash (sysexits' EX_SOFTWARE: an internal software error)
CRASH_EXIT = 70

#: the log file's name in the data folder's ``logs`` folder
LOG_FILE = "relay.log"

_LOG_BYTES = 1_000_000
_LOG_BACKUPS = 2
_WHAT_CHARS = 300
#: a repeated crash is logged (one line) this many times, then at every power of ten
_REPEATS_LOGGED = 10

CrashKey = tuple[str, tuple[tuple[str, int], ...]]
Presenter = Callable[["Crash"], None]
LoopHandler = Callable[[Any, dict[str, Any]], None]


def log_path(home: Path) -> Path:
    """Relay's log file in the data folder ``home``."""
    return home / "logs" / LOG_FILE


def _scrub(text: str) -> str:
    from relay.core.redact import scrub

    return scrub(text)


class ScrubbingFormatter(logging.Formatter):
    """Formats a record (with its traceback) and scrubs secrets out of the whole text."""

    def format(self, record: logging.LogRecord) -> str:
        return _scrub(super().format(record))


class _LogFileHandler(RotatingFileHandler):
    """The log file: its folder made and the file opened on the first record; a write that
    fails is remembered (:attr:`failure`), never printed as a traceback."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, maxBytes=_LOG_BYTES, backupCount=_LOG_BACKUPS,
                         encoding="utf-8", delay=True)
        self.setFormatter(ScrubbingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        self.failure: str | None = None

    def _open(self) -> TextIOWrapper:
        private_file(Path(self.baseFilename))  # and its folder, before a line is written
        return super()._open()

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        self.failure = f"{type(error).__name__}: {error}" if error else "cannot write"

    def close(self) -> None:
        # the last flush fails on a full disk: remembered like any failed write, not raised
        # out of the command's exit (the records it could not write are lost either way)
        try:
            super().close()
        except OSError as error:
            self.failure = f"{type(error).__name__}: {error}"


@dataclass
class Crash:
    """One distinct crash.

    Attributes:
        key: what makes two crashes the same one: the type and the frames it passed.
        what: one scrubbed line, ``ValueError: …`` (what a front end shows).
        where: where it escaped (``thread worker-1``, ``asyncio task relay-gui-stream`` …).
        details: the scrubbed traceback.
        count: how often it happened so far.
    """

    key: CrashKey
    what: str
    where: str
    details: str
    count: int = field(default=1)


def crash_key(exc: BaseException) -> CrashKey:
    """Cheap (no source lines read): a repeat is recognised before anything is formatted."""
    frames = tuple((frame.f_code.co_filename, line)
                   for frame, line in traceback.walk_tb(exc.__traceback__))
    return type(exc).__qualname__, frames


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (scrubbed, at most a few hundred characters)."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    text = _scrub(text)
    return text if len(text) <= _WHAT_CHARS else text[:_WHAT_CHARS - 1] + "…"


def report_line(crash: Crash, log_file: Path) -> str:
    """The one line a terminal gets for a crash."""
    return (f"Relay crashed: {crash.what}; the details are in {log_file}; "
            "please report it")


class CrashHandler:
    """Logs each crash with its context and hands each distinct one to the front end once.

    Args:
        log_file: Relay's log file (:func:`log_path`); made on the first record.
        show: called once per distinct crash, from whichever thread it happened in.
        again: called when a crash already shown happens again (its count is updated).
        context: facts logged with every crash (the command, the front end …).
    """

    def __init__(self, log_file: Path, show: Presenter | None = None,
                 again: Presenter | None = None, *,
                 context: Mapping[str, str] | None = None) -> None:
        self.log_file = log_file
        self.show = show
        self.again = again
        self.context = dict(context or {})
        self.crashes: dict[CrashKey, Crash] = {}
        self._lock = threading.Lock()
        self.file = _LogFileHandler(log_file)
        # a logger of its own, outside the hierarchy: a crash goes to the file only, never
        # to a console handler (which would print the traceback)
        self._log = logging.Logger("relay.crash", logging.INFO)
        self._log.addHandler(self.file)

    # -- handling -------------------------------------------------------------------------

    def handle(self, exc: BaseException, where: str) -> Crash:
        """Log ``exc`` (which escaped at ``where``) and show it if it is new; the crash."""
        key = crash_key(exc)
        with self._lock:
            crash = self.crashes.get(key)
            if crash is not None:
                crash.count += 1
        if crash is not None:
            if crash.count <= _REPEATS_LOGGED or _power_of_ten(crash.count):
                self._log.error("crash again (%d times) in %s: %s", crash.count,
                                _scrub(where), crash.what)
            if self.again is not None:
                self.again(crash)
            return crash
        crash = Crash(key, describe(exc), _scrub(where),
                      _scrub("".join(traceback.format_exception(exc))))
        with self._lock:
            crash = self.crashes.setdefault(key, crash)  # a racing thread's copy wins
        self._log.critical("crash in %s: %s\n  %s\n%s", crash.where, crash.what,
                           self._facts(), crash.details.rstrip())
        if self.show is not None:
            self.show(crash)
        return crash

    @property
    def logged(self) -> bool:
        """Whether the log file took every record so far."""
        return self.file.failure is None

    def _facts(self) -> str:
        facts = {"relay": __version__, "python": platform.python_version(),
                 "platform": platform.platform(terse=True), "thread": threading.current_thread().name,
                 **self.context}
        return _scrub(", ".join(f"{k} {v}" for k, v in facts.items()))

    # -- hooks ------------------------------------------------------------------------------

    def excepthook(self, kind: type[BaseException], exc: BaseException,
                   tb: TracebackType | None) -> None:
        """``sys.excepthook``: Ctrl-C and exits go on to Python's own hook."""
        if not issubclass(kind, Exception):
            sys.__excepthook__(kind, exc, tb)
            return
        self.handle(exc.with_traceback(tb), "the main thread")

    def thread_excepthook(self, args: threading.ExceptHookArgs) -> None:
        """``threading.excepthook``: a worker thread's uncaught exception."""
        exc = args.exc_value
        if exc is None or not isinstance(exc, Exception):
            return  # SystemExit ends the thread quietly, as Python's own hook does
        name = args.thread.name if args.thread is not None else "?"
        self.handle(exc, f"thread {name}")

    def loop_handler(self, loop: Any, context: dict[str, Any]) -> None:
        """The asyncio loop's exception handler; a context without an exception (e.g. an
        unclosed transport) goes to the loop's default handler."""
        exc = context.get("exception")
        if not isinstance(exc, Exception):
            loop.default_exception_handler(context)
            return
        where = str(context.get("message") or "asyncio")
        task = context.get("task") or context.get("future")
        if task is not None and hasattr(task, "get_name"):
            where += f" (asyncio task {task.get_name()})"
        elif context.get("handle") is not None:
            where += f" ({context['handle']!r})"
        self.handle(exc, where)

    @contextmanager
    def installed(self) -> Iterator[CrashHandler]:
        """Install the process-wide hooks, and the log file for every record the root logger
        takes; both are put back on exit."""
        root = logging.getLogger()
        previous = sys.excepthook, threading.excepthook
        sys.excepthook = self.excepthook
        threading.excepthook = self.thread_excepthook
        root.addHandler(self.file)
        try:
            yield self
        finally:
            root.removeHandler(self.file)
            sys.excepthook, threading.excepthook = previous
            self.file.close()

    @contextmanager
    def watching(self, loop: Any) -> Iterator[None]:
        """Handle the exceptions ``loop`` reports while inside; its handler is reset after."""
        previous: LoopHandler | None = getattr(loop, "get_exception_handler", lambda: None)()
        loop.set_exception_handler(self.loop_handler)
        try:
            yield
        finally:
            loop.set_exception_handler(previous)


def _power_of_ten(n: int) -> bool:
    while n >= 10 and n % 10 == 0:
        n //= 10
    return n == 1
