"""The benchmark smokes ``./dev test`` runs: each harness once, small, to prove it still works.

A smoke is not a measurement. It runs at a fraction of the benchmark's size, beside whatever
else the machine is doing (in CI: nothing else is idle), so the figure it prints says the
harness ran end to end and roughly where it landed — never whether Relay meets its target.
The real figures, measured as described there, are in docs/performance.md (the kill
harnesses' counts in docs/faults.md).

Each line says what the smoke measured, the full benchmark's target, and its figure; a smoke
whose process fails (a crash, a traceback, a non-zero exit) fails this script, with the last
lines of what it printed.

Run: ``python benchmarks/smoke.py [--only NAME[,NAME…]] [--list]``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600.0
NOTE = "a smoke: small and under load, not a verdict"
WORDS = r"(?:PASS|MISS|MISSED|met)"
# a harness's verdict: "… → MISS", "…: met)", "… (met)", "…   MISSED" at the end
VERDICTS = [re.compile(rf"\s*\({WORDS}\)"), re.compile(rf"\s*(?:→|:)\s*{WORDS}\b"),
            re.compile(rf"\s+{WORDS}$")]


@dataclass(frozen=True)
class Smoke:
    name: str
    what: str
    argv: list[str]
    last: int = 1  # how many closing lines of the harness's output carry the figures
    qt: bool = False
    default: bool = True  # part of the plain run (``--only`` selects the others)
    env: dict[str, str] = field(default_factory=dict)


def _bench(path: str, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / path), *args]


SMOKES = [
    Smoke("stream", "3,000 stream-json lines through a session vs json.loads alone",
          _bench("stream/bench_stream.py", "--lines", "3000")),
    Smoke("host", "2,000 stream-json lines followed live over the API by 4 clients and one that "
          "never reads: delivery, latency and the host's loop lag",
          _bench("host/bench_host.py", "--lines", "2000", "--clients", "4"), last=4),
    Smoke("gui-burst", "a 3,000-line burst into the stream dock: loop lag and memory",
          _bench("gui_burst/bench_gui_burst.py", "--smoke"), last=4, qt=True),
    Smoke("wallet-plots", "a 3,000-line burst with the Wallet's plots refreshing vs the Wallet "
          "hidden: loop lag", _bench("wallet_plots/bench_wallet_plots.py", "--lines", "3000",
                                     "--rounds", "1"), last=4, qt=True),
    Smoke("diff-view", "a 3,000-line diff opened in the History dock",
          _bench("diff_view/bench_diff_view.py", "--smoke"), last=3, qt=True),
    Smoke("handoff", "two limit → handoff rounds with the fake CLIs: Relay's own overhead",
          _bench("handoff/bench_handoff.py", "--rounds", "2")),
    Smoke("startup", "one window start from source vs a bare PySide6 window",
          _bench("startup/bench_startup.py", "--smoke", "--targets", "floor,source"), qt=True),
    Smoke("cli-startup", "relay-cli --version, --help, sessions and doctor, start to exit, vs "
          "python -c pass", _bench("cli_startup/bench_cli_startup.py", "--smoke")),
    Smoke("cli-client", "relay-cli sessions (and --json, through the API) beside a running "
          "relay-cli serve, idle and beside a busy process, vs python -c pass",
          _bench("cli_client/bench_cli_client.py", "--smoke")),
    Smoke("startup-frozen", "the frozen bundle's window start vs a bare PySide6 window",
          _bench("startup/bench_startup.py", "--smoke", "--runs", "3", "--targets", "floor,frozen"), last=2,
          qt=True, default=False),
    Smoke("usage-scan", "a cold usage scan of 5 MiB of generated transcripts",
          _bench("usage_scan/bench_usage_scan.py", "--size-mb", "5", "--runs", "1", "--quiet")),
    Smoke("usage-command", "relay-cli usage --json on 5 MiB, start to exit: cold vs ccusage "
          "daily, after ~1 MiB appended without and with a host",
          _bench("usage_scan/bench_usage_command.py", "--smoke"), last=3),
    Smoke("scan-lag", "the window's loop lag while a 5 MiB usage scan runs",
          _bench("usage_scan/bench_scan_lag.py", "--size-mb", "5", "--runs", "1"), qt=True),
    Smoke("detect", "detecting agents over 5 MiB of stores vs the wallet's own scan",
          _bench("detect/bench_detect.py", "--smoke"), last=2),
    Smoke("knowledge-scan", "a full knowledge scan of 60 generated files, tree-sitter vs the "
          "hand-written scanner, idle and beside a busy process",
          _bench("knowledge_scan/bench_knowledge_scan.py", "--smoke", "--quiet"), last=2),
    Smoke("scheduler", "the pipeline scheduler's per-step cost vs a bare loop",
          _bench("scheduler/bench_scheduler.py", "--smoke", "--quiet")),
    Smoke("kill-handoff", "relay-cli SIGKILLed at three handoff states and one random moment, "
          "then recovered: completed exactly once, lost, doubled",
          _bench("faults/kill_handoff.py", "--quick")),
    Smoke("kill-pipeline", "a pipeline run SIGKILLed at three random moments, then recovered: "
          "every step saved exactly once", _bench("faults/kill_pipeline.py", "--quick")),
]


def figures(output: str, last: int) -> list[str]:
    """The harness's closing lines, its PASS/MISS verdict words taken out."""
    lines = [line.strip() for line in output.splitlines() if line.strip()][-last:]
    for verdict in VERDICTS:
        lines = [verdict.sub("", line) for line in lines]
    return [line.rstrip(" :→") for line in lines]


def run(smoke: Smoke) -> tuple[bool, float, list[str]]:
    env = {**os.environ, **smoke.env, "PYTHONPATH": str(ROOT)}
    if smoke.qt:
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    started = time.monotonic()
    try:
        proc = subprocess.run(smoke.argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - started, [f"did not finish within {TIMEOUT_S:.0f} s"]
    took = time.monotonic() - started
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-12:]
        return False, took, [f"exited {proc.returncode}:", *tail]
    return True, took, figures(proc.stdout, smoke.last)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", help="comma-separated smoke names (see --list)")
    parser.add_argument("--list", action="store_true", help="list the smokes and exit")
    args = parser.parse_args()
    if args.list:
        for smoke in SMOKES:
            print(f"{smoke.name:15} {smoke.what}{'' if smoke.default else ' (only with --only)'}")
        return 0
    chosen = [s for s in SMOKES if s.default]
    if args.only:
        names = {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = names - {s.name for s in SMOKES}
        if unknown:
            print(f"smoke: unknown name {', '.join(sorted(unknown))} (--list shows them)", file=sys.stderr)
            return 2
        chosen = [s for s in SMOKES if s.name in names]
    failed = []
    for smoke in chosen:
        ok, took, lines = run(smoke)
        status = "ran" if ok else "FAILED"
        print(f"smoke {smoke.name} ({status} in {took:.0f} s): {smoke.what}", flush=True)
        for line in lines:
            print(f"    {line}", flush=True)
        if not ok:
            failed.append(smoke.name)
    print(f"({NOTE}; the measured figures and their targets are in docs/performance.md)")
    if failed:
        print(f"smoke: {len(failed)} harness(es) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
