"""Each session's own git worktree on branch ``relay/<session-id>`` (pygit2).

Blocking git work runs in a worker thread. Files listed in the repository's
``.worktreeinclude`` (glob patterns, one per line; ignored files such as
``.env``) are copied into a new worktree, and an optional setup command runs
there before the agent starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pygit2

from relay.core.errors import WorktreeError

INCLUDE_FILE = ".worktreeinclude"


@dataclass(frozen=True)
class Workspace:
    """Where an agent runs: a worktree on its own branch, or the repository itself."""

    path: Path
    branch: str | None
    is_worktree: bool


def open_repo(path: Path) -> pygit2.Repository:
    """Open the repository at ``path``; a clear error if it is not one."""
    if not path.exists():
        raise WorktreeError(f"{path} does not exist.", "Pass the path of a git repository.")
    try:
        repo = pygit2.Repository(str(path))
    except pygit2.GitError as exc:
        raise WorktreeError(f"{path} is not a git repository.",
                            "Run `git init` there, or start the session with --no-worktree.") from exc
    if repo.is_bare:
        raise WorktreeError(f"{path} is a bare repository.", "Pass a repository with a work tree.")
    return repo


def _create(repo_path: Path, root: Path, session_id: str) -> Workspace:
    repo = open_repo(repo_path)
    if repo.head_is_unborn:
        raise WorktreeError(f"{repo_path} has no commits yet.",
                            "Make a first commit, or start the session with --no-worktree.")
    branch_name = f"relay/{session_id}"
    target = root / session_id
    if target.exists():
        raise WorktreeError(f"A worktree already exists at {target}.", "Remove it or pick another session.")
    root.mkdir(parents=True, exist_ok=True)
    try:
        commit = repo.head.peel(pygit2.Commit)
        branch = repo.branches.local.create(branch_name, commit)
        repo.add_worktree(f"relay-{session_id}", str(target), branch)
    except (pygit2.GitError, ValueError) as exc:
        raise WorktreeError(f"Could not create a worktree for {session_id}: {exc}.",
                            "Check the repository with `git worktree list`.") from exc
    _copy_included(repo, Path(repo.workdir), target)
    return Workspace(path=target, branch=branch_name, is_worktree=True)


def _copy_included(repo: pygit2.Repository, source: Path, target: Path) -> list[Path]:
    include = source / INCLUDE_FILE
    if not include.is_file():
        return []
    copied = []
    for raw in include.read_text(encoding="utf-8", errors="replace").splitlines():
        pattern = raw.strip().lstrip("/")
        if not pattern or pattern.startswith("#"):
            continue
        for src in source.glob(pattern):
            rel = src.relative_to(source)
            if (not src.is_file() or rel.parts[0] == ".git" or ".." in rel.parts
                    or rel.as_posix() in repo.index
                    or not repo.path_is_ignored(str(rel))):
                continue
            dst = target / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
            copied.append(rel)
    return copied


async def create_worktree(repo_path: Path, root: Path, session_id: str) -> Workspace:
    """A new worktree for ``session_id`` under ``root`` on branch ``relay/<id>``."""
    return await asyncio.to_thread(_create, repo_path.resolve(), root, session_id)


async def in_place(repo_path: Path) -> Workspace:
    """Run in the repository itself (``--no-worktree``); it need not be a git repo."""
    path = repo_path.resolve()
    if not path.is_dir():
        raise WorktreeError(f"{path} is not a folder.", "Pass the path of your project.")
    return Workspace(path=path, branch=None, is_worktree=False)


async def run_setup(command: list[str], cwd: Path, limit_s: float = 600.0) -> str:
    """Run the setup command (argument array) in a new worktree; return its output."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True)
    except OSError as exc:
        raise WorktreeError(f"Setup command {command[0]!r} could not start: {exc}.",
                            "Check the command and that it is installed.") from exc
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), limit_s)
    except TimeoutError as exc:
        # The whole group (own session): a helper it started may hold stdout open.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise WorktreeError(f"Setup command timed out after {limit_s:g} s.",
                            "Make it faster or run it by hand.") from exc
    text = out.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = "\n".join(text.strip().splitlines()[-10:])
        raise WorktreeError(f"Setup command failed with exit code {proc.returncode}:\n{tail}",
                            "Fix the setup command, or start without it.")
    return text
