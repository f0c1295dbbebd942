"""Where a session may start: the engine refuses a folder that is no repository of the user's
own (the filesystem root, the temp folder, the home folder, Relay's data folder) before it
creates anything, for every front end and for pipeline runs."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pygit2
import pytest

from relay.core.errors import UnsafeRepositoryError, WorktreeError
from relay.core.models import SessionSpec
from relay.core.pipeline_model import Pipeline
from relay.engine.engine import Engine
from tests.conftest import make_repo


async def nothing_was_created(engine: Engine) -> None:
    assert await engine.list_sessions(50) == []
    worktrees = engine.config.worktrees_dir
    assert not worktrees.exists() or not any(worktrees.iterdir())


@pytest.mark.parametrize("where", ["root", "temp", "home", "data"])
async def test_a_session_in_a_folder_no_one_works_in_is_refused_before_anything_exists(
    engine: Engine, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    folder = {
        "root": Path("/"),
        "temp": Path(tempfile.gettempdir()),
        "home": home,
        "data": engine.config.home,
    }[where]
    for worktree in (True, False):
        with pytest.raises(UnsafeRepositoryError) as refused:
            await engine.start_session(SessionSpec(repo=folder, task="x", worktree=worktree))
        assert refused.value.hint
        assert str(folder.resolve()) in refused.value.message
    await nothing_was_created(engine)


async def test_a_repository_whose_root_is_such_a_folder_is_refused_from_a_subfolder(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = make_repo(tmp_path / "user-home")  # a home folder kept in git (dotfiles)
    monkeypatch.setenv("HOME", str(home))
    (home / "notes").mkdir()
    with pytest.raises(UnsafeRepositoryError, match="home folder"):
        await engine.start_session(SessionSpec(repo=home / "notes", task="x"))
    inside = engine.config.home / "worktrees" / "someone"
    inside.mkdir(parents=True)
    with pytest.raises(UnsafeRepositoryError, match="data folder"):
        await engine.start_session(SessionSpec(repo=inside, task="x", worktree=False))
    assert await engine.list_sessions(50) == []


async def test_what_would_fail_the_worktree_is_refused_before_a_session_row(
    engine: Engine, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    unborn = tmp_path / "unborn"
    pygit2.init_repository(str(unborn))
    bare = tmp_path / "bare.git"
    pygit2.init_repository(str(bare), bare=True)
    for folder, said in (
        (plain, "is not a git repository"),
        (unborn, "has no commits yet"),
        (bare, "is a bare repository"),
        (tmp_path / "missing", "is not a folder"),
    ):
        with pytest.raises(WorktreeError, match=said):
            await engine.start_session(SessionSpec(repo=folder, task="x"))
    await nothing_was_created(engine)


async def test_a_repository_of_ones_own_still_starts(engine: Engine, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "project")
    (repo / "src").mkdir()
    row = await engine.run_session(SessionSpec(repo=repo / "src", task="x"))
    assert row.state == "completed", row.reason
    plain = tmp_path / "plain"  # without a worktree any folder of one's own will do
    plain.mkdir()
    row = await engine.run_session(SessionSpec(repo=plain, task="x", worktree=False))
    assert row.state == "completed", row.reason


async def test_a_pipeline_run_is_refused_there_too(engine: Engine, tmp_path: Path) -> None:
    pipeline = Pipeline.model_validate({"name": "p", "nodes": [{"id": "a", "provider": "demo", "task": "x"}]})
    tmp_repo = Path(tempfile.gettempdir())
    with pytest.raises(UnsafeRepositoryError):
        await engine.pipelines.start(pipeline, tmp_repo)
    assert engine.pipelines.runs() == []


def test_the_cli_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    relay_cli = Path(sys.executable).with_name("relay-cli")
    done = subprocess.run(
        [str(relay_cli), "run", "x", "--repo", "/", "--runtime", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "the filesystem root" in done.stderr
