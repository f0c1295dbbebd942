"""``relay-cli pipeline crash-demo``: two engines on one database; the first is killed.

In a fresh data folder and demo repository (kept for inspection):

1. engine A (``relay-cli pipeline run``, its own process) runs prepare → build → report
   with the scripted demo agent and a short lease;
2. while A is in the middle of ``build``, engine B (``relay-cli pipeline resume``,
   another process) starts and waits: A's lease is alive;
3. A gets SIGKILL. Its lease stops being renewed; when it expires B takes ``build`` over
   (a new attempt with the next epoch) and finishes the run;
4. the write A would have made when its agent finished is made with A's lease (owner
   and epoch, read from the log): the fenced write is refused. A is dead, so the demo
   makes that write on its behalf — through the same ``Ledger.save`` every worker uses;
   tests/pipelines/test_crash.py shows a live worker's own late write refused;
5. the checks: every step saved exactly once, ``build`` ran twice, the late write refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from relay.core.demo_repo import make_demo_repo
from relay.core.store.db import Store
from relay.pipelines import files
from relay.pipelines.ledger import Claim, Ledger, LogEntry
from relay.pipelines.model import Pipeline
from relay.pipelines.present import log_text, worker
from relay.pipelines.templates import StepOutputs

Say = Callable[[str], None]
NAME = "crash-demo"
PIPELINE = {"name": NAME, "description": "three demo steps; the middle one is interrupted",
            "nodes": [
                {"id": "prepare", "provider": "demo", "task": "Prepare the workspace."},
                {"id": "build", "provider": "demo", "dependsOn": ["prepare"],
                 "task": "Build on {{prepare.files}}."},
                {"id": "report", "provider": "demo", "dependsOn": ["build"],
                 "task": "Report what {{build.session}} changed."}]}


def relay_cli() -> list[str]:
    """How to start another relay-cli: the bundle's own executable, or this interpreter."""
    if getattr(sys, "frozen", False):
        name = "relay-cli.exe" if os.name == "nt" else "relay-cli"
        return [str(Path(sys.executable).with_name(name))]
    return [sys.executable, "-c", "import sys; from relay.cli.main import main; sys.exit(main())"]


class _Engine:
    """One engine process and its output file."""

    def __init__(self, label: str, argv: list[str], env: dict[str, str], out: Path) -> None:
        self.label, self.argv, self.env, self.out = label, argv, env, out
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.out.open("wb") as fh:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, stdout=fh, stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL, start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)

    def printed(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace") if self.out.exists() else ""


async def _until(cond: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the demo waited {within:g} s for {what}")
        await asyncio.sleep(0.05)


async def run_demo(say: Say, lease_s: float = 3.0, step_delay: float = 0.25,
                   root: Path | None = None) -> int:
    """Run the demo, narrating through ``say``; 0 when every check holds."""
    root = root or Path(tempfile.mkdtemp(prefix="relay-crash-demo-"))
    home, repo = root / "home", make_demo_repo(root / "repo")
    files.save(repo, Pipeline.model_validate(PIPELINE))
    env = {**os.environ, "RELAY_HOME": str(home), "RELAY_PIPELINE_LEASE": f"{lease_s:g}",
           "RELAY_PIPELINE_POLL": "0.1", "RELAY_DEMO_STEP_DELAY": f"{step_delay:g}",
           "RELAY_WALLET_DEFAULT_FOLDERS": "0"}
    store = await Store.open(home / "relay.db")  # the schema exists before either engine
    await store.close()
    ledger = Ledger.open(home / "relay.db")
    first = _Engine("A", [*relay_cli(), "pipeline", "run", NAME, "--repo", str(repo)], env,
                    root / "engine-a.log")
    second: _Engine | None = None
    try:
        say(f"[bold]Crash demo[/] in {root} (lease {lease_s:g} s; the agents are the scripted "
            "demo, labelled simulated)")
        await first.start()
        say(f"Engine A started (pid {first.pid}): relay-cli pipeline run {NAME}")
        await _until(lambda: bool(ledger.runs()), 30, "engine A to start the run")
        run_id = ledger.runs()[0].id
        seen = _Narrator(ledger, run_id, say, {first.pid: "A"})
        await _until(lambda: seen.poll() and seen.has("session", "build"), 60,
                     "engine A to start the build step")
        second = _Engine("B", [*relay_cli(), "pipeline", "resume", run_id], env,
                         root / "engine-b.log")
        await second.start()
        seen.names[second.pid] = "B"
        b = second
        await _until(lambda: "Relay" in b.printed(), 30, "engine B to start")
        say(f"Engine B started (pid {second.pid}): relay-cli pipeline resume {run_id} — "
            "it waits, A's lease on build is alive")
        await asyncio.sleep(min(1.0, lease_s / 3))  # A is in the middle of the step
        seen.poll()
        first.kill()
        killed = time.monotonic()
        say(f"[bold red]SIGKILL[/] engine A (pid {first.pid}) in the middle of build")
        await _until(lambda: seen.poll() and seen.has("takeover", "build"), lease_s * 4 + 30,
                     "engine B to take build over")
        say(f"  B took build over {time.monotonic() - killed:.1f} s after the kill "
            f"(lease {lease_s:g} s)")
        assert second.proc is not None
        code = await asyncio.wait_for(second.proc.wait(), 120)
        seen.poll()
        say(f"Engine B exited with {code}.")
        refused = await _late_write(ledger, run_id, first.pid, say)
        seen.poll()
        return _verdict(ledger, run_id, refused, say, root)
    finally:
        first.kill()
        if second is not None and second.proc is not None and second.proc.returncode is None:
            second.kill()
        ledger.close()


class _Narrator:
    """Prints the run's lease log as it grows, naming the engines A and B."""

    def __init__(self, ledger: Ledger, run_id: str, say: Say, names: dict[int, str]) -> None:
        self.ledger, self.run_id, self.say, self.names = ledger, run_id, say, names
        self.after = 0
        self.entries: list[LogEntry] = []

    def poll(self) -> bool:
        for entry in self.ledger.log(self.run_id, self.after):
            self.after = entry.id
            self.entries.append(entry)
            text = log_text(entry)
            for pid, name in self.names.items():
                text = text.replace(f"pid {pid}", f"engine {name}")
            self.say(f"  {text}")
        return True

    def has(self, kind: str, node: str) -> bool:
        return any(e.kind == kind and e.node_id == node for e in self.entries)


async def _late_write(ledger: Ledger, run_id: str, pid: int, say: Say) -> bool:
    """Make the save engine A would have made for build, with A's own lease."""
    mine = [e for e in ledger.log(run_id) if e.node_id == "build"
            and e.kind in ("claimed", "takeover") and worker(e.owner) == f"pid {pid}"]
    if not mine:
        say("[red]Engine A never held build: no late write to show.[/]")
        return False
    held = mine[-1]
    assert held.epoch is not None
    assert held.owner is not None
    say(f"Replaying engine A's late write: build's result with A's lease (epoch {held.epoch})…")
    saved, _ = await ledger.save(run_id, Claim("build", held.epoch, 1, False), held.owner,
                                 StepOutputs(output="(late) engine A's result"), None)
    say("  [green]refused[/]: the fence (epoch) no longer matches" if not saved
        else "  [red]ACCEPTED — the fence failed[/]")
    return not saved


def _verdict(ledger: Ledger, run_id: str, refused: bool, say: Say, root: Path) -> int:
    run = ledger.run(run_id)
    steps = {s.node_id: s for s in ledger.steps(run_id)}
    log = ledger.log(run_id)
    checks = {
        "the run succeeded": run.state == "succeeded",
        "every step's result was saved exactly once": all(s.saves == 1 for s in steps.values())
        and all(sum(1 for e in log if e.kind == "saved" and e.node_id == n) == 1 for n in steps),
        "build ran twice (A's attempt, then B's)": steps["build"].attempt == 2,
        "build's saved result is B's (epoch 2)": steps["build"].epoch == 2,
        "engine A's late write was refused": refused and any(
            e.kind == "fence_refused" and e.node_id == "build" for e in log),
    }
    say("")
    for what, ok in checks.items():
        say(f"{'[green]✓[/]' if ok else '[red]✗[/]'} {what}")
    say(f"Data folder, repository and both engines' output: {root}")
    return 0 if all(checks.values()) else 1
