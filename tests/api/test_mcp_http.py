"""MCP over Streamable HTTP at the host's ``/mcp``, spoken to by the official SDK's client over a
real socket: the same tools as ``relay-cli mcp``, sessions that outlive the client, the gate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from relay.api.mcp_mount import MCP_PATH
from tests.api.conftest import Served
from tests.mcp.conftest import call
from tests.mcp.test_protocol import TOOLS

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    """The SDK's streamable-HTTP client, initialised, with the host's token."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http, \
            streamable_http_client(url + MCP_PATH, http_client=http) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=120) as session:
        await session.initialize()
        yield session


@pytest.fixture
def slow_demo(relay_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A demo session that is still running when the client closes (set before the host)."""
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.2")


async def test_a_session_an_mcp_client_starts_over_http_outlives_the_client(
        slow_demo: None, served: Served, git_repo: Path) -> None:
    async with mcp_session(served.host.url, served.token) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names >= TOOLS
        started = await call(session, "relay_start_session", task="over http",
                             repo=str(git_repo), chain=["demo"])
        session_id = started["session"]["id"]
        assert (await served.engine.get_session(session_id)).state in {"pending", "starting",
                                                                        "running"}
    # the client is gone (its MCP session deleted); the host still runs the Relay session
    assert served.engine.is_running_here(session_id)
    row = await served.engine.wait_finished(session_id, 120)
    assert row.state == "completed"
    assert (await served.client.get_session(session_id)).state == "completed"


async def test_many_mcp_clients_share_one_server(served: Served) -> None:
    async with mcp_session(served.host.url, served.token) as first, \
            mcp_session(served.host.url, served.token) as second:
        assert await call(first, "relay_list_sessions") == {"sessions": []}
        assert await call(second, "relay_list_sessions") == {"sessions": []}


async def test_mcp_is_behind_the_gate(served: Served) -> None:
    url = served.host.url + MCP_PATH
    async with httpx.AsyncClient(trust_env=False) as http:
        anonymous = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["code"] == "unauthorized"
        wrong = await http.post(url, json=INITIALIZE,
                                headers={**MCP_HEADERS, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        auth = {**MCP_HEADERS, "Authorization": f"Bearer {served.token}"}
        rebound = await http.post(url, json=INITIALIZE, headers={**auth, "Host": "evil.example"})
        assert rebound.status_code == 421
        assert rebound.json()["error"]["code"] == "bad_host"
        page = await http.post(url, json=INITIALIZE,
                               headers={**auth, "Origin": "http://127.0.0.1:3000"})
        assert page.status_code == 403
        # the same request with the token is MCP's answer, at /mcp itself (no redirect)
        hello = await http.post(url, json=INITIALIZE, headers=auth)
        assert hello.status_code == 200, hello.text
        assert "mcp-session-id" in hello.headers
