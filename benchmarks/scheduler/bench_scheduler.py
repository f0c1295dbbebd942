"""benchmarks/scheduler: the durable pipeline scheduler's per-step overhead.

The issue's words: "a 1,000-step fan-out/fan-in graph and a 1,000-step chain of no-op steps
with durable persistence. Report Relay's per-step overhead against the floor (one SQLite
commit per step in WAL mode on the same disk) and against LangGraph with its SQLite
checkpointer on the same graph. Target: per-step overhead within 3× of the floor and lower
than LangGraph's."

Every contender writes its database files in the same folder (``--dir``, default a new
temporary folder; give one on the disk you care about), a new file for each repetition,
and is measured in a warm process (a small warm-up run first). Per-step time is a run's
wall time divided by its steps; each row prints the median and the range of ``--reps``.

* **floor**: plain ``sqlite3``, ``journal_mode=WAL`` and ``synchronous=NORMAL`` (the PRAGMAs
  of Relay's store), one ``BEGIN IMMEDIATE; INSERT …; COMMIT`` of a small row per step.
* **Relay**: a database made by ``Store.open`` (migrations), ``Ledger.open``,
  ``create_run`` (untimed, like compiling a graph), then the timed
  ``Scheduler(ledger, NoopExecutor(), owner, Settings(lease_s=30, poll_s=1.0)).drive``
  on an asyncio loop; the executor returns ``(StepOutputs(), None)`` at once. The run id
  and the lease owner are made as Relay makes them (``uuid4().hex[:12]``;
  ``service.owner_id()``: host, pid, start time, nonce) — every text a statement writes is
  scrubbed, so a short made-up owner would hide that cost. Afterwards every step must be
  ``succeeded`` with ``saves == 1`` and the run ``succeeded``. Shapes: ``chain`` (N nodes,
  each depending on the one before) and ``fanout`` (``root`` → N-2 branches → ``join``),
  both at concurrency 64, the pipeline format's maximum (only the fan-out's branches can
  use it). The ledger's write transactions and reads are counted.
* **LangGraph** (``langgraph_run.py``, run with ``RELAY_BENCH_LANGGRAPH_PYTHON`` or the
  venv ``scripts/install-bench-tools.sh`` makes under ``.cache/bench-tools``): the same two
  shapes as a ``StateGraph`` of no-op nodes compiled with ``SqliteSaver``, ``durability=
  "sync"`` and ``synchronous=NORMAL`` (matched to Relay; ``--langgraph-as-shipped`` also
  measures its defaults: ``durability="async"`` and SQLite's FULL). Skipped, and said so,
  when that python is not there.

Each contender runs **idle**, then **loaded**: beside ``--load`` busy loops (default 2;
``benchmarks.machine.busy``); each pass prints the load average before it. For each pass and
shape it prints the table, then Relay / floor and Relay / LangGraph with their targets and
met/MISSED (≤ 3× the floor on the fan-out — group commit —, ≤ 4× on the chain, whose every
step must commit before the next starts; ≤ 0.3× LangGraph, matched). ``--smoke``: 100
steps, one repetition, idle only, no verdicts — only that every measurement completes and
every step succeeded once (``./dev test``). ``--profile FILE``: cProfile one more Relay run
of ``--profile-shape`` and print its top functions.

Run: ``python benchmarks/scheduler/bench_scheduler.py [--steps 1000] [--reps 5] [--load 2]
[--dir D]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make benchmarks/ importable

from benchmarks.machine import busy, cpu_name, load_average, verdict  # noqa: E402
from relay.core.pipeline_model import Node, Pipeline  # noqa: E402
from relay.core.store.db import Store  # noqa: E402
from relay.pipelines.ledger import Ledger  # noqa: E402
from relay.pipelines.scheduler import Scheduler, Settings, StepWork  # noqa: E402
from relay.pipelines.service import owner_id  # noqa: E402
from relay.pipelines.templates import StepOutputs  # noqa: E402

T = TypeVar("T")
#: Relay per step / the floor per step: group commit on the fan-out; the chain must commit
#: each step before the next starts
FLOOR_TARGET = {"fanout": 3.0, "chain": 4.0}
LANGGRAPH_TARGET = 0.3  # Relay per step / LangGraph's (matched) per step
CONCURRENCY = 64  # the pipeline format's maximum
SHAPES = ("fanout", "chain")
SHAPE_LABEL = {"fanout": "fan-out/fan-in", "chain": "chain"}
#: what scripts/install-bench-tools.sh pins
LANGGRAPH_PINNED = {"langgraph": "1.2.24", "langgraph-checkpoint-sqlite": "3.1.2"}
QUIET = False
#: a run id and a lease owner as Relay makes them (a UUID's first 12 hex digits; host, pid,
#: start time and a nonce): every text a statement writes is scrubbed, so their length counts
RUN_ID = uuid.uuid4().hex[:12]
OWNER = owner_id()


def log(msg: str) -> None:
    if not QUIET:
        print(f"[scheduler] {msg}", file=sys.stderr, flush=True)


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


# ---- the floor -------------------------------------------------------------------------------

def floor_run(path: Path, steps: int) -> tuple[float, float]:
    """Seconds (wall, and this process's CPU) for ``steps`` commits of one small row each
    (WAL, synchronous=NORMAL)."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE steps (id INTEGER PRIMARY KEY, node TEXT NOT NULL,"
                     " state TEXT NOT NULL, ended_ms INTEGER NOT NULL)")
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(steps):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO steps (node, state, ended_ms) VALUES (?, 'succeeded', ?)",
                         (f"s{i:04d}", time.time_ns() // 1_000_000))
            conn.execute("COMMIT")
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        (count,) = conn.execute("SELECT count(*) FROM steps").fetchone()
    finally:
        conn.close()
    if count != steps:
        raise SystemExit(f"floor: {count} rows committed, want {steps}")
    return seconds, cpu


# ---- Relay -----------------------------------------------------------------------------------

class NoopExecutor:
    """A step that does nothing: all that is left is the scheduler's own work."""

    async def execute(self, work: StepWork) -> tuple[StepOutputs, float | None]:
        return StepOutputs(), None


class CountingLedger(Ledger):
    """The ledger, counting and timing its write transactions and its reads (the clock
    reads cost ~0.1 µs each)."""

    transactions = 0
    reads = 0
    tx_seconds = 0.0
    read_seconds = 0.0

    def reset(self) -> None:
        self.transactions = self.reads = 0
        self.tx_seconds = self.read_seconds = 0.0

    def _in_tx(self, fn: Callable[..., T], busy_ms: int) -> T:
        self.transactions += 1
        started = time.perf_counter()
        try:
            return super()._in_tx(fn, busy_ms)
        finally:
            self.tx_seconds += time.perf_counter() - started

    def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        self.reads += 1
        started = time.perf_counter()
        try:
            return super()._read(sql, params)
        finally:
            self.read_seconds += time.perf_counter() - started


def pipeline(shape: str, steps: int) -> Pipeline:
    """``chain``: s0001 → … → sN; ``fanout``: root → b0001 … b(N-2) → join."""
    if shape == "chain":
        names = [f"s{i:04d}" for i in range(1, steps + 1)]
        edges = {name: [names[i - 1]] if i else [] for i, name in enumerate(names)}
    else:
        branches = [f"b{i:04d}" for i in range(1, steps - 1)]
        edges = {"root": [], **{b: ["root"] for b in branches}, "join": branches}
    nodes = [Node(id=n, provider="demo", task=f"do {n}", depends_on=deps) for n, deps in edges.items()]
    return Pipeline(name=f"bench-{shape}", nodes=nodes, concurrency=CONCURRENCY)


@dataclass(frozen=True)
class RelayRun:
    seconds: float
    cpu_seconds: float
    create_seconds: float
    transactions: int
    reads: int
    #: time inside the ledger's write transactions and its reads (SQL and row building)
    tx_seconds: float
    read_seconds: float


async def relay_run(path: Path, shape: str, steps: int,
                    profiler: cProfile.Profile | None = None) -> RelayRun:
    store = await Store.open(path)
    await store.close()
    ledger = CountingLedger.open(path)
    assert isinstance(ledger, CountingLedger)
    try:
        started = time.perf_counter()
        await ledger.create_run(RUN_ID, pipeline(shape, steps), Path("."), CONCURRENCY, None, None)
        created = time.perf_counter() - started
        ledger.reset()
        scheduler = Scheduler(ledger, NoopExecutor(), OWNER, Settings(lease_s=30, poll_s=1.0))
        if profiler is not None:
            profiler.enable()
        started, cpu = time.perf_counter(), time.process_time()
        run = await scheduler.drive(RUN_ID)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        if profiler is not None:
            profiler.disable()
        counts = RelayRun(seconds, cpu, created, ledger.transactions, ledger.reads, ledger.tx_seconds,
                          ledger.read_seconds)
        check_relay(ledger, run.state, steps, shape)
    finally:
        ledger.close()
    return counts


def check_relay(ledger: Ledger, state: str, steps: int, shape: str) -> None:
    """Every step succeeded and was saved exactly once."""
    rows = ledger.steps(RUN_ID)
    bad = [f"{s.node_id} {s.state} saves={s.saves}" for s in rows
           if s.state != "succeeded" or s.saves != 1]
    if state != "succeeded" or len(rows) != steps or bad:
        raise SystemExit(f"Relay {shape}: run {state}, {len(rows)} steps of {steps}; "
                         f"not saved once: {', '.join(bad[:5]) or 'none'}")


async def relay_all(folder: Path, shape: str, steps: int, reps: int) -> list[RelayRun]:
    warm = folder / "relay-warmup.db"
    try:
        await relay_run(warm, shape, 20)
    finally:
        remove_db(warm)
    out = []
    for rep in range(reps):
        path = folder / f"relay-{shape}-{rep}.db"
        try:
            out.append(await relay_run(path, shape, steps))
        finally:
            remove_db(path)
    return out


def profile_relay(folder: Path, shape: str, steps: int, dest: Path) -> None:
    profiler = cProfile.Profile()
    path = folder / "relay-profile.db"
    try:
        asyncio.run(relay_run(path, shape, steps, profiler))
    finally:
        remove_db(path)
    profiler.dump_stats(str(dest))
    print(f"\ncProfile of one Relay {SHAPE_LABEL[shape]} run of {steps} steps (written to {dest}):")
    stats = pstats.Stats(profiler, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


# ---- LangGraph -------------------------------------------------------------------------------

def langgraph_python() -> tuple[Path | None, str]:
    """The LangGraph venv's python, or None and why not."""
    env = os.environ.get("RELAY_BENCH_LANGGRAPH_PYTHON")
    tools = Path(os.environ.get("RELAY_BENCH_TOOLS_DIR") or ROOT / ".cache/bench-tools")
    exe = Path(env) if env else tools / "langgraph/venv/bin/python"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe, ""
    if env:
        return None, f"RELAY_BENCH_LANGGRAPH_PYTHON={env} is not an executable"
    return None, (f"RELAY_BENCH_LANGGRAPH_PYTHON is not set and there is no {tools}/langgraph "
                  "venv (run scripts/install-bench-tools.sh)")


def langgraph_all(exe: Path, folder: Path, shape: str, steps: int, reps: int,
                  as_shipped: bool = False) -> dict[str, Any]:
    """``langgraph_run.py`` in the LangGraph venv: its JSON (one run per repetition)."""
    cmd = [str(exe), str(HERE / "langgraph_run.py"), "--shape", shape, "--steps", str(steps),
           "--reps", str(reps), "--dir", str(folder)]
    if as_shipped:
        cmd += ["--durability", "async", "--synchronous", "default"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"LangGraph {shape} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# ---- one pass: every contender, idle or beside busy loops -----------------------------------

@dataclass
class Pass:
    label: str
    load_before: str
    floor_us: list[float]
    floor_cpu_us: list[float]
    relay: dict[str, list[RelayRun]]
    lg: dict[str, dict[str, Any]]
    lg_shipped: dict[str, dict[str, Any]]


def measure(args: argparse.Namespace, folder: Path, exe: Path | None, label: str) -> Pass:
    steps, reps = args.steps, args.reps
    load = load_average()
    print(f"\n{label}: load average before: {load}", flush=True)
    log(f"{label} floor: {reps} × {steps} commits in {folder}")
    warm = folder / "floor-warmup.db"
    try:
        floor_run(warm, 20)
    finally:
        remove_db(warm)
    floor_s: list[tuple[float, float]] = []
    for rep in range(reps):
        path = folder / f"floor-{rep}.db"
        try:
            floor_s.append(floor_run(path, steps))
        finally:
            remove_db(path)
    out = Pass(label, load, per_step_us([w for w, _ in floor_s], steps),
               per_step_us([c for _, c in floor_s], steps), {}, {}, {})
    for shape in args.shapes:
        log(f"{label} Relay {shape}: {reps} × {steps} steps")
        out.relay[shape] = asyncio.run(relay_all(folder, shape, steps, reps))
        if exe is not None:
            log(f"{label} LangGraph {shape}: {reps} × {steps} steps ({exe})")
            out.lg[shape] = langgraph_all(exe, folder, shape, steps, reps)
            if args.langgraph_as_shipped:
                log(f"{label} LangGraph {shape}, as shipped: {reps} × {steps} steps")
                out.lg_shipped[shape] = langgraph_all(exe, folder, shape, steps, reps,
                                                      as_shipped=True)
    return out


# ---- the report ------------------------------------------------------------------------------

def per_step_us(seconds: Sequence[float], steps: int) -> list[float]:
    return [s / steps * 1e6 for s in seconds]


def fmt(values: Sequence[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:8.1f} µs"
    return f"{med:8.1f} µs ({min(values):.1f}–{max(values):.1f})"


def report(result: Pass, args: argparse.Namespace) -> list[str]:
    """Print one pass's table and verdicts; return its summary parts."""
    steps = args.steps
    floor_med = statistics.median(result.floor_us)
    print(f"{'floor (WAL, synchronous=NORMAL, 1 commit/step)':58}{fmt(result.floor_us)}")
    summary = []
    for shape in args.shapes:
        runs = result.relay[shape]
        us = per_step_us([r.seconds for r in runs], steps)
        med = statistics.median(us)
        tx = statistics.median(r.transactions for r in runs) / steps
        reads = statistics.median(r.reads for r in runs) / steps
        label = f"Relay {SHAPE_LABEL[shape]} (concurrency {CONCURRENCY})"
        print(f"{label:58}{fmt(us)}   {tx:.2f} commits, {reads:.2f} reads/step")
        tx_us = statistics.median(per_step_us([r.tx_seconds for r in runs], steps))
        read_us = statistics.median(per_step_us([r.read_seconds for r in runs], steps))
        print(f"{'  of which: ledger transactions / reads / the rest':58}{tx_us:8.1f} / "
              f"{read_us:.1f} / {med - tx_us - read_us:.1f} µs")
        cpu = statistics.median(per_step_us([r.cpu_seconds for r in runs], steps))
        floor_cpu = statistics.median(result.floor_cpu_us)
        print(f"{'  CPU time (this process) per step, Relay / the floor':58}{cpu:8.1f} / "
              f"{floor_cpu:.1f} µs = {cpu / floor_cpu:.2f}× (a shared machine inflates it "
              "less than wall time; the target is wall time)")
        lg_med = None
        if shape in result.lg:
            lg_runs = result.lg[shape]["runs"]
            lg_us = per_step_us([r["seconds"] for r in lg_runs], steps)
            lg_med = statistics.median(lg_us)
            label = f"LangGraph {SHAPE_LABEL[shape]} (sync, synchronous=NORMAL)"
            print(f"{label:58}{fmt(lg_us)}   {lg_runs[0]['checkpoints']} checkpoints, "
                  f"{lg_runs[0]['writes']} writes")
        if shape in result.lg_shipped:
            sh_us = per_step_us([r["seconds"] for r in result.lg_shipped[shape]["runs"]], steps)
            print(f"{f'LangGraph {SHAPE_LABEL[shape]} (as shipped: async, FULL)':58}{fmt(sh_us)}")
        ratio = med / floor_med
        what = f"{result.label}: Relay {SHAPE_LABEL[shape]} per step"
        if args.smoke:
            print(f"{what}: {ratio:.2f}× the floor (range {min(us) / floor_med:.1f}–"
                  f"{max(us) / floor_med:.1f})")
        else:
            print(verdict(what, ratio, FLOOR_TARGET[shape], baseline="the floor"))
        part = f"{SHAPE_LABEL[shape]} {med:.0f} µs/step ({ratio:.1f}× floor"
        if lg_med is not None:
            if args.smoke:
                print(f"{what}: {med / lg_med:.2f}× LangGraph (matched)")
            else:
                print(verdict(what, med / lg_med, LANGGRAPH_TARGET,
                              baseline="LangGraph (matched: sync, synchronous=NORMAL)"))
            part += f", {med / lg_med:.2f}× LangGraph"
        elif not args.smoke:
            print(f"{what} vs LangGraph: — (LangGraph not run)")
        summary.append(part + ")")
    return [f"{result.label}: floor {floor_med:.0f} µs/step; " + "; ".join(summary)]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="steps per graph (default 1000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of each (default 5)")
    parser.add_argument("--load", type=int, default=2,
                        help="busy loops beside the second pass (default 2; 0: idle pass only)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="folder for every database file (default: a new temporary folder)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="fanout,chain")
    parser.add_argument("--smoke", action="store_true",
                        help="100 steps, one repetition, idle only; checks completion, no verdicts")
    parser.add_argument("--skip-langgraph", action="store_true")
    parser.add_argument("--langgraph-as-shipped", action="store_true",
                        help="also measure LangGraph's defaults (durability async, synchronous FULL)")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile one more Relay run here")
    parser.add_argument("--profile-shape", choices=SHAPES, default="chain")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    if args.smoke:
        args.steps, args.reps, args.load = 100, 1, 0
    args.shapes = [s for s in args.shapes.split(",") if s]
    if any(s not in SHAPES for s in args.shapes) or args.steps < 3 or args.reps < 1 \
            or args.load < 0:
        parser.error("--shapes takes fanout and/or chain; --steps ≥ 3; --reps ≥ 1; --load ≥ 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global QUIET
    args = parse_args(argv)
    QUIET = args.quiet
    own_dir = args.dir is None
    folder: Path = Path(tempfile.mkdtemp(prefix="relay-bench-scheduler-")) if own_dir else args.dir
    folder.mkdir(parents=True, exist_ok=True)
    exe, why_not = (None, "--skip-langgraph") if args.skip_langgraph else langgraph_python()
    if exe is None:
        log(f"LangGraph skipped: {why_not}")
    print(f"machine: {os.cpu_count()} cores ({cpu_name()}); Python {platform.python_version()}, "
          f"SQLite {sqlite3.sqlite_version}")
    print(f"graphs of {args.steps} no-op steps, {args.reps} repetition(s) each, a new database "
          f"file each, all in {'a temporary folder' if own_dir else folder}; per step = wall "
          f"time / {args.steps} (median, and range); targets: Relay ≤ "
          f"{FLOOR_TARGET['fanout']:g}× the floor on the fan-out, ≤ {FLOOR_TARGET['chain']:g}× "
          f"on the chain, ≤ {LANGGRAPH_TARGET:g}× LangGraph (matched)")
    passes: list[Pass] = []
    try:
        passes.append(measure(args, folder, exe, "idle"))
        if args.load:
            with busy(args.load):
                passes.append(measure(args, folder, exe, f"loaded ({args.load} busy loops)"))
        if args.profile:
            profile_relay(folder, args.profile_shape, args.steps, args.profile)
    finally:
        if own_dir:
            shutil.rmtree(folder, ignore_errors=True)
    lg_runs = [r for p in passes for r in p.lg.values()]
    versions = lg_runs[0]["versions"] if lg_runs else None
    lg_note = (", ".join(f"{k} {v}" for k, v in versions.items()) if versions else
               f"LangGraph skipped ({why_not})")
    if versions and any(versions.get(k) != v for k, v in LANGGRAPH_PINNED.items()):
        lg_note += " (NOT the pinned " + ", ".join(f"{k} {v}" for k, v in LANGGRAPH_PINNED.items()) + ")"
    print(f"\npeer: {lg_note}")
    summary = []
    for result in passes:
        print(f"\n{result.label} (load average before: {result.load_before}):")
        summary += report(result, args)
    if args.smoke:
        peer = "LangGraph ran" if lg_runs else f"LangGraph skipped ({why_not})"
        print(f"scheduler smoke ({args.steps} steps): floor, Relay {' and '.join(args.shapes)} "
              f"completed, every step saved once; {peer}; {summary[0]}")
    else:
        print(f"scheduler {args.steps} steps — " + " · ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
