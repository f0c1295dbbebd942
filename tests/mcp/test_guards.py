"""What an MCP client may make Relay do: each tool's hints say it honestly, a session or a run
starts only in a repository of the user's own, and commands run only when the user allows
MCP clients to run them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from mcp.types import ToolAnnotations

from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error, error_of, text_of

#: (readOnly, destructive, idempotent, openWorld) for what each tool does
READS = (True, False, True, False)  # changes nothing a user owns (derived indexes may catch up)
RUNS_AGENTS = (False, True, False, True)  # an agent edits a worktree, runs commands, calls out
STOPS = (False, True, True, False)  # stops an agent (what it was doing is cut short)
BOARD_WRITES = (False, False, False, False)  # a change to Relay's board, nothing else
HINTS = {
    "relay_start_session": RUNS_AGENTS,  # an agent, and the verify commands given
    "relay_list_sessions": READS,
    "relay_session_events": READS,
    "relay_wait_session": READS,
    "relay_handoff": RUNS_AGENTS,  # the next agent goes on in the worktree
    "relay_stop_session": STOPS,
    "relay_detected_agents": READS,
    "relay_wallet_summary": READS,  # refresh reads transcripts into Relay's usage index
    "relay_list_pipelines": READS,
    "relay_run_pipeline": RUNS_AGENTS,  # a session per step, each step's verify commands
    "relay_pipeline_status": READS,
    "relay_session_history": READS,
    "relay_diff": READS,
    "relay_rewind": RUNS_AGENTS,  # continue_session sets the agent working from the snapshot
    "relay_review_comment": RUNS_AGENTS,  # the comment is the agent's next instruction
    "relay_retrieve": READS,  # indexes what is new into Relay's own knowledge index first
    "relay_open_questions": READS,
    "relay_answer": RUNS_AGENTS,  # allowing a tool call lets the agent make it
    "board_projects": READS,
    "board_tasks": READS,
    "board_comments": READS,
    # the board's own records only: no repository, no command, nothing lost
    "board_task_create": BOARD_WRITES,
    "board_task_update": BOARD_WRITES,
    "board_set_stage": BOARD_WRITES,
    "board_report": BOARD_WRITES,
    "board_decision": BOARD_WRITES,
    "board_ack_comments": BOARD_WRITES,
    "board_link": BOARD_WRITES,
    "say_to_session": RUNS_AGENTS,  # a follow-up sets the agent working again
    "session_messages": READS,
    "interrupt_session": STOPS,  # the turn is cut short (the session stays)
    "fork_session": RUNS_AGENTS,  # a new session's agent works in its new worktree
}


def hints(annotations: ToolAnnotations | None) -> tuple[bool | None, ...]:
    assert annotations is not None
    return (
        annotations.read_only_hint,
        annotations.destructive_hint,
        annotations.idempotent_hint,
        annotations.open_world_hint,
    )


async def test_every_tool_says_honestly_what_it_does(relay_mcp: Server) -> None:
    async with relay_mcp() as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == set(HINTS)  # a new tool is classified here before it ships
    wrong = {
        name: hints(tool.annotations)
        for name, tool in listed.items()
        if hints(tool.annotations) != HINTS[name]
    }
    assert wrong == {}
    # a tool that takes commands to run never claims to be harmless
    for name, tool in listed.items():
        if "verify" in tool.input_schema["properties"] or name == "relay_run_pipeline":
            assert hints(tool.annotations)[:2] == (False, True), name


@pytest.mark.parametrize("where", ["root", "temp", "home", "data"])
async def test_a_session_or_run_where_no_one_works_is_refused_with_nothing_created(
    relay_mcp: Server, relay_home: Path, tmp_path: Path, where: str
) -> None:
    folder = {
        "root": Path("/"),
        "temp": Path(tempfile.gettempdir()),
        "home": tmp_path / "user-home",  # the server's HOME (conftest.server_params)
        "data": relay_home,
    }[where]
    folder.mkdir(exist_ok=True)
    async with relay_mcp() as client:
        refused = await client.call_tool(
            "relay_start_session", {"task": "x", "repo": str(folder), "chain": ["demo"]}
        )
        error = error_of(refused)
        assert error["code"] == "unsafe_repository"
        assert f"{folder.resolve()} is " in error["message"]
        assert "no session starts there" in error["message"]
        assert error["hint"] == "Pass the path of your project's git repository."
        run = error_of(
            await client.call_tool("relay_run_pipeline", {"name_or_file": "ship", "repo": str(folder)})
        )
        assert run["code"] in ("unsafe_repository", "pipeline")  # no pipeline file there either
        assert (await call(client, "relay_list_sessions"))["sessions"] == []
    assert not (relay_home / "worktrees").exists() or not any((relay_home / "worktrees").iterdir())


async def test_verify_commands_need_the_users_leave(
    relay_mcp: Server, tmp_path: Path, relay_home: Path
) -> None:
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "ran"
    command = f"touch {marker}"
    (repo / "check.json").write_text(
        json.dumps(
            {
                "name": "check",
                "nodes": [{"id": "build", "provider": "demo", "task": "x", "verify": [command]}],
            }
        )
    )
    async with relay_mcp() as client:
        refused = await client.call_tool(
            "relay_start_session", {"task": "x", "repo": str(repo), "chain": ["demo"], "verify": [command]}
        )
        error = error_of(refused)
        assert error["code"] == "approval_required"
        assert f"would run 1 command(s) (touch {marker})" in error["message"]
        assert "mcp_require_approval = false in " + str(relay_home / "relay.toml") in error["hint"]
        assert "RELAY_MCP_REQUIRE_APPROVAL=0" in text_of(refused)
        pipeline = await call_error(
            client, "relay_run_pipeline", name_or_file="check.json", repo=str(repo)
        )
        assert "This pipeline would run 1 command(s)" in pipeline
        assert (await call(client, "relay_list_sessions"))["sessions"] == []
        # without commands nothing needs leave
        plain = await call(client, "relay_start_session", task="x", repo=str(repo), chain=["demo"])
        assert (await call(client, "relay_wait_session", session_id=plain["session"]["id"], timeout_s=120))[
            "session"
        ]["state"] == "completed"
    assert not marker.exists()
    (relay_home / "relay.toml").write_text("mcp_require_approval = false\n")
    async with relay_mcp() as client:
        started = await call(
            client, "relay_start_session", task="x", repo=str(repo), chain=["demo"], verify=[command]
        )
        done = await call(client, "relay_wait_session", session_id=started["session"]["id"], timeout_s=120)
        assert done["session"]["state"] == "completed"
    assert marker.exists()
