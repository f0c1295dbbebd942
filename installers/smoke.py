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
  relay-cli audit verify · relay-cli wallet · relay-cli detect · relay-cli pipeline crash-demo
  (two engines of the bundle on one database) · relay-cli --usage-worker (the usage scan's
  worker: a bundle has no interpreter to start) · relay --version · relay --smoke-test (the
  window: every dock, the demo for a few seconds, exit 0 only if nothing failed)

``relay --smoke-test`` is required: a build whose window lacks it fails. --real-keyring also checks
that the OS keyring (Secret Service / Keychain / Credential Manager) is the backend
chosen when none is forced — run it inside scripts/with-keyring.sh on Linux.

Exit status: 0 when every step passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = ".exe" if os.name == "nt" else ""


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
        self.run("relay-cli wallet", [self.relay_cli, "wallet"], contains=("demo · a simulation",))
        self.run("relay-cli detect", [self.relay_cli, "detect", "--all", "--json"],
                 contains=('"sessions"',))
        # two engines of the bundle on one database (the demo starts its own relay-cli twice)
        self.run("relay-cli pipeline crash-demo",
                 [self.relay_cli, "pipeline", "crash-demo", "--lease", "1.5", "--step-delay", "0.3"],
                 contains=("engine A's late write was refused",), timeout=180)
        # the usage scan's worker in a bundle (no interpreter): empty input, clean exit
        out = self.run("relay-cli --usage-worker", [self.relay_cli, "--usage-worker"],
                       timeout=60)
        if out.strip():
            self.fail("relay-cli --usage-worker", f"a worker given nothing said {out!r}")

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
