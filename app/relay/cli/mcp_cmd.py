"""relay-cli mcp: serve Relay's tools to an MCP client (Claude Desktop, an editor…) on stdio.

Stdout is the protocol; nothing else may be printed there (logs go to stderr). See
relay.mcp.server for what the server opens and what happens to its sessions when it stops.
"""

from __future__ import annotations

import argparse
import logging

from relay.core.config import Config


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="an MCP server on stdin/stdout for Claude Desktop and other "
                                     "MCP clients (docs/mcp.md)")
    mcp.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                     default="warning", help="what the server logs to stderr (default: warning)")


async def serve(config: Config, args: argparse.Namespace) -> int:
    from relay.mcp.server import serve as serve_stdio  # the SDK loads only for this command

    logging.getLogger().setLevel(args.log_level.upper())
    return await serve_stdio(config)
