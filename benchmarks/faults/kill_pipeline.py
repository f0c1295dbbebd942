"""benchmarks/faults/kill_pipeline: SIGKILL a pipeline run at a random moment; resume; count.

Each trial is a real ``relay-cli pipeline run`` of a four-step diamond (plan → implement
and test side by side → review) on the demo runtime, in its own data folder and
repository. Its process group is SIGKILLed after a delay drawn from a seeded RNG over the
measured span of an undisturbed run, from its run's first row to its exit; then
``relay-cli recover`` takes the run up (a killed worker's leases are released at once, its
steps taken over). Each trial is checked
against the ledger (``pipeline_steps``, ``pipeline_log``) and the repository:

* completed exactly once — the run succeeded with every step ``succeeded``;
* lost — a step saved before the kill has a different result, commit or branch now, its
  commit is not in the repository, or a step never got saved;
* doubled — a step saved more than once (``saves`` > 1, or two ``saved`` log entries).

Run: ``python benchmarks/faults/kill_pipeline.py [--trials 40] [--seed 18] [--quick]``.
Exits 1 when any trial lost or doubled anything.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT / "app"), str(ROOT)]  # run as a script: this checkout, and tests/

from tests.conftest import make_repo  # noqa: E402

from benchmarks.faults.trials import (  # noqa: E402
    COMPLETED,
    NOT_STARTED,
    RELAY,
    Tally,
    Verdict,
    call,
    db_rows,
    machine_line,
    measure,
    relay_env,
    start_and_kill,
)

PIPELINE: dict[str, Any] = {
    "name": "diamond",
    "nodes": [
        {"id": "plan", "provider": "demo", "task": "Plan the change."},
        {"id": "implement", "provider": "demo", "dependsOn": ["plan"], "task": "Implement it."},
        {"id": "test", "provider": "demo", "dependsOn": ["plan"], "task": "Write its tests."},
        {"id": "review", "provider": "demo", "dependsOn": ["implement", "test"], "task": "Review both."},
    ],
}
NODES = [n["id"] for n in PIPELINE["nodes"]]
#: the demo agent's pause between its events (seconds): a step takes a few tenths
STEP_DELAY = "0.05"


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
        (folder / "pipeline.json").write_text(json.dumps(PIPELINE))
        return cls(folder, home, repo, relay_env(home, RELAY_DEMO_STEP_DELAY=STEP_DELAY))

    def run_argv(self) -> list[str]:
        return ["pipeline", "run", str(self.folder / "pipeline.json"), "--repo", str(self.repo)]


@dataclass
class Ledger:
    runs: list[tuple[Any, ...]]  # id, state, reason
    steps: dict[str, tuple[Any, ...]]  # node → state, saves, output, commit_sha, branch
    saved: dict[str, int]  # node → `saved` log entries

    @classmethod
    def read(cls, home: Path) -> Ledger:
        runs = db_rows(home, "SELECT id, state, reason FROM pipeline_runs")
        steps = {
            str(r[0]): r[1:]
            for r in db_rows(
                home, "SELECT node_id, state, saves, output, commit_sha, branch FROM pipeline_steps"
            )
        }
        saved: dict[str, int] = {}
        for (node,) in db_rows(home, "SELECT node_id FROM pipeline_log WHERE kind='saved'"):
            saved[str(node)] = saved.get(str(node), 0) + 1
        return cls(runs, steps, saved)


def has_commit(repo: Path, sha: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"], capture_output=True, check=False
        ).returncode
        == 0
    )


def one_trial(trial: Trial, seed: int, delay: float) -> Verdict:
    verdict = Verdict("random moment", seed)
    first = start_and_kill([*RELAY, *trial.run_argv()], trial.env, delay, trial.folder / "killed.txt")
    verdict.killed = first.killed
    verdict.note = (
        f"killed after {delay:.3f} s" if first.killed else f"finished before the kill at {delay:.3f} s"
    )
    before = Ledger.read(trial.home)
    recovered = call([*RELAY, "recover", "--json"], trial.env)
    if recovered.hung:
        verdict.fail(f"`recover` did not finish: {recovered.last_lines()}")
    elif recovered.traceback:
        verdict.fail(f"`recover` printed a traceback: {recovered.last_lines()}")
    after = Ledger.read(trial.home)
    for node, (state, _saves, output, sha, branch) in before.steps.items():
        if state != "succeeded":
            continue
        now = after.steps.get(node)
        if now is None or now[0] != "succeeded" or now[2:] != (output, sha, branch):
            verdict.lost.append(f"{node}'s saved result changed: {(state, output, sha, branch)} → {now}")
        if sha and not has_commit(trial.repo, str(sha)):
            verdict.lost.append(f"{node}'s commit {str(sha)[:12]} is not in the repository")
    for node, (state, saves, *_rest) in after.steps.items():
        if saves > 1 or after.saved.get(node, 0) > 1:
            verdict.doubled.append(
                f"{node} saved {saves} times ({after.saved.get(node, 0)} `saved` log entries)"
            )
        if state == "succeeded" and saves == 0:
            verdict.lost.append(f"{node} succeeded without a saved result")
    if verdict.why:
        return verdict
    if not after.runs:
        verdict.outcome = NOT_STARTED  # killed before the run was recorded: nothing to resume
        if "Nothing to recover" not in recovered.stdout + recovered.stderr and recovered.returncode != 0:
            verdict.fail(
                f"`recover` with nothing to do: exit {recovered.returncode}: {recovered.last_lines()}"
            )
        return verdict
    run_state = after.runs[0][1]
    unsaved = [n for n in NODES if after.steps.get(n, (None, 0))[1] != 1]
    if run_state == "succeeded" and not unsaved:
        verdict.outcome = COMPLETED
    else:
        verdict.fail(
            f"the run is {run_state} ({after.runs[0][2]}); steps not saved once: "
            f"{unsaved} (recover exit {recovered.returncode}: "
            f"{recovered.last_lines(2)})"
        )
    return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--quick", action="store_true", help="three trials (the smoke)")
    parser.add_argument("--keep", action="store_true", help="keep the trials' folders")
    args = parser.parse_args()
    trials = 3 if args.quick else args.trials
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="relay-kill-pipeline-"))
    rng = random.Random(args.seed)
    tally = Tally()
    try:
        began, ended = measure("kill_pipeline", base, 1 if args.quick else 3, Trial.make, "pipeline_runs")
        for n in range(trials):
            seed = rng.randrange(2**32)
            trial = Trial.make(base / f"t{n:03d}")
            tally.add(one_trial(trial, seed, random.Random(seed).uniform(began, ended)))
            if not args.keep and not tally.verdicts[-1].serious:
                shutil.rmtree(trial.folder, ignore_errors=True)
    finally:
        if not args.keep and not any(v.serious for v in tally.verdicts):
            shutil.rmtree(base, ignore_errors=True)
    print(
        tally.table(
            f"kill_pipeline: SIGKILL a {len(NODES)}-step pipeline run (demo "
            f"runtime) at a random moment, then `relay-cli recover`; seed "
            f"{args.seed}; an undisturbed run has its first row at {began:.2f} s and exits at {ended:.2f} s; "
            f"random kills fall in between"
        )
    )
    for line in tally.findings():
        print(f"  {line}")
    if any(v.serious for v in tally.verdicts):
        print(f"  (the trials' folders are kept in {base})")
    print(machine_line(started))
    v = tally.verdicts
    print(
        f"pipeline kills: {len(v)} trials, {sum(x.outcome == COMPLETED for x in v)} completed "
        f"exactly once, {sum(x.outcome == NOT_STARTED for x in v)} not started, "
        f"{sum(bool(x.lost) for x in v)} lost, {sum(bool(x.doubled) for x in v)} doubled"
    )
    return 0 if tally.ok else 1


if __name__ == "__main__":
    sys.exit(main())
