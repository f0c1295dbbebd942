"""relay_run_pipeline reads pipeline files inside the repository only (issue 18, item 9)
and runs no command its user has not accepted (item 10)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.pipelines import files, trust
from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error

RED = {"name": "red", "nodes": [{"id": "build", "provider": "demo", "task": "x"}]}


def _env() -> dict[str, str]:
    """The server imports the Relay under test (a PYTHONPATH the test runs with)."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}


@pytest.mark.parametrize("name", ["../red.json", "{tmp}/red.json", "link.json"])
async def test_a_file_outside_the_repository_is_refused_before_any_run(
        relay_mcp: Server, tmp_path: Path, name: str) -> None:
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "red.json").write_text(json.dumps(RED))
    (repo / "link.json").symlink_to(tmp_path / "red.json")
    async with relay_mcp(**_env()) as client:
        text = await call_error(client, "relay_run_pipeline",
                                name_or_file=name.format(tmp=tmp_path), repo=str(repo))
        assert "outside the repository" in text
        assert "→ " in text  # with what to do
        status = await call(client, "relay_list_sessions")
        assert status["sessions"] == []


async def test_a_file_inside_the_repository_runs(relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "ci").mkdir()
    (repo / "ci" / "red.json").write_text(json.dumps(RED))
    async with relay_mcp(**_env()) as client:
        started = await call(client, "relay_run_pipeline", name_or_file="ci/red.json",
                             repo=str(repo))
        run = await call(client, "relay_pipeline_status", run_id=started["id"], wait_s=120)
        assert run["state"] == "succeeded", run


async def test_commands_nobody_accepted_are_refused_and_listed(relay_mcp: Server,
                                                              tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    checked = {"name": "checked", "nodes": [{"id": "build", "provider": "demo", "task": "x",
                                              "verify": ["touch pwned"]}]}
    path = files.pipelines_path(repo)
    path.parent.mkdir()
    path.write_text(json.dumps({"pipelines": [checked]}))
    leave = {"RELAY_MCP_REQUIRE_APPROVAL": "0", **_env()}  # MCP may run commands: trust is next
    async with relay_mcp(**leave) as client:
        listed = await call(client, "relay_list_pipelines", repo=str(repo))
        assert listed["pipelines"][0]["commands"] == ["build · verify[0]: touch pwned"]
        text = await call_error(client, "relay_run_pipeline", name_or_file="checked",
                                repo=str(repo))
        assert "nobody has accepted yet" in text
        assert "$ checked · build · verify[0]: touch pwned" in text
        assert "relay-cli pipeline trust checked" in text
        assert (await call(client, "relay_list_sessions"))["sessions"] == []
    engine = await Engine.open(load_config())  # the user accepts this version of the file
    try:
        await engine.pipelines.trust(trust.read_source(path))
    finally:
        await engine.close()
    async with relay_mcp(**leave) as client:
        started = await call(client, "relay_run_pipeline", name_or_file="checked",
                              repo=str(repo))
        run = await call(client, "relay_pipeline_status", run_id=started["id"], wait_s=120)
        assert run["state"] == "succeeded", run
