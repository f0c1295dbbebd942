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

Each target is timed **idle**, then **loaded**: ``--load`` busy Python loops
(:func:`benchmarks.machine.busy`, default 2) spin beside it; each pass prints the load average
before it. Target: each relay-cli command **under 300 ms**, idle and loaded; the ratio to
``python -c pass`` (measured in the same pass: it slows under load too) is printed beside it,
and a verdict line per command (:func:`benchmarks.machine.verdict`).

Run: ``python benchmarks/cli_startup/bench_cli_startup.py [--runs 10] [--load 2] [--check]``;
``--smoke`` is one run of each, idle (``./dev test``: proves the harness works, not a verdict).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402

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
    """The targets' environment: this checkout's ``app/`` first on the path, so the
    ``relay-cli`` script runs the code beside this harness (not another install's)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    path = [str(ROOT / "app"), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env.update({"RELAY_HOME": str(home), "PYTHONPYCACHEPREFIX": str(pycache),
                "RELAY_DEMO_STEP_DELAY": "0", "COLUMNS": "100",
                "PYTHONPATH": os.pathsep.join(path)})
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


def passes(make: Callable[[], list[Target]], env: dict[str, str], runs: int,
           load: int) -> dict[str, list[Target]]:
    """The targets timed idle, then (``load`` > 0) beside ``load`` busy loops
    (:func:`benchmarks.machine.busy`), ``runs`` rounds each, in turns; each pass prints the
    load average before it. The first target is the floor."""
    done: dict[str, list[Target]] = {}
    for label, count in (("idle", 0), (f"loaded ({load} busy loops)", load)):
        if label != "idle" and not count:
            break
        print(f"{label}: load average before: {load_average()}", flush=True)
        chosen = make()
        for target in chosen:
            timed(target.argv, env)  # warm: the disk cache and this target's bytecode
        with busy(count):
            for _ in range(runs):
                for target in chosen:
                    target.times.append(timed(target.argv, env))
        done[label] = chosen
    return done


def measure(runs: int, load: int) -> dict[str, list[Target]]:
    cli = relay_cli()
    with tempfile.TemporaryDirectory(prefix="relay-cli-startup-") as tmp:
        env = environment(Path(tmp) / "home", Path(tmp) / "pycache")
        for _ in range(DEMOS):  # sessions to list (and the bytecode of most of Relay)
            timed([*cli, "demo"], env)
        return passes(lambda: targets(cli), env, runs, load)


def p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000


def report(done: dict[str, list[Target]], runs: int, target_ms: float = TARGET_MS,
           judged: Callable[[Target], bool] = lambda t: True) -> bool:
    """Print each pass (floor, figures, ratios, verdicts); whether every judged target met
    ``target_ms`` in every pass."""
    print(f"start → exit, median of {runs} run(s) each, {os.cpu_count()} cores "
          f"({cpu_name()}), python {sys.version.split()[0]}; target < {target_ms:.0f} ms")
    met = True
    for label, chosen in done.items():
        floor = chosen[0]
        print(f"{label}:")
        print(f"  {'target':28} {'median':>8} {'p90':>8} {'× floor':>8}")
        for target in chosen:
            print(f"  {target.name:28} {target.median_ms:5.0f} ms {p90(target.times):5.0f} ms "
                  f"{target.median_ms / floor.median_ms:7.1f}×")
        for target in chosen[1:]:
            if judged(target):
                met = met and target.median_ms < target_ms
                print("  " + verdict(f"{target.name} ({label.split()[0]})", target.median_ms,
                                     target_ms, unit=" ms",
                                     baseline=f"{floor.name} {floor.median_ms:.0f} ms, "
                                              f"ratio {target.median_ms / floor.median_ms:.1f}×"))
    return met


def smoke_line(done: dict[str, list[Target]]) -> str:
    chosen = done["idle"]
    floor = chosen[0].median_ms
    parts = [f"{t.name.removeprefix('relay-cli ')} {t.median_ms:.0f} ms ({t.median_ms / floor:.1f}×)"
             for t in chosen[1:]]
    return (f"relay-cli start → exit, 1 run: {' · '.join(parts)}; bare python {floor:.0f} ms "
            f"(target < {TARGET_MS:.0f} ms each)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10, help="measured runs per target (default 10)")
    parser.add_argument("--load", type=int, default=2,
                        help="busy loops beside the loaded pass (default 2; 0: idle only)")
    parser.add_argument("--smoke", action="store_true",
                        help="one run of each, idle only, one summary line (./dev test)")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 when a command's median is {TARGET_MS:.0f} ms or more")
    args = parser.parse_args(argv)
    runs, load = (1, 0) if args.smoke else (args.runs, args.load)
    done = measure(runs, load)
    met = report(done, runs)
    if args.smoke:
        print(smoke_line(done))
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
