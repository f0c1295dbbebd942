"""benchmarks/faults/kill_handoff: SIGKILL relay-cli during a handoff; recover; count.

Each trial is a real ``relay-cli run`` in its own data folder and repository, chain
``claude:work → codex`` with the fake CLIs (tests/fakes/bin): the fake ``claude`` replays
the recorded subscriber usage limit, so the run hands off to the fake ``codex``, which
answers. A setup command leaves work in the worktree (``wip.txt``) that the handoff's
snapshot must commit. The process is SIGKILLed

* **at each handoff state** (``pausing`` … ``done``): right after the state is committed,
  through the fault hook the engine is given (``python -m tests.fakes.relay_killed_after``);
* **at a random moment**: its whole process group, after a delay drawn from a seeded RNG
  over the measured span of an undisturbed run, from its session's first row to its exit
  (an agent it had started lives on, as after a real ``kill -9``).

Then ``relay-cli recover`` carries the work on; a session recovery leaves ``interrupted``
for the user (its receiver was already working, or no handoff had begun) gets the step
the user is told to take, ``relay-cli run … --resume``. Each trial is then checked against
the database, the worktree's git history, the audit log and the fakes' call log:

* completed exactly once — the session ended ``completed``;
* lost — a record printed (so committed) before the kill, the session, its worktree, the
  work in it, or the handoff's snapshot commit is missing;
* doubled — a second handoff, a second snapshot commit for one handoff, a handoff state
  committed twice (``dispatched`` again only after a receiver that never started), two
  runs that completed, a receiver started while one the killed Relay started was alive,
  or a record audited twice;
* audit gap — a record the audit log must hold (core/audit_trail.AUDITED_KINDS) was
  committed but never audited, even after recovery: the trail appends after the commit, in
  the background, and a recovering engine writes what a killed process left out
  (``AuditTrail.catch_up_after_crash``; tests/engine/test_audit_after_a_kill.py); a gap fails the run.

Run: ``python benchmarks/faults/kill_handoff.py [--trials 24] [--random 24] [--seed 18]
[--quick]``. Exits 1 when any trial lost, doubled or left unaudited anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "app"), str(ROOT)]  # run as a script: this checkout, and tests/

import psutil  # noqa: E402
from tests.conftest import make_repo  # noqa: E402

from benchmarks.faults.trials import (  # noqa: E402
    COMPLETED,
    FAKES_BIN,
    NOT_STARTED,
    PYTHON,
    RELAY,
    Tally,
    Verdict,
    call,
    db_rows,
    machine_line,
    measure,
    relay_env,
    run_to_end,
    start_and_kill,
)
from relay.core.audit import iter_entries, verify  # noqa: E402
from relay.core.audit_trail import AUDITED_KINDS  # noqa: E402

#: the handoff states, each committed before the next step begins (sessions/handoff.py)
STATES = ("pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done")
#: the smoke's states: the snapshot, a receiver cut off before it started, one working
QUICK_STATES = ("snapshotted", "dispatched", "resuming")
TASK = "Add a greeting"
WIP = "wip.txt"
WIP_TEXT = "work in progress\n"
SETUP = f"{PYTHON} -c \"open('{WIP}', 'w').write('work in progress\\n')\""
SCENARIOS = {
    "RELAY_FAKE_CLAUDE_SCENARIO": "f_usage_limit/run1_subscriber_five_hour",
    "RELAY_FAKE_CODEX_SCENARIO": "a_text",
}
#: what the agents replay when the user resumes a session recovery left interrupted
RESUMED = {
    "RELAY_FAKE_CLAUDE_SCENARIO": "g_resume/run2_resume",
    "RELAY_FAKE_CODEX_SCENARIO": "f_resume_by_id",
}


@dataclass
class Trial:
    folder: Path
    home: Path
    repo: Path
    env: dict[str, str]

    @classmethod
    def make(cls, folder: Path) -> Trial:
        home = folder / "home"
        repo = make_repo(folder / "repo", {"README.md": "hi\n"})
        env = relay_env(home, RELAY_FAKE_LOG=str(folder / "fake.log"), **SCENARIOS)
        return cls(folder, home, repo, env)

    def run_argv(self) -> list[str]:
        return [
            "run",
            TASK,
            "--repo",
            str(self.repo),
            "--provider",
            "claude:work",
            "--provider",
            "codex",
            "--setup",
            SETUP,
            "--json",
        ]


# -- what the store holds --------------------------------------------------------------


@dataclass
class Facts:
    """A trial's state as committed: the session, its events, runs and handoffs."""

    session: tuple[Any, ...] | None  # id, state, workdir, branch, agent_session_id, reason
    events: dict[int, str]  # id → kind
    steps: list[str]  # handoff_step states, in order
    runs: list[tuple[Any, ...]]  # id, runtime, outcome
    started_runs: set[str]  # runs whose agent reported session_started
    handoffs: list[tuple[Any, ...]]  # id, state, snapshot_sha
    worktree_files: dict[str, str]
    audited: dict[int, str]  # id → state or outcome, of the records the audit log must hold

    @classmethod
    def read(cls, home: Path) -> Facts:
        sessions = db_rows(home, "SELECT id, state, workdir, branch, agent_session_id, reason FROM sessions")
        session = sessions[0] if sessions else None
        events = dict(db_rows(home, "SELECT id, kind FROM events"))
        steps = [
            json.loads(p)["state"]
            for (p,) in db_rows(home, "SELECT payload FROM events WHERE kind='handoff_step' ORDER BY id")
        ]
        runs = db_rows(home, "SELECT id, runtime, outcome FROM runs ORDER BY started_ms")
        started = {
            str(r)
            for (r,) in db_rows(home, "SELECT DISTINCT run_id FROM events WHERE kind='session_started'")
        }
        handoffs = db_rows(home, "SELECT id, state, snapshot_sha FROM handoffs")
        files: dict[str, str] = {}
        if session and session[2] and Path(session[2]).is_dir():
            for path in Path(session[2]).iterdir():
                if path.is_file():
                    files[path.name] = path.read_text(errors="replace")
        audited = {
            int(i): str(what)
            for i, what in db_rows(
                home,
                "SELECT id, coalesce(json_extract(payload, '$.state'),"
                " json_extract(payload, '$.outcome'), '') FROM events WHERE kind IN"
                f" ({', '.join(repr(k) for k in sorted(AUDITED_KINDS))})",
            )
        }
        return cls(session, events, steps, runs, started, handoffs, files, audited)


def printed_records(stdout: str) -> dict[int, str]:
    """The records relay-cli printed (--json) before it died: each was committed first."""
    found: dict[int, str] = {}
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            obj = json.loads(line)
            found[int(obj["id"])] = str(obj["event"]["kind"])
    return found


def snapshot_commits(workdir: Path, handoff_id: str) -> list[str]:
    """The commits on the worktree's branch whose Relay-Handoff trailer names the handoff."""
    proc = subprocess.run(
        ["git", "-C", str(workdir), "log", "--format=%H %(trailers:key=Relay-Handoff,valueonly,separator=)"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line.split()[0] for line in proc.stdout.splitlines() if line.split()[1:] == [handoff_id]]


def committed_file(workdir: Path, sha: str, name: str) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(workdir), "show", f"{sha}:{name}"], capture_output=True, text=True, check=False
    )
    return proc.stdout if proc.returncode == 0 else None


def live_agents(home: Path) -> list[psutil.Process]:
    """Fake agent processes still running in this trial's worktrees."""
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        with contextlib.suppress(psutil.Error):
            argv, cwd = proc.info["cmdline"] or [], proc.info["cwd"] or ""
            if any(str(FAKES_BIN) in a for a in argv[:2]) and cwd.startswith(str(home)):
                found.append(proc)
    return found


def fresh_receivers(log: Path) -> int:
    """How many times a new codex (not a resume) was started, from the fakes' call log."""
    if not log.exists():
        return 0
    calls = [json.loads(line)["argv"] for line in log.read_text().splitlines() if line.strip()]
    return sum(
        1
        for argv in calls
        if Path(argv[0]).name == "codex" and argv[1:2] == ["exec"] and argv[2:3] != ["resume"]
    )


# -- one trial ---------------------------------------------------------------------------


def one_trial(trial: Trial, label: str, seed: int, *, state: str | None, delay: float | None) -> Verdict:
    verdict = Verdict(label, seed)
    out = trial.folder / "killed.jsonl"
    if state is not None:
        first = run_to_end(
            [PYTHON, "-m", "tests.fakes.relay_killed_after", state, *trial.run_argv()], trial.env, out
        )
        if not first.killed:
            verdict.fail(
                f"the fault at {state} never fired (exit {first.returncode}): {first.stderr.strip()[-200:]}"
            )
            return verdict
    else:
        assert delay is not None
        first = start_and_kill([*RELAY, *trial.run_argv()], trial.env, delay, out)
        verdict.killed = first.killed
        verdict.note = (
            f"killed after {delay:.3f} s" if first.killed else f"finished before the kill at {delay:.3f} s"
        )
    printed = printed_records(first.stdout)
    before = Facts.read(trial.home)
    orphans = [p for p in live_agents(trial.home) if p.is_running()]

    recovered = call([*RELAY, "recover", "--json"], trial.env)
    if recovered.hung:
        verdict.fail(f"`recover` did not finish: {recovered.last_lines()}")
    elif recovered.traceback:
        verdict.fail(f"`recover` printed a traceback: {recovered.last_lines()}")
    after = Facts.read(trial.home)
    resumed = False
    if after.session and after.session[1] == "interrupted" and after.session[4]:
        resume = call(
            [*RELAY, "run", "Carry on where you stopped.", "--resume", str(after.session[0]), "--json"],
            {**trial.env, **RESUMED},
        )
        resumed = True
        if resume.hung or resume.traceback:
            verdict.fail(f"`run --resume` {'hung' if resume.hung else 'traceback'}: {resume.last_lines()}")
        after = Facts.read(trial.home)
    check(trial, verdict, printed, before, after, orphans)
    if verdict.why:
        return verdict
    state_now = after.session[1] if after.session else None
    if state_now == "completed":
        verdict.outcome = COMPLETED
        verdict.note += " (after `run --resume`)" if resumed else ""
    elif after.session is None or (state_now == "interrupted" and not after.session[4]):
        verdict.outcome = NOT_STARTED
    else:
        verdict.fail(
            f"the session ended {state_now}: {after.session[5]}"
            f" (recover exit {recovered.returncode}: {recovered.last_lines(2)})"
        )
    return verdict


def check(
    trial: Trial,
    verdict: Verdict,
    printed: dict[int, str],
    before: Facts,
    after: Facts,
    orphans: list[psutil.Process],
) -> None:
    """Lost and doubled, from what was committed before the kill and what is there now."""
    missing = {i: k for i, k in {**printed, **before.events}.items() if after.events.get(i) != k}
    if missing:
        verdict.lost.append(f"{len(missing)} committed record(s) gone: {sorted(missing.items())[:5]}")
    if before.session and not after.session:
        verdict.lost.append("the session row")
    if before.worktree_files.get(WIP) == WIP_TEXT and after.worktree_files.get(WIP) != WIP_TEXT:
        verdict.lost.append(f"{WIP} in the worktree")
    if (
        before.session
        and before.session[2]
        and Path(before.session[2]).is_dir()
        and not (after.session and Path(after.session[2]).is_dir())
    ):
        verdict.lost.append("the worktree")
    if len(after.handoffs) > 1:
        verdict.doubled.append(f"{len(after.handoffs)} handoffs for one limit")
    workdir = Path(after.session[2]) if after.session and after.session[2] else None
    for handoff_id, _state, sha in after.handoffs:
        commits = snapshot_commits(workdir, handoff_id) if workdir else []
        if len(commits) > 1:
            verdict.doubled.append(f"{len(commits)} snapshot commits for {handoff_id}")
        if sha and sha not in commits:
            verdict.lost.append(f"snapshot commit {sha[:12]} not on the session's branch")
        if sha and workdir and committed_file(workdir, sha, WIP) != WIP_TEXT:
            verdict.lost.append(f"{WIP} not in snapshot commit {sha[:12]}")
    never_worked = sum(
        1
        for run_id, runtime, outcome in after.runs
        if runtime == "codex" and outcome == "interrupted" and run_id not in after.started_runs
    )
    for state in STATES:
        allowed = 1 + (never_worked if state == "dispatched" else 0)
        if after.steps.count(state) > allowed:
            verdict.doubled.append(f"handoff state {state} committed {after.steps.count(state)} times")
    completed = [r for r in after.runs if r[2] == "completed"]
    if len(completed) > 1:
        verdict.doubled.append(f"{len(completed)} runs completed: {[(r[1], r[0]) for r in completed]}")
    receivers = fresh_receivers(trial.folder / "fake.log")
    codex_orphans = [p for p in orphans if _is_codex(p)]
    if codex_orphans and receivers > 1:
        verdict.doubled.append(
            f"a receiver started while the killed Relay's receiver "
            f"(pid {codex_orphans[0].pid}) was still alive"
        )
    audit = trial.home / "audit.jsonl"
    report = verify(audit)
    if not report.ok:
        verdict.fail(f"the audit log does not verify: {report}")
        return
    audited = Counter(int(e.data.get("event_id") or 0) for e in iter_entries(audit))
    gone = sorted(set(after.audited) - set(audited))
    if gone:
        verdict.audit_gap.append(
            f"{len(gone)} committed record(s) never audited: "
            + ", ".join(f"{after.events[i]} {after.audited[i]} (id {i})" for i in gone)
        )
    twice = sorted(i for i, n in audited.items() if n > 1)
    if twice:
        verdict.doubled.append(f"record(s) audited twice: ids {twice}")


def _is_codex(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return any(Path(a).name == "codex" for a in proc.cmdline()[:2])
    return False


# -- the harness -------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=24, help="trials at each handoff state")
    parser.add_argument("--random", type=int, default=24, help="trials at a random moment")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument(
        "--quick", action="store_true", help="one trial at three states and one at random (the smoke)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the trials' folders")
    args = parser.parse_args()
    states = QUICK_STATES if args.quick else STATES
    per_state, at_random = (1, 1) if args.quick else (args.trials, args.random)
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="relay-kill-handoff-"))
    rng = random.Random(args.seed)
    tally = Tally()
    try:
        began, ended = measure("kill_handoff", base, 1 if args.quick else 3, Trial.make, "sessions")
        plan: list[str | None] = [s for s in states for _ in range(per_state)]
        plan += [None] * at_random  # None: a random moment
        for n, state in enumerate(plan):
            seed = rng.randrange(2**32)
            delay = random.Random(seed).uniform(began, ended) if state is None else None
            trial = Trial.make(base / f"t{n:03d}")
            tally.add(one_trial(trial, state or "random moment", seed, state=state, delay=delay))
            if not args.keep and not tally.verdicts[-1].serious:
                shutil.rmtree(trial.folder, ignore_errors=True)
    finally:
        if not args.keep and not any(v.serious for v in tally.verdicts):
            shutil.rmtree(base, ignore_errors=True)
    print(
        tally.table(
            f"kill_handoff: SIGKILL during a claude:work → codex handoff (fake "
            f"CLIs), then `relay-cli recover`; seed {args.seed}; an undisturbed "
            f"run has its first row at {began:.2f} s and exits at {ended:.2f} s; "
            f"random kills fall in between"
        )
    )
    for line in tally.findings():
        print(f"  {line}")
    if any(v.serious for v in tally.verdicts):
        print(f"  (the trials' folders are kept in {base})")
    print(machine_line(started))
    once = sum(v.outcome == COMPLETED for v in tally.verdicts)
    print(
        f"handoff kills: {len(tally.verdicts)} trials, {once} completed exactly once, "
        f"{sum(v.outcome == NOT_STARTED for v in tally.verdicts)} not started, "
        f"{sum(bool(v.lost) for v in tally.verdicts)} lost, "
        f"{sum(bool(v.doubled) for v in tally.verdicts)} doubled"
    )
    return 0 if tally.ok else 1


if __name__ == "__main__":
    sys.exit(main())
