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
pass``, default 2) spin beside it. Targets run in turns so a burst elsewhere spreads over all.

Target: ``relay-cli sessions`` **under 150 ms**, process start included, idle and loaded (the
``--json`` row and the floor are printed for comparison).

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
    relay_cli,
    timed,
)
from benchmarks.machine import busy, load_average  # noqa: E402

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
    passes: dict[str, list[Target]] = {}
    with tempfile.TemporaryDirectory(prefix="relay-cli-client-") as tmp:
        home = Path(tmp) / "home"
        env = environment(home, Path(tmp) / "pycache")
        host = serve(cli, env, home)
        try:
            for _ in range(DEMOS):  # sessions to list, run by the host
                timed([*cli, "demo"], env)
            for label, count in (("idle", 0), (f"loaded ({load} busy)", load)):
                print(f"{label}: load average before: {load_average()}", flush=True)
                chosen = targets(cli)
                for target in chosen:
                    timed(target.argv, env)  # warm: the disk cache and the bytecode
                with busy(count):
                    for _ in range(runs):
                        for target in chosen:
                            target.times.append(timed(target.argv, env))
                passes[label] = chosen
        finally:
            host.send_signal(signal.SIGTERM if os.name != "nt" else signal.SIGINT)
            host.communicate(timeout=HOST_WAIT_S)
    return passes


def report(passes: dict[str, list[Target]], runs: int) -> bool:
    met = True
    print(f"relay-cli against a running relay-cli serve, start → exit, median of {runs} "
          f"run(s), {os.cpu_count()} cores, python {sys.version.split()[0]}")
    for label, chosen in passes.items():
        floor = chosen[0].median_ms
        print(f"{label}:")
        for target in chosen:
            line = (f"  {target.name:28} {target.median_ms:5.0f} ms "
                    f"(p90 {_p90(target.times):5.0f} ms, {target.median_ms / floor:4.1f}× python)")
            if target.name == "relay-cli sessions":
                ok = target.median_ms < TARGET_MS
                met = met and ok
                line += f"  target < {TARGET_MS:.0f} ms: {'met' if ok else 'MISSED'}"
            print(line)
    return met


def _p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000


def smoke_line(passes: dict[str, list[Target]]) -> str:
    parts = []
    for label, chosen in passes.items():
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
    passes = measure(runs, load)
    met = report(passes, runs)
    if args.smoke:
        print(smoke_line(passes))
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
