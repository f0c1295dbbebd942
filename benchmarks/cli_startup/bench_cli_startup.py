"""benchmarks/cli_startup: how long relay-cli takes from start to exit, against bare Python.

Each target is a whole process, started as a user starts it: the installed ``relay-cli``
script next to this interpreter (``.venv/bin/relay-cli``; ``python -m relay.cli.main`` when
there is none), stdin from /dev/null, its output read and thrown away. Targets:

* ``python``     ``python -c pass`` with the same interpreter — the floor;
* ``--version``  ``relay-cli --version``;
* ``--help``     ``relay-cli --help``;
* ``sessions``   ``relay-cli sessions`` on a data folder with a few demo sessions;
* ``doctor``     ``relay-cli doctor`` (the runtimes' probes, the database, the vault).

The data folder is a fresh temporary one filled by ``relay-cli demo`` (three simulated
sessions) before anything is timed. Bytecode is written as an installed package has it: the
runs use a private ``PYTHONPYCACHEPREFIX`` (filled by one unmeasured warm-up start of each
target) and never ``PYTHONDONTWRITEBYTECODE``. The targets are run in turns (one run of
each, then the next round), so a burst of load elsewhere spreads over all of them.

Target: each relay-cli command **under 300 ms**; the ratio to ``python -c pass`` (measured in
the same run) is printed beside it.

Run: ``python benchmarks/cli_startup/bench_cli_startup.py [--runs 10] [--check]``;
``--smoke`` is one run of each (``./dev test``: proves the harness works, not a verdict).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TARGET_MS = 300.0
TIMEOUT_S = 120.0
DEMOS = 3


@dataclass
class Target:
    name: str
    argv: list[str]
    times: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) * 1000


def relay_cli() -> list[str]:
    """The relay-cli a user of this environment runs."""
    script = Path(sys.executable).parent / ("relay-cli.exe" if os.name == "nt" else "relay-cli")
    if script.exists():
        return [str(script)]
    found = shutil.which("relay-cli")
    return [found] if found else [sys.executable, "-m", "relay.cli.main"]


def environment(home: Path, pycache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"RELAY_HOME": str(home), "PYTHONPYCACHEPREFIX": str(pycache),
                "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "100"})
    return env


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from spawning ``argv`` to its exit; a failure stops the benchmark."""
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=TIMEOUT_S, check=False)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).decode(errors="replace").strip().splitlines()[-10:]
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n" + "\n".join(tail))
    return took


def targets(cli: list[str]) -> list[Target]:
    return [Target("python -c pass", [sys.executable, "-c", "pass"]),
            Target("relay-cli --version", [*cli, "--version"]),
            Target("relay-cli --help", [*cli, "--help"]),
            Target("relay-cli sessions", [*cli, "sessions"]),
            Target("relay-cli doctor", [*cli, "doctor"])]


def measure(runs: int) -> list[Target]:
    cli = relay_cli()
    chosen = targets(cli)
    with tempfile.TemporaryDirectory(prefix="relay-cli-startup-") as tmp:
        env = environment(Path(tmp) / "home", Path(tmp) / "pycache")
        for _ in range(DEMOS):  # sessions to list (and the bytecode of most of Relay)
            timed([*cli, "demo"], env)
        for target in chosen:
            timed(target.argv, env)  # warm: the disk cache and this target's bytecode
        for _ in range(runs):
            for target in chosen:
                target.times.append(timed(target.argv, env))
    return chosen


def report(chosen: list[Target], runs: int) -> bool:
    """Print the table; whether every relay-cli command met the target."""
    floor = chosen[0].median_ms
    print(f"relay-cli start → exit, median of {runs} run(s) each, {os.cpu_count()} cores, "
          f"python {sys.version.split()[0]}; target < {TARGET_MS:.0f} ms per command")
    print(f"{'target':22} {'median':>8} {'min':>8} {'max':>8} {'× python':>9}")
    met = True
    for target in chosen:
        ratio = target.median_ms / floor
        line = (f"{target.name:22} {target.median_ms:5.0f} ms {min(target.times) * 1000:5.0f} ms "
                f"{max(target.times) * 1000:5.0f} ms {ratio:8.1f}×")
        if target is not chosen[0]:
            ok = target.median_ms < TARGET_MS
            met = met and ok
            line += "   met" if ok else "   MISSED"
        print(line)
    return met


def smoke_line(chosen: list[Target]) -> str:
    floor = chosen[0].median_ms
    parts = [f"{t.name.removeprefix('relay-cli ')} {t.median_ms:.0f} ms ({t.median_ms / floor:.1f}×)"
             for t in chosen[1:]]
    return (f"relay-cli start → exit, 1 run: {' · '.join(parts)}; bare python {floor:.0f} ms "
            f"(target < {TARGET_MS:.0f} ms each)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10, help="measured runs per target (default 10)")
    parser.add_argument("--smoke", action="store_true",
                        help="one run of each, one summary line (./dev test)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a command's median is {TARGET_MS:.0f} ms or more")
    args = parser.parse_args(argv)
    runs = 1 if args.smoke else args.runs
    chosen = measure(runs)
    met = report(chosen, runs)
    if args.smoke:
        print(smoke_line(chosen))
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
