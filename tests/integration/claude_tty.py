"""The real Claude Code, interactive, under a pseudo-terminal.

Print mode (``-p``) never asks anyone: a call that needs approval is denied (or handed to a
``--permission-prompt-tool``) and neither the ``PermissionRequest`` nor the
``Notification`` hook fires. Only the interactive CLI shows its permission dialog, and with
it fires ``PermissionRequest`` at once and ``Notification`` (``permission_prompt``, "Claude
needs your permission") about 6 s later if nobody has answered (Claude Code 2.1.197,
/work/notes/claude-hooks-findings.md). :class:`ClaudeTty` runs it so:

* :func:`trust` pre-accepts what a first start asks in ``$CLAUDE_CONFIG_DIR/.claude.json``:
  onboarding and theme, the API key, the workspace's trust dialog;
* a reader thread drains the terminal all the time (Claude blocks on a full pty) into
  :attr:`ClaudeTty.output`; :meth:`ClaudeTty.screen` is that text without escape codes;
* :meth:`ClaudeTty.submit` types a prompt and then Enter on its own (an Enter inside the
  same write is taken as pasted text); :meth:`ClaudeTty.key` sends one key: ``ENTER``
  picks the selected option of a dialog ("1. Yes"); :meth:`ClaudeTty.quit` presses
  ``CTRL_C`` until Claude exits (the ``SessionEnd`` hook says ``prompt_input_exit``).
  Claude redraws only the cells that change, so :meth:`ClaudeTty.shows` is good for text
  that appears whole (a dialog, the typed prompt), not for a line that is rewritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.integration.helpers import CLAUDE_API_KEY

ENTER = b"\r"
CTRL_C = b"\x03"
_ESCAPES = re.compile(rb"\x1b\[[0-9;?>=]*[A-Za-z~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")


def trust(config_dir: Path, cwd: Path) -> None:
    """What a first interactive start would ask, answered: onboarding done, the mock's
    API key approved, ``cwd``'s trust dialog accepted (merged into ``.claude.json``)."""
    path = config_dir / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update({"hasCompletedOnboarding": True, "theme": "dark",
                 "customApiKeyResponses": {"approved": [CLAUDE_API_KEY[-20:]], "rejected": []}})
    data.setdefault("projects", {})[str(cwd)] = {
        "hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
        "allowedTools": []}
    path.write_text(json.dumps(data, indent=2))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


class ClaudeTty:
    """``claude [args]`` in ``cwd`` on a 120x40 pseudo-terminal (``TERM=xterm-256color``)."""

    def __init__(self, exe: Path, env: Mapping[str, str], cwd: Path,
                 args: Sequence[str] = ("--permission-mode", "default")) -> None:
        trust(Path(env["CLAUDE_CONFIG_DIR"]), cwd)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self._fd = master
        self.output = bytearray()
        self._lock = threading.Lock()
        try:
            self.proc = subprocess.Popen(
                [str(exe), *args], cwd=cwd, env={**env, "TERM": "xterm-256color"},
                stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        finally:
            os.close(slave)
        self._reader = threading.Thread(target=self._drain, name="claude-tty", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:  # EIO: the other side is closed
                return
            if not chunk:
                return
            with self._lock:
                self.output.extend(chunk)

    def screen(self) -> str:
        """Everything printed so far, without escape sequences."""
        with self._lock:
            raw = bytes(self.output)
        return _ESCAPES.sub(b"", raw).decode("utf-8", "replace")

    def shows(self, text: str) -> bool:
        """Whether ``text`` was printed (spaces ignored: Ink moves the cursor over them)."""
        return _squash(text) in _squash(self.screen())

    def wait_for_text(self, text: str, within: float = 30.0) -> None:
        deadline = time.monotonic() + within
        while not self.shows(text):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{text!r} not on Claude's screen (exit {self.proc.returncode}):\n"
                            f"{self.tail()}", pytrace=False)
            time.sleep(0.05)

    def tail(self, n: int = 2000) -> str:
        return self.screen()[-n:]

    def key(self, key: bytes) -> None:
        os.write(self._fd, key)

    def submit(self, prompt: str) -> None:
        """Type ``prompt`` into the input box and press Enter."""
        self.wait_for_text("for shortcuts")
        os.write(self._fd, prompt.encode())
        self.wait_for_text(prompt)
        os.write(self._fd, ENTER)

    def quit(self, within: float = 20.0) -> int:
        """Ctrl-C until Claude exits (the first one only says "press again"); the exit code.

        The screen cannot say when the first press was taken (Claude redraws only the cells
        that change), so a press is repeated each half second until the process is gone."""
        deadline = time.monotonic() + within
        while True:
            self.key(CTRL_C)
            try:
                return self.proc.wait(0.5)
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    pytest.fail(f"claude did not quit on Ctrl-C:\n{self.tail()}", pytrace=False)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._reader.join(5)
