"""benchmarks/usage_scan: does the window's event loop stay responsive during a cold scan?

Issue 5: "the window never freezes during a scan (it runs off the GUI thread and shows
progress)". The data set of ``bench_usage_scan.py`` (``generate.py``, reused from
``.cache/bench-data/usage_scan/`` when present) is scanned cold the way the window does it:
a ``QApplication`` (offscreen unless DISPLAY is set) with a qasync loop, the real ``Engine``
with a Claude account registered on the generated folder (default folders off), and
``await engine.wallet.refresh_index(progress)`` whose ``progress`` posts to the loop at most
one pending update at a time, like ``WalletViewModel._rescan``. Meanwhile a single-shot
``QTimer`` armed every 10 ms records how late it fires (the loop's lag). Each run starts
from a new Relay home (a new index: a cold scan); the page cache is warm.

It prints, per run and over all runs: scan wall time, loop lag p50/p99/max while the scan
ran, how many progress updates the loop showed (and how many the scan reported), against
the target of ``benchmarks/gui_burst``: lag p99 < 50 ms. ``--spikes N`` lists the N worst
lags with when they happened; ``--direct`` also times, after each run, a cold scan by
``UsageIndex.refresh`` alone (no loop, no engine: as ``bench_usage_scan.py``);
``--in-process`` scans without worker processes (the fallback of a one-core machine, of a
scan under 48 MiB, of workers that cannot start): the reader then shares the GIL with the loop.

Run: ``python benchmarks/usage_scan/bench_scan_lag.py [--size-mb 1024] [--runs 3] [--keep]``.
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
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make benchmarks/ importable
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync  # noqa: E402
from PySide6.QtCore import Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from benchmarks.usage_scan import bench_usage_scan as bench  # noqa: E402
from benchmarks.usage_scan import generate  # noqa: E402
from relay.core.config import load_config  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402
from relay.wallet import usage_pool  # noqa: E402
from relay.wallet.usage_refresh import RefreshReport  # noqa: E402

TICK_MS = 10
LAG_TARGET_MS = 50.0  # as benchmarks/gui_burst


@dataclass
class Run:
    seconds: float
    report: RefreshReport
    direct: float | None  # the same cold scan by UsageIndex.refresh alone (--direct)
    #: (seconds since the scan started, lag in ms) of every tick while it ran
    ticks: list[tuple[float, float]]
    reported: int  # progress(done, total) calls made by the scan (its worker thread)
    shown: int  # updates the loop ran (posted at most one at a time)
    #: (seconds since the start, files done) of each update shown
    shown_at: list[tuple[float, int]] = field(default_factory=list)

    @property
    def lags(self) -> list[float]:
        return sorted(lag for _, lag in self.ticks)


def pct(values: list[float], q: float) -> float:
    """The q-th percentile of sorted ``values`` (as benchmarks/gui_burst reads its p99)."""
    return values[max(int(len(values) * q) - 1, 0)] if values else float("nan")


class Ticker:
    """A single-shot QTimer re-armed every time it fires: how late each firing is."""

    def __init__(self) -> None:
        self.ticks: list[tuple[float, float]] = []
        self.origin = time.perf_counter()
        self._armed = 0.0
        self._timer = QTimer()
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._fired)

    def start(self) -> None:
        self.origin = time.perf_counter()
        self._arm()

    def stop(self) -> None:
        self._timer.stop()

    def _arm(self) -> None:
        self._armed = time.perf_counter()
        self._timer.start(TICK_MS)

    def _fired(self) -> None:
        now = time.perf_counter()
        self.ticks.append((now - self.origin, (now - self._armed) * 1000 - TICK_MS))
        self._arm()


async def cold_scan(folder: Path, home: Path) -> Run:
    """One cold scan of ``folder`` through the engine's wallet, as the Wallet dock runs it."""
    loop = asyncio.get_running_loop()
    engine = await Engine.open(load_config(home=home, wallet_default_folders=False))
    try:
        await engine.accounts.add("claude", "bench", folder)
        reported = 0
        posted: tuple[int, int] | None = None
        shown: list[tuple[float, int]] = []
        ticker = Ticker()

        def show() -> None:  # on the loop, like WalletViewModel._show_progress
            nonlocal posted
            latest, posted = posted, None
            if latest is not None:
                shown.append((time.perf_counter() - ticker.origin, latest[0]))

        def progress(done: int, total: int) -> None:  # the index's worker thread
            nonlocal posted, reported
            reported += 1
            before, posted = posted, (done, total)
            if before is None:
                loop.call_soon_threadsafe(show)

        ticker.start()
        started = time.perf_counter()
        report = await engine.wallet.refresh_index(progress)
        seconds = time.perf_counter() - started
        ticker.stop()
        return Run(seconds, report, None, ticker.ticks, reported, len(shown), shown)
    finally:
        await engine.close()


async def amain(args: argparse.Namespace, folder: Path) -> list[Run]:
    runs: list[Run] = []
    for i in range(args.runs):
        home = Path(tempfile.mkdtemp(prefix="scan-lag-"))
        try:
            run = await cold_scan(folder, home)
            if args.direct:  # blocks the loop: nothing is measured meanwhile
                cold = bench.relay_cold(folder, home / "direct.sqlite")
                cold.index.close()
                run.direct = cold.seconds
        finally:
            shutil.rmtree(home, ignore_errors=True)
        runs.append(run)
        lags = run.lags
        print(f"run {i + 1}: scan {run.seconds:.2f} s ({run.report.files_changed} files, "
              f"{run.report.bytes_read / generate.MIB:,.0f} MiB, {run.report.entries_added:,} entries); "
              f"loop lag over {len(lags)} ticks: p50 {pct(lags, 0.50):.1f} ms, p99 {pct(lags, 0.99):.1f} ms, "
              f"max {max(lags, default=float('nan')):.1f} ms; progress: {run.shown} shown "
              f"of {run.reported} reported"
              + (f"; direct cold scan {run.direct:.2f} s" if run.direct is not None else ""), flush=True)
        if args.spikes:
            worst = sorted(run.ticks, key=lambda t: -t[1])[: args.spikes]
            for at, lag in sorted(worst):
                done = max((n for t, n in run.shown_at if t <= at), default=0)
                print(f"  {lag:7.1f} ms late at {at:6.2f} s (files done shown: {done})")
        await asyncio.sleep(0.5)  # let the previous run's workers and threads wind down
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024, help="data set size in MiB (default 1024)")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3, help="cold scans, each into a new index")
    parser.add_argument("--keep", action="store_true", help="keep the generated data set for the next run")
    parser.add_argument("--no-oddities", dest="oddities", action="store_false",
                        help="no corrupt or truncated lines in the data set")
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "bench-data" / "usage_scan")
    parser.add_argument("--direct", action="store_true",
                        help="also time a cold scan by UsageIndex.refresh alone after each run")
    parser.add_argument("--in-process", action="store_true",
                        help="no worker processes: the scan reads every file in its thread")
    parser.add_argument("--spikes", type=int, default=0, help="list the N worst lags of each run")
    args = parser.parse_args()
    if args.in_process:
        usage_pool.PARALLEL_BYTES = sys.maxsize  # read at each scan: never worth the workers

    folder = bench.dataset(args)
    try:
        files = bench.transcript_files(folder)
        nbytes, _ = bench.warm(files)
        app = QApplication.instance() or QApplication(sys.argv[:1])
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            runs: list[Run] = loop.run_until_complete(amain(args, folder))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)

    lags = sorted(lag for run in runs for lag in run.lags)
    p99s = [pct(run.lags, 0.99) for run in runs]
    p99 = pct(lags, 0.99)
    print(f"data: {len(files)} files, {nbytes / generate.MIB:,.0f} MiB (seed {args.seed}); "
          f"{os.cpu_count()} cores; {args.runs} cold scan(s) through Engine.wallet.refresh_index, "
          + ("in process (no workers)" if args.in_process else "workers as in the app (none under 48 MiB)"))
    print(f"scan wall time: {bench.fmt_s([r.seconds for r in runs])}; progress updates shown: "
          f"{statistics.median(r.shown for r in runs):.0f} (reported: "
          f"{statistics.median(r.reported for r in runs):.0f}) per scan")
    if args.direct:
        print(f"direct cold scan (UsageIndex.refresh alone): "
              f"{bench.fmt_s([r.direct for r in runs if r.direct is not None])}")
    print(f"loop lag over {len(lags)} ticks: p50 {pct(lags, 0.50):.1f} ms, p99 {p99:.1f} ms "
          f"(runs: {', '.join(f'{p:.1f}' for p in p99s)}), max {max(lags, default=float('nan')):.1f} ms "
          f"(target p99 < {LAG_TARGET_MS:.0f} ms) → {'PASS' if p99 < LAG_TARGET_MS else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
