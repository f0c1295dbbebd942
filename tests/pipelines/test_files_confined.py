"""Pipeline files are read and written inside the repository only (issue 18, item 9).

A client (or a cloned repository's symlink) must not make Relay read or write a file
elsewhere: ``..`` and symlinks are resolved before the check.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relay.core.errors import PipelineError
from relay.core.pipeline_model import parse_pipeline
from relay.pipelines import files

ONE = {"name": "one", "nodes": [{"id": "a", "provider": "demo", "task": "x"}]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "elsewhere" / "secret.json"
    path.parent.mkdir()
    path.write_text(json.dumps(ONE))
    return path


def _refused(info: pytest.ExceptionInfo[PipelineError], repo: Path) -> None:
    assert "outside the repository" in info.value.message
    assert str(repo) in info.value.message
    assert info.value.hint


@pytest.mark.parametrize("name", ["{outside}", "../elsewhere/secret.json",
                                  "sub/../../elsewhere/secret.json"])
def test_a_file_outside_the_repository_is_refused(repo: Path, outside: Path, name: str) -> None:
    with pytest.raises(PipelineError) as info:
        files.resolve(name.format(outside=outside), repo, confine=True)
    _refused(info, repo)


def test_a_symlink_out_of_the_repository_is_refused(repo: Path, outside: Path) -> None:
    (repo / "innocent.json").symlink_to(outside)
    with pytest.raises(PipelineError) as info:
        files.resolve("innocent.json", repo, confine=True)
    _refused(info, repo)
    with pytest.raises(PipelineError) as info:
        files.resolve(str(repo / "innocent.json"), repo, confine=True)
    _refused(info, repo)


def test_a_name_is_never_read_as_a_file_of_the_current_folder(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "one").write_text(json.dumps(ONE))
    monkeypatch.chdir(cwd)
    with pytest.raises(PipelineError, match="No pipeline named 'one'"):
        files.resolve("one", repo, confine=True)


def test_a_file_inside_the_repository_is_read(repo: Path) -> None:
    (repo / "ci").mkdir()
    (repo / "ci" / "p.json").write_text(json.dumps(ONE))
    assert files.resolve("ci/p.json", repo, confine=True).name == "one"
    assert files.resolve(str(repo / "ci" / "p.json"), repo, confine=True).name == "one"


@pytest.mark.parametrize("link", ["file", "folder"])
def test_the_repository_file_may_not_point_outside(repo: Path, outside: Path, link: str) -> None:
    if link == "folder":
        (repo / ".relay").symlink_to(outside.parent, target_is_directory=True)
        outside.rename(outside.parent / "pipelines.json")
    else:
        (repo / ".relay").mkdir()
        files.pipelines_path(repo).symlink_to(outside)
    for attempt in (lambda: files.list_pipelines(repo), lambda: files.resolve("one", repo),
                    lambda: files.save(repo, parse_pipeline(ONE))):
        with pytest.raises(PipelineError) as info:
            attempt()
        _refused(info, repo)
    written = outside if link == "file" else outside.parent / "pipelines.json"
    assert json.loads(written.read_text()) == ONE  # never written through the link
