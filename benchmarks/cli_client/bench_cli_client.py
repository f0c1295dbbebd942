"""benchmarks/cli_client: ``relay-cli sessions`` as a process while a host runs, idle and
loaded.

A ``relay-cli serve`` host runs for a fresh data folder holding a few demo sessions (run
through it). Each target is a whole process, started as a user starts it (the same
``relay-cli`` and environment as benchmarks/cli_startup, whose helpers this reuses):

* ``python -c pass``          the floor, same interpreter, measured in the same run;
* ``relay-cli sessions``      the table: its quick read-only path reads relay.db beside the
  host (never the engine, never the API);
* ``relay-cli sessions --json``  every row through the host's API (a client of it).

Each is timed **idle**, then **loaded**: ``--load`` busy Python processes (``while True:
pass``, default 2) spin beside it; each pass prints the load average before it. Targets run
in turns so a burst elsewhere spreads over all.

Target: ``relay-cli sessions`` **under 150 ms**, process start included, idle and loaded; a
verdict line per pass, and one for ``--json`` against the same 150 ms (an aim: issue 24).

Run: ``python benchmarks/cli_client/bench_cli_client.py [--runs 10] [--load 2] [--check]``;
``--smoke``: one run of each, one busy process (``./dev test``: proves the harness works).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.cli_startup.bench_cli_startup import (  # noqa: E402
    Target,
    environment,
    passes,
    relay_cli,
    report,
    timed,
)
from benchmarks.machine import verdict  # noqa: E402

TARGET_MS = 150.0
DEMOS = 3
HOST_WAIT_S = 60.0


def serve(cli: list[str], env: dict[str, str], home: Path) -> subprocess.Popen[bytes]:
    """``relay-cli serve`` on any free port, once its host.json is written."""
    proc = subprocess.Popen([*cli, "serve", "--port", "0"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + HOST_WAIT_S
    while not (home / "host.json").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"relay-cli serve did not start: {proc.communicate()[1]!r}")
        time.sleep(0.05)
    return proc


def targets(cli: list[str]) -> list[Target]:
    return [Target("python -c pass", [sys.executable, "-c", "pass"]),
            Target("relay-cli sessions", [*cli, "sessions"]),
            Target("relay-cli sessions --json", [*cli, "sessions", "--json"])]


def measure(runs: int, load: int) -> dict[str, list[Target]]:
    cli = relay_cli()
    with tempfile.TemporaryDirectory(prefix="relay-cli-client-") as tmp:
        home = Path(tmp) / "home"
        env = environment(home, Path(tmp) / "pycache")
        host = serve(cli, env, home)
        try:
            for _ in range(DEMOS):  # sessions to list, run by the host
                timed([*cli, "demo"], env)
            return passes(lambda: targets(cli), env, runs, load)
        finally:
            host.send_signal(signal.SIGTERM if os.name != "nt" else signal.SIGINT)
            host.communicate(timeout=HOST_WAIT_S)


def report_json(done: dict[str, list[Target]]) -> None:
    """``sessions --json`` against the same 150 ms (an aim, not the row's target)."""
    for label, chosen in done.items():
        floor, _, listed = chosen
        print("  " + verdict(f"{listed.name} ({label.split()[0]}, aim)", listed.median_ms,
                             TARGET_MS, unit=" ms",
                             baseline=f"{floor.name} {floor.median_ms:.0f} ms, "
                                      f"ratio {listed.median_ms / floor.median_ms:.1f}×"))


def smoke_line(done: dict[str, list[Target]]) -> str:
    parts = []
    for label, chosen in done.items():
        floor, table, listed = (t.median_ms for t in chosen)
        parts.append(f"{label.split()[0]}: sessions {table:.0f} ms, --json {listed:.0f} ms, "
                     f"python {floor:.0f} ms")
    return f"relay-cli beside a host, 1 run: {' · '.join(parts)} (target < {TARGET_MS:.0f} ms)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10, help="measured runs per target (default 10)")
    parser.add_argument("--load", type=int, default=2,
                        help="busy processes beside the loaded pass (default 2)")
    parser.add_argument("--smoke", action="store_true",
                        help="one run of each, one busy process, one summary line (./dev test)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when relay-cli sessions' median is {TARGET_MS:.0f} ms or more")
    args = parser.parse_args(argv)
    runs, load = (1, 1) if args.smoke else (args.runs, args.load)
    done = measure(runs, load)
    print("relay-cli against a running relay-cli serve (--json: through its API)")
    met = report(done, runs, TARGET_MS, judged=lambda t: t.name == "relay-cli sessions")
    report_json(done)
    if args.smoke:
        print(smoke_line(done))
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
