"""What the kill harnesses share: relay-cli as a real process, a trial's verdict, the table.

A trial ends in exactly one of: **completed exactly once** (after the recovery Relay
offers, the work finished once and everything committed before the kill is still there),
**not started** (killed before there was any work to carry on: recovery has nothing to
take up, and says so), or **failed to recover** (recovery exited with an error, hung,
printed a traceback, or left the work unfinished). Independently of that, a trial is
**lost** when something committed before the kill is gone afterwards, and **doubled** when
a piece of work was done twice, and has an **audit gap** when a committed record never
reached the audit log. A harness exits 1 when any trial was lost, doubled or has a gap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
FAKES_BIN = ROOT / "tests" / "fakes" / "bin"
PYTHON = sys.executable
#: relay-cli from this checkout (never an installed copy)
RELAY = [PYTHON, "-m", "relay.cli.main"]
#: a bound on any one relay-cli call of a trial: beyond it, the call hangs
CALL_TIMEOUT_S = 120.0

COMPLETED = "completed exactly once"
NOT_STARTED = "not started"
FAILED = "failed to recover"


def relay_env(home: Path, **extra: str) -> dict[str, str]:
    """A trial's environment: its own data folder, the fake agents first on PATH, the file
    vault unlocked by a throwaway passphrase, and this checkout's code imported."""
    env = {
        **os.environ,
        "RELAY_HOME": str(home),
        "RELAY_WALLET_DEFAULT_FOLDERS": "0",
        "PATH": f"{FAKES_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "RELAY_VAULT_PASSPHRASE": "fault-harness-passphrase",
        "PYTHONPATH": os.pathsep.join([str(APP), str(ROOT)]),
        "COLUMNS": "160",
    }
    for name in ("CLAUDE", "CODEX", "GEMINI", "PI"):
        env.pop(f"RELAY_{name}_BIN", None)
    env.update(extra)
    return env


@dataclass
class Call:
    """One finished relay-cli call."""

    argv: list[str]
    returncode: int | None  # None: it did not finish within its bound (and was killed)
    stdout: str
    stderr: str

    @property
    def hung(self) -> bool:
        return self.returncode is None

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stdout + self.stderr

    def last_lines(self, n: int = 3) -> str:
        lines = (self.stdout + self.stderr).strip().splitlines()
        return " | ".join(line.strip() for line in lines[-n:])


def call(argv: Sequence[str], env: dict[str, str], timeout: float = CALL_TIMEOUT_S) -> Call:
    """Run ``argv`` (its own process group, stdin closed) to its end, bounded."""
    proc = subprocess.Popen(
        list(argv),
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        return Call(list(argv), proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return Call(list(argv), None, out, err)


@dataclass
class Killed:
    """A relay-cli started, then SIGKILLed (its whole process group) after ``delay`` s."""

    returncode: int
    stdout: str
    stderr: str
    #: whether the signal found it still running (else it had finished first)
    killed: bool


def start_and_kill(argv: Sequence[str], env: dict[str, str], delay: float, out: Path) -> Killed:
    """Start ``argv`` in a new process group and SIGKILL the group ``delay`` seconds later
    (the random moment; a delay, not a synchronisation: the trial is about *any* moment).
    Its stdout goes to ``out`` (a file: nothing of it is lost with the process)."""
    with out.open("w") as fh:
        proc = subprocess.Popen(
            list(argv),
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=delay)
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
        try:
            _, err = proc.communicate(timeout=CALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # finished "first" but hangs at exit
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
    return Killed(proc.returncode, out.read_text(), err, killed)


def measure_span(
    argv: Sequence[str], env: dict[str, str], began: Callable[[], bool]
) -> tuple[float, float, int]:
    """An undisturbed run's span: (when ``began()`` first held — the run has something to
    lose —, when it exited, its exit code), seconds from its start. ``began`` looks at
    another process's files, which nothing signals: it is polled every 10 ms (a measurement,
    not a synchronisation)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    first: float | None = None
    while proc.poll() is None:
        if first is None and began():
            first = time.perf_counter() - started
        time.sleep(0.01)
    end = time.perf_counter() - started
    return (end if first is None else first), end, proc.returncode


def run_to_end(argv: Sequence[str], env: dict[str, str], out: Path) -> Killed:
    """Start ``argv`` and let it end by itself (a fault it injects, or its own end)."""
    with out.open("w") as fh:
        proc = subprocess.run(
            list(argv),
            env=env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.PIPE,
            text=True,
            timeout=CALL_TIMEOUT_S,
            check=False,
        )
    return Killed(proc.returncode, out.read_text(), proc.stderr, proc.returncode == -signal.SIGKILL)


@dataclass
class Verdict:
    """One trial's result."""

    label: str
    seed: int
    outcome: str = COMPLETED
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # why it failed to recover
    #: committed records the audit log never got (counted apart: the work is not lost)
    audit_gap: list[str] = field(default_factory=list)
    killed: bool = True
    note: str = ""

    def fail(self, why: str) -> None:
        self.outcome = FAILED
        self.why.append(why)

    @property
    def serious(self) -> bool:
        """Lost, doubled or failed to recover (what keeps a trial's folder for a look)."""
        return bool(self.lost or self.doubled or self.why)

    def problems(self) -> list[str]:
        return (
            [f"lost: {p}" for p in self.lost]
            + [f"doubled: {p}" for p in self.doubled]
            + [f"failed to recover: {p}" for p in self.why]
            + [f"audit gap: {p}" for p in self.audit_gap]
        )


@dataclass
class Tally:
    """The verdicts of one harness, grouped by a row label (a handoff state, "random")."""

    verdicts: list[Verdict] = field(default_factory=list)

    def add(self, verdict: Verdict) -> None:
        self.verdicts.append(verdict)

    def rows(self) -> list[tuple[str, list[Verdict]]]:
        order: dict[str, list[Verdict]] = {}
        for v in self.verdicts:
            order.setdefault(v.label, []).append(v)
        return [*order.items(), ("all", self.verdicts)]

    def table(self, title: str) -> str:
        head = (
            f"{'killed at':<16}{'trials':>7}{'killed':>8}{'completed once':>16}"
            f"{'not started':>13}{'lost':>6}{'doubled':>9}{'failed to recover':>19}"
            f"{'audit gap':>11}"
        )
        lines = [title, head, "─" * len(head)]
        for label, group in self.rows():
            outcomes = Counter(v.outcome for v in group)
            lines.append(
                f"{label:<16}{len(group):>7}{sum(v.killed for v in group):>8}"
                f"{outcomes[COMPLETED]:>16}{outcomes[NOT_STARTED]:>13}"
                f"{sum(bool(v.lost) for v in group):>6}{sum(bool(v.doubled) for v in group):>9}"
                f"{outcomes[FAILED]:>19}{sum(bool(v.audit_gap) for v in group):>11}"
            )
        return "\n".join(lines)

    def findings(self, audit_gaps_shown: int = 5) -> list[str]:
        """Every trial that lost, doubled or failed to recover; the first audit gaps."""
        serious = [v for v in self.verdicts if v.serious]
        gaps = [v for v in self.verdicts if v.audit_gap and v not in serious]
        lines = [
            f"{v.label} (trial seed {v.seed}{', ' + v.note if v.note else ''}): {'; '.join(v.problems())}"
            for v in serious + gaps[:audit_gaps_shown]
        ]
        if len(gaps) > audit_gaps_shown:
            lines.append(f"… and {len(gaps) - audit_gaps_shown} more audit gaps like these")
        return lines

    @property
    def ok(self) -> bool:
        """No trial lost, doubled or left unaudited anything (failing to recover is
        reported, not fatal)."""
        return not any(v.lost or v.doubled or v.audit_gap for v in self.verdicts)


def machine_line(started: float) -> str:
    """Where and under what load the trials ran."""
    from benchmarks.machine import cpu_name

    one, five, _ = os.getloadavg()
    took = time.monotonic() - started
    return (
        f"machine: {cpu_name()}, {os.cpu_count()} logical CPUs; load average "
        f"{one:.2f} (1 min) {five:.2f} (5 min) at the end; {took:.0f} s; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )


def db_rows(home: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """Rows of a trial's relay.db, read-only (none before the file or its schema exists)."""
    path = home / "relay.db"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as conn:
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # killed before the schema was made
                return []
            raise


class Runnable(Protocol):
    """What :func:`measure` needs of a harness's trial."""

    home: Path
    env: dict[str, str]

    def run_argv(self) -> list[str]: ...


def first_row(home: Path, table: str) -> Callable[[], bool]:
    """Whether ``table`` has a row yet (the run has something a kill could lose)."""

    def has() -> bool:
        return bool(db_rows(home, f"SELECT 1 FROM {table}"))

    return has


def measure(harness: str, base: Path, runs: int, make: Callable[[Path], Runnable],
            table: str) -> tuple[float, float]:
    """The span of an undisturbed run in which a kill can lose something: from when its
    first row in ``table`` is committed to its exit (medians of ``runs``; seconds from its
    start)."""
    spans = []
    for n in range(runs):
        trial = make(base / f"measure-{n}")
        began, ended, code = measure_span([*RELAY, *trial.run_argv()], trial.env,
                                          first_row(trial.home, table))
        if code != 0:
            raise SystemExit(f"{harness}: an undisturbed run failed (exit {code})")
        spans.append((began, ended))
    return statistics.median(b for b, _ in spans), statistics.median(e for _, e in spans)
