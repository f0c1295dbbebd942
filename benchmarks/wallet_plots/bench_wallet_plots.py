"""benchmarks/wallet_plots: loop lag while the Wallet's plots refresh during a burst.

The window is open (offscreen unless DISPLAY is set) with a real engine whose wallet holds
three Claude accounts, each with three hours of official 5-hour and 7-day readings (one
every five minutes) and a day budget. The burst of ``benchmarks/gui_burst`` (a Claude session
whose fake agent prints N stream-json lines as fast as it can, shown live in the stream
dock) runs in two phases in the same process, alternating (``--rounds`` bursts each):

1. **baseline** — the Wallet dock hidden: no plot is fed or drawn;
2. **plots** — the Wallet dock shown and raised, every card's plots in sight.

In both, the wallet's view-model is asked to refresh every 250 ms (as usage records would
during real work; it coalesces), so the summary is re-read either way and the only
difference is the plots: their series read from the host and redrawn. A ticker on the
qasync loop asks to wake every 10 ms and records how late it wakes (the loop's lag).
Target (as gui_burst): lag p99 < 50 ms with the plots refreshing.

Run: ``python benchmarks/wallet_plots/bench_wallet_plots.py [--lines 20000] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make tests/ and benchmarks/ importable
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from benchmarks.gui_burst.bench_gui_burst import burst, burst_setup, run_in_qt  # noqa: E402
from benchmarks.machine import cpu_name, load_average  # noqa: E402
from relay.core.config import load_config  # noqa: E402
from relay.engine.engine import Engine  # noqa: E402
from relay.gui.shell import RelayShell  # noqa: E402
from relay.wallet.model import LimitSnapshot  # noqa: E402

LAG_TARGET_MS = 50.0
REFRESH_S = 0.25
ACCOUNTS = 3
MIN = 60_000


async def seed(engine: Engine, home: Path) -> None:
    """Three accounts with three hours of readings each, and a day budget (the window shows the
    bare providers it finds in use or installed besides: their cards have plots too)."""
    now = time.time_ns() // 1_000_000
    readings = []
    for i in range(ACCOUNTS):
        folder = home / f"claude-{i}"
        folder.mkdir(parents=True)
        await engine.accounts.add("claude", f"acct{i}", folder)
        for k in range(36):
            at = now - (180 - 5 * k) * MIN
            readings += [
                LimitSnapshot(f"claude:acct{i}", "five_hour", at, used_percent=10 + k * (1 + i),
                              resets_at_ms=now + 120 * MIN, origin="bench"),
                LimitSnapshot(f"claude:acct{i}", "seven_day", at, used_percent=20 + k / 4,
                              resets_at_ms=now + 3 * 24 * 60 * MIN, origin="bench")]
    await engine.wallet.limits.record(readings)
    await engine.wallet.budget_book.set("day", 25.0)


#: how long each redraw of an account's plots held the loop (ms), in the plots phase
DRAWS: list[float] = []


def timed_redraws() -> None:
    """Time every AccountPlots.show_history (the loop's share of a plots refresh)."""
    from relay.gui import wallet_charts

    draw = wallet_charts.AccountPlots.show_history

    def timed(self: wallet_charts.AccountPlots, *args: object) -> None:
        started = time.perf_counter()
        draw(self, *args)  # type: ignore[arg-type]
        DRAWS.append((time.perf_counter() - started) * 1000)

    wallet_charts.AccountPlots.show_history = timed  # type: ignore[method-assign,assignment]


def settled(shell: RelayShell) -> bool:
    """No read of the wallet under way (a read started while the plots were in sight would
    still draw them)."""
    task = shell.wallet_vm._read_task
    return task is None or task.done()


def redraws(shell: RelayShell) -> int:
    return sum(card.plots.shown for card in shell.wallet_dock.cards.values()
               if card.plots is not None)


async def refresher(shell: RelayShell, stop: asyncio.Event) -> None:
    while not stop.is_set():
        shell.wallet_vm.refresh()
        await asyncio.sleep(REFRESH_S)


async def measured(shell: RelayShell, repo: Path) -> tuple[list[float], float, int]:
    """One burst with the wallet refreshing: lags, elapsed, plot redraws during it."""
    stop = asyncio.Event()
    driver = asyncio.create_task(refresher(shell, stop))
    before = redraws(shell)
    try:
        lags, elapsed, _peak, _sid = await burst(shell, repo)
    finally:
        stop.set()
        await driver
    return lags, elapsed, redraws(shell) - before


async def wait_for(check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the Wallet never settled or its plots never showed")
        await asyncio.sleep(0.05)


def summary(name: str, lags: list[float], elapsed: float, drawn: int, n: int) -> float:
    lags = sorted(lags)
    p99 = lags[int(len(lags) * 0.99) - 1] if lags else float("nan")
    print(f"{name}: {n:,}-line bursts in {elapsed:.1f} s, {drawn} plot redraws; loop lag over "
          f"{len(lags)} ticks: median {statistics.median(lags):.1f} ms, p99 {p99:.1f} ms, "
          f"max {lags[-1]:.1f} ms")
    return p99


async def amain(n: int, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = burst_setup(Path(tmp), n)
        engine = await Engine.open(load_config(home=Path(tmp) / "home"))
        await seed(engine, Path(tmp))
        shell = RelayShell(engine)
        timed_redraws()
        phases: dict[str, tuple[list[float], float, int]] = {
            "baseline": ([], 0.0, 0), "plots": ([], 0.0, 0)}
        cards = 0
        try:
            shell.start()
            dock = shell.wallet_dock
            for round_ in range(rounds):  # alternating, so neither phase gets the warm-up alone
                for phase in ("baseline", "plots") if round_ % 2 == 0 else ("plots", "baseline"):
                    if phase == "baseline":
                        dock.hide()  # no plot in sight; a read under way finishes first
                        await wait_for(lambda: settled(shell))
                    else:
                        dock.show()
                        dock.raise_()
                        await wait_for(lambda: len(dock.cards) >= ACCOUNTS and all(
                            c.plots is not None and c.plots.isVisible() and c.plots.shown
                            for c in dock.cards.values()))
                    cards = max(cards, len(dock.cards))
                    lags, elapsed, drawn = await measured(shell, repo)
                    summary(f"round {round_ + 1} {phase}", lags, elapsed, drawn, n)
                    was = phases[phase]
                    phases[phase] = (was[0] + lags, was[1] + elapsed, was[2] + drawn)
        finally:
            await shell.aclose()
            await engine.close()
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores, load average {load_average()}")
    summary(f"baseline, Wallet hidden ({rounds} bursts)", *phases["baseline"], n)
    p99 = summary(f"plots, {cards} cards' plots shown ({rounds} bursts)",
                  *phases["plots"], n)
    if DRAWS:
        print(f"each plots redraw held the loop: median {statistics.median(DRAWS):.1f} ms, "
              f"max {max(DRAWS):.1f} ms over {len(DRAWS)} redraws")
    verdict = "PASS" if p99 < LAG_TARGET_MS else "MISS"
    print(f"with the plots refreshing: p99 {p99:.1f} ms (target < {LAG_TARGET_MS:.0f} ms) → "
          f"{verdict}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2,
                        help="bursts per phase, alternating baseline and plots")
    args = parser.parse_args()
    return run_in_qt(lambda: amain(args.lines, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
