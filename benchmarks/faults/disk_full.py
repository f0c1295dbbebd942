"""benchmarks/faults/disk_full.py: every relay-cli command on a nearly full and on a full disk.

A data folder with real sessions (two ``relay-cli demo`` runs, a ``relay-cli run --provider
demo`` in a repository of its own, the knowledge index scanned) is made on the ordinary disk
first. Then, for each command and each condition, a fresh copy of it is put on a small tmpfs
(a real file system: ``mount -t tmpfs``, so this needs root), the tmpfs is filled until
``--nearly`` bytes are left (nearly full) or none (full), and the command runs as a user runs
it: its own process, stdin from /dev/null, a deadline. Counted per run:

* **exited**: the process ended before the deadline (else **hung**: killed, counted);
* **traceback**: a Python traceback or "Relay crashed" in its output;
* **clean**: exited without a traceback — its answer, or one error line (and its hint);
* **lost**: a session or event committed before the run is missing after it, or the
  knowledge index was deleted (the disk is freed before the check).

Prints one row per command and the totals; exits 1 on any hang, traceback or loss (and 2 when
a tmpfs cannot be mounted here). Run: ``python benchmarks/faults/disk_full.py [--nearly
151552] [--deadline 60] [--only sessions,demo]`` (as root).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import cpu_name  # noqa: E402 — after the path is set

CLI = [sys.executable, "-m", "relay.cli.main"]
#: the space the tmpfs has beyond the data folder (the filler takes it up)
MARGIN_KB = 8192


@dataclass
class Outcome:
    code: int | None  # None: hung (killed at the deadline)
    seconds: float
    traceback: bool
    lost: str  # "" or what went missing
    first_line: str

    @property
    def hung(self) -> bool:
        return self.code is None

    @property
    def cell(self) -> str:
        if self.hung:
            return "HUNG"
        mark = "TRACEBACK" if self.traceback else ("ok" if self.code == 0 else "error")
        return f"{mark} ({self.code}, {self.seconds:.1f} s)" + (f" LOST {self.lost}" if self.lost else "")


# -- the disk ----------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size_kb: int) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"disk_full: cannot mount a tmpfs at {where} "
                         f"({done.stderr.strip() or 'mount failed'}); run as root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(disk: Path, leave: int) -> None:
    """Fill ``disk`` until about ``leave`` bytes are free."""
    want = max(0, shutil.disk_usage(disk).free - leave)
    chunk = b"\0" * 65536
    with (disk / "filler.bin").open("wb") as out, contextlib.suppress(OSError):
        while want > 0:
            out.write(chunk[:min(want, len(chunk))])
            out.flush()
            want -= min(want, len(chunk))


def size_kb(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) // 1024 + 1


# -- the data folder ---------------------------------------------------------------------------


def env_for(home: Path, user: Path) -> dict[str, str]:
    return {**os.environ, "RELAY_HOME": str(home), "HOME": str(user), "COLUMNS": "160",
            "RELAY_DEMO_STEP_DELAY": "0", "PYTHONPATH": os.pathsep.join(
                p for p in (str(ROOT / "app"), os.environ.get("PYTHONPATH", "")) if p)}


def cli(env: dict[str, str], *args: str, deadline: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=deadline,
                          check=False, stdin=subprocess.DEVNULL)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x",
                        "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"})


def make_template(work: Path) -> tuple[Path, Path, str]:
    """(data folder, repository, a session id) with real sessions in it."""
    home, user, repo = work / "template", work / "user", work / "repo"
    user.mkdir()
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("# a repository for the disk-full trials\n")
    (repo / "app.py").write_text("def hello() -> str:\n    return 'hello'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    env = env_for(home, user)
    for args in (["demo"], ["demo"], ["run", "--provider", "demo", "--repo", str(repo),
                                      "add a notes file"], ["knowledge", "scan", "--repo", str(repo)]):
        done = cli(env, *args)
        if done.returncode != 0:
            raise SystemExit(f"disk_full: relay-cli {' '.join(args)} failed while making the "
                             f"data folder: {done.stderr.strip()[-400:]}")
    with closing(sqlite3.connect(home / "relay.db")) as conn:
        (sid,) = conn.execute("SELECT id FROM sessions ORDER BY created_ms LIMIT 1").fetchone()
    return home, repo, str(sid)


def committed(home: Path) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    with closing(sqlite3.connect(f"{(home / 'relay.db').as_uri()}?mode=ro", uri=True)) as conn:
        return (set(conn.execute("SELECT id, task, created_ms FROM sessions")),
                set(conn.execute("SELECT id, session_id, kind, payload FROM events")))


def commands(sid: str, repo: Path) -> list[list[str]]:
    return [
        ["sessions"], ["sessions", "--json"], ["show", sid], ["show", sid, "--json"],
        ["history", sid], ["diff", sid], ["review", sid], ["usage"], ["wallet"],
        ["budget", "list"], ["prices"], ["accounts", "list"], ["audit", "verify"],
        ["audit", "show"], ["doctor"], ["detect"], ["retrieve", "hello"],
        ["knowledge", "stats"], ["knowledge", "ingest"], ["knowledge", "scan", "--repo", str(repo)],
        ["pipeline", "status"], ["answer", sid], ["recover"], ["handoff", sid], ["demo"],
        ["run", "--provider", "demo", "--repo", str(repo), "another notes file"],
    ]


# -- one trial ---------------------------------------------------------------------------------


def trial(disk: Path, template: Path, user: Path, args: list[str], leave: int,
          deadline: float) -> Outcome:
    home = disk / "home"
    shutil.rmtree(home, ignore_errors=True)
    (disk / "filler.bin").unlink(missing_ok=True)
    shutil.copytree(template, home, symlinks=True)
    before = committed(home)
    knowledge_before = (home / "knowledge.sqlite").stat().st_size
    fill(disk, leave)
    started = time.perf_counter()
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=env_for(home, user),
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=deadline)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    seconds = time.perf_counter() - started
    (disk / "filler.bin").unlink(missing_ok=True)
    sessions, events = committed(home)
    lost = []
    if not before[0] <= sessions:
        lost.append(f"{len(before[0] - sessions)} sessions")
    if not before[1] <= events:
        lost.append(f"{len(before[1] - events)} events")
    index = home / "knowledge.sqlite"
    if knowledge_before and (not index.exists() or index.stat().st_size == 0):
        lost.append("the knowledge index")
    text = out + err
    return Outcome(code, seconds, "Traceback" in text or "Relay crashed" in err, ", ".join(lost),
                   (err.strip().splitlines() or [""])[0][:100])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nearly", type=int, default=148 * 1024,
                        help="bytes left free on the nearly full disk (default 148 KiB)")
    parser.add_argument("--deadline", type=float, default=60.0,
                        help="seconds a command may take before it counts as hung")
    parser.add_argument("--only", default="", help="commands to run (their first words)")
    opts = parser.parse_args()
    if os.name != "posix" or os.geteuid() != 0:
        print("disk_full: needs root (it mounts a tmpfs)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="relay-disk-full-") as tmp:
        work = Path(tmp)
        template, repo, sid = make_template(work)
        user = work / "user"
        chosen = [c for c in commands(sid, repo)
                  if not opts.only or c[0] in opts.only.split(",")]
        conditions = [("nearly full", opts.nearly), ("full", 0)]
        print(f"disk_full: {len(chosen)} commands × {len(conditions)} conditions; data folder "
              f"{size_kb(template)} KiB; deadline {opts.deadline:.0f} s; {cpu_name()}")
        rows: list[tuple[str, list[Outcome]]] = []
        with tmpfs(work / "disk", size_kb(template) + MARGIN_KB) as disk:
            for args in chosen:
                outcomes = [trial(disk, template, user, args, leave, opts.deadline)
                            for _, leave in conditions]
                name = " ".join(a if a not in (sid, str(repo)) else
                                ("SID" if a == sid else "REPO") for a in args)
                rows.append((name, outcomes))
                print(f"  {name:<42} " + "  ".join(f"{o.cell:<28}" for o in outcomes), flush=True)
                for o in outcomes:
                    if o.code not in (0, None) and not o.traceback:
                        print(f"  {'':<42} ↳ {o.first_line}")
    every = [o for _, outs in rows for o in outs]
    hung = sum(o.hung for o in every)
    tracebacks = sum(o.traceback for o in every)
    lost = sum(bool(o.lost) for o in every)
    exited = sum(not o.hung for o in every)
    clean = sum(not o.hung and not o.traceback for o in every)
    print(f"commands: {len(rows)}; runs: {len(every)}; exited within the deadline: {exited}; "
          f"clean (answer or one error line): {clean}; hung: {hung}; tracebacks: {tracebacks}; "
          f"runs that lost committed rows or the index: {lost}")
    return 1 if hung or tracebacks or lost else 0


if __name__ == "__main__":
    sys.exit(main())
