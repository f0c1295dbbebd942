"""The talk tools, called by the official SDK's MCP client over Streamable HTTP at a real
host's ``/mcp``: a message queued for a busy session's next turn (and delivered once),
the queue read back, a turn interrupted, a session forked — each what ``engine.talk`` says."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.mcp.talk_tools import TalkTools
from tests.api import conftest as api
from tests.api.conftest import Served
from tests.api.test_mcp_http import mcp_session
from tests.api.test_talk_api import asking, finished, wait_delivered
from tests.mcp.conftest import call, call_error, error_of

#: the host of tests/api (an engine served on a real socket, and its client)
served = api.served

TALK_TOOLS = {"say_to_session", "session_messages", "interrupt_session", "fork_session"}


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0")


async def test_the_talk_tools_are_listed_with_what_agents_read(served: Served) -> None:
    async with mcp_session(served.host.url, served.token) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
    assert set(listed) >= TALK_TOOLS
    for name in TALK_TOOLS:
        assert listed[name].description is not None, name
        assert len(listed[name].description or "") > 80, name
        assert listed[name].output_schema is not None, name
    say = listed["say_to_session"].input_schema
    assert sorted(say["required"]) == ["session_id", "text"]
    assert say["properties"]["mode"]["enum"] == ["queue", "now", "interrupt"]
    assert all(getattr(getattr(TalkTools, attr), "relay_guarded", False)
               for attr in ("say", "messages", "interrupt", "fork"))


async def test_an_mcp_client_talks_to_a_busy_session(served: Served, git_repo: Path) -> None:
    sid, question = await asking(served, git_repo)
    async with mcp_session(served.host.url, served.token) as client:
        said = await call(client, "say_to_session", session_id=sid[:8],
                          text="also add a changelog")
        message = said["message"]
        assert (message["session_id"], message["state"], message["source"]) == (
            sid, "queued", "mcp")
        queued = await call(client, "session_messages", session_id=sid)
        assert [m["id"] for m in queued["messages"]] == [message["id"]]
        assert queued["messages"] == [m.model_dump(mode="json")
                                      for m in await served.engine.talk.messages(sid)]

        await served.client.answer_input(sid, question.request_id, "allow")
        await wait_delivered(served, sid, message["id"])
        assert (await served.client.wait_session(sid)).state == "completed"
        assert (await call(client, "session_messages", session_id=sid))["messages"] == []
        every = await call(client, "session_messages", session_id=sid, all_messages=True)
        assert [m["state"] for m in every["messages"]] == ["delivered"]

        missing = await client.call_tool("say_to_session", {"session_id": "nosuchsession",
                                                            "text": "hello"})
        assert error_of(missing)["code"] == "session_not_found"
        assert "relay_list_sessions" in await call_error(client, "session_messages",
                                                         session_id="nosuchsession")


async def test_interrupt_and_fork_over_mcp(served: Served, git_repo: Path) -> None:
    sid, _question = await asking(served, git_repo)
    parent = await finished(served, git_repo)
    async with mcp_session(served.host.url, served.token) as client:
        stopped = await call(client, "interrupt_session", session_id=sid)
        assert stopped["session_id"] == sid
        assert stopped["message"]
        assert (await served.client.wait_session(sid)).state == "interrupted"

        forked = (await call(client, "fork_session", session_id=parent,
                             prompt="the same, elsewhere"))["fork"]
        assert forked["parent_id"] == parent
        assert forked["session_id"] != parent
    row = await served.client.wait_session(forked["session_id"])
    assert row.state == "completed", row.reason
