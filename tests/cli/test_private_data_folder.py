"""The data folder is the user's alone: every folder 0700 and every file 0600 whatever the
umask (a worktree's contents keep the repository's modes), and a folder an older Relay left
open is tightened on open with one notice."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pygit2
import pytest

from relay.core.config import load_config
from relay.core.crash import CrashHandler, log_path
from relay.core.fsutil import write_atomic
from relay.core.vault import VAULT_FILE, Vault
from relay.wallet.usage_index import UsageIndex
from tests.cli.test_cli import CLI
from tests.cli.test_demo_and_prompts import no_secrets_env

NOTICE = "was readable by other users"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def loose_entries(home: Path, umask: int) -> list[str]:
    """Everything in ``home`` that is not private, and every worktree file whose mode is not
    the repository's (its git mode under ``umask``)."""
    wrong = [] if mode(home) == 0o700 else [f"{home} {mode(home):o}"]
    worktrees = home / "worktrees"
    for folder, dirs, files in os.walk(home):
        here = Path(folder)
        if here.parent == worktrees:
            wrong += checkout_differences(here, umask)
            dirs[:] = []
            continue
        wrong += [f"{here / d} {mode(here / d):o}" for d in dirs if mode(here / d) != 0o700]
        wrong += [f"{here / f} {mode(here / f):o}" for f in files if mode(here / f) != 0o600]
    return wrong


def checkout_differences(worktree: Path, umask: int) -> list[str]:
    """The files checked out from the repository (its ``main``; what the agent made later is
    the agent's) whose mode is not the repository's."""
    repo = pygit2.Repository(str(worktree))
    tree = repo.revparse_single("main").peel(pygit2.Tree)
    entries = [(str(e.name), e.filemode) for e in tree if e.type_str == "blob"]
    assert entries, f"{worktree} has no checked-out files"
    return [
        f"{worktree / name} {mode(worktree / name):o} (git {git_mode:o})"
        for name, git_mode in entries
        if mode(worktree / name) != (git_mode & 0o777 & ~umask)
    ]


def run(args: list[str], umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        env=no_secrets_env(),
        stdin=subprocess.DEVNULL,
        timeout=120,
        umask=umask,
        check=False,
    )


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_a_demo_with_a_handoff_leaves_only_private_folders_and_files(relay_home: Path, umask: int) -> None:
    proc = run(["demo", "--limit-after", "2"], umask)
    assert proc.returncode == 0, proc.stderr
    # what the demo wrote: the database, the knowledge index, the contracts, the log, …
    for made in ("relay.db", "knowledge.sqlite", "audit.jsonl", "handoffs"):
        assert (relay_home / made).exists(), made
    assert any((relay_home / "handoffs").rglob("envelope.json"))
    assert list((relay_home / "worktrees").iterdir())
    log = relay_home / "logs" / "relay.log"
    assert not log.exists() or "Traceback" not in log.read_text(), log.read_text()
    assert loose_entries(relay_home, umask) == []
    assert NOTICE not in proc.stderr  # a new folder is private from the start: nothing to say


@pytest.mark.usefixtures("vault_env")
def test_the_other_writers_of_the_data_folder_write_private_files(relay_home: Path) -> None:
    """The vault's encrypted file, the usage index (with its WAL), a database's side files,
    an atomic write into a new folder — with no umask at all."""
    from relay.core.fsutil import private_sqlite  # what the store and the indexes call

    old = os.umask(0)
    try:
        config = load_config()
        vault = Vault.open(config)
        vault.set("api-key", "sk-test-secret")
        assert vault.backend == "file"
        index = UsageIndex(config.usage_index_path)
        index.close()
        write_atomic(relay_home / "exports" / "one.json", b"{}")
        crashes = CrashHandler(log_path(relay_home))
        crashes.handle(RuntimeError("a crash, logged"), "a test")
        crashes.file.close()
        db = relay_home / "a.sqlite"
        for side in ("-wal", "-shm", "-journal"):  # side files an older Relay left open
            db.with_name(db.name + side).write_bytes(b"")
        private_sqlite(db)
    finally:
        os.umask(old)
    for made in (VAULT_FILE, "usage-index.sqlite", "logs/relay.log", "exports/one.json"):
        assert (relay_home / made).is_file(), made
    assert loose_entries(relay_home, 0) == []


def test_an_open_data_folder_is_tightened_once_with_one_notice(relay_home: Path) -> None:
    assert run(["demo"]).returncode == 0
    worktree = next((relay_home / "worktrees").iterdir())
    for folder, dirs, files in os.walk(relay_home):  # as an older Relay left it
        here = Path(folder)
        if here.parent == relay_home / "worktrees":
            dirs[:] = []
            continue
        for name in dirs:
            os.chmod(here / name, 0o755)
        for name in files:
            os.chmod(here / name, 0o644)
    os.chmod(relay_home, 0o755)
    os.chmod(worktree, 0o755)
    script = worktree / "hello.py"
    os.chmod(script, 0o755)  # a worktree file's own mode, which Relay leaves alone

    first = run(["sessions", "--json"])
    second = run(["sessions", "--json"])

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    notices = [line for line in first.stderr.splitlines() if NOTICE in line]
    assert len(notices) == 1, first.stderr
    assert str(relay_home) in notices[0]
    assert NOTICE not in second.stderr
    assert mode(script) == 0o755
    os.chmod(script, 0o644)
    assert loose_entries(relay_home, 0o022) == []
