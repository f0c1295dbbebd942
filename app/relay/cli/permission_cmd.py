"""relay-cli permission-bridge: the MCP server Claude Code calls for its permission prompts.

Internal: Relay's Claude adapter names it in ``--mcp-config`` (see
:mod:`relay.runtimes.claude_permission`); Claude starts it and speaks MCP on its stdin and
stdout. It offers one tool, ``approve`` (``tool_name``, ``input``, ``tool_use_id`` — what
Claude sends), forwards each call as a JSON line over the Unix socket given by
``--socket`` and returns the answer's JSON as the tool's only text block, which is what
Claude expects. It decides nothing itself: when the socket cannot be reached or closes,
every call is denied with a message saying so. Stdout is the protocol; logs go to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Sequence
from typing import Any

from relay.core import jsonvalue

log = logging.getLogger(__name__)

#: the longest answer read from the socket (an allowed Write's content comes back in it)
MAX_MESSAGE = 64 * 1024 * 1024
NO_RELAY = "Relay is not listening for permission answers any more, so the call was denied."


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bridge = sub.add_parser("permission-bridge",
                            help="(internal) the MCP server Claude Code asks for permissions")
    bridge.add_argument("--socket", required=True, help="the Relay run's Unix socket")


class SocketClient:
    """One connection to the adapter's broker; several calls may be open at once."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def _connect(self) -> asyncio.StreamWriter:
        async with self._lock:
            if self._writer is None:
                reader, self._writer = await asyncio.open_unix_connection(self.path,
                                                                          limit=MAX_MESSAGE)
                self._reader_task = asyncio.create_task(self._read(reader))
            return self._writer

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                with contextlib.suppress(ValueError):
                    message = jsonvalue.as_dict(jsonvalue.loads(line))
                    request_id = jsonvalue.as_int(message.get("id"))
                    waiting = None if request_id is None else self._waiting.pop(request_id, None)
                    if waiting is not None and not waiting.done():
                        waiting.set_result(message.get("result") or {})
        except (ConnectionError, ValueError) as exc:
            log.warning("permission bridge: the socket failed: %s", exc)
        finally:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_result({"behavior": "deny", "message": NO_RELAY})
            self._waiting.clear()

    async def ask(self, tool_name: str, tool_input: dict[str, Any],
                  tool_use_id: str | None) -> dict[str, Any]:
        """The decision for one call (``deny`` when Relay cannot be reached)."""
        try:
            writer = await self._connect()
        except OSError as exc:
            log.warning("permission bridge: cannot reach %s: %s", self.path, exc)
            return {"behavior": "deny", "message": NO_RELAY}
        if self._reader_task is not None and self._reader_task.done():
            return {"behavior": "deny", "message": NO_RELAY}
        call_id = next(self._ids)
        waiting: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = waiting
        try:
            writer.write(json.dumps({"id": call_id, "tool_name": tool_name, "input": tool_input,
                                     "tool_use_id": tool_use_id}).encode() + b"\n")
            await writer.drain()
        except OSError:
            self._waiting.pop(call_id, None)
            return {"behavior": "deny", "message": NO_RELAY}
        return await waiting


def _valid(decision: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
    """What Claude accepts: ``allow`` with ``updatedInput`` (an object), else ``deny``."""
    if decision.get("behavior") == "allow":
        updated = decision.get("updatedInput")
        return {"behavior": "allow",
                "updatedInput": updated if isinstance(updated, dict) else tool_input}
    return {"behavior": "deny", "message": str(decision.get("message") or NO_RELAY)}


def build_bridge(socket_path: str) -> Any:
    """The SDK's ``MCPServer`` with the one ``approve`` tool."""
    from mcp.server.mcpserver import MCPServer  # the SDK loads only for this command

    from relay import __version__

    client = SocketClient(socket_path)
    server = MCPServer("relay_approval", title="Relay permission prompts", version=__version__,
                       log_level="WARNING")

    # structured_output=False: Claude wants exactly one text block and nothing else
    @server.tool(name="approve", structured_output=False, description=(
        "Asks the Relay user whether Claude Code may make this tool call. Returns JSON: "
        '{"behavior": "allow", "updatedInput": {...}} or {"behavior": "deny", "message": "..."}.'))
    async def approve(tool_name: str, input: dict[str, Any],
                      tool_use_id: str | None = None) -> str:
        decision = await client.ask(tool_name, input, tool_use_id)
        return json.dumps(_valid(decision, input))

    return server


async def serve(socket_path: str) -> int:
    """Serve MCP on stdio until Claude closes stdin."""
    await build_bridge(socket_path).run_stdio_async()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``--socket PATH``: the bridge without the rest of relay-cli (a faster start)."""
    parser = argparse.ArgumentParser(prog="relay-cli permission-bridge")
    parser.add_argument("--socket", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="relay bridge: %(levelname)s %(message)s")
    return asyncio.run(serve(args.socket))
