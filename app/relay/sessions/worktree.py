"""Each session's own git worktree on branch ``relay/<session-id>`` (pygit2).

Blocking git work runs in a worker thread. Files listed in the repository's
``.worktreeinclude`` (glob patterns, one per line; ignored files such as
``.env``) are copied into a new worktree, and an optional setup command runs
there before the agent starts.

An adopted session (``SessionSpec.carry_uncommitted``) starts from the repository's
*current* state: :func:`carry_uncommitted` copies what the user has not committed —
tracked modifications and deletions, staged or not, and untracked files that are not
ignored — into the new worktree, reading the user's files and never writing to their
working tree or index. Everything arrives unstaged; untracked files stay untracked.

A damaged repository (a corrupt HEAD, ref or index, missing objects) is one
``WorktreeError`` naming it at each function that reads git (:func:`git_boundary`), never
a pygit2 error escaping to the front end as a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path, PurePosixPath
from typing import Concatenate, ParamSpec, TypeVar

import pygit2

from relay.core.errors import WorktreeError
from relay.core.fsutil import PRIVATE_DIR, private_dir

INCLUDE_FILE = ".worktreeinclude"

log = logging.getLogger(__name__)

#: what pygit2 raises for a repository it cannot read: GitError and its subclasses (a
#: corrupt HEAD, ref, object or index; NotFoundError), KeyError (an object looked up by id
#: that is missing), ValueError (a reference or id it cannot use)
GIT_ERRORS = (pygit2.GitError, KeyError, ValueError)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def damaged(path: Path, exc: BaseException) -> WorktreeError:
    """The one error for a repository git cannot read."""
    why = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return WorktreeError(f"The git repository {path} is damaged or unreadable ({why}).",
                         f"Check it with `git -C {path} fsck`; repair it or clone it again.")


def git_boundary(fn: Callable[Concatenate[Path, _P], _R]) -> Callable[Concatenate[Path, _P], _R]:
    """``fn(path, …)`` does git work on the repository at ``path``: what pygit2 raises for
    a damaged one becomes :func:`damaged` (a ``RelayError`` passes through as it is)."""

    @wraps(fn)
    def guarded(path: Path, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(path, *args, **kwargs)
        except GIT_ERRORS as exc:
            raise damaged(path, exc) from exc

    return guarded


@dataclass(frozen=True)
class Workspace:
    """Where an agent runs: a worktree on its own branch, or the repository itself."""

    path: Path
    branch: str | None
    is_worktree: bool
    #: the commit the session branch starts from, and the branch that was checked out
    #: there (the one "merge into the base branch" means); None when not known
    base_sha: str | None = None
    base_branch: str | None = None


def repo_root(path: Path) -> Path:
    """The working tree root of the git repository at or above ``path``.

    Raises:
        WorktreeError: ``path`` is not in a git repository with a working tree.
    """
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise WorktreeError(f"{path} is not in a git repository.",
                            "Pass the path of a git repository (--repo).")
    repo = pygit2.Repository(found)
    if repo.workdir is None:
        raise WorktreeError(f"{path} is a bare git repository: it has no working tree.",
                            "Pass a repository with a working tree.")
    return Path(repo.workdir).resolve()


def main_root(path: Path) -> Path:
    """The working tree root of the repository at or above ``path``; in a linked worktree
    (a session's), the main working tree's root — the repository it belongs to.

    Raises:
        WorktreeError: as :func:`repo_root`.
    """
    root = repo_root(path)
    gitdir = Path(pygit2.Repository(str(root)).path)
    try:  # a linked worktree's <main>/.git/worktrees/<name>/commondir names <main>/.git
        common = (gitdir / (gitdir / "commondir").read_text("utf-8").strip()).resolve()
    except OSError:  # none: the main working tree itself
        return root
    main = pygit2.Repository(str(common))
    return Path(main.workdir).resolve() if main.workdir else root


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


def _start_point(repo: pygit2.Repository, base: str | None) -> pygit2.Commit:
    if base is None:
        return repo.head.peel(pygit2.Commit)
    try:
        return repo.revparse_single(base).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError) as exc:
        raise WorktreeError(f"Commit {base} is not in {repo.workdir}.",
                            "The step's starting point is gone; was the branch deleted?") from exc


def _worktree_source(repo_path: Path) -> pygit2.Repository:
    repo = open_repo(repo_path)
    if repo.head_is_unborn:
        raise WorktreeError(f"{repo_path} has no commits yet.",
                            "Make a first commit, or start the session with --no-worktree.")
    return repo


@git_boundary
def _create(repo_path: Path, root: Path, session_id: str, base: str | None = None) -> Workspace:
    repo = _worktree_source(repo_path)
    branch_name = f"relay/{session_id}"
    target = root / session_id
    if target.exists():
        raise WorktreeError(f"A worktree already exists at {target}.", "Remove it or pick another session.")
    private_dir(root)
    base_branch = None if base is not None or repo.head_is_detached else repo.head.shorthand
    try:
        commit = _start_point(repo, base)
        branch = repo.branches.local.create(branch_name, commit)
        repo.add_worktree(f"relay-{session_id}", str(target), branch)
        os.chmod(target, PRIVATE_DIR)  # the folder Relay made; its contents keep their modes
    except (pygit2.GitError, ValueError) as exc:
        raise WorktreeError(f"Could not create a worktree for {session_id} in {repo_path}: {exc}.",
                            "Check the repository with `git worktree list`.") from exc
    _copy_included(repo, Path(repo.workdir), target)
    return Workspace(path=target, branch=branch_name, is_worktree=True, base_sha=str(commit.id),
                     base_branch=base_branch)


def _copy_included(repo: pygit2.Repository, source: Path, target: Path) -> list[Path]:
    """Copy the ignored files ``.worktreeinclude`` names; never through a symlink.

    A pattern that reaches a file through a symlink (a tracked link to a folder outside, or
    to the repository itself) or names a symlink is skipped with a warning: following it
    would read or write outside the repository and the worktree."""
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
            if rel.parts[0] == ".git" or ".." in rel.parts:
                continue
            if src.is_symlink() or _through_link(source, rel) or _through_link(target, rel):
                log.warning("%s: %s goes through a symlink; not copied into the worktree",
                            INCLUDE_FILE, rel.as_posix())
                continue
            if (not src.is_file() or rel.as_posix() in repo.index
                    or not repo.path_is_ignored(str(rel))):
                continue
            dst = target / rel
            try:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst, follow_symlinks=False)
            except OSError as exc:  # a file where its folder should be, a full disk
                log.warning("%s: %s not copied into the worktree: %s", INCLUDE_FILE,
                            rel.as_posix(), exc.strerror or exc)
                continue
            copied.append(rel)
    return copied


def _through_link(root: Path, rel: Path) -> bool:
    """Whether a folder on the way from ``root`` to ``root / rel`` is a symlink."""
    return any((root / Path(*rel.parts[:i])).is_symlink() for i in range(1, len(rel.parts)))


async def create_worktree(repo_path: Path, root: Path, session_id: str,
                          base: str | None = None) -> Workspace:
    """A new worktree for ``session_id`` under ``root`` on branch ``relay/<id>``, from HEAD
    or from the commit ``base``."""
    return await asyncio.to_thread(_create, repo_path.resolve(), root, session_id, base)


@dataclass(frozen=True)
class Carried:
    """What :func:`carry_uncommitted` brought into a worktree (paths relative, with ``/``)."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: ``"path: why"`` for what could not be carried (a submodule, an unreadable file…)
    skipped: list[str] = field(default_factory=list)

    def summary(self, source: Path) -> str:
        """One sentence for the session's history."""
        if not (self.written or self.deleted or self.skipped):
            return f"{source} had no uncommitted changes to carry."
        text = (f"Carried the uncommitted state of {source}: {len(self.written)} file(s) written, "
                f"{len(self.deleted)} deleted.")
        if self.skipped:
            text += f" Not carried: {'; '.join(self.skipped[:10])}"
            text += f" (and {len(self.skipped) - 10} more)." if len(self.skipped) > 10 else "."
        return text


@git_boundary
def _carry(source: Path, target: Path) -> Carried:
    src, dst = open_repo(source), open_repo(target)
    if src.head_is_unborn or dst.head_is_unborn:
        raise WorktreeError(f"{source if src.head_is_unborn else target} has no commits yet.",
                            "Make a first commit, or run in place (--no-worktree).")
    head = src.head.peel(pygit2.Commit)
    base = dst.head.peel(pygit2.Commit)
    # status() reads the index and the files; it never writes the index (no UPDATE_INDEX)
    flags = dict(src.status(untracked_files="all", ignored=False))
    if base.id != head.id:  # HEAD moved while the worktree was made: bring those files along
        for delta in src.diff(base, head).deltas:
            for path in (delta.old_file.path, delta.new_file.path):
                flags.setdefault(path, pygit2.enums.FileStatus.CURRENT)
    gone = pygit2.enums.FileStatus.WT_DELETED | pygit2.enums.FileStatus.INDEX_DELETED
    src_root, dst_root = Path(src.workdir), Path(dst.workdir)
    real_root = src_root.resolve()
    out = Carried()
    copies: list[tuple[str, os.stat_result]] = []
    for rel in sorted(flags):
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts or pure.parts[0] == ".git":
            out.skipped.append(f"{rel}: not a path inside the repository")
            continue
        try:
            if (src_root / rel).parent.resolve() != real_root.joinpath(*pure.parts[:-1]):
                raise FileNotFoundError(rel)  # its folder became a symlink: git sees it gone
            info = os.lstat(src_root / rel)
        except FileNotFoundError:
            _delete(dst_root, rel, out)
            continue
        except OSError as exc:
            out.skipped.append(f"{rel}: {exc.strerror}")
            continue
        if stat.S_ISDIR(info.st_mode) and flags[rel] & gone:  # a file that became a folder
            _delete(dst_root, rel, out)
        elif stat.S_ISDIR(info.st_mode):
            out.skipped.append(f"{rel}: a submodule or nested repository")
        elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            copies.append((rel, info))
        else:
            out.skipped.append(f"{rel}: not a regular file")
    for rel, info in copies:  # after every deletion: a deleted file may be a folder now
        try:
            _write(src_root / rel, dst_root, rel, info)
            out.written.append(rel)
        except OSError as exc:
            out.skipped.append(f"{rel}: {exc.strerror or exc}")
    return out


def _delete(root: Path, rel: str, out: Carried) -> None:
    path = root / rel
    if not os.path.lexists(path):
        return
    try:
        if path.is_dir() and not path.is_symlink():
            out.skipped.append(f"{rel}: deleted, but a folder in the worktree")
            return
        path.unlink()
    except OSError as exc:
        out.skipped.append(f"{rel}: {exc.strerror}")
        return
    out.deleted.append(rel)
    parent = path.parent
    while parent != root and parent.is_relative_to(root):  # git does not keep empty folders
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def _write(src: Path, root: Path, rel: str, info: os.stat_result) -> None:
    """Copy ``src`` (a file or a symlink, not followed) to ``root/rel`` through a new inode."""
    dst = root / rel
    if not dst.parent.resolve().is_relative_to(root.resolve()):  # through a symlinked folder
        raise OSError(0, "its folder leads outside the worktree")
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=".relay-carry-")
    os.close(fd)
    try:
        if stat.S_ISLNK(info.st_mode):
            os.unlink(tmp)
            os.symlink(os.readlink(src), tmp)
        else:
            shutil.copyfile(src, tmp, follow_symlinks=False)
            os.chmod(tmp, stat.S_IMODE(info.st_mode))
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


async def carry_uncommitted(repo_path: Path, worktree: Path) -> Carried:
    """Copy ``repo_path``'s uncommitted state into ``worktree`` (made from its HEAD).

    Tracked files modified or deleted (staged or not; the working tree's content wins)
    and untracked, not ignored files — binary files and symlinks as they are. The user's
    working tree and index are only read. Submodules and files that cannot be read are
    listed in :attr:`Carried.skipped`.
    """
    return await asyncio.to_thread(_carry, repo_path.resolve(), worktree)


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
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
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
