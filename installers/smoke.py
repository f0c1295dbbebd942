#!/usr/bin/env python3
"""Smoke test of a frozen Relay: the two executables of a bundle (or the installed ones).

    python installers/smoke.py dist/relay                  # the PyInstaller onedir bundle
    python installers/smoke.py dist/Relay.app/Contents/MacOS
    python installers/smoke.py --installed                 # relay and relay-cli on PATH
    python installers/smoke.py dist/relay --expect-version 0.1.0 --real-keyring

Standard library only (runs with any Python 3.8+, not the bundle's). Every step runs with
a throwaway RELAY_HOME, RELAY_DEMO_STEP_DELAY=0, the encrypted-file vault unlocked by
RELAY_VAULT_PASSPHRASE (PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring, so nothing
prompts and the user's keyring is never touched) and QT_QPA_PLATFORM=offscreen:

  relay-cli --version · relay-cli doctor · relay-cli demo · relay-cli sessions ·
  relay-cli audit verify · relay-cli show <a Slack token> (printed scrubbed: the
  scrubber's detect-secrets rows load in a bundle) · relay-cli wallet · relay-cli detect ·
  relay-cli pipeline crash-demo
  (two engines of the bundle on one database) · relay-cli --usage-worker (the usage scan's
  worker: a bundle has no interpreter to start) · relay-cli mcp (the MCP handshake and the
  tool list over stdio, as Claude Desktop starts it) · relay --version · relay --smoke-test
  (the window: every dock, the demo for a few seconds, exit 0 only if nothing failed)

``relay --smoke-test`` is required: a build whose window lacks it fails. --real-keyring also checks
that the OS keyring (Secret Service / Keychain / Credential Manager) is the backend
chosen when none is forced — run it inside scripts/with-keyring.sh on Linux.

Exit status: 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

EXE = ".exe" if os.name == "nt" else ""
#: tools ``relay-cli mcp`` must list (a bundle missing the SDK or relay.mcp lists none)
MCP_TOOLS = ("relay_start_session", "relay_list_sessions", "relay_session_events",
             "relay_wallet_summary", "relay_run_pipeline")


class Smoke:
    def __init__(self, relay: str, relay_cli: str, home: Path) -> None:
        self.relay = relay
        self.relay_cli = relay_cli
        self.home = home
        self.failures: list[str] = []
        self.env = dict(os.environ)
        self.env.update({
            "RELAY_HOME": str(home),
            "RELAY_DEMO_STEP_DELAY": "0",
            "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
            "RELAY_VAULT_PASSPHRASE": "relay-smoke-test",
            "QT_QPA_PLATFORM": "offscreen",
            "PYTHONUTF8": "1",
            "COLUMNS": "120",
            "NO_COLOR": "1",
        })
        for name in ("CLAUDE", "CODEX", "GEMINI", "PI"):  # the demo never needs a real agent
            self.env.pop(f"RELAY_{name}_BIN", None)

    def run(self, title: str, argv: list[str], *, expect_rc: int = 0, contains: tuple[str, ...] = (),
            timeout: float = 180, env: dict[str, str] | None = None) -> str:
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, encoding="utf-8",
                                  errors="replace", timeout=timeout, env=env or self.env,
                                  stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.fail(title, f"{type(exc).__name__}: {exc}")
            return ""
        out = proc.stdout + proc.stderr
        took = time.monotonic() - started
        problems = []
        if proc.returncode != expect_rc:
            problems.append(f"exit status {proc.returncode}, expected {expect_rc}")
        problems += [f"output lacks {text!r}" for text in contains if text not in out]
        if problems:
            self.fail(title, "; ".join(problems) + "\n" + _indent(out[-4000:]))
        else:
            print(f"ok    {title}  ({took:.1f} s)")
        return out

    def fail(self, title: str, why: str) -> None:
        self.failures.append(title)
        print(f"FAIL  {title}: {why}")

    def cli_steps(self, expect_version: str | None) -> None:
        version = self.run("relay-cli --version", [self.relay_cli, "--version"],
                           contains=("relay ",), timeout=60)
        if expect_version and f"relay {expect_version}" not in version:
            self.fail("relay-cli --version", f"expected version {expect_version}, got {version!r}")
        self.run("relay-cli doctor", [self.relay_cli, "doctor"],
                 contains=("data folder:", "database:", "secrets: encrypted file",
                           "desktop window: available"))
        self.run("relay-cli demo", [self.relay_cli, "demo"], contains=("COMPLETED",))
        self.run("relay-cli sessions", [self.relay_cli, "sessions"], contains=("completed",))
        self.run("relay-cli audit verify", [self.relay_cli, "audit", "verify"])
        # the scrubber's detect-secrets rows in a bundle (imported by name, lazily): a Slack
        # token echoed in an error is printed as its marker
        slack = "xox" + "b-" + "7731844920-5518829301846-" + secrets.token_hex(12) + "Gq8Z"
        out = self.run("relay-cli show <a Slack token> (scrubbed)", [self.relay_cli, "show", slack],
                       expect_rc=2, contains=("[REDACTED:slack_token]",), timeout=60)
        if slack in out:
            self.fail("relay-cli show <a Slack token> (scrubbed)", "the token was printed")
        self.run("relay-cli wallet", [self.relay_cli, "wallet"], contains=("demo · a simulation",))
        self.run("relay-cli detect", [self.relay_cli, "detect", "--all", "--json"],
                 contains=('"sessions"',))
        # two engines of the bundle on one database (the demo starts its own relay-cli twice),
        # at the defaults a user runs
        self.run("relay-cli pipeline crash-demo", [self.relay_cli, "pipeline", "crash-demo"],
                 contains=("engine A's late write was refused",), timeout=180)
        # the usage scan's worker in a bundle (no interpreter): empty input, clean exit
        out = self.run("relay-cli --usage-worker", [self.relay_cli, "--usage-worker"],
                       timeout=60)
        if out.strip():
            self.fail("relay-cli --usage-worker", f"a worker given nothing said {out!r}")
        self.mcp_step()

    def mcp_step(self, timeout: float = 60) -> None:
        """``relay-cli mcp`` answers initialize and tools/list, then exits 0 when stdin closes."""
        title = "relay-cli mcp (initialize, tools/list)"
        started = time.monotonic()
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
            try:
                proc = subprocess.Popen([self.relay_cli, "mcp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=log, text=True,
                                        encoding="utf-8", errors="replace", env=self.env)
            except OSError as exc:
                self.fail(title, f"{type(exc).__name__}: {exc}")
                return
            try:
                problem = _mcp_session(proc, timeout)
            finally:
                _close(proc)
            log.seek(0)
            out = log.read()
        if problem is None and proc.returncode != 0:
            problem = f"exit status {proc.returncode} after stdin closed, expected 0"
        if problem:
            self.fail(title, problem + "\n" + _indent(out[-4000:]))
        else:
            print(f"ok    {title}  ({time.monotonic() - started:.1f} s)")

    def real_keyring_step(self) -> None:
        env = {k: v for k, v in self.env.items() if k != "PYTHON_KEYRING_BACKEND"}
        env["RELAY_HOME"] = str(self.home / "keyring")  # a vault of its own
        self.run("relay-cli doctor (real OS keyring)", [self.relay_cli, "doctor"], env=env,
                 contains=("secrets: OS keyring",))

    def window_steps(self, expect_version: str | None) -> None:
        out = self.run("relay --version", [self.relay, "--version"], contains=("relay ",), timeout=60)
        if expect_version and f"relay {expect_version}" not in out:
            self.fail("relay --version", f"expected version {expect_version}, got {out!r}")
        self.run("relay --smoke-test (window, offscreen)", [self.relay, "--smoke-test"],
                 timeout=300)

def _mcp_session(proc: subprocess.Popen, timeout: float) -> str | None:
    """Speak JSON-RPC to a server on stdio: what is wrong, or None."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)
        lines.put(None)  # end of output: the server exited

    threading.Thread(target=read, daemon=True).start()

    def send(frame: dict) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(frame) + "\n")
        proc.stdin.flush()

    def reply(request_id: int) -> dict:
        line = lines.get(timeout=timeout)
        if line is None:
            raise ValueError(f"the server ended its output before answering request {request_id}")
        frame = json.loads(line)
        if frame.get("id") != request_id or "result" not in frame:
            raise ValueError(f"unexpected answer to request {request_id}: {line.strip()[:300]}")
        return frame["result"]

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "relay-smoke", "version": "1"}}})
        hello = reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        names = [tool.get("name") for tool in reply(2).get("tools", [])]
    except queue.Empty:
        return f"no answer within {timeout:g} s"
    except (OSError, ValueError) as exc:  # a dead server, or not JSON on stdout
        return f"{type(exc).__name__}: {exc}"
    if hello.get("serverInfo", {}).get("name") != "relay":
        return f"the server calls itself {hello.get('serverInfo')!r}, expected relay"
    missing = [name for name in MCP_TOOLS if name not in names]
    return f"tools/list lacks {', '.join(missing)} (listed: {names})" if missing else None


def _close(proc: subprocess.Popen, grace: float = 30) -> None:
    """Close stdin (how an MCP client ends its server); kill it if it does not exit."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _indent(text: str) -> str:
    return "\n".join("      | " + line for line in text.rstrip().splitlines())


def locate(bundle: Path | None) -> tuple[str, str]:
    if bundle is None:
        found = shutil.which("relay"), shutil.which("relay-cli")
        if not all(found):
            sys.exit(f"smoke: relay / relay-cli not on PATH (found {found})")
        return found[0] or "", found[1] or ""
    paths = bundle / f"relay{EXE}", bundle / f"relay-cli{EXE}"
    for path in paths:
        if not path.is_file():
            sys.exit(f"smoke: {path} does not exist (build the bundle first)")
    return str(paths[0]), str(paths[1])


def size_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", nargs="?", type=Path, help="folder holding relay and relay-cli")
    parser.add_argument("--installed", action="store_true", help="use relay / relay-cli from PATH")
    parser.add_argument("--expect-version", help="the version both executables must report")
    parser.add_argument("--real-keyring", action="store_true",
                        help="also check that the OS keyring is used when none is forced")
    parser.add_argument("--no-window", action="store_true", help="only the relay-cli steps")
    args = parser.parse_args(argv)
    if (args.bundle is None) != args.installed:
        parser.error("give a bundle folder or --installed (not both)")
    relay, relay_cli = locate(args.bundle)
    print(f"smoke test of {relay_cli} and {relay}")
    if args.bundle is not None and args.bundle.name != "MacOS":
        print(f"bundle size: {size_mb(args.bundle):.0f} MiB")
    with tempfile.TemporaryDirectory(prefix="relay-smoke-") as tmp:
        smoke = Smoke(relay, relay_cli, Path(tmp))
        smoke.cli_steps(args.expect_version)
        if args.real_keyring:
            smoke.real_keyring_step()
        if not args.no_window:
            smoke.window_steps(args.expect_version)
    if smoke.failures:
        print(f"smoke test FAILED: {', '.join(smoke.failures)}")
        return 1
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
