"""Every performance row of docs/performance.md measured side by side in one run.

Runs each harness at its full size, one after the other, each idle and then beside ``--load``
busy loops (the harnesses' own ``--load``), and writes what each printed to
``.cache/bench-runs/<UTC time>/<row>.txt``. At the end it prints every verdict line (``…
(target ≤ …: met|MISSED)``) under its row, with the load average before each harness — the
table docs/performance.md records. A harness that fails is reported with its last lines;
the others still run.

The peers (ccusage, LangGraph) come from ``scripts/install-bench-tools.sh``; the frozen
start-up row needs ``dist/relay`` (``installers/linux/build.sh --bundle-only``).

Run: ``python benchmarks/rows.py [--only ROW[,ROW…]] [--load 2] [--list]``. Takes about
half an hour on the 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_name, load_average  # noqa: E402

TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Row:
    name: str
    what: str
    args: tuple[str, ...]  # the harness and its arguments, relative to benchmarks/
    loads: bool = True  # takes --load


ROWS = [
    Row("stream", "stream: parse → scrub → persist → bus, 100k lines (vs json.loads)",
        ("stream/bench_stream.py",)),
    Row("gui-burst", "window loop lag p99 during a 20k-event burst", ("gui_burst/bench_gui_burst.py",)),
    Row("startup", "window start → first paint (vs a bare PySide6 window)",
        ("startup/bench_startup.py",)),
    Row("usage-command", "relay-cli usage --json, cold vs ccusage and after an append",
        ("usage_scan/bench_usage_command.py", "--keep")),
    Row("detect", "detect --all vs the wallet's cold scan", ("detect/bench_detect.py", "--runs", "3")),
    Row("scheduler", "scheduler per-step overhead, 1,000 no-op steps",
        ("scheduler/bench_scheduler.py", "--reps", "3")),
    Row("cli-startup", "relay-cli start-up", ("cli_startup/bench_cli_startup.py",)),
    Row("cli-client", "relay-cli beside a running host", ("cli_client/bench_cli_client.py",)),
]


def verdicts(text: str) -> list[str]:
    """The verdict lines a harness printed, each once (some repeat them in a closing summary)."""
    found = [line.strip() for line in text.splitlines() if "(target " in line and
             ("met)" in line or "MISSED)" in line)]
    return list(dict.fromkeys(found))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="rows by name, comma-separated")
    parser.add_argument("--load", type=int, default=2, help="busy loops of the loaded passes")
    parser.add_argument("--list", action="store_true", help="list the rows and exit")
    args = parser.parse_args(argv)
    if args.list:
        for row in ROWS:
            print(f"{row.name:14} {row.what}")
        return 0
    wanted = {n for n in args.only.split(",") if n}
    unknown = wanted - {r.name for r in ROWS}
    if unknown:
        parser.error(f"unknown row(s): {', '.join(sorted(unknown))} (--list shows them)")
    rows = [r for r in ROWS if not wanted or r.name in wanted]
    out_dir = ROOT / ".cache" / "bench-runs" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"{cpu_name()}, {os.cpu_count()} cores; output in {out_dir}", flush=True)
    summary: list[str] = []
    failed = 0
    for row in rows:
        argv_ = [sys.executable, str(ROOT / "benchmarks" / row.args[0]), *row.args[1:]]
        if row.loads:
            argv_ += ["--load", str(args.load)]
        before = load_average()
        started = time.monotonic()
        print(f"== {row.name}: {row.what} (load average {before})", flush=True)
        try:
            done = subprocess.run(argv_, cwd=ROOT, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=TIMEOUT_S)
            text, code = done.stdout, done.returncode
        except subprocess.TimeoutExpired as exc:
            text, code = (exc.output or "") if isinstance(exc.output, str) else "", -1
        (out_dir / f"{row.name}.txt").write_text(text)
        took = time.monotonic() - started
        found = verdicts(text)
        summary.append(f"{row.name} ({took:.0f} s, load average before {before}):")
        summary += [f"    {line}" for line in found] or ["    (no verdict lines)"]
        if code != 0 and not found:
            failed += 1
            tail = "\n".join(text.splitlines()[-8:])
            summary.append(f"    FAILED (exit {code}):\n{tail}")
        print("\n".join(summary[-(len(found) or 1) - 1:]), flush=True)
    print("\n# summary\n" + "\n".join(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
