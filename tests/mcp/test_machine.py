"""Detected agents, the wallet (never a secret) and pipeline runs through the real server."""

from __future__ import annotations

import json
from pathlib import Path

from relay.core.config import load_config
from relay.engine.engine import Engine
from relay.pipelines import files, trust
from tests.cli.test_pipeline_cli import THREE
from tests.conftest import make_repo
from tests.detect.test_service import LIMITED, claude_folder
from tests.mcp.conftest import Server, as_json, call, call_error, text_of

API_KEY = "sk-ant-api03-" + "Zq8xW2vN5mK7pL1rT4yU6iO9aS3dF0gH" * 3 + "-AAAA"


async def test_detected_agents_and_the_wallet_without_any_secret(
        relay_mcp: Server, tmp_path: Path, vault_env: None) -> None:
    repo = make_repo(tmp_path / "repo")
    engine = await Engine.open(load_config())
    try:
        await engine.accounts.add("claude", "work", claude_folder(tmp_path, repo))
        await engine.accounts.add("claude", "api", None, auth_kind="api_key", api_key=API_KEY)
    finally:
        await engine.close()
    async with relay_mcp() as client:
        found = await client.call_tool("relay_detected_agents", {"all_sessions": True})
        report = found.structured_content
        assert report is not None
        limited = next(a for a in report["agents"] if a["agent_session_id"] == LIMITED)
        assert limited["id"] == f"claude:{LIMITED}"
        assert (limited["account"], limited["state"], limited["repo"]) == (
            "claude:work", "blocked", str(repo))
        assert "limit" in limited["why"]
        assert f"claude:{LIMITED}" in text_of(found)

        wallet = await client.call_tool("relay_wallet_summary", {})
        summary = wallet.structured_content
        assert summary is not None
        entries = {a["entry"]: a for a in summary["accounts"]}
        assert {"claude:work", "claude:api"} <= set(entries)
        assert entries["claude:api"]["auth_kind"] == "api_key"
        assert "claude:api — claude · API key" in text_of(wallet)
        for result in (found, wallet):
            shown = text_of(result) + as_json(result.structured_content or {})
            assert API_KEY not in shown
            assert API_KEY[14:40] not in shown


async def test_a_pipeline_runs_from_the_repository_and_reports_its_steps(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    source = tmp_path / "ship.json"
    source.write_text(json.dumps(THREE))
    for pipeline in files.read_file(source):
        files.save(repo, pipeline)
    async with relay_mcp() as client:
        listed = await call(client, "relay_list_pipelines", repo=str(repo))
        assert listed["pipelines"] == [{"name": "ship", "description": "",
                                        "steps": ["plan", "implement", "review"], "problems": [],
                                        "commands": []}]
        started = await call(client, "relay_run_pipeline", name_or_file="ship", repo=str(repo),
                             concurrency=2)
        assert started["name"] == "ship"
        assert started["simulated_steps"] == ["plan", "implement", "review"]
        run = await call(client, "relay_pipeline_status", run_id=started["id"][:6], wait_s=120)
        assert run["state"] == "succeeded", run
        assert [(s["id"], s["state"]) for s in run["steps"]] == [
            ("plan", "succeeded"), ("implement", "succeeded"), ("review", "succeeded")]
        assert run["steps"][2]["files"] == ["RELAY_DEMO_NOTES.md"]
        assert run["result_branch"] == f"relay/pipeline-{run['id']}"
        assert all(s["session_id"] for s in run["steps"])
        # each step is a session the window lists too
        sessions = await call(client, "relay_list_sessions")
        assert {s["id"] for s in sessions["sessions"]} == {s["session_id"] for s in run["steps"]}
        assert "No pipeline" in await call_error(client, "relay_run_pipeline",
                                                 name_or_file="nope", repo=str(repo))


async def test_a_pipeline_file_relative_to_the_repository_and_a_failing_step(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "red.json").write_text(json.dumps({"name": "red", "nodes": [
        {"id": "build", "provider": "demo", "task": "x", "verify": ["false"]},
        {"id": "after", "provider": "demo", "task": "y", "dependsOn": ["build"]}]}))
    engine = await Engine.open(load_config())  # the user accepted its `false` beforehand
    try:
        await engine.pipelines.trust(trust.read_source(repo / "red.json"))
    finally:
        await engine.close()
    async with relay_mcp(RELAY_MCP_REQUIRE_APPROVAL="0") as client:  # its verify runs a command
        started = await call(client, "relay_run_pipeline", name_or_file="red.json",
                             repo=str(repo))
        run = await call(client, "relay_pipeline_status", run_id=started["id"], wait_s=120)
        assert run["state"] == "failed"
        assert [(s["id"], s["state"]) for s in run["steps"]] == [
            ("build", "failed"), ("after", "skipped")]
        assert run["result_branch"] is None
