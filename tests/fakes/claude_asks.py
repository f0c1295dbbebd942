"""A fake ``claude -p`` that asks its ``--permission-prompt-tool`` the way 2.1.197 does.

Not a replay: no capture has the prompt tool in it. What it does was observed with the
real 2.1.197 against ``mock_anthropic`` (tests/integration/test_claude_permission_real.py
checks the same things on the real CLI):

* it starts the servers of ``--mcp-config`` (stdio, through the official MCP SDK's client)
  before the first turn — the real CLI does that for ``"alwaysLoad": true`` servers — and
  prints an ``init`` line with ``mcp_servers: [{"name", "status": "connected"}]``;
* for the tool call it wants to make (``RELAY_FAKE_ASK``: ``{"name", "input", "id"}``; a
  Write by default) it prints the assistant ``tool_use`` line, then calls the prompt tool
  (``mcp__<server>__<tool>``) with ``{"tool_name", "input", "tool_use_id"}`` and reads the
  single text block as JSON;
* ``allow``: the tool runs with ``updatedInput`` (a Write creates its file) and the
  ``tool_result`` says ``File created successfully at: <path> …``; ``deny``: the
  ``tool_result`` is ``is_error`` with the ``message`` as content and the call is listed in
  the result's ``permission_denials``; then a final text turn and the ``result`` line.

``RELAY_FAKE_ASK_LOG`` (optional): a JSON line per decision received.
Run it as ``python claude_asks.py <claude argv…>``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def _print(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _assistant(session: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "assistant", "message": {
        "id": f"msg_fake{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
        "model": "claude-opus-4-8", "content": content, "stop_reason": None,
        "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}},
        "parent_tool_use_id": None, "session_id": session, "uuid": str(uuid.uuid4())}


async def ask(config: dict[str, Any], prompt_tool: str, call: dict[str, Any]) -> dict[str, Any]:
    _, server_name, tool = prompt_tool.split("__", 2)
    server = config["mcpServers"][server_name]
    params = StdioServerParameters(command=server["command"], args=server.get("args", []),
                                   env={**os.environ, **server.get("env", {})})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        print_init(server_name)
        _print(_assistant(SESSION, [{"type": "tool_use", "id": call["id"], "name": call["name"],
                                     "input": call["input"]}]))
        result = await client.call_tool(tool, {"tool_name": call["name"], "input": call["input"],
                                               "tool_use_id": call["id"]})
    blocks = result.content
    if len(blocks) != 1 or not isinstance(blocks[0], TextContent):  # 2.1.197's own check
        raise SystemExit("Permission prompt tool returned an invalid result. Expected a single "
                         'text block param with type="text" and a string text value.')
    decision: dict[str, Any] = json.loads(blocks[0].text)
    return decision


SESSION = ""


def print_init(server_name: str) -> None:
    _print({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": SESSION,
            "tools": ["Bash", "Edit", "Read", "Write"],
            "mcp_servers": [{"name": server_name, "status": "connected"}],
            "model": "claude-opus-4-8[1m]", "permissionMode": _option(sys.argv, "--permission-mode"),
            "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.197",
            "output_style": "default", "uuid": str(uuid.uuid4())})


def main() -> int:
    global SESSION
    argv = sys.argv[1:]
    SESSION = _option(argv, "--session-id") or _option(argv, "--resume") or str(uuid.uuid4())
    config_text, prompt_tool = _option(argv, "--mcp-config"), _option(argv, "--permission-prompt-tool")
    if not config_text or not prompt_tool:
        sys.stderr.write("fake claude_asks: needs --mcp-config and --permission-prompt-tool\n")
        return 97
    call = json.loads(os.environ.get("RELAY_FAKE_ASK") or json.dumps({
        "name": "Write", "id": "toolu_fake_write_1",
        "input": {"file_path": str(Path.cwd() / "asked.txt"), "content": "allowed\n"}}))
    decision = asyncio.run(ask(json.loads(config_text), prompt_tool, call))
    if log := os.environ.get("RELAY_FAKE_ASK_LOG"):
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(decision) + "\n")
    denials: list[dict[str, Any]] = []
    if decision.get("behavior") == "allow":
        tool_input = decision.get("updatedInput") or call["input"]
        if call["name"] == "Write":
            Path(tool_input["file_path"]).write_text(tool_input["content"], encoding="utf-8")
        content: dict[str, Any] = {"tool_use_id": call["id"], "type": "tool_result", "content": (
            f"File created successfully at: {tool_input.get('file_path')} (file state is current "
            "in your context — no need to Read it back)")}
    else:
        content = {"type": "tool_result", "content": decision.get("message", ""),
                   "is_error": True, "tool_use_id": call["id"]}
        denials.append({"tool_name": call["name"], "tool_use_id": call["id"],
                        "tool_input": call["input"]})
    _print({"type": "user", "message": {"role": "user", "content": [content]},
            "parent_tool_use_id": None, "session_id": SESSION, "uuid": str(uuid.uuid4())})
    _print(_assistant(SESSION, [{"type": "text", "text": "Done."}]))
    _print({"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
            "duration_ms": 200, "num_turns": 2, "result": "Done.", "stop_reason": "end_turn",
            "session_id": SESSION, "total_cost_usd": 0.002075,
            "usage": {"input_tokens": 200, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 43},
            "modelUsage": {}, "permission_denials": denials, "terminal_reason": "completed",
            "uuid": str(uuid.uuid4())})
    return 0


if __name__ == "__main__":
    sys.exit(main())
