"""LangGraph's side of benchmarks/scheduler, run by the LangGraph venv's python.

Standalone on purpose: it runs with ``RELAY_BENCH_LANGGRAPH_PYTHON`` (the separate venv
that ``scripts/install-bench-tools.sh`` makes), never imports Relay, and prints one JSON
object on stdout. LangGraph is imported by name at run time, so this file type-checks in
the app's venv, where LangGraph is deliberately not installed.

The graph is the benchmark's: a ``StateGraph`` whose nodes do nothing but add 1 to a
counter channel (``Annotated[int, operator.add]``, so 998 branches may write it in one
superstep), shaped as

* ``chain``: ``s0001 → s0002 → … → sN`` (``recursion_limit`` raised to N + 10: LangGraph
  counts every superstep against it, default 25);
* ``fanout``: ``root`` → ``b0001`` … ``b(N-2)`` → ``join``: an edge from the root to each
  branch and one join edge from all branches to ``join``.

It is compiled with ``SqliteSaver`` on a new file in ``--dir`` and invoked once per
repetition with a new ``thread_id`` and database file. ``--durability sync`` (default)
persists each superstep before the next starts, as Relay saves a step before its
dependents start; ``async`` is LangGraph's default. ``--synchronous normal`` (default) sets
``PRAGMA synchronous=NORMAL`` on the saver's connection, Relay's and the floor's setting;
``default`` leaves the connection as ``SqliteSaver.from_conn_string`` makes it (SQLite's
default, FULL: an fsync per commit). The saver sets ``journal_mode=WAL`` itself.

A warm-up invoke of a 20-step graph runs first (imports, lazy initialisation). Timed:
``invoke`` only (building and compiling the graph is reported apart). Afterwards the
counter must equal the number of nodes, and the database's checkpoint and write rows are
counted.

Run: ``<venv>/bin/python benchmarks/scheduler/langgraph_run.py --shape chain --steps 1000``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import itertools
import json
import operator
import sqlite3
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict


class State(TypedDict):
    count: Annotated[int, operator.add]


def noop(state: State) -> dict[str, int]:
    return {"count": 1}


def build(shape: str, steps: int) -> Any:
    """The uncompiled ``StateGraph`` of ``steps`` nodes."""
    graph_mod = importlib.import_module("langgraph.graph")
    builder: Any = graph_mod.StateGraph(State)
    start, end = graph_mod.START, graph_mod.END
    if shape == "chain":
        names = [f"s{i:04d}" for i in range(1, steps + 1)]
        for name in names:
            builder.add_node(name, noop)
        builder.add_edge(start, names[0])
        for a, b in itertools.pairwise(names):
            builder.add_edge(a, b)
        builder.add_edge(names[-1], end)
    else:
        branches = [f"b{i:04d}" for i in range(1, steps - 1)]
        builder.add_node("root", noop)
        builder.add_node("join", noop)
        builder.add_edge(start, "root")
        for name in branches:
            builder.add_node(name, noop)
            builder.add_edge("root", name)
        builder.add_edge(branches, "join")
        builder.add_edge("join", end)
    return builder


def saver(path: Path, synchronous: str) -> tuple[Any, sqlite3.Connection]:
    sqlite_mod = importlib.import_module("langgraph.checkpoint.sqlite")
    conn = sqlite3.connect(str(path), check_same_thread=False)  # as from_conn_string does
    if synchronous == "normal":
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    return sqlite_mod.SqliteSaver(conn), conn


def one(shape: str, steps: int, path: Path, durability: str, synchronous: str,
        thread: str) -> dict[str, Any]:
    started = time.perf_counter()
    builder = build(shape, steps)
    checkpointer, conn = saver(path, synchronous)
    graph = builder.compile(checkpointer=checkpointer)
    built = time.perf_counter() - started
    config = {"configurable": {"thread_id": thread}, "recursion_limit": steps + 10}
    try:
        started = time.perf_counter()
        result = graph.invoke({"count": 0}, config, durability=durability)
        seconds = time.perf_counter() - started
        sync_mode = conn.execute("PRAGMA synchronous").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        writes = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
    finally:
        conn.close()
    return {"seconds": seconds, "build_seconds": built, "count": result["count"],
            "checkpoints": checkpoints, "writes": writes, "synchronous": sync_mode,
            "journal_mode": journal}


def remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("chain", "fanout"), required=True)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--durability", choices=("sync", "async", "exit"), default="sync")
    parser.add_argument("--synchronous", choices=("normal", "default"), default="normal")
    args = parser.parse_args()
    warm = args.dir / "langgraph-warmup.db"
    try:
        one(args.shape, 20, warm, args.durability, args.synchronous, "warm-up")
    finally:
        remove(warm)
    runs = []
    for rep in range(args.reps):
        path = args.dir / f"langgraph-{args.shape}-{rep}.db"
        try:
            run = one(args.shape, args.steps, path, args.durability, args.synchronous, f"bench-{rep}")
        finally:
            remove(path)
        if run["count"] != args.steps:
            print(f"langgraph {args.shape}: the counter is {run['count']}, want {args.steps}",
                  file=sys.stderr)
            return 1
        runs.append(run)
    versions = {name: importlib.metadata.version(name)
                for name in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite")}
    print(json.dumps({"shape": args.shape, "steps": args.steps, "durability": args.durability,
                      "synchronous": args.synchronous, "python": sys.version.split()[0],
                      "sqlite": sqlite3.sqlite_version, "versions": versions, "runs": runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
