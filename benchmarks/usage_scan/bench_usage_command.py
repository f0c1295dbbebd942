"""benchmarks/usage_scan: ``relay-cli usage --json`` as a user runs it, beside ``ccusage``.

Issue 24. The whole command — process start to its JSON on stdout — on the generated
transcripts of ``generate.py`` (1 GiB by default, reused from ``--data-dir``), the folder
given to both tools as ``CLAUDE_CONFIG_DIR`` (Relay counts it as the default ``claude``
folder; ``HOME`` is an empty folder, ``TZ=UTC``). Rows, in this order, idle and then beside
``--load`` busy loops (:func:`benchmarks.machine.busy`):

* **cold**: a fresh data folder (``RELAY_HOME``), no host: ``relay-cli usage --json`` vs
  ``ccusage daily --json --offline -z UTC`` on the same folder, taking turns, ``--runs``
  rounds; the verdict is the median of the rounds' ratios, target ≤ 1.0×;
* **after ~1 MiB appended, no host**: new turns appended to a few live sessions
  (``generate.append``), then the command on the data folder of the last cold round —
  target < 500 ms;
* **after ~1 MiB appended, with a host**: ``relay-cli serve`` runs on that data folder; the
  command asks it — target < 150 ms.

The baseline of the warm rows is ``python -c pass`` (the interpreter's own start, same run).
The tokens per day of every Relay answer are compared with ccusage's on the folder as it
was then (cold: as generated; warm: after the appends); a difference fails the run. The
appended bytes are truncated away at the end (the data set stays as built).

The command is the environment's ``relay-cli`` script run with ``PYTHONPATH`` = this
tree's ``app`` (checked: the harness stops if ``relay`` would be imported from elsewhere).
ccusage: ``RELAY_BENCH_CCUSAGE``, else ``$RELAY_BENCH_TOOLS_DIR/ccusage/...``
(``scripts/install-bench-tools.sh``); not installed, its rows are skipped and said so.

Run: ``python benchmarks/usage_scan/bench_usage_command.py [--size-mb 1024] [--runs 3]
[--load 2] [--data-dir DIR] [--keep] [--app OTHER/app]``; ``--smoke``: 5 MiB, one round, idle
only, no verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.cli_client.bench_cli_client import serve  # noqa: E402
from benchmarks.cli_startup.bench_cli_startup import relay_cli  # noqa: E402
from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402
from benchmarks.usage_scan import generate  # noqa: E402
from benchmarks.usage_scan.bench_usage_scan import (  # noqa: E402
    Day,
    ccusage_days,
    compare,
    dataset,
    paired,
    run_ccusage,
    tool_version,
    transcript_files,
    warm,
)

COLD_TARGET = 1.0      # Relay cold / ccusage, end to end
NO_HOST_MS = 500.0     # after ~1 MiB appended, no host
HOST_MS = 150.0        # after ~1 MiB appended, a host running
TIMEOUT_S = 600.0


def log(msg: str) -> None:
    print(f"[usage_command] {msg}", file=sys.stderr, flush=True)


def ccusage() -> Path | None:
    env = os.environ.get("RELAY_BENCH_CCUSAGE")
    tools = Path(os.environ.get("RELAY_BENCH_TOOLS_DIR") or ROOT / ".cache" / "bench-tools")
    exe = Path(env) if env else tools / "ccusage" / "node_modules" / ".bin" / "ccusage"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


@dataclass
class Relay:
    """How the command is run: the script, and the environment of one data folder."""

    cli: list[str]
    folder: Path
    user: Path
    #: the ``app`` folder whose ``relay`` runs (this tree's; ``--app``: another, e.g. main's)
    app: Path = ROOT / "app"

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("RELAY_", "CLAUDE_", "CODEX_", "GEMINI_", "PI_"))}
        env.update({"PYTHONPATH": str(self.app), "RELAY_HOME": str(home),
                    "HOME": str(self.user), "CLAUDE_CONFIG_DIR": str(self.folder), "TZ": "UTC",
                    "XDG_CONFIG_HOME": str(self.user / ".config"),
                    "XDG_DATA_HOME": str(self.user / ".local" / "share")})
        return env

    def check_tree(self, home: Path) -> None:
        """Stop unless the command would import this tree's ``relay``."""
        python = self.cli[0] if self.cli[0].endswith("python") else sys.executable
        done = subprocess.run([python, "-c", "import relay; print(relay.__file__)"],
                              env=self.env(home), capture_output=True, text=True, check=True)
        if not Path(done.stdout.strip()).is_relative_to(self.app):
            raise SystemExit(f"relay-cli would run {done.stdout.strip()}, not {self.app}")

    def usage(self, home: Path) -> tuple[float, dict[str, Day]]:
        """One ``relay-cli usage --json``: (seconds, tokens per day)."""
        started = time.perf_counter()
        done = subprocess.run([*self.cli, "usage", "--json"], env=self.env(home),
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S,
                              check=False)
        took = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"relay-cli usage failed ({done.returncode}): "
                             f"{done.stderr.decode(errors='replace')[-2000:]}")
        return took, days_of(json.loads(done.stdout))


def days_of(table: dict[str, Any]) -> dict[str, Day]:
    return {r["day"]: (r["tokens"]["input"], r["tokens"]["output"], r["tokens"]["cache_read"],
                       r["tokens"]["cache_write"]) for r in table["rows"]}


def floor_s() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


@dataclass
class Pass:
    label: str
    load: str = ""
    cold: list[float] = field(default_factory=list)
    peer: list[float] = field(default_factory=list)
    no_host: list[float] = field(default_factory=list)
    host: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def check(self, what: str, relay: dict[str, Day], peer: dict[str, Day] | None) -> None:
        if peer is None:
            return
        diffs = compare(relay, peer)
        if diffs:
            self.failures.append(f"{what}: tokens per day differ from ccusage's\n" + "\n".join(diffs))


def measure(relay: Relay, exe: Path | None, work: Path, runs: int, label: str,
            seed: int) -> Pass:
    out = Pass(label, load_average())
    print(f"{label}: load average before: {out.load}", flush=True)
    peer_days: dict[str, Day] | None = None
    home = work / "none"
    for i in range(runs):
        home = work / f"{label.split()[0]}-cold{i}"
        contenders: list[str] = ["relay", "ccusage"] if i % 2 == 0 else ["ccusage", "relay"]
        for who in contenders:
            if who == "relay":
                seconds, days = relay.usage(home)
                out.cold.append(seconds)
            elif exe is not None:
                seconds, report = run_ccusage(exe, relay.folder)
                out.peer.append(seconds)
                peer_days = ccusage_days(report)
        out.check(f"cold round {i + 1}", days, peer_days)
        log(f"{label} cold {i + 1}: relay {out.cold[-1]:.2f} s"
            + (f", ccusage {out.peer[-1]:.2f} s" if out.peer else ""))
    appended: list[generate.Appended] = []
    try:
        for i in range(runs):
            appended.append(generate.append(relay.folder, 1.0, seed + i))
            out.floor.append(floor_s())
            seconds, days = relay.usage(home)
            out.no_host.append(seconds)
            log(f"{label} after {appended[-1].bytes:,} bytes appended, no host: {seconds * 1000:.0f} ms")
        peer_days = ccusage_days(run_ccusage(exe, relay.folder)[1]) if exe else None
        out.check("after the appends, no host", days, peer_days)
        host = serve(relay.cli, relay.env(home), home)
        try:
            relay.usage(home)  # the host opens its index at the first question
            for i in range(runs):
                appended.append(generate.append(relay.folder, 1.0, seed + runs + i))
                seconds, days = relay.usage(home)
                out.host.append(seconds)
                log(f"{label} after {appended[-1].bytes:,} bytes appended, host: {seconds * 1000:.0f} ms")
        finally:
            host.send_signal(signal.SIGTERM if os.name != "nt" else signal.SIGINT)
            host.communicate(timeout=60)
        peer_days = ccusage_days(run_ccusage(exe, relay.folder)[1]) if exe else None
        out.check("after the appends, with a host", days, peer_days)
    finally:
        while appended:
            generate.restore(appended.pop())
    return out


def report(passes: list[Pass], smoke: bool) -> None:
    for p in passes:
        floor = statistics.median(p.floor)
        print(f"{p.label} (load average before: {p.load}); python -c pass {floor * 1000:.0f} ms")
        cold = statistics.median(p.cold)
        if p.peer:
            ratio = paired(p.cold, p.peer)
            line = verdict(f"  cold: relay-cli usage --json {cold:.2f} s / ccusage daily "
                           f"{statistics.median(p.peer):.2f} s", ratio, COLD_TARGET,
                           baseline="ccusage")
        else:
            line = f"  cold: relay-cli usage --json {cold:.2f} s (ccusage not installed: no ratio)"
        print(line if not smoke else line.split(" (target")[0])
        for name, values, target in (("after ~1 MiB appended, no host", p.no_host, NO_HOST_MS),
                                     ("after ~1 MiB appended, host running", p.host, HOST_MS)):
            ms = statistics.median(values) * 1000
            line = verdict(f"  {name} ({ms / (floor * 1000):.1f}× python start)", ms, target,
                           unit=" ms", baseline=f"python -c pass {floor * 1000:.0f} ms")
            print(line if not smoke else line.split(" (target")[0])
        for failure in p.failures:
            print(f"FAIL ({p.label}) {failure}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--size-mb", type=float, default=1024)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--load", type=int, default=2, help="busy loops of the loaded pass (0: none)")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "bench-data" / "usage_scan")
    parser.add_argument("--keep", action="store_true", help="keep a data set generated here")
    parser.add_argument("--smoke", action="store_true", help="5 MiB, one round, idle, no verdict")
    parser.add_argument("--app", type=Path, default=ROOT / "app",
                        help="the app folder whose relay-cli runs (default this tree's; another "
                             "tree's, e.g. main's, measures the before)")
    args = parser.parse_args(argv)
    # stopped: still truncate the appended bytes away and stop the busy loops (``finally``)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.smoke:
        args.size_mb, args.runs, args.load = 5.0, 1, 0
    args.oddities = True
    exe = ccusage()
    if exe is None:
        print("[usage_command] ccusage is not installed (scripts/install-bench-tools.sh): "
              "its rows are skipped", file=sys.stderr)
    existed = (args.data_dir / f"s{args.seed}-{args.size_mb:g}mb").exists()
    folder = dataset(args)
    passes: list[Pass] = []
    try:
        files = transcript_files(folder)
        nbytes, _ = warm(files)
        with tempfile.TemporaryDirectory(prefix="usage-command-") as tmp:
            work = Path(tmp)
            (work / "user").mkdir()
            relay = Relay(relay_cli(), folder, work / "user", args.app.resolve())
            relay.check_tree(work / "check")
            print(f"relay-cli of {relay.app}; machine: {os.cpu_count()} cores ({cpu_name()}); "
                  f"{tool_version([str(exe), '--version']) if exe else 'ccusage not installed'}; "
                  f"data: {len(files)} files, {nbytes / generate.MIB:,.0f} MiB, seed {args.seed}; "
                  f"{args.runs} round(s), medians")
            passes.append(measure(relay, exe, work, args.runs, "idle", args.seed))
            if args.load:
                with busy(args.load):
                    passes.append(measure(relay, exe, work, args.runs,
                                          f"loaded ({args.load} busy loops)", args.seed))
    finally:
        if not existed and not args.keep:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    report(passes, args.smoke)
    return 1 if any(p.failures for p in passes) else 0


if __name__ == "__main__":
    sys.exit(main())
