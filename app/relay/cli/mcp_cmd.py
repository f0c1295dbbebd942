"""relay-cli mcp: Relay's MCP tools for an MCP client (Claude Desktop, an editor…) on stdio.

The MCP server lives in the host (``/mcp``, docs/mcp.md); this command is a thin adapter
that relays stdin to it and its answers to stdout (relay.mcp.bridge), so a session an MCP
client starts is the host's and outlives the client. With no host running (and no
``--connect``), the command hosts the data folder itself for as long as it runs (relay.api.
attach) — and its sessions end, interrupted, when the client closes it; a window or
``relay-cli serve`` started first keeps them running.

Stdout is the protocol; nothing else may be printed there (logs go to stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from relay.core.config import Config

log = logging.getLogger("relay.mcp")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser("mcp", help="an MCP server on stdin/stdout for Claude Desktop and other "
                                     "MCP clients (docs/mcp.md)")
    mcp.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                     default="warning", help="what the server logs to stderr (default: warning)")
    mcp.add_argument("--connect", metavar="URL", default=None,
                     help="relay to the host at URL (default: RELAY_CONNECT, else this data "
                          "folder's host, else host here while the command runs)")
    mcp.add_argument("--token", default=None,
                     help="that host's API token (default: RELAY_TOKEN, else the data folder's)")


async def serve(config: Config, args: argparse.Namespace) -> int:
    from relay.api.attach import attach  # the SDK loads only for this command
    from relay.api.mcp_mount import MCP_PATH
    from relay.mcp.bridge import relay_stdio

    logging.getLogger().setLevel(args.log_level.upper())
    async with attach(config, connect=args.connect, token=args.token, kind="mcp") as attached:
        url = attached.client.url + MCP_PATH
        log.info("relay mcp: serving on stdio, relayed to %s (%s)", url,
                 "hosted here until the client closes" if attached.hosting else "the host")
        bridge = asyncio.create_task(relay_stdio(url, attached.client.token))
        signalled: list[int] = []

        def stop(signum: int) -> None:
            signalled.append(signum)
            bridge.cancel()

        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if sys.platform != "win32" else ()
        for signum in signals:  # the client's SIGTERM closes in order, the host too
            loop.add_signal_handler(signum, stop, signum)
        try:
            return await bridge
        except asyncio.CancelledError:
            if not signalled:
                raise
            log.info("relay mcp: %s, closing", signal.Signals(signalled[0]).name)
            return 0
        finally:
            for signum in signals:
                loop.remove_signal_handler(signum)
