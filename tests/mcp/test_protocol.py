"""The server as an MCP client sees it: the tool list, errors as results, both protocol
generations, a clean stdout."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from mcp import Client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from relay.runtimes.registry import available_runtimes
from tests.conftest import make_repo
from tests.mcp.conftest import Server, call, call_error, server_params, text_of

TOOLS = {"relay_start_session", "relay_list_sessions", "relay_session_events",
         "relay_wait_session", "relay_handoff", "relay_stop_session", "relay_detected_agents",
         "relay_wallet_summary", "relay_list_pipelines", "relay_run_pipeline",
         "relay_pipeline_status", "relay_session_history", "relay_diff", "relay_rewind",
         "relay_review_comment", "relay_retrieve"}
#: the talk tools (issue 22) are named as the spec names them, without the prefix
TALK_TOOLS = {"say_to_session", "session_messages", "interrupt_session", "fork_session"}


async def test_every_tool_is_listed_with_a_description_and_typed_schemas(relay_mcp: Server) -> None:
    async with relay_mcp() as client:
        listed = (await client.list_tools()).tools
    by_name = {t.name: t for t in listed}
    assert set(by_name) >= TOOLS
    assert all(name.startswith(("relay_", "board_")) or name in TALK_TOOLS for name in by_name)
    for tool in listed:
        assert tool.description is not None, tool.name
        assert len(tool.description) > 40, tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.input_schema["type"] == "object"
    start = by_name["relay_start_session"].input_schema
    assert sorted(start["required"]) == ["chain", "repo", "task"]
    assert start["properties"]["chain"]["type"] == "array"
    assert all(name in start["properties"]["chain"]["description"] for name in available_runtimes())
    assert start["properties"]["permission"]["enum"] == ["read_only", "workspace", "full"]
    assert by_name["relay_session_events"].input_schema["properties"]["limit"]["maximum"] == 500
    assert by_name["relay_list_sessions"].annotations is not None
    assert by_name["relay_list_sessions"].annotations.read_only_hint is True
    assert by_name["relay_stop_session"].annotations is not None
    assert by_name["relay_stop_session"].annotations.destructive_hint is True


async def test_bad_requests_are_error_results_and_the_server_keeps_serving(
        relay_mcp: Server, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    async with relay_mcp() as client:
        unknown = await call_error(client, "relay_session_events", session_id="nope")
        assert "No session 'nope'." in unknown
        assert "relay_list_sessions" in unknown
        assert "No session 'zzz'." in await call_error(client, "relay_wait_session",
                                                       session_id="zzz", timeout_s=1)
        assert "No session" in await call_error(client, "relay_stop_session", session_id="zzz")
        assert "No session" in await call_error(client, "relay_handoff", session_id="zzz")
        relative = await call_error(client, "relay_start_session", task="x", repo="repo",
                                    chain=["demo"])
        assert "'repo' is not an absolute path." in relative
        runtime = await call_error(client, "relay_start_session", task="x", repo=str(repo),
                                   chain=["nosuch"])
        assert "Unknown runtime 'nosuch'." in runtime
        assert "Choose one of: " in runtime
        colon = await call_error(client, "relay_start_session", task="x", repo=str(repo),
                                 chain=["claude:"])
        assert "'claude:' is not a runtime[:account] entry." in colon
        quote = await call_error(client, "relay_start_session", task="x", repo=str(repo),
                                 chain=["demo"], verify=["pytest 'unclosed"])
        assert "Cannot read the verify command" in quote
        folder = await call_error(client, "relay_start_session", task="x",
                                  repo=str(tmp_path / "missing"), chain=["demo"])
        assert "is not a folder" in folder
        typed = await client.call_tool("relay_list_sessions", {"limit": 0})
        assert typed.is_error
        assert "limit" in text_of(typed)
        assert "No pipeline run nope." in await call_error(client, "relay_pipeline_status",
                                                            run_id="nope")
        # nothing of that was started, and the server still answers
        assert (await call(client, "relay_list_sessions"))["sessions"] == []


async def test_a_modern_client_discovers_the_server_too(relay_home: Path, tmp_path: Path) -> None:
    """The SDK's ``Client`` negotiates (server/discover, else the initialize handshake)."""
    async with Client(server_params(relay_home, tmp_path), read_timeout_seconds=120) as client:
        assert client.session.protocol_version in MODERN_PROTOCOL_VERSIONS  # not the fallback
        names = {t.name for t in (await client.list_tools()).tools}
        assert names >= TOOLS
        result = await client.call_tool("relay_list_sessions", {"limit": 3})
        assert not result.is_error
        assert result.structured_content == {"sessions": []}


def test_stdout_carries_only_protocol_frames(relay_home: Path, tmp_path: Path) -> None:
    """A raw client: every stdout line is a JSON-RPC frame; the log is on stderr."""
    params = server_params(relay_home, tmp_path)
    # the debug log goes to a file: a pipe nobody reads until the end holds 64 KiB, and a
    # server blocked writing its log would never answer
    errors = (tmp_path / "mcp-stderr.txt").open("w+", encoding="utf-8")
    proc = subprocess.Popen([params.command, *params.args, "--log-level", "debug"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                            text=True, env={**os.environ, **(params.env or {})})
    assert proc.stdin is not None
    assert proc.stdout is not None

    def send(frame: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(frame) + "\n")
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        hello = json.loads(proc.stdout.readline())
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "relay_wallet_summary", "arguments": {}}})
        answer = json.loads(proc.stdout.readline())
    finally:
        rest, _ = proc.communicate(timeout=60)  # closes stdin: how a client ends the server
        errors.seek(0)
        log = errors.read()
        errors.close()
    assert proc.returncode == 0, log
    assert hello["id"] == 1
    assert hello["result"]["serverInfo"]["name"] == "relay"
    assert answer["id"] == 2
    assert answer["result"]["isError"] is False
    assert answer["result"]["structuredContent"]["accounts"] == []
    assert rest == ""
    assert "serving on stdio" in log  # the log went to stderr
    assert "Traceback" not in log
