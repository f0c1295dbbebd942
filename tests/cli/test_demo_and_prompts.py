"""The demo needs no secrets and works every time; prompts come before work, and Ctrl-C /
Ctrl-D at any of them end relay-cli cleanly.

Without a terminal: real subprocesses, as a user runs them. On a terminal: relay-cli on a
pseudo-terminal of its own (its controlling terminal, so getpass, Ctrl-C and Ctrl-D behave
as they do for a user).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from datetime import timedelta
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.core.events import utcnow
from relay.core.vault import Vault
from relay.engine.engine import Engine
from relay.sessions.contract import ContractV2, write_envelope
from tests.cli.test_cli import CLI

NO_KEYRING = "keyring.backends.fail.Keyring"
DEMO_SIGNED = "signed with a throwaway demo key — a simulation"
#: makes the pseudo-terminal on stdin the controlling terminal, then runs relay-cli
_LAUNCH = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
           "os.execv(sys.executable, [sys.executable, '-m', 'relay.cli.main', *sys.argv[1:]])")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def no_secrets_env(**extra: str) -> dict[str, str]:
    """No OS keyring, no RELAY_VAULT_PASSPHRASE (RELAY_HOME: the test's data folder)."""
    env = {k: v for k, v in os.environ.items() if k != "RELAY_VAULT_PASSPHRASE"}
    return {**env, "PYTHON_KEYRING_BACKEND": NO_KEYRING, "RELAY_DEMO_STEP_DELAY": "0",
            "COLUMNS": "200", **extra}


def flat(text: str) -> str:
    """Whitespace (the terminal's wrapping) folded to single spaces."""
    return " ".join(text.split())


# -- the demos, without a terminal ---------------------------------------------------------

@pytest.mark.parametrize("options", [[], ["--limit-after", "2"], ["--quota", "40,96,99"]],
                         ids=["demo", "limit-after", "quota"])
def test_each_demo_works_three_times_in_one_data_folder_with_no_secrets(
        relay_home: Path, options: list[str]) -> None:
    outputs = []
    for _ in range(3):
        proc = subprocess.run([*CLI, "demo", *options], capture_output=True, text=True,
                              env=no_secrets_env(), stdin=subprocess.DEVNULL, timeout=120,
                              check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "COMPLETED" in proc.stdout
        assert "Traceback" not in proc.stdout + proc.stderr
        outputs.append(flat(proc.stdout))
    for out in outputs:
        assert "passphrase" not in out.lower()
        assert "is out until" not in out  # a simulated limit never outlives its run
        assert "Skipping demo:" not in out
        if options:  # the handoff: a demo key, said in one line, never the vault
            assert " done: demo:primary → demo:backup" in out
            assert DEMO_SIGNED in out, out
    assert not (relay_home / "vault.bin").exists()  # the user's vault was never touched


# -- relay-cli on a terminal -------------------------------------------------------------

class Terminal:
    """relay-cli ARGS on a pseudo-terminal (80 × 40) that is its controlling terminal."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
        env = {k: v for k, v in env.items() if k != "COLUMNS"}
        self.proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, *args], stdin=slave,
                                     stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.master = master
        self.raw = b""

    @property
    def text(self) -> str:
        return _ANSI.sub("", self.raw.decode(errors="replace")).replace("\r", "")

    def _read(self, timeout: float) -> bool:
        """Read what is there (up to ``timeout`` s); False once the terminal has closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: every process on the terminal is gone
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, wanted: str, within: float = 60.0, times: int = 1) -> None:
        """Wait until ``wanted`` has been printed (``times`` times; whitespace folded). A
        prompt flushes what was typed before it, so answer only once it is there."""
        deadline = time.monotonic() + within
        while flat(self.text).count(wanted) < times:
            if time.monotonic() > deadline or not self._read(0.2):
                pytest.fail(f"{wanted!r} never appeared; the terminal shows:\n{self.text}")

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def finish(self, within: float = 60.0) -> int:
        """Read to the end; the exit code (the process must end within ``within`` s)."""
        deadline = time.monotonic() + within
        while self._read(0.2):
            if time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"relay-cli did not end; the terminal shows:\n{self.text}")
        code = self.proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        os.close(self.master)
        return code


def chain_run(repo: Path) -> list[str]:
    return ["run", "add a greeting", "--repo", str(repo), "--provider", "claude:a",
            "--provider", "codex"]


def test_the_demo_on_a_terminal_never_asks_for_a_passphrase(relay_home: Path) -> None:
    term = Terminal(["demo", "--limit-after", "2"], no_secrets_env())
    assert term.finish() == 0, term.text
    shown = flat(term.text)
    assert "COMPLETED" in shown
    assert DEMO_SIGNED in shown
    assert "passphrase" not in shown.lower()
    assert not (relay_home / "vault.bin").exists()


@pytest.mark.parametrize(("key", "code", "said", "state"), [
    (b"\x04", 2, "The session was stopped.", "cancelled"),
    # no host ran: the demo hosted its own session, which ends (interrupted, resumable) with
    # the process — and it says so, with how to resume it
    (b"\x03", 130, "(or the window) first", "interrupted")],
    ids=["ctrl-d", "ctrl-c"])
def test_ctrl_d_and_ctrl_c_at_the_agents_question_end_cleanly(
        relay_home: Path, key: bytes, code: int, said: str, state: str) -> None:
    term = Terminal(["demo", "--ask"], no_secrets_env())
    term.expect("answer (1-2, Enter: later)>")
    term.send(key)
    assert term.finish(within=30) == code, term.text  # promptly: no thread left reading
    assert flat(term.text).endswith(said)
    if code == 130:
        lines = term.text.splitlines()
        (said_line,) = [line for line in lines if line.startswith("interrupted: session ")]
        assert said_line.endswith(" ends with this process, which hosted it")
        sid = said_line.split()[2]
        assert f"  → resume: relay-cli run --resume {sid} TASK" in lines  # whole, on 80 columns
    assert "Traceback" not in term.text
    sessions = subprocess.run([*CLI, "sessions"], capture_output=True, text=True,
                              env=no_secrets_env(), stdin=subprocess.DEVNULL, timeout=60,
                              check=False)
    assert state in sessions.stdout  # stopped or put away with the host, not left running


def test_ctrl_c_in_serve_on_a_terminal_says_closing_on_its_own_line(
        relay_home: Path) -> None:
    term = Terminal(["serve", "--port", "0"], no_secrets_env())
    term.expect("stop: Ctrl-C or SIGTERM")
    term.send(b"\x03")
    assert term.finish() == 0, term.text
    assert "relay serve: closing" in term.text.splitlines()  # not "^Crelay serve: closing"
    assert "Traceback" not in term.text


def test_ctrl_d_at_the_api_key_prompt_ends_cleanly(relay_home: Path) -> None:
    term = Terminal(["accounts", "add", "claude", "api", "--auth", "api_key"],
                    no_secrets_env(RELAY_VAULT_PASSPHRASE="test passphrase"))
    term.expect("claude API key (not shown):")
    term.send(b"\x04")
    assert term.finish() == 2, term.text
    assert flat(term.text).endswith(
        "error: No answer: the input ended at “claude API key (not shown):”.")
    assert "Traceback" not in term.text


def test_contract_verify_says_what_it_needs_then_asks_on_a_terminal(
        relay_home: Path, tmp_path: Path) -> None:
    key = Vault.open(load_config(), env={"RELAY_VAULT_PASSPHRASE": "right one"}).signing_key()
    folder = tmp_path / "contract"
    write_envelope(folder, ContractV2(contract_id="c-t", session_id="s-t", task_goal="goal",
                                      next_action="next", snapshot_commit_sha="a3f8c2d"), key)
    term = Terminal(["contract", "verify", str(folder)], no_secrets_env())
    term.expect("Verifying a contract needs the signing key of this data folder")
    term.expect("Relay vault passphrase:")
    term.send(b"wrong one\r")
    term.expect("Wrong passphrase for the vault file")
    term.expect("Relay vault passphrase:", times=2)
    term.send(b"right one\r")
    assert term.finish() == 0, term.text
    assert "OK signature valid · contract c-t" in flat(term.text)


# -- clearing a real account's breaker -------------------------------------------------------

async def _breakers(trip: list[str]) -> dict[str, bool]:
    """Open the breakers of ``trip`` (an hour from now); which of them are open."""
    engine = await Engine.open(load_config())
    try:
        for entry in trip:
            await engine.breakers.trip("test", entry, "usage_limit",
                                       utcnow() + timedelta(hours=1), "limit", now=utcnow())
        return {e: await engine.breakers.get(e, now=utcnow()) is not None
                for e in ("claude:work", "codex")}
    finally:
        await engine.close()


def test_accounts_resume_clears_the_breaker_the_error_names(relay_home: Path) -> None:
    env = no_secrets_env(RELAY_VAULT_PASSPHRASE="test passphrase")

    def relay(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=60, check=False)

    assert relay("accounts", "add", "claude", "work").returncode == 0
    assert asyncio.run(_breakers(["claude:work", "codex"])) == {"claude:work": True,
                                                                 "codex": True}
    resumed = relay("accounts", "resume", "claude", "work")
    assert resumed.returncode == 0, resumed.stderr
    assert flat(resumed.stdout).startswith("claude:work resumed. Its circuit breaker (out until ")
    assert flat(resumed.stdout).endswith("is cleared: the next session tries it again.")
    bare = relay("accounts", "resume", "codex")  # a bare provider entry: no label
    assert bare.returncode == 0, bare.stderr
    assert flat(bare.stdout).startswith("codex's circuit breaker (out until ")
    assert asyncio.run(_breakers([])) == {"claude:work": False, "codex": False}
    unknown = relay("accounts", "resume", "gemini", "nobody")
    assert unknown.returncode == 2
    assert "No account gemini:nobody, and no circuit breaker open on it." in flat(unknown.stderr)
    assert "Traceback" not in unknown.stderr
