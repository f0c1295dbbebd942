"""MCP results' one scrubbing point (``mcp/results.py``: ``guarded``), and every tool uses it.

Structural: every tool ``build_server`` registers is a ``guarded`` function, so a tool added
later without it fails here. Behavioural: a guarded tool that returns a secret — in its
text, its structured content or its error — answers the marker.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.engine.engine import Engine
from relay.mcp.results import guarded, ok
from relay.mcp.server import build_server

SECRET = "sk-ant-api03-" + secrets.token_urlsafe(60)


async def test_every_tool_is_guarded(relay_home: Path) -> None:
    engine = await Engine.open(load_config())
    try:
        server = build_server(engine)
        tools = server._tool_manager.list_tools()
    finally:
        await engine.close()
    assert len(tools) >= 15
    assert [t.name for t in tools if not getattr(t.fn, "relay_guarded", False)] == []


class _Out(BaseModel):
    task: str


async def test_what_a_guarded_tool_returns_or_raises_is_scrubbed() -> None:
    @guarded
    async def leaky() -> CallToolResult:
        return ok(_Out(task=f"use {SECRET}"), f"task: {SECRET}")

    @guarded
    async def failing() -> CallToolResult:
        raise RelayError(f"bad key {SECRET}", f"rotate {SECRET}")

    for result in (await leaky(), await failing()):
        text = repr(result.model_dump())
        assert SECRET not in text
        assert "[REDACTED:anthropic_key]" in text
        assert isinstance(result.content[0], TextContent)
