"""Claude's permission prompt through Relay's bridge: the real ``permission-bridge`` MCP
server (driven by the official SDK's stdio client) against the adapter's socket broker."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from relay.cli.permission_cmd import NO_RELAY
from relay.core.events import InputWithdrawn, NeedsInput, Notice
from relay.core.models import PermissionPolicy
from relay.runtimes.base import RunRequest
from relay.runtimes.claude_permission import (
    DENIED_BY_USER,
    PROMPT_TOOL,
    STOPPED,
    PermissionBroker,
    bridge_command,
    describe,
    wants_bridge,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the bridge is Unix only")


@asynccontextmanager
async def bridge(command: Sequence[str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=command[0], args=list(command[1:]))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


@asynccontextmanager
async def broker_running() -> AsyncIterator[tuple[PermissionBroker, Path]]:
    broker = PermissionBroker()
    path = await broker.start()
    try:
        yield broker, path
    finally:
        await broker.close()


def decision(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error
    assert len(result.content) == 1  # Claude refuses anything but one text block
    block = result.content[0]
    assert isinstance(block, TextContent)
    parsed: dict[str, Any] = json.loads(block.text)
    return parsed


async def next_event(broker: PermissionBroker) -> Any:
    return await asyncio.wait_for(broker.events.get(), 30)


def call(client: ClientSession, tool: str, tool_input: dict[str, Any],
         tool_use_id: str) -> asyncio.Task[CallToolResult]:
    return asyncio.ensure_future(client.call_tool("approve", {
        "tool_name": tool, "input": tool_input, "tool_use_id": tool_use_id}))


WRITE = {"file_path": "/repo/notes.md", "content": "hello\n"}


@pytest.mark.parametrize("entry", ["direct", "relay-cli"])
async def test_a_call_becomes_a_question_and_the_answer_its_result(entry: str) -> None:
    async with broker_running() as (broker, path):
        command = bridge_command(path) if entry == "direct" else [
            sys.executable, "-m", "relay.cli.main", "permission-bridge", "--socket", str(path)]
        async with bridge(command) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["approve"]
            assert set(tools[0].input_schema["properties"]) == {"tool_name", "input",
                                                                "tool_use_id"}
            pending = call(client, "Write", WRITE, "toolu_1")
            question = await next_event(broker)
            assert isinstance(question, NeedsInput)
            assert (question.request_id, question.about, question.tool, question.read_only) == (
                "toolu_1", "permission", "Write", False)
            assert question.prompt == "Allow Write to create or overwrite /repo/notes.md?"
            assert [(o.id, o.kind) for o in question.options] == [
                ("allow", "allow_once"), ("allow_always", "allow_always"),
                ("reject", "reject_once")]
            assert not pending.done()  # Claude waits for the answer
            await broker.answer("toolu_1", "allow")
            assert decision(await pending) == {"behavior": "allow", "updatedInput": WRITE}

            pending = call(client, "Bash", {"command": "rm -rf build"}, "toolu_2")
            assert (await next_event(broker)).request_id == "toolu_2"
            await broker.answer("toolu_2", "reject")
            assert decision(await pending) == {"behavior": "deny", "message": DENIED_BY_USER}
            with pytest.raises(Exception, match="not waiting for an answer to toolu_2"):
                await broker.answer("toolu_2", "allow")


async def test_allow_always_is_remembered_for_the_run() -> None:
    async with broker_running() as (broker, path), bridge(bridge_command(path)) as client:
        pending = call(client, "Edit", WRITE, "toolu_1")
        await next_event(broker)
        await broker.answer("toolu_1", "allow_always")
        assert decision(await pending)["behavior"] == "allow"

        again = decision(await call(client, "Edit", {"file_path": "/repo/b.md"}, "toolu_2"))
        assert again == {"behavior": "allow", "updatedInput": {"file_path": "/repo/b.md"}}
        notice = await next_event(broker)
        assert isinstance(notice, Notice)
        assert "Edit" in notice.message
        pending = call(client, "Write", WRITE, "toolu_3")  # another tool still asks
        assert isinstance(await next_event(broker), NeedsInput)
        await broker.answer("toolu_3", "reject", text="not that file")
        assert decision(await pending) == {"behavior": "deny", "message": "not that file"}


async def test_stopping_denies_open_calls_and_withdraws_them() -> None:
    async with broker_running() as (broker, path), bridge(bridge_command(path)) as client:
        pending = call(client, "Write", WRITE, "toolu_1")
        await next_event(broker)
        assert await broker.deny_all() == ["toolu_1"]
        assert decision(await pending) == {"behavior": "deny", "message": STOPPED}
        withdrawn = await next_event(broker)
        assert isinstance(withdrawn, InputWithdrawn)
        assert withdrawn.request_id == "toolu_1"
        # after the stop nothing is asked any more
        assert decision(await call(client, "Write", WRITE, "toolu_2"))["behavior"] == "deny"
        assert broker.events.empty()


async def test_without_relay_every_call_is_denied(tmp_path: Path) -> None:
    async with bridge(bridge_command(tmp_path / "nobody-listens")) as client:
        result = decision(await call(client, "Write", WRITE, "toolu_1"))
    assert result == {"behavior": "deny", "message": NO_RELAY}


async def test_a_bridge_that_goes_away_withdraws_its_question() -> None:
    async with broker_running() as (broker, path):
        async with bridge(bridge_command(path)) as client:
            call(client, "Write", WRITE, "toolu_1")
            assert isinstance(await next_event(broker), NeedsInput)
        withdrawn = await next_event(broker)  # the bridge process ended with the call open
        assert isinstance(withdrawn, InputWithdrawn)
        assert withdrawn.request_id == "toolu_1"
        assert broker.open_calls == 0


async def test_the_socket_is_private_and_removed() -> None:
    async with broker_running() as (broker, path):
        folder = path.parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_ISSOCK(path.stat().st_mode)
        flags = broker.claude_flags(path)
        assert flags[2:] == ["--permission-prompt-tool", PROMPT_TOOL]
        server = json.loads(flags[1])["mcpServers"]["relay_approval"]
        assert server["alwaysLoad"] is True
        assert [server["command"], *server["args"]] == bridge_command(path)
    assert not folder.exists()


@pytest.mark.parametrize(("approvals", "permission", "asks"), [
    ("ask", PermissionPolicy.READ_ONLY, True),
    ("read_only", PermissionPolicy.WORKSPACE, True),
    ("deny", PermissionPolicy.READ_ONLY, False),       # the same answer without a bridge
    ("ask", PermissionPolicy.FULL, False),             # bypassPermissions never asks
    (None, PermissionPolicy.READ_ONLY, False),         # no policy to answer
])
def test_when_claude_asks(approvals: str | None, permission: PermissionPolicy, asks: bool,
                          tmp_path: Path) -> None:
    options = {} if approvals is None else {"approvals": approvals}
    request = RunRequest(prompt="p", cwd=tmp_path, permission=permission, options=options)
    assert wants_bridge(request) is asks


def test_questions_read_well() -> None:
    assert describe("Bash", {"command": "git push"}) == "Allow Bash to run: git push?"
    assert describe("Grep", {"pattern": "TODO"}) == "Allow Grep on TODO?"
    assert describe("mcp__x__y", {"a": 1}) == 'Allow mcp__x__y with {"a": 1}?'
