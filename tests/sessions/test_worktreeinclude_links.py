"""A .worktreeinclude pattern that goes through a tracked symlink is skipped with a note:
nothing is read or written outside the repository and its worktree, and the worktree is
still made (it once raised SameFileError / FileExistsError out of create_worktree)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pygit2
import pytest

from relay.sessions.worktree import create_worktree
from tests.conftest import make_repo


def _commit_link(repo_path: Path, name: str, target: str) -> None:
    os.symlink(target, repo_path / name)
    repo = pygit2.Repository(str(repo_path))
    repo.index.add(name)
    repo.index.write()
    sig = pygit2.Signature("Relay Tests", "tests@relay.invalid")
    repo.create_commit("HEAD", sig, sig, "link", repo.index.write_tree(), [repo.head.target])


@pytest.mark.parametrize("link", ["absolute-outside", "absolute-to-repo", "dangling-in-worktree"])
async def test_a_pattern_through_a_tracked_symlink_is_skipped(
        link: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".env").write_text("OUTSIDE=1\n")
    repo_path = make_repo(tmp_path / "repo", {
        "README.md": "# demo\n",
        ".gitignore": ".env\n",
        ".worktreeinclude": "shared/.env\n.env\n",
    })
    (repo_path / ".env").write_text("TOKEN=abc\n")
    target = {"absolute-outside": str(outside), "absolute-to-repo": str(repo_path),
              # exists beside the repository, not beside the worktree: dangles there
              "dangling-in-worktree": "../outside"}[link]
    _commit_link(repo_path, "shared", target)
    before = {p: p.read_bytes() for p in (outside / ".env", repo_path / ".env")}

    with caplog.at_level(logging.WARNING, logger="relay.sessions.worktree"):
        ws = await create_worktree(repo_path, tmp_path / "wt", "links")

    assert (ws.path / ".env").read_text() == "TOKEN=abc\n"  # the plain line still works
    assert (ws.path / "shared").is_symlink()  # the tracked link is checked out as it is
    assert {p: p.read_bytes() for p in before} == before  # nothing outside was written
    assert "shared/.env" in caplog.text
    assert "symlink" in caplog.text
