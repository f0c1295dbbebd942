"""benchmarks/detect: a full detect over the usage scan's generated transcripts.

Issue 6, "Speed": a detect over 1 GB of transcripts reuses the wallet's index; its cold
scan no slower than the wallet's cold scan, and a refresh when nothing changed under 50 ms.
Issue 24: ``detect --all`` at most 1.5× the wallet's cold scan, idle and loaded.

The data set is benchmarks/usage_scan's (same generator, same cache), with each file's
mtime set to its last record's time, as on a real machine (30 days of sessions). In one run:

* **wallet cold** (the baseline): a fresh usage index over the folder;
* **detect cold** (default view): a fresh Detector after that index exists — the sessions of
  the last 24 hours are read and lifted, the others listed (a ``stat`` each);
* **detect cold --all**: a fresh Detector showing every session (the older ones read as
  summaries: head and tail), then one older session lifted on demand (the detail pane);
* **detect refresh**: the same Detector again, nothing changed (median of ``--runs``).

Each pass runs idle, then beside ``--load`` busy loops (:func:`benchmarks.machine.busy`),
with the load average printed before it and the baseline measured in the same pass; the
verdicts (ratio, target, met/MISSED) close the output.

Run: ``python benchmarks/detect/bench_detect.py [--size-mb 1024] [--runs 5] [--load 2]
[--data-dir DIR]``; ``--smoke``: 5 MiB, idle, what ``./dev test`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make benchmarks/ importable
sys.path.insert(0, str(ROOT / "app"))  # this tree's relay, not an installed one's

import orjson  # noqa: E402

from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402
from benchmarks.usage_scan import bench_usage_scan as usage  # noqa: E402
from benchmarks.usage_scan import generate  # noqa: E402
from relay.core.config import load_config  # noqa: E402
from relay.detect.processes import ProcessScan  # noqa: E402
from relay.detect.service import Detector  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402

REFRESH_TARGET_MS = 50.0
#: the default view no slower than the wallet's cold scan; --all at most 1.5× it (issue 24)
DEFAULT_TARGET = 1.0
ALL_TARGET = 1.5
WALLET = "wallet cold (the baseline)"
DEFAULT = "detect cold, default view (last 24 h read)"
ALL = "detect cold --all"
REFRESH = "detect refresh, nothing changed"


def age_files(folder: Path) -> int:
    """Set each transcript's mtime to its last record's time, the data set's end moved to now
    (it is dated); how many were active in the last day."""
    recent = 0
    now = time.time()
    shift = now - generate.END_MS / 1000
    for path in usage.transcript_files(folder):
        with path.open("rb") as handle:
            handle.seek(max(path.stat().st_size - 65536, 0))
            tail = handle.read().splitlines()
        stamp = None
        for line in reversed(tail):
            try:
                value = orjson.loads(line).get("timestamp")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(value, str):
                stamp = value
                break
        if stamp is None:
            continue
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() + shift
        os.utime(path, (when, when))
        recent += now - when < 24 * 3600
    return recent


async def tick(lags: list[float], every: float = 0.01) -> None:
    """How late a 10 ms timer fires on the loop the scan runs on (the window's, in the app)."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + every
        await asyncio.sleep(every)  # a clock being measured, not synchronisation
        lags.append(max(loop.time() - due, 0.0))


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * 0.99), len(ordered) - 1)] if ordered else 0.0


def no_processes(_: object) -> ProcessScan:
    return ProcessScan()


async def measure(folder: Path, runs: int) -> dict[str, list[float]]:
    """One pass: the wallet's cold scan (the baseline), then the detector's, in a fresh
    data folder."""
    home = Path(tempfile.mkdtemp(prefix="relay-bench-detect-"))
    os.environ.update({"RELAY_HOME": str(home), "RELAY_WALLET_DEFAULT_FOLDERS": "0",
                       "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                       "RELAY_VAULT_PASSPHRASE": "bench"})
    engine = await Engine.open(load_config())
    out: dict[str, list[float]] = {}
    try:
        await engine.accounts.add("claude", "bench", folder)
        started = time.perf_counter()
        await engine.wallet.refresh_index()
        out[WALLET] = [time.perf_counter() - started]
        for name, everything in ((DEFAULT, False), (ALL, True)):
            detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes)
            lags: list[float] = []
            ticking = asyncio.create_task(tick(lags))
            started = time.perf_counter()
            report = await detector.scan(all_sessions=everything)
            out[name] = [time.perf_counter() - started]
            ticking.cancel()
            out[f"{name}: sessions"] = [float(len(report.sessions))]
            out[f"{name}: loop lag p99 ms"] = [p99(lags) * 1000]
        summaries = [s for s in report.sessions if not s.lifted]
        out[f"{ALL}: summaries (head and tail read)"] = [float(len(summaries))]
        if summaries:  # the detail pane: one older session read in full, lifted on demand
            started = time.perf_counter()
            await detector.find(summaries[len(summaries) // 2].id)
            out["one older session lifted on demand (find)"] = [time.perf_counter() - started]
        detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes)
        await detector.scan()
        refresh = []
        for _ in range(runs):
            started = time.perf_counter()
            await detector.scan()
            refresh.append(time.perf_counter() - started)
        out[REFRESH] = refresh
    finally:
        await engine.close()
        shutil.rmtree(home, ignore_errors=True)
    return out


def report(label: str, results: dict[str, list[float]]) -> list[str]:
    """Print the pass's figures; its verdict lines."""
    for name, values in results.items():
        unit = "" if name.endswith(("sessions", "ms", "(head and tail read)")) else " s"
        shown = f"{statistics.median(values):,.0f}" if not unit else (
            f"{statistics.median(values):.3f}{unit}")
        print(f"  {name:<48} {shown}")
    wallet = results[WALLET][0]
    refresh_ms = statistics.median(results[REFRESH]) * 1000
    lines = [verdict(f"{label}: detect cold, default view / wallet cold", results[DEFAULT][0] /
                     wallet, DEFAULT_TARGET, baseline=f"wallet cold {wallet:.2f} s"),
             verdict(f"{label}: detect cold --all / wallet cold", results[ALL][0] / wallet,
                     ALL_TARGET, baseline=f"wallet cold {wallet:.2f} s"),
             verdict(f"{label}: detect refresh", refresh_ms, REFRESH_TARGET_MS, unit=" ms")]
    for line in lines:
        print(line)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=2,
                        help="busy loops beside the second pass (0: idle only)")
    parser.add_argument("--data-dir", type=Path,
                        default=ROOT / ".cache" / "bench-data" / "usage_scan",
                        help="where the generated data set is cached (shared with usage_scan)")
    parser.add_argument("--smoke", action="store_true",
                        help="5 MiB, 2 runs, idle only: proves the harness runs, no verdict")
    args = parser.parse_args()
    if args.smoke:
        args.size_mb, args.runs, args.load = 5, 2, 0
    data_args = argparse.Namespace(size_mb=args.size_mb, seed=args.seed, oddities=True,
                                   keep=True, data_dir=args.data_dir)
    folder = usage.dataset(data_args)
    recent = age_files(folder)
    files = usage.transcript_files(folder)
    size, _ = usage.warm(files)
    print(f"data: {size / 2**20:,.0f} MiB in {len(files):,} files, {recent} active in the "
          f"last 24 h (mtimes = last record); {cpu_name()}, {os.cpu_count()} cores")
    passes = [("idle", 0)] + ([(f"loaded ({args.load} busy)", args.load)] if args.load else [])
    verdicts: list[str] = []
    for label, count in passes:
        with busy(count):
            print(f"{label}: load average before: {load_average()}", flush=True)
            results = asyncio.run(measure(folder, args.runs))
        verdicts += report(label, results)
    print("summary:")
    for line in verdicts:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
