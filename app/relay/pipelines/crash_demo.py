"""``relay-cli pipeline crash-demo``: two engines on one database; the first is killed.

In a fresh data folder and demo repository (kept for inspection):

1. engine A (``relay-cli pipeline run``, its own process) runs prepare → build → report
   with the scripted demo agent and a short lease; its agent of ``build`` holds after its
   first turn (:data:`relay.runtimes.demo.HOLD_ENV`), so A is always caught mid-step;
2. once A has claimed ``prepare``, engine B (``relay-cli pipeline resume``, another
   process) starts and waits: each next step is claimed in the transaction that saves the
   one before, so B can only get one by taking it over;
3. the kill point is read from the ledger, not from a clock: when B is up and ``build``
   is A's — claimed, running in A's session, nothing saved — A gets SIGKILL (and the
   ledger is read again: ``build`` still A's and unsaved). Its lease stops being renewed;
   when it expires B takes ``build`` over (a new attempt with the next epoch) and finishes;
4. the write A would have made when its agent finished is made with A's lease (owner
   and epoch, read from the log): the fenced write is refused. A is dead, so the demo
   makes that write on its behalf — through the same ``Ledger.save`` every worker uses;
   tests/pipelines/test_crash.py shows a live worker's own late write refused;
5. the checks: every step saved exactly once, ``build`` ran twice, the late write refused.

Every wait has a deadline and watches both engines: an engine that exits early, a
deadline passed or a kill that missed its step ends the demo with one ✗ line saying
what happened, the end of each engine's output and exit code 1 — never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import re
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.markup import escape

from relay.core.demo_repo import make_demo_repo
from relay.core.errors import RelayError
from relay.core.events import AssistantText
from relay.core.pipeline_model import Pipeline
from relay.core.store.db import Store
from relay.pipelines import files
from relay.pipelines.ledger import Claim, Ledger, LogEntry, Save, StepInfo
from relay.pipelines.present import log_text, worker
from relay.pipelines.templates import StepOutputs
from relay.runtimes.demo import HOLD_ENV, HOLD_TEXT

Say = Callable[[str], None]
NAME = "crash-demo"
#: the step engine A is killed in
TARGET = "build"
#: ``relay-cli pipeline crash-demo``'s defaults (its flags say the same; the tests and the
#: bundle's smoke run the demo with these)
LEASE_S = 3.0
STEP_DELAY_S = 0.25
PIPELINE = {"name": NAME, "description": "three demo steps; the middle one is interrupted",
            "nodes": [
                {"id": "prepare", "provider": "demo", "task": "Prepare the workspace."},
                {"id": "build", "provider": "demo", "dependsOn": ["prepare"],
                 "task": "Build on {{prepare.files}}."},
                {"id": "report", "provider": "demo", "dependsOn": ["build"],
                 "task": "Report what {{build.session}} changed."}]}
#: how long the demo waits for an engine to start (a cold interpreter on a busy machine)
START_S = 90.0
#: how long a scripted step may take on a busy machine, beyond its own pauses
STEP_S = 60.0


def relay_cli() -> list[str]:
    """How to start another relay-cli: the bundle's own executable, or this interpreter."""
    if getattr(sys, "frozen", False):
        name = "relay-cli.exe" if os.name == "nt" else "relay-cli"
        return [str(Path(sys.executable).with_name(name))]
    return [sys.executable, "-c", "import sys; from relay.cli.main import main; sys.exit(main())"]


class DemoFailed(Exception):
    """The demo cannot go on: ``message`` says why (shown as one line, no traceback)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Engine:
    """One engine process and its output file."""

    def __init__(self, label: str, argv: list[str], env: dict[str, str], out: Path) -> None:
        self.label, self.argv, self.env, self.out = label, argv, env, out
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        try:
            with self.out.open("wb") as fh:
                self.proc = await asyncio.create_subprocess_exec(
                    *self.argv, env=self.env, stdout=fh, stderr=asyncio.subprocess.STDOUT,
                    stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise DemoFailed(f"engine {self.label} could not be started ({self.argv[0]}): "
                             f"{exc.strerror or exc}") from exc

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def exited(self) -> int | None:
        """Its exit code once it has ended (None while it runs, or before it started)."""
        return None if self.proc is None else self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def printed(self) -> str:
        return self.out.read_text(encoding="utf-8", errors="replace") if self.out.exists() else ""

    def tail(self, lines: int = 6) -> list[str]:
        return [line for line in self.printed().splitlines() if line.strip()][-lines:]


async def _until(cond: Callable[[], bool | Awaitable[bool]], within: float, what: str,
                 watch: tuple[_Engine, ...] = ()) -> None:
    """Until ``cond()`` (a bool, or one to await); an engine of ``watch`` that exits first,
    or the deadline, fails the demo with a sentence naming ``what`` it waited for."""
    deadline = time.monotonic() + within
    while True:
        done = cond()
        if inspect.isawaitable(done):
            done = await done
        if done:
            return
        for engine in watch:
            if engine.exited is not None:
                raise DemoFailed(f"engine {engine.label} exited with {engine.exited} before "
                                 f"{what}")
        if time.monotonic() > deadline:
            raise DemoFailed(f"the demo waited {within:g} s for {what}, in vain")
        await asyncio.sleep(0.05)


async def run_demo(say: Say, lease_s: float = LEASE_S, step_delay: float = STEP_DELAY_S,
                   root: Path | None = None) -> int:
    """Run the demo, narrating through ``say``; 0 when every check holds, 1 otherwise (a
    failure to go on is said in one line, with the end of each engine's output)."""
    root = root or Path(tempfile.mkdtemp(prefix="relay-crash-demo-"))
    home = root / "home"
    # a heartbeat six times a lease (not the usual three): A keeps build through a stall of
    # most of a lease on a busy machine, until the kill
    env = {**os.environ, "RELAY_HOME": str(home), "RELAY_PIPELINE_LEASE": f"{lease_s:g}",
           "RELAY_PIPELINE_HEARTBEAT": f"{lease_s / 6:g}", "RELAY_PIPELINE_POLL": "0.1",
           "RELAY_DEMO_STEP_DELAY": f"{step_delay:g}", "RELAY_WALLET_DEFAULT_FOLDERS": "0"}
    env.pop(HOLD_ENV, None)
    demo = _Demo(root, say, lease_s)
    try:
        repo = make_demo_repo(root / "repo")
        files.save(repo, Pipeline.model_validate(PIPELINE))
        # the schema exists before either engine; the store shows what A's agent did
        demo.store = await Store.open(home / "relay.db")
        demo.ledger = Ledger.open(home / "relay.db")
        return await demo.run(repo, env)
    except (DemoFailed, RelayError) as exc:
        demo.failed(exc.message)
        return 1
    finally:
        await demo.close()


class _Demo:
    """The demo's steps, with what it has seen so far."""

    def __init__(self, root: Path, say: Say, lease_s: float) -> None:
        self.root, self.say, self.lease_s = root, say, lease_s
        self.ledger: Ledger | None = None
        self.store: Store | None = None
        self.engines: list[_Engine] = []
        self.seen: _Narrator | None = None

    def _ledger(self) -> Ledger:
        assert self.ledger is not None
        return self.ledger

    async def _holding(self, session_id: str | None) -> bool:
        """Whether the agent of ``session_id`` says it holds mid-step (after a turn's work)."""
        if session_id is None or self.store is None:
            return False
        try:
            said = await self.store.events_after(0, session_id, kinds=("assistant_text",))
        except sqlite3.Error:  # a busy database: look again at the next poll
            return False
        return any(isinstance(r.event, AssistantText) and r.event.text.startswith(HOLD_TEXT)
                   for r in said)

    def _target(self) -> StepInfo | None:
        assert self.seen is not None
        return next((s for s in self._ledger().steps(self.seen.run_id)
                     if s.node_id == TARGET), None)

    async def run(self, repo: Path, env: dict[str, str]) -> int:
        ledger, say, lease_s = self._ledger(), self.say, self.lease_s
        say(f"[bold]Crash demo[/] in {escape(str(self.root))} (lease {lease_s:g} s; the agents "
            "are the scripted demo, labelled simulated)")
        a = self._engine("A", ["pipeline", "run", NAME, "--repo", str(repo)],
                         {**env, HOLD_ENV: TARGET})  # A's agent of build holds mid-step
        await a.start()
        say(f"Engine A started (pid {a.pid}): relay-cli pipeline run {NAME}")
        await _until(lambda: bool(ledger.runs()), START_S, "it started the run", (a,))
        run_id = ledger.runs()[0].id
        seen = self.seen = _Narrator(ledger, run_id, say, {a.pid: "A"})
        a_pid = f"pid {a.pid}"
        await _until(lambda: seen.poll() and seen.has("claimed", "prepare", a_pid), STEP_S,
                     "it claimed the first step", (a,))
        b = self._engine("B", ["pipeline", "resume", run_id], env)
        await b.start()
        seen.names[b.pid] = "B"
        await _until(lambda: seen.poll() and "Relay" in b.printed(), START_S,
                     "it took the run up", (a, b))
        say(f"Engine B started (pid {b.pid}): relay-cli pipeline resume {run_id} — A hosts "
            "the data folder, so B follows the run through A's API; A holds the lease of "
            "the step under way. If A dies, B hosts and takes the run over")

        async def a_mid_step() -> bool:  # A's claim, A's session, nothing saved, agent at work
            step = self._target()
            return (seen.poll() and seen.has("session", TARGET, a_pid) and step is not None
                    and step.state == "running" and step.saves == 0
                    and worker(step.owner) == a_pid and await self._holding(step.session_id))

        await _until(a_mid_step, STEP_S * 2, f"engine A to be at work on {TARGET}", (a, b))
        a.kill()
        killed = time.monotonic()
        assert a.proc is not None
        try:
            await asyncio.wait_for(a.proc.wait(), 30)
        except TimeoutError:
            raise DemoFailed(f"engine A (pid {a.pid}) was still there 30 s after SIGKILL") from None
        step = self._target()  # what A held when it died: still its own, unsaved
        if step is None or step.saves:
            raise DemoFailed(f"engine A saved {TARGET} before it was killed: the kill missed "
                             "the middle of the step")
        if worker(step.owner) != a_pid:
            raise DemoFailed(
                f"{TARGET} was taken from engine A before it was killed: A's heartbeat came "
                f"later than its {lease_s:g} s lease (a very busy machine) — try a longer "
                "--lease")
        say(f"[bold red]SIGKILL[/] engine A (pid {a.pid}) in the middle of {TARGET}: its agent "
            f"had done a turn in session {step.session_id}; nothing saved (epoch {step.epoch})")
        await _until(lambda: seen.poll() and seen.has("takeover", TARGET, f"pid {b.pid}"),
                     lease_s * 4 + STEP_S, f"engine B to take {TARGET} over", (b,))
        say(f"  B took {TARGET} over {time.monotonic() - killed:.1f} s after the kill "
            f"(lease {lease_s:g} s)")
        assert b.proc is not None
        try:
            code = await asyncio.wait_for(b.proc.wait(), STEP_S * 3)
        except TimeoutError:
            raise DemoFailed(f"engine B did not finish the run within {STEP_S * 3:g} s "
                             "of the takeover") from None
        seen.poll()
        say(f"Engine B exited with {code}.")
        refused = await _late_write(ledger, run_id, a.pid, say)
        seen.poll()
        return _verdict(ledger, run_id, refused, say, self.root)

    def _engine(self, label: str, args: list[str], env: dict[str, str]) -> _Engine:
        engine = _Engine(label, [*relay_cli(), *args], env,
                         self.root / f"engine-{label.lower()}.log")
        self.engines.append(engine)
        return engine

    def failed(self, message: str) -> None:
        """Say why the demo stopped, and what each engine printed last."""
        if self.seen is not None:
            with contextlib.suppress(RelayError):
                self.seen.poll()
        self.say(f"[red]✗ The demo stopped: {escape(message)}.[/]")
        for engine in self.engines:
            code = engine.exited
            state = "running" if engine.proc is not None and code is None else (
                "not started" if engine.proc is None else f"exit {code}")
            self.say(f"  engine {engine.label} ({state}), the end of {escape(str(engine.out))}:")
            for line in engine.tail() or ["(nothing)"]:
                self.say(f"    {escape(line)}")
        self.say(f"Data folder, repository and both engines' output: {escape(str(self.root))}")

    async def close(self) -> None:
        for engine in self.engines:
            engine.kill()
        if self.ledger is not None:
            self.ledger.close()
        if self.store is not None:
            await self.store.close()


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
                text = re.sub(rf"\bpid {pid}\b", f"engine {name}", text)
            self.say(f"  {text}")
        return True

    def has(self, kind: str, node: str, by: str | None = None) -> bool:
        """Whether the log has a ``kind`` line about ``node`` (by the worker ``pid N``)."""
        return any(e.kind == kind and e.node_id == node and (by is None or worker(e.owner) == by)
                   for e in self.entries)


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
    late = Save(Claim("build", held.epoch, 1, False), StepOutputs(output="(late) engine A's result"),
                None)
    saved = (await ledger.save(run_id, held.owner, [late])).saved
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
