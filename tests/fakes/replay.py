"""Shared pieces of the fake agent CLIs: replay a recorded capture faithfully.

The fakes are plain Python scripts in tests/fakes/bin that import this module.
A test chooses what a fake replays with environment variables:

* ``RELAY_FAKE_SCENARIO`` — a capture folder name under the runtime's
  ``captures/`` (``b_write_tool``) optionally with a run (``g_resume/run2_resume``);
* ``RELAY_FAKE_LOG`` — a file the fake appends its argv and cwd to (JSON line),
  so a test can assert what Relay asked for;
* ``RELAY_FIXTURES`` — where the recordings are (default: the repository's own copy,
  ``tests/fixtures``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NoReturn

REPO_ROOT = Path(__file__).resolve().parents[2]


FIXTURES_DIR = REPO_ROOT / "tests" / "fixtures"
# What a complete copy holds: the index, and each CLI's notes and captures.
FIXTURE_RUNTIMES = ("claude", "codex", "gemini", "pi")


def fixtures_root() -> Path:
    """The recorded fixtures: ``tests/fixtures`` (``RELAY_FIXTURES`` overrides)."""
    override = os.environ.get("RELAY_FIXTURES")
    return Path(override) if override else FIXTURES_DIR


def fixtures_problem(root: Path) -> str | None:
    """One line saying what is missing from a fixture folder, or None when it is complete."""
    if not root.is_dir():
        return (f"recorded fixtures not found at {root} "
                "(a full checkout has tests/fixtures; RELAY_FIXTURES overrides)")
    missing = [f"{name}/{part}" for name in FIXTURE_RUNTIMES for part in ("NOTES.md", "captures")
               if not (root / name / part).exists()]
    if not (root / "README.md").is_file():
        missing.insert(0, "README.md")
    if missing:
        return f"recorded fixtures at {root} are incomplete: missing {', '.join(missing)}"
    return None


def capture_dir(runtime: str, scenario: str) -> Path:
    """The folder of one capture: ``<fixtures>/<runtime>/captures/<scenario>``."""
    path = fixtures_root() / runtime / "captures" / scenario
    if not path.exists():
        die(f"fake {runtime}: no capture {scenario!r} at {path}", 97)
    return path


def log_invocation(argv: list[str], extra: Mapping[str, object] | None = None) -> None:
    """Append argv, cwd, whether stdin is a tty (and ``extra`` keys) to RELAY_FAKE_LOG."""
    log = os.environ.get("RELAY_FAKE_LOG")
    if log:
        entry = {"argv": argv, "cwd": os.getcwd(), "stdin_isatty": sys.stdin.isatty(),
                 **(extra or {})}
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    for placeholder, value in mapping.items():
        text = text.replace(placeholder, value)
    return text


def emit(lines: Iterable[str], mapping: Mapping[str, str], stream: str = "stdout") -> None:
    out = sys.stdout if stream == "stdout" else sys.stderr
    for line in lines:
        out.write(substitute(line, mapping))
        if not line.endswith("\n"):
            out.write("\n")
        out.flush()


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def die(message: str, code: int) -> NoReturn:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    sys.exit(code)


def wait_for_signal(exit_codes: Mapping[int, int], timeout: float = 60.0) -> NoReturn:
    """Block like an agent waiting on the API; exit with the recorded code per signal."""
    done = threading.Event()
    received: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        received.append(signum)
        done.set()

    for signum in exit_codes:
        signal.signal(signum, handler)
    done.wait(timeout)
    sys.stdout.flush()
    if not received:
        die("fake: nobody stopped me", 98)
    code = exit_codes[received[0]]
    if code < 0:  # die by the signal itself, as a process without a handler does
        signal.signal(received[0], signal.SIG_DFL)
        os.kill(os.getpid(), received[0])
        time.sleep(1)
    sys.exit(code)
