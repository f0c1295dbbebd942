"""Per-session git worktrees, .worktreeinclude, the setup command, in-place runs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import psutil
import pygit2
import pytest

from relay.core.errors import WorktreeError
from relay.sessions.worktree import Workspace, create_worktree, in_place, run_setup
from tests.conftest import make_repo, wait_until


def commit_all(path: Path, message: str = "more") -> None:
    repo = pygit2.Repository(str(path))
    repo.index.add_all()
    repo.index.write()
    tree = repo.index.write_tree()
    sig = pygit2.Signature("Relay Tests", "tests@relay.invalid")
    repo.create_commit("HEAD", sig, sig, message, tree, [repo.head.target])


async def test_create_worktree_on_its_own_branch_at_head(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "src").mkdir()
    (git_repo / "src" / "app.py").write_text("print('hi')\n")
    commit_all(git_repo, "second")
    repo = pygit2.Repository(str(git_repo))
    head = repo.head.target
    root = tmp_path / "worktrees"

    ws = await create_worktree(git_repo, root, "sess01")

    assert ws == Workspace(path=root / "sess01", branch="relay/sess01", is_worktree=True,
                           base_sha=str(head), base_branch=repo.head.shorthand)
    assert (ws.path / "README.md").read_text() == "# demo\n"
    assert (ws.path / "src" / "app.py").read_text() == "print('hi')\n"
    branch = repo.branches.local["relay/sess01"]
    assert branch.target == head
    assert "relay-sess01" in repo.list_worktrees()
    wt = repo.lookup_worktree("relay-sess01")
    assert Path(wt.path).resolve() == ws.path.resolve()
    # The worktree is checked out on that branch, and the main checkout did not move.
    wt_repo = pygit2.Repository(str(ws.path))
    assert wt_repo.head.shorthand == "relay/sess01"
    assert wt_repo.head.target == head
    assert repo.head.shorthand == "main"


async def test_two_sessions_get_separate_worktrees(git_repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "wt"
    a = await create_worktree(git_repo, root, "a1")
    b = await create_worktree(git_repo, root, "b2")
    (a.path / "README.md").write_text("changed in a\n")
    assert (b.path / "README.md").read_text() == "# demo\n"
    assert (git_repo / "README.md").read_text() == "# demo\n"
    assert set(pygit2.Repository(str(git_repo)).list_worktrees()) >= {"relay-a1", "relay-b2"}


async def test_existing_target_is_refused(git_repo: Path, tmp_path: Path) -> None:
    root = tmp_path / "wt"
    (root / "dup").mkdir(parents=True)
    with pytest.raises(WorktreeError, match="already exists"):
        await create_worktree(git_repo, root, "dup")


async def test_existing_branch_is_a_worktree_error(git_repo: Path, tmp_path: Path) -> None:
    repo = pygit2.Repository(str(git_repo))
    repo.branches.local.create("relay/taken", repo.head.peel(pygit2.Commit))
    with pytest.raises(WorktreeError) as info:
        await create_worktree(git_repo, tmp_path / "wt", "taken")
    assert "taken" in info.value.message
    assert info.value.hint is not None


async def test_relative_repo_path_is_resolved(git_repo: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(git_repo.parent)
    ws = await create_worktree(Path(git_repo.name), tmp_path / "wt", "rel")
    assert (ws.path / "README.md").is_file()


# -- .worktreeinclude -------------------------------------------------------------------


async def test_worktreeinclude_copies_only_ignored_files(tmp_path: Path) -> None:
    repo_path = make_repo(tmp_path / "repo", {
        "README.md": "# demo\n",
        ".gitignore": ".env\n*.local\nsecrets/\nnot-listed.txt\n",
        ".worktreeinclude": ("# comment line: .env.example would match nothing anyway\n"
                             "\n"
                             ".env\n"
                             "  /config.local  \n"        # leading slash and spaces
                             "secrets/*.key\n"
                             "README.md\n"                # tracked: never copied over
                             "notes.txt\n"                # untracked but not ignored
                             "# not-listed.txt\n"),       # commented out
    })
    (repo_path / ".env").write_text("TOKEN=abc\n")
    (repo_path / "config.local").write_text("local=1\n")
    (repo_path / "secrets").mkdir()
    (repo_path / "secrets" / "api.key").write_text("k\n")
    (repo_path / "notes.txt").write_text("untracked notes\n")
    (repo_path / "not-listed.txt").write_text("ignored, but commented out\n")
    (repo_path / "README.md").write_text("uncommitted edit\n")

    ws = await create_worktree(repo_path, tmp_path / "wt", "inc")

    assert (ws.path / ".env").read_text() == "TOKEN=abc\n"
    assert (ws.path / "config.local").read_text() == "local=1\n"
    assert (ws.path / "secrets" / "api.key").read_text() == "k\n"
    assert not (ws.path / "notes.txt").exists()
    assert not (ws.path / "not-listed.txt").exists()
    assert (ws.path / "README.md").read_text() == "# demo\n"  # the committed version


async def test_tracked_file_that_matches_gitignore_is_not_copied(tmp_path: Path) -> None:
    """A force-added file stays at its committed content (git: tracked files are not ignored)."""
    repo_path = make_repo(tmp_path / "repo", {
        "README.md": "# demo\n",
        "settings.local": "committed\n",
        ".worktreeinclude": "*.local\n",
    })
    (repo_path / ".gitignore").write_text("*.local\n")  # ignore rule added after tracking
    commit_all(repo_path, "ignore locals")
    (repo_path / "settings.local").write_text("uncommitted edit\n")

    ws = await create_worktree(repo_path, tmp_path / "wt", "tracked")

    assert (ws.path / "settings.local").read_text() == "committed\n"


async def test_worktreeinclude_cannot_reach_outside_the_repository(tmp_path: Path) -> None:
    """A (tracked, possibly untrusted) .worktreeinclude must not read or write outside."""
    (tmp_path / "outside-secret").write_text("s3cret\n")
    repo_path = make_repo(tmp_path / "repo", {
        "README.md": "# demo\n",
        ".gitignore": ".env\n",
        ".worktreeinclude": "../outside-secret\n../*\n.env\n",
    })
    (repo_path / ".env").write_text("TOKEN=abc\n")
    root = tmp_path / "wt"

    ws = await create_worktree(repo_path, root, "esc")

    assert (ws.path / ".env").read_text() == "TOKEN=abc\n"  # the legitimate line still works
    assert not (root / "outside-secret").exists()
    assert sorted(p.name for p in root.iterdir()) == ["esc"]


async def test_no_worktreeinclude_copies_nothing(tmp_path: Path) -> None:
    repo_path = make_repo(tmp_path / "repo", {"README.md": "x\n", ".gitignore": ".env\n"})
    (repo_path / ".env").write_text("TOKEN=abc\n")
    ws = await create_worktree(repo_path, tmp_path / "wt", "none")
    assert not (ws.path / ".env").exists()


# -- errors ---------------------------------------------------------------------------


async def test_not_a_repository(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    with pytest.raises(WorktreeError) as info:
        await create_worktree(folder, tmp_path / "wt", "x")
    assert "not a git repository" in info.value.message
    assert info.value.hint is not None
    assert "--no-worktree" in info.value.hint
    assert not (tmp_path / "wt" / "x").exists()


async def test_repository_without_commits(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    pygit2.init_repository(str(path), initial_head="main")
    with pytest.raises(WorktreeError) as info:
        await create_worktree(path, tmp_path / "wt", "x")
    assert "no commits" in info.value.message
    assert info.value.hint is not None
    assert "--no-worktree" in info.value.hint
    assert not (tmp_path / "wt" / "x").exists()


async def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError) as info:
        await create_worktree(tmp_path / "nowhere", tmp_path / "wt", "x")
    assert "does not exist" in info.value.message
    assert str(tmp_path / "nowhere") in info.value.message


async def test_bare_repository(tmp_path: Path) -> None:
    path = tmp_path / "bare.git"
    pygit2.init_repository(str(path), bare=True)
    with pytest.raises(WorktreeError, match="bare"):
        await create_worktree(path, tmp_path / "wt", "x")


# -- run_setup --------------------------------------------------------------------------


async def test_run_setup_runs_in_the_worktree(git_repo: Path, tmp_path: Path) -> None:
    ws = await create_worktree(git_repo, tmp_path / "wt", "setup")
    code = ("import os, sys; open('made-by-setup', 'w').write(os.getcwd());"
            " print('installed', sys.argv[1])")
    out = await run_setup([sys.executable, "-c", code, "a b; c"], ws.path)
    assert out.strip() == "installed a b; c"
    assert Path((ws.path / "made-by-setup").read_text()).resolve() == ws.path.resolve()
    assert not (git_repo / "made-by-setup").exists()


async def test_failing_setup_reports_exit_code_and_output_tail(tmp_path: Path) -> None:
    code = ("import sys\n"
            "for i in range(30): print('line', i)\n"
            "sys.stderr.write('fatal: dependency missing\\n')\n"
            "sys.exit(3)\n")
    with pytest.raises(WorktreeError) as info:
        await run_setup([sys.executable, "-c", code], tmp_path)
    message = info.value.message
    assert "exit code 3" in message
    assert "fatal: dependency missing" in message  # stderr is in the tail too
    assert "line 29" in message
    assert "line 0\n" not in message
    assert not message.endswith("line 0")
    assert info.value.hint is not None


async def test_setup_command_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(WorktreeError) as info:
        await run_setup([str(tmp_path / "no-such-tool"), "install"], tmp_path)
    assert "no-such-tool" in info.value.message


async def test_setup_timeout_kills_the_whole_command(tmp_path: Path) -> None:
    # The setup command starts a helper (like npm starting node), writes the helper's pid to
    # a file, and both block forever. On timeout neither may be left running.
    pid_file = tmp_path / "helper.pid"
    helper = "import threading; threading.Event().wait()"
    code = ("import subprocess, sys, threading\n"
            f"h = subprocess.Popen([sys.executable, '-c', {helper!r}])\n"
            f"open({str(pid_file)!r} + '.tmp', 'w').write(str(h.pid))\n"
            "import os\n"
            f"os.rename({str(pid_file)!r} + '.tmp', {str(pid_file)!r})\n"
            "threading.Event().wait()\n")
    try:
        with pytest.raises(WorktreeError, match="timed out after 2 s"):
            # Bounded: if the helper survives, it holds stdout and proc.wait() never returns.
            await asyncio.wait_for(
                run_setup([sys.executable, "-c", code], tmp_path, limit_s=2.0), 30)
        # The pid file is written before the command blocks, so it exists by now unless the
        # command was too slow to start within the timeout (then there is no helper to check).
        if not pid_file.exists():
            pytest.skip("setup command did not get to start its helper within the timeout")
        helper_pid = int(pid_file.read_text())
        wait_until(lambda: gone(helper_pid), what=f"setup helper {helper_pid} to die")
    finally:
        if pid_file.exists() and not gone(pid := int(pid_file.read_text())):
            with contextlib.suppress(ProcessLookupError):  # never leak it, even on failure
                os.kill(pid, signal.SIGKILL)


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


# -- in place ---------------------------------------------------------------------------


async def test_in_place_works_for_a_plain_folder(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(tmp_path)
    ws = await in_place(Path("project"))
    assert ws == Workspace(path=folder.resolve(), branch=None, is_worktree=False)


async def test_in_place_git_repo_makes_no_branch(git_repo: Path) -> None:
    ws = await in_place(git_repo)
    assert ws.path == git_repo.resolve()
    assert ws.branch is None
    repo = pygit2.Repository(str(git_repo))
    assert list(repo.branches.local) == ["main"]
    assert repo.list_worktrees() == []


async def test_in_place_refuses_a_file_or_missing_path(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(WorktreeError, match="not a folder"):
        await in_place(a_file)
    with pytest.raises(WorktreeError, match="not a folder"):
        await in_place(tmp_path / "missing")
