"""An MCP client from the official SDK driving the real ``relay-cli mcp`` in a subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

#: the virtualenv's relay-cli (the console script a user's MCP client starts)
RELAY_CLI = Path(sys.executable).with_name("relay-cli")
VAULT_PASSPHRASE = "test-vault-passphrase"  # what conftest.vault_env unlocks with

Server = Callable[..., AbstractAsyncContextManager[ClientSession]]


def server_params(relay_home: Path, tmp_path: Path, **env: str) -> StdioServerParameters:
    """``relay-cli mcp`` on the test's data folder, with its own HOME (no user's transcripts)."""
    command, args = (str(RELAY_CLI), ["mcp"]) if RELAY_CLI.exists() else (
        sys.executable, ["-m", "relay.cli.main", "mcp"])
    home = tmp_path / "user-home"
    home.mkdir(exist_ok=True)
    return StdioServerParameters(command=command, args=args, env={
        "HOME": str(home), "RELAY_HOME": str(relay_home), "RELAY_DEMO_STEP_DELAY": "0",
        "RELAY_PORT": "0",  # hosting here (no host runs): any free port, never a user's
        "RELAY_WALLET_DEFAULT_FOLDERS": "0",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "RELAY_VAULT_PASSPHRASE": VAULT_PASSPHRASE, **_import_path(), **env})


def _import_path() -> dict[str, str]:
    """The test run's PYTHONPATH: the server imports the Relay under test, not the install."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": path} if path else {}


@pytest.fixture
def server_log(tmp_path: Path) -> Path:
    """What the server wrote to stderr (its log)."""
    return tmp_path / "relay-mcp-stderr.log"


@pytest.fixture
def relay_mcp(relay_home: Path, tmp_path: Path, server_log: Path) -> Server:
    """``async with relay_mcp(**env) as client:`` — an initialised session with the server."""

    @asynccontextmanager
    async def start(**env: str) -> AsyncIterator[ClientSession]:
        params = server_params(relay_home, tmp_path, **env)
        with server_log.open("a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=120) as client:
                await client.initialize()
                yield client
        assert "Traceback" not in server_log.read_text(encoding="utf-8")

    return start


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def data_of(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a successful call (fails the test on an error result)."""
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert isinstance(data, dict)
    return data


async def call(client: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    return data_of(await client.call_tool(tool, arguments))


async def call_error(client: ClientSession, tool: str, **arguments: Any) -> str:
    """The text of an error result (fails the test when the call succeeds)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {text_of(result)}"
    text = text_of(result)
    error = error_of(result)
    assert text == (f"{error['message']}\n→ {error['hint']}" if error["hint"] else error["message"])
    return text


def error_of(result: CallToolResult) -> dict[str, Any]:
    """An error result's JSON: ``{"code", "message", "hint"}``, nothing else."""
    assert result.is_error
    data = result.structured_content
    assert isinstance(data, dict)
    assert set(data) == {"error"}
    assert set(data["error"]) == {"code", "message", "hint"}
    assert isinstance(data["error"]["code"], str)
    return dict(data["error"])


def as_json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False)
