"""A commit after a crash in the middle of the last one: the git locks a dead Relay left
are cleared, a live holder is waited for and then named, someone else's lock is kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pygit2
import pytest

from relay.core.errors import WorktreeError
from relay.sessions.snapshot import (
    OWNER_FILE,
    SnapshotRequest,
    commit_everything,
    git_locks_held,
    take_snapshot,
    trailers_of,
)
from relay.sessions.worktree import _create
from tests.sessions.test_handoff_crash import only_session

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worktree(git_repo: Path, tmp_path: Path) -> Path:
    return _create(git_repo, tmp_path / "worktrees", "s1").path


def gitdir(worktree: Path) -> Path:
    return Path(pygit2.Repository(str(worktree)).path)


def req(worktree: Path) -> SnapshotRequest:
    return SnapshotRequest(worktree=worktree, session_id="s1", handoff_id="h1")


def dead_process() -> tuple[int, float]:
    """The pid and start time of a process that has ended (a killed Relay's record)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    started = psutil.Process(child.pid).create_time()
    child.kill()
    child.wait()
    return child.pid, started


#: holds a lock file open (and, with an owner record, as a Relay commit would) until told
_HOLDER = """
import json, os, sys
lock, owner = sys.argv[1], sys.argv[2]
fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
if owner:
    import psutil
    me = os.getpid()
    with open(owner, "x") as fh:
        json.dump({"pid": me, "started": psutil.Process(me).create_time()}, fh)
print("ready", flush=True)
sys.stdin.readline()
os.unlink(lock)
if owner:
    os.unlink(owner)
"""


@pytest.fixture
def holder(worktree: Path) -> Iterator[Any]:
    procs: list[subprocess.Popen[str]] = []

    def start(lock: Path, *, as_relay: bool) -> subprocess.Popen[str]:
        owner = str(gitdir(worktree) / OWNER_FILE) if as_relay else ""
        proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock), owner],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.wait(timeout=30) == 0


@pytest.mark.parametrize("lock", ["index.lock", "ref"])
def test_the_locks_a_dead_relay_left_are_cleared(worktree: Path, lock: str) -> None:
    folder = gitdir(worktree)
    common = Path(pygit2.Repository(str(worktree)).path).joinpath(
        (folder / "commondir").read_text().strip()).resolve()
    path = folder / "index.lock" if lock == "index.lock" else common / "refs/heads/relay/s1.lock"
    pid, started = dead_process()
    path.write_bytes(b"DIRC")  # what a killed Relay leaves: the lock and its own record
    (folder / OWNER_FILE).write_text(json.dumps({"pid": pid, "started": started}))
    (worktree / "work.txt").write_text("kept\n")
    info = take_snapshot(req(worktree))
    assert info.changed
    commit = pygit2.Repository(str(worktree)).revparse_single(info.sha).peel(pygit2.Commit)
    assert "work.txt" in commit.tree
    assert not path.exists()
    assert not (folder / OWNER_FILE).exists()


def test_a_live_relay_commit_is_waited_for_then_named(worktree: Path, holder: Any) -> None:
    lock = gitdir(worktree) / "index.lock"
    proc = holder(lock, as_relay=True)
    with pytest.raises(WorktreeError) as info:
        commit_everything(worktree, "s1", "m\n", "the snapshot", lock_wait=0.5)
    assert f"Relay process {proc.pid}" in info.value.message
    assert "still locked" in info.value.message
    assert "0.5 s" in info.value.message
    assert info.value.hint
    assert lock.exists()  # a live owner's lock is never taken away
    assert proc.poll() is None


@pytest.mark.parametrize("as_relay", [True, False], ids=["relay", "git"])
def test_the_commit_proceeds_once_the_live_holder_lets_go(worktree: Path, holder: Any,
                                                          as_relay: bool) -> None:
    lock = gitdir(worktree) / "index.lock"
    proc = holder(lock, as_relay=as_relay)
    heard: list[str] = []

    def waiting(what: str) -> None:  # called once the commit is waiting: let go now
        heard.append(what)
        release(proc)

    repo = pygit2.Repository(str(worktree))
    with git_locks_held(repo, "refs/heads/relay/s1", worktree, within=30, waiting=waiting):
        assert (gitdir(worktree) / OWNER_FILE).is_file()
        assert not lock.exists()
    assert len(heard) == 1
    assert str(proc.pid) in heard[0]
    assert not (gitdir(worktree) / OWNER_FILE).exists()
    assert commit_everything(worktree, "s1", "m\n", "the snapshot", lock_wait=1)[0]


def test_a_lock_nobody_holds_and_relay_did_not_take_is_kept(worktree: Path) -> None:
    lock = gitdir(worktree) / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(WorktreeError) as info:
        commit_everything(worktree, "s1", "m\n", "the snapshot", lock_wait=30)
    assert "not by Relay" in info.value.message
    assert "delete the lock file" in (info.value.hint or "")
    assert lock.exists()


# -- a real Relay killed in the middle of the handoff's snapshot commit ------------------


def relay(*args: str, env: dict[str, str],
          killed_after: str | None = None) -> subprocess.CompletedProcess[str]:
    command = (["-m", "tests.fakes.relay_killed_after", killed_after] if killed_after
               else ["-m", "relay.cli.main"])
    return subprocess.run([sys.executable, *command, *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env=env, timeout=120, check=False, cwd=ROOT)


def test_recover_completes_a_handoff_killed_mid_snapshot_commit(relay_home: Path) -> None:
    env = {**os.environ, "RELAY_DEMO_STEP_DELAY": "0",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
           "RELAY_VAULT_PASSPHRASE": "crash-test-passphrase"}
    crashed = relay("demo", "--limit-after", "1", "--json", env=env,
                    killed_after="snapshot_commit")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    session_id = only_session(env)  # killed in its host, maybe before its client printed
    workdir = relay_home / "worktrees" / session_id
    assert (gitdir(workdir) / "index.lock").exists()  # left as a killed commit leaves it
    assert (gitdir(workdir) / OWNER_FILE).exists()

    recovered = relay("recover", "--json", env=env)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    shown = [json.loads(line) for line in
             relay("show", session_id, "--json", env=env).stdout.splitlines()]
    states = [e["event"]["state"] for e in shown if e["event"]["kind"] == "state_changed"]
    assert states[-1] == "completed"
    steps = [e["event"]["state"] for e in shown if e["event"]["kind"] == "handoff_step"]
    assert steps == ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming",
                     "done"]
    handoff_id = next(e["event"]["handoff_id"] for e in shown
                      if e["event"]["kind"] == "handoff_step")
    repo = pygit2.Repository(str(workdir))
    assert len([c for c in repo.walk(repo.head.target)
                if trailers_of(c).get("Relay-Handoff") == handoff_id]) == 1
    assert not (gitdir(workdir) / "index.lock").exists()
    assert not (gitdir(workdir) / OWNER_FILE).exists()
