"""``relay --smoke-test``: prove a build works — every dock, a demo handoff, a clean exit.

Used on frozen bundles (installers/smoke.py) and by CI. It runs against a
throwaway data folder (never the user's) with a throwaway vault passphrase,
opens every dock, runs the demo with a simulated usage limit so the whole
handoff loop runs (snapshot, signed contract, the second simulated account),
and exits 0 only when the session completed, its handoff is done, and no GUI
task failed. Every check prints one line, so a failing build says why.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from PySide6.QtWidgets import QDockWidget

from relay.core.hostfile import CONNECT_ENV, PORT_ENV, read_host
from relay.gui.shell import RelayShell

#: how long the demo may take before the smoke test gives up
SMOKE_TIMEOUT_S = 90.0


@dataclass
class SmokeReport:
    failures: list[str] = field(default_factory=list)
    out: TextIO = sys.stdout

    def check(self, ok: bool, what: str) -> None:
        print(f"smoke: {'ok  ' if ok else 'FAIL'} {what}", file=self.out, flush=True)
        if not ok:
            self.failures.append(what)


def smoke_environment(home: Path) -> dict[str, str]:
    """The settings a smoke run uses: a fresh data folder and vault, a quick demo."""
    return {"RELAY_HOME": str(home), "RELAY_DEMO_STEP_DELAY": "0.05",
            "RELAY_VAULT_PASSPHRASE": secrets.token_urlsafe(16),
            CONNECT_ENV: "", PORT_ENV: "0"}  # it hosts its own folder, on any free port


async def _within(seconds: float, check: Callable[[], bool]) -> bool:
    """Whether ``check()`` holds within ``seconds`` (looked at every 50 ms)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def run_smoke(shell: RelayShell, report: SmokeReport) -> None:
    """Open every dock, run a demo handoff, and record what worked."""
    failed: list[str] = []
    info = read_host(shell.engine.config.home) if shell.hosting else None
    report.check(info is not None and info.kind == "window",
                 f"the window hosts its data folder{f' at {info.url}' if info else ''}")
    if not shell.hosting:
        return
    engine = shell.engine
    shell.bridge.tasks.failed.connect(lambda ctx, msg, _hint: failed.append(f"{ctx}: {msg}"))
    docks = shell.window.findChildren(QDockWidget)
    for dock in docks:
        dock.show()
        dock.raise_()
    report.check(len(docks) >= 4 and all(d.isVisible() for d in docks),
                 f"{len(docks)} docks open: {', '.join(d.windowTitle() for d in docks)}")
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_started(session_id: str) -> None:
        if not started.done():
            started.set_result(session_id)

    shell.bridge.sessionStarted.connect(on_started)
    await shell.start_demo(limit_after=1)
    try:
        session_id = await asyncio.wait_for(started, 10)
        row = await asyncio.wait_for(engine.wait_session(session_id), SMOKE_TIMEOUT_S)
    except TimeoutError:
        report.check(False, "the demo session started and finished in time")
        return
    report.check(row.state == "completed", f"demo session {row.id} {row.state}"
                 + (f" ({row.reason})" if row.reason else ""))
    handoffs = await engine.handoffs(row.id)
    report.check([h.state for h in handoffs] == ["done"],
                 "the demo's handoff: " + (", ".join(f"{h.from_entry} → {h.to_entry} {h.state}"
                                                     for h in handoffs) or "none"))
    await asyncio.sleep(0)  # let the last records reach the views
    report.check(shell.stream_vm.rowCount() > 0, f"the live stream shows "
                                                 f"{shell.stream_vm.rowCount()} rows")
    cards = shell.wallet_dock.cards.values()  # the Wallet is open: its plots import Qt Charts
    drawn = await _within(10.0, lambda: any(c.plots is not None and c.plots.shown for c in cards))
    report.check(drawn, "the Wallet's plots drew (Qt Charts)")
    report.check(not failed, "no GUI task failed" + (f": {'; '.join(failed)}" if failed else ""))
