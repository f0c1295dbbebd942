"""benchmarks/gui_burst: loop lag and memory while the stream dock takes a burst.

The window is open (offscreen unless DISPLAY is set) with a real engine; a Claude
session whose fake agent prints N recorded-style stream-json lines as fast as it can
is started through the GUI and shown in the live stream dock. A ticker on the qasync
loop asks to wake every 10 ms and records how late it wakes (the loop's lag), from the start
until the dock shows every stored event and the engine's after-work (the knowledge index of
the session's activity) is done. Garbage is collected as in the window (gui/launch.py: the
GUI thread's :class:`~relay.gui.main_thread_gc.MainThreadCollector`). Targets: lag p99
< 50 ms with two busy loops beside it, peak RSS < 300 MB.

Each pass — **idle**, then **loaded** (``--load N`` busy loops, ``benchmarks.machine.busy``)
— prints the load average before it, the baseline measured in the same pass (the same
ticker's lag with the window open and no burst: what the machine itself costs the loop), the
burst's figures, the ratio and the verdict. ``--smoke``: one 3,000-line burst, idle only, no
verdict.

Run: ``python benchmarks/gui_burst/bench_gui_burst.py [--lines 20000] [--rounds 2]
[--load 2] [--smoke]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make tests/ and benchmarks/ importable
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil  # noqa: E402
import qasync  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from tests.conftest import make_repo  # noqa: E402

import relay  # noqa: E402
from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402
from benchmarks.stream.bench_stream import build_lines  # noqa: E402
from relay.core.config import load_config  # noqa: E402
from relay.core.events import EventRecord  # noqa: E402
from relay.core.models import SessionSpec  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402
from relay.gui.main_thread_gc import MainThreadCollector  # noqa: E402
from relay.gui.shell import RelayShell  # noqa: E402

TICK_S = 0.010
LAG_TARGET_MS = 50.0
RSS_TARGET_MB = 300.0
QUIET_S = 2.0  # the baseline: the ticker with the window open and no burst
SETTLE_S = 1.0  # after start and the first detect scan: the window's first reads end
QUIET_WAIT_S = 30.0  # at most, for the collector to find the window settled after a pass
SMOKE_LINES = 3_000


async def ticker(lags: list[float], stop: asyncio.Event, cpu: list[float] | None = None) -> None:
    """Wake every TICK_S: how late (``lags``, ms) and, into ``cpu``, the GUI thread's CPU time
    over the tick (ms: the window's own work, whatever the rest of the machine does)."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start, used = loop.time(), time.thread_time()
        await asyncio.sleep(TICK_S)
        lags.append((loop.time() - start - TICK_S) * 1000)
        if cpu is not None:
            cpu.append((time.thread_time() - used) * 1000)


async def quiet(seconds: float) -> list[float]:
    """The ticker's lags with nothing else to do: what the machine costs the loop."""
    lags: list[float] = []
    stop = asyncio.Event()
    tick = asyncio.create_task(ticker(lags, stop))
    await asyncio.sleep(seconds)
    stop.set()
    await tick
    return lags


async def burst(shell: RelayShell, repo: Path, *, after_work: bool = False,
                cpu: list[float] | None = None) -> tuple[list[float], float, float, str]:
    """Start the session through the GUI; measure until its stream dock holds every event
    (a window that showed an earlier burst: until it shows the new session's) — with
    ``after_work``, until the engine's work after the session (the knowledge index) is done
    too; ``cpu`` gets the GUI thread's CPU time per tick (see :func:`ticker`)."""
    lags: list[float] = []
    stop = asyncio.Event()
    proc = psutil.Process()
    peak = proc.memory_info().rss
    published: Counter[str] = Counter()

    def count(batch: Sequence[EventRecord]) -> None:
        published.update(r.session_id for r in batch)

    shell.bridge.records.connect(count)
    vm = shell.stream_vm
    earlier = vm.session_id
    tick = asyncio.create_task(ticker(lags, stop, cpu))
    started = time.perf_counter()
    shell.start_session(SessionSpec(repo=repo, task="burst", runtime="claude", worktree=False))
    ended: asyncio.Task[object] | None = None
    while time.perf_counter() - started < 300:
        await asyncio.sleep(0.05)
        peak = max(peak, proc.memory_info().rss)
        session_id = vm.session_id
        if session_id is None or session_id == earlier:
            continue
        if ended is None:
            ended = asyncio.create_task(shell.engine.wait_session(session_id))
        if ended.done() and not vm.loading and vm.event_count() == published[session_id]:
            break
    if ended is not None:
        await ended
    if after_work:
        await shell.engine.knowledge.wait_idle()
    elapsed = time.perf_counter() - started
    stop.set()
    await tick
    shell.bridge.records.disconnect(count)
    assert vm.session_id not in (None, earlier), "the session never reached the stream dock"
    return lags, elapsed, peak / 2**20, vm.session_id


def burst_setup(tmp: Path, n: int) -> Path:
    """Make the fake Claude print ``n`` stream-json lines; a repository for the session."""
    lines_file = tmp / "lines.ndjson"
    lines_file.write_text("\n".join(build_lines(n)) + "\n")
    os.environ["RELAY_CLAUDE_BIN"] = str(ROOT / "tests" / "fakes" / "bin" / "print-file")
    os.environ["RELAY_BENCH_LINES"] = str(lines_file)
    return make_repo(tmp / "repo")


def run_in_qt(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``main()`` on a qasync loop in a QApplication; its exit code."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        rc: int = loop.run_until_complete(main())
    return rc


async def settle(shell: RelayShell, timeout_s: float = 60.0) -> None:
    """Wait until the window's first reads are done (the first detect scan, the knowledge
    index), then :data:`SETTLE_S` more."""
    vm, scanned = shell.detect_vm, asyncio.Event()

    def seen() -> None:
        if vm.status.loaded:
            scanned.set()

    vm.changed.connect(seen)
    seen()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(scanned.wait(), timeout_s)
    vm.changed.disconnect(seen)
    await shell.engine.knowledge.wait_idle()
    await asyncio.sleep(SETTLE_S)


async def collected(collector: MainThreadCollector) -> None:
    """Wait until the collector found the window settled (and so ran the collections it
    leaves to then), then one check more."""
    for _ in range(int(QUIET_WAIT_S / 0.05)):
        if getattr(collector, "settled", True):  # a collector without the policy: no wait
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.1)


def pct(values: list[float], q: float) -> float:
    """The q-th percentile of sorted ``values``."""
    return values[max(int(len(values) * q) - 1, 0)] if values else float("nan")


class Collections:
    """The garbage collections of a pass and how long each held the loop (gc.callbacks)."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0

    def __enter__(self) -> Collections:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append((time.perf_counter() - self._started) * 1000)

    def line(self) -> str:
        young, older = self.pauses[0], self.pauses[1] + self.pauses[2]
        return (f"garbage collections: {len(young)} young (max "
                f"{max(young, default=0):.0f} ms), {len(older)} of the older generations "
                f"(max {max(older, default=0):.0f} ms), the bursts and the settled spell after")


async def bursts(shell: RelayShell, repo: Path, n: int, rounds: int, cpu: list[float]
                 ) -> tuple[list[float], float, bool]:
    """``rounds`` bursts, each reported: (their lags, peak RSS in MB, all events shown)."""
    lags: list[float] = []
    peak_mb, complete = 0.0, True
    for _ in range(rounds):
        got, took, peak, session_id = await burst(shell, repo, after_work=True, cpu=cpu)
        lags += got
        peak_mb = max(peak_mb, peak)
        vm = shell.stream_vm
        events, rows = vm.event_count(), vm.rowCount()
        stored = len(await shell.engine.session_events(session_id))
        complete = complete and events == stored
        shown = "all stored" if events == stored else f"MISSING {stored - events} of {stored} stored"
        print(f"  burst: {n:,} stream-json lines → {events:,} events ({shown}) in the stream "
              f"dock, {rows:,} rows shown, in {took:.1f} s")
    return lags, peak_mb, complete


async def measure_pass(shell: RelayShell, collector: MainThreadCollector, repo: Path,
                       label: str, n: int, rounds: int, smoke: bool) -> tuple[float, bool]:
    """The baseline, then ``rounds`` bursts: prints the figures; (p99, all events shown).
    A smoke does not wait for the collector's settled spells."""
    if not smoke:
        await collected(collector)
    print(f"{label}: load average before: {load_average()}")
    floor = sorted(await quiet(QUIET_S))
    cpu: list[float] = []
    with Collections() as collections:
        lags, peak_mb, complete = await bursts(shell, repo, n, rounds, cpu)
        if not smoke:
            await collected(collector)
    lags.sort()
    p99, base = pct(lags, 0.99), pct(floor, 0.99)
    print(f"  baseline (the window open, no burst, {QUIET_S:.0f} s): loop lag p99 {base:.1f} ms, "
          f"max {floor[-1] if floor else float('nan'):.1f} ms")
    print(f"  loop lag over {len(lags)} ticks of {rounds} burst(s): median "
          f"{statistics.median(lags):.1f} ms, p99 {p99:.1f} ms ({p99 / max(base, 0.1):.1f}× the "
          f"baseline), max {lags[-1]:.1f} ms")
    cpu.sort()
    print(f"  the GUI thread's own CPU time per tick (the window's work, not the machine's): "
          f"p99 {pct(cpu, 0.99):.1f} ms, max {cpu[-1] if cpu else float('nan'):.1f} ms")
    print(f"  {collections.line()}")
    print(f"  peak RSS: {peak_mb:.0f} MB (target < {RSS_TARGET_MB:.0f} MB)")
    if not smoke:
        print("  " + verdict(f"loop lag p99, {label}", p99, LAG_TARGET_MS, unit=" ms",
                             baseline=f"{base:.1f} ms with no burst"))
    return p99, complete


async def amain(n: int, rounds: int = 1, load: int = 0, smoke: bool = False) -> int:
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores; relay from "
          f"{Path(relay.__file__).parent}")
    with tempfile.TemporaryDirectory() as tmp:
        repo = burst_setup(Path(tmp), n)
        engine = await Engine.open(load_config(home=Path(tmp) / "home"))
        collector = MainThreadCollector()  # as the window does (gui/launch.py)
        collector.start()
        shell = RelayShell(engine)
        complete = True
        try:
            shell.start()
            await settle(shell)
            passes = [("idle", 0)] + ([(f"loaded ({load} busy)", load)] if load else [])
            for label, count in passes:
                with busy(count):
                    _, shown = await measure_pass(shell, collector, repo, label, n, rounds, smoke)
                    complete = complete and shown
        finally:
            await shell.aclose()
            await engine.close()
            collector.stop()
    return 0 if complete else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2, help="bursts per pass")
    parser.add_argument("--load", type=int, default=2,
                        help="busy loops beside the loaded pass (0: idle only)")
    parser.add_argument("--smoke", action="store_true",
                        help=f"one {SMOKE_LINES:,}-line burst, idle only, no verdict")
    args = parser.parse_args()
    if args.lines < 1 or args.rounds < 1 or args.load < 0:
        parser.error("--lines and --rounds must be at least 1, --load at least 0")
    if args.smoke:
        args.lines, args.rounds, args.load = SMOKE_LINES, 1, 0
    return run_in_qt(lambda: amain(args.lines, args.rounds, args.load, args.smoke))


if __name__ == "__main__":
    sys.exit(main())
