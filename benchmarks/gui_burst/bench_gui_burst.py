"""benchmarks/gui_burst: loop lag and memory while the stream dock takes a burst.

The window is open (offscreen unless DISPLAY is set) with a real engine; a Claude
session whose fake agent prints N recorded-style stream-json lines as fast as it can
is started through the GUI and shown in the live stream dock. A ticker on the qasync
loop asks to wake every 10 ms and records how late it wakes (the loop's lag). Targets:
lag p99 < 50 ms, peak RSS < 300 MB.

Run: ``python benchmarks/gui_burst/bench_gui_burst.py [--lines 20000]``.
"""

from __future__ import annotations

import argparse
import asyncio
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

from benchmarks.stream.bench_stream import build_lines  # noqa: E402
from relay.core.config import load_config  # noqa: E402
from relay.core.events import EventRecord  # noqa: E402
from relay.core.models import SessionSpec  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402
from relay.gui.shell import RelayShell  # noqa: E402

TICK_S = 0.010
LAG_TARGET_MS = 50.0
RSS_TARGET_MB = 300.0


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(TICK_S)
        lags.append((loop.time() - start - TICK_S) * 1000)


async def burst(shell: RelayShell, repo: Path) -> tuple[list[float], float, float, str]:
    """Start the session through the GUI; measure until its stream dock holds every event
    (a window that showed an earlier burst: until it shows the new session's)."""
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
    tick = asyncio.create_task(ticker(lags, stop))
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
    elapsed = time.perf_counter() - started
    stop.set()
    await tick
    if ended is not None:
        await ended
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


async def amain(n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = burst_setup(Path(tmp), n)
        engine = await Engine.open(load_config(home=Path(tmp) / "home"))
        shell = RelayShell(engine)
        try:
            shell.start()
            lags, elapsed, peak_mb, session_id = await burst(shell, repo)
            vm = shell.stream_vm
            events, rows = vm.event_count(), vm.rowCount()
            stored = len(await engine.session_events(session_id))
        finally:
            await shell.aclose()
            await engine.close()
    lags.sort()
    p99 = lags[int(len(lags) * 0.99) - 1] if lags else float("nan")
    complete = "all stored" if events == stored else f"MISSING {stored - events} of {stored} stored"
    print(f"burst: {n:,} stream-json lines → {events:,} events ({complete}) in the stream dock, "
          f"{rows:,} rows shown, in {elapsed:.1f} s")
    print(f"loop lag over {len(lags)} ticks: median {statistics.median(lags):.1f} ms, "
          f"p99 {p99:.1f} ms, max {lags[-1]:.1f} ms (target p99 < {LAG_TARGET_MS:.0f} ms) → "
          f"{'PASS' if p99 < LAG_TARGET_MS else 'MISS'}")
    print(f"peak RSS: {peak_mb:.0f} MB (target < {RSS_TARGET_MB:.0f} MB) → "
          f"{'PASS' if peak_mb < RSS_TARGET_MB else 'MISS'}")
    return 0 if events == stored else 1


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=20_000)
    args = parser.parse_args()
    return run_in_qt(lambda: amain(args.lines))


if __name__ == "__main__":
    sys.exit(main())
