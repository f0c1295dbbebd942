"""The board tools, called by the official SDK's MCP client over Streamable HTTP at a real
host's ``/mcp``: an agent creates its task, links its session, moves it, reports, records a
decision, reads the owner's comments and acknowledges them — and the owner sees each change
through the host's API."""

from __future__ import annotations

import uuid
from pathlib import Path

from relay.board.model import TOOL_NAMES
from relay.mcp.board_tools import BoardTools
from tests.api import conftest as api
from tests.api.conftest import Served
from tests.api.test_mcp_http import mcp_session
from tests.mcp.conftest import call, call_error, error_of

#: the host of tests/api (an engine served on a real socket, and its client)
served = api.served

BOARD_TOOLS = set(TOOL_NAMES)


async def test_the_tools_are_listed_with_what_agents_read(served: Served) -> None:
    async with mcp_session(served.host.url, served.token) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    # exactly the names setup claude allows in Claude Code
    assert {name for name in listed if name.startswith("board_")} == BOARD_TOOLS
    for name in BOARD_TOOLS:
        tool = listed[name]
        assert tool.description is not None, name
        assert len(tool.description) > 80, name
        assert tool.output_schema is not None, name
    create = listed["board_task_create"].input_schema
    assert create["required"] == ["title"]
    assert {"repo", "project", "stage", "next_step", "session_id"} <= set(create["properties"])
    stages = listed["board_set_stage"].input_schema["properties"]["stage"]
    assert stages["enum"] == ["plan", "dev", "review", "test", "live", "done"]
    assert listed["board_projects"].annotations.read_only_hint  # type: ignore[union-attr]
    assert not listed["board_report"].annotations.read_only_hint  # type: ignore[union-attr]
    # every board tool is guarded (errors as results, scrubbed)
    assert all(getattr(getattr(BoardTools, attr), "relay_guarded", False)
               for attr in ("projects", "tasks", "task_create", "task_update", "set_stage",
                            "report", "decision", "comments", "ack_comments", "link"))


async def test_an_agent_keeps_its_task_on_the_board(served: Served, git_repo: Path) -> None:
    me = str(uuid.uuid4())
    owner = served.client.board
    async with mcp_session(served.host.url, served.token) as agent:
        created = await call(agent, "board_task_create", title="add a greeting",
                             repo=str(git_repo), next_step="write hello.py", session_id=me)
        key = created["task"]["key"]
        assert created["task"]["stage"] == "plan"
        detail = await owner.task(key)
        assert [s.session_ref for s in detail.card.sessions] == [me]  # linked at creation

        slug = detail.card.task.project
        projects = await call(agent, "board_projects")
        assert [p["slug"] for p in projects["projects"]] == [slug]
        assert key in {c["task"]["key"] for c in (await call(agent, "board_tasks"))["cards"]}

        moved = await call(agent, "board_set_stage", key=key, stage="dev", note="on it",
                           session_id=me)
        assert moved["task"]["stage"] == "dev"
        assert (await owner.task(key)).card.task.stage == "dev"  # the owner sees it move
        updated = await call(agent, "board_task_update", key=key, waiting_on="nothing yet",
                             expected_version=moved["task"]["version"], session_id=me)
        assert updated["task"]["waiting_on"] == "nothing yet"
        stale = await agent.call_tool("board_task_update", {
            "key": key, "title": "again", "expected_version": moved["task"]["version"]})
        assert error_of(stale)["code"] == "version_conflict"

        reported = await call(agent, "board_report", key=key, summary="hello.py written",
                              body="prints hello", session_id=me)
        assert reported["report"]["summary"] == "hello.py written"
        decided = await call(agent, "board_decision", key=key, text="print, not logging",
                             session_id=me)
        assert decided["decision"]["text"] == "print, not logging"
        shown = await owner.task(key)
        assert shown.card.last_report is not None
        assert shown.card.last_report.author == f"agent:{me}"
        assert [d.decided_by for d in shown.decisions] == [f"agent:{me}"]

        said = await owner.comment(key, "say goodbye too")
        unread = await call(agent, "board_comments", key=key, unread=True)
        assert [c["id"] for c in unread["comments"]] == [said.id]
        acked = await call(agent, "board_ack_comments", key=key, ids=[said.id], session_id=me)
        assert acked["acked"] == 1
        assert (await call(agent, "board_comments", key=key, unread=True))["comments"] == []

        other = str(uuid.uuid4())
        linked = await call(agent, "board_link", key=key, session_id=other)
        assert linked["link"]["session_ref"] == other
        assert {s.session_ref for s in (await owner.task(key)).card.sessions} == {me, other}


async def test_refusals_are_error_results(served: Served, git_repo: Path) -> None:
    async with mcp_session(served.host.url, served.token) as agent:
        text = await call_error(agent, "board_set_stage", key="NOPE-1", stage="dev")
        assert "NOPE-1" in text
        assert error_of(await agent.call_tool("board_comments", {"key": "NOPE-1"}))["code"] == \
            "task_not_found"
        neither = await call_error(agent, "board_task_create", title="where?")
        assert "repo" in neither
        both = await call_error(agent, "board_task_create", title="twice", repo=str(git_repo),
                                project="x")
        assert "one of them" in both
        bad_stage = await agent.call_tool("board_set_stage", {"key": "NOPE-1",
                                                              "stage": "shipping"})
        assert bad_stage.is_error
        nothing = await call_error(agent, "board_task_update", key="NOPE-1")
        assert "Nothing to update" in nothing
