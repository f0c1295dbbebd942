"""Where a session may start: checked before anything is created, for every front end.

A session works in a git worktree of a repository the user owns. The filesystem root, the
temp folder, the user's home folder and Relay's own data folder (and anything inside it:
the worktrees of other sessions, the database) are no such repository, even when git calls
them one; starting there could only fail or make a worktree of the wrong project. A
repository whose root is one of them is refused from any of its subfolders too.

With a worktree the folder must be in a git repository with a work tree and a first
commit (what creating the worktree needs); without one (``--no-worktree``, and for a
pipeline run, whose own check words what it needs) any other folder will do. Each
refusal is a :class:`~relay.core.errors.WorktreeError` saying what and what to do,
raised before a session row, a branch or a worktree exists.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import suppress
from pathlib import Path

import pygit2

from relay.core.errors import UnsafeRepositoryError, WorktreeError


def _resolved(path: Path) -> Path | None:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError, ValueError):
        return None


def forbidden_folders(data_home: Path) -> dict[Path, str]:
    """The folders no session starts in, resolved, each with what it is."""
    named: list[tuple[Path | None, str]] = [
        (Path(os.path.abspath(os.sep)), "the filesystem root"),
        (_resolved(Path(tempfile.gettempdir())), "the temp folder"),
    ]
    if os.name == "posix":
        named += [
            (_resolved(Path("/tmp")), "the temp folder"),
            (_resolved(Path("/var/tmp")), "the temp folder"),
        ]
    with suppress(RuntimeError, KeyError):  # no home to know of: nothing to add
        named.append((_resolved(Path.home()), "your home folder"))
    named.append((_resolved(data_home), "Relay's data folder"))
    folders: dict[Path, str] = {}
    for folder, what in named:
        if folder is not None:
            folders.setdefault(folder, what)
    return folders


def _refuse(folder: Path, data_home: Path, given: Path) -> None:
    data = _resolved(data_home)
    if data is not None and (folder == data or data in folder.parents):
        raise UnsafeRepositoryError(
            f"{given} is in Relay's data folder ({data}); no session starts there.",
            "Pass the path of your project's git repository.",
        )
    what = forbidden_folders(data_home).get(folder)
    if what is not None:
        where = (
            f"{given} is {what}"
            if folder == given
            else f"{given} is in a git repository whose root is {what} ({folder})"
        )
        raise UnsafeRepositoryError(
            f"{where}; no session starts there.", "Pass the path of your project's git repository."
        )


def check_repository(path: Path, data_home: Path, *, worktree: bool = True) -> Path:
    """``path`` resolved, where a session may start; a clear error (before anything is created)
    where it may not. Blocking (git): call it in a worker thread."""
    given = _resolved(path)
    if given is None or not given.is_dir():
        raise WorktreeError(
            f"{path} is not a folder.", "Pass the path of your project's git repository (--repo)."
        )
    _refuse(given, data_home, given)
    try:
        repo = pygit2.Repository(str(given))
    except (pygit2.GitError, KeyError, ValueError, OSError) as exc:
        if not worktree:
            return given
        raise WorktreeError(
            f"{given} is not a git repository.",
            "Run `git init` there, or start the session with --no-worktree.",
        ) from exc
    if repo.is_bare or not repo.workdir:
        if not worktree:
            return given
        raise WorktreeError(f"{given} is a bare repository.", "Pass a repository with a work tree.")
    root = _resolved(Path(repo.workdir))
    if root is not None and root != given:  # a repository rooted at such a folder: its commits
        _refuse(root, data_home, given)
    if not worktree:
        return given
    try:
        unborn = repo.head_is_unborn
    except pygit2.GitError as exc:
        raise WorktreeError(
            f"Cannot read the HEAD of {given}: {exc}.", "Check the repository with `git status`."
        ) from exc
    if unborn:
        raise WorktreeError(
            f"{given} has no commits yet.", "Make a first commit, or start the session with --no-worktree."
        )
    return given
