"""The MCP server: Relay's engine behind the official SDK's ``MCPServer``, over stdio.

:func:`serve` opens the same :class:`Engine` as the window and the CLI, on the same data
folder, so whatever an MCP client does (Claude Desktop, an editor, another agent) shows up
in the window, and the other way round. Stdout carries the protocol only; logs go to
stderr.

Decisions (docs/mcp.md says the same to users):

* The engine opens with ``recover=False``, like a one-shot command: a server a client
  starts (often silently, sometimes several at once) does not take over handoffs, waits or
  pipeline runs another Relay left unfinished — those belong to the window or
  ``relay-cli recover``, which the user starts on purpose. Opening still marks the sessions
  of dead Relay processes interrupted, as every engine does.
* Sessions and pipeline runs started through MCP run inside this process, as the window's
  do. When the client closes the server (stdin ends, or SIGTERM after it), the engine is
  closed: running sessions end ``interrupted`` (the window shows them; ``relay-cli run TASK
  --resume SESSION`` continues one) and unfinished runs are left for the window or
  ``relay-cli recover`` to take up.
* No passphrase prompt: stdin is the protocol. Where the OS keyring is missing, the vault
  file is unlocked by ``RELAY_VAULT_PASSPHRASE`` in the server's environment, or the tools
  that need it (a handoff's signed brief) answer with the vault's error.
"""

from __future__ import annotations

import logging
import signal
import sys

import anyio
from mcp.server.mcpserver import MCPServer

from relay import __version__
from relay.core.config import Config
from relay.engine.engine import Engine
from relay.mcp.history_tools import HistoryTools
from relay.mcp.knowledge_tools import KnowledgeTools
from relay.mcp.machine_tools import MachineTools
from relay.mcp.pipeline_tools import PipelineTools
from relay.mcp.question_tools import QuestionTools
from relay.mcp.session_tools import SessionTools
from relay.mcp.stdio import stdio_transport

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
Relay runs AI coding agents (Claude Code, Codex, a scripted demo) in their own git worktrees,
hands a task from one provider or account to the next when one hits a usage limit, and
keeps a wallet of accounts. The Relay window on this machine shows what you do here.

Start work with relay_start_session (returns a session id at once), follow it with
relay_session_events (poll with after_id) or relay_wait_session, and check
relay_list_sessions. relay_handoff moves a running session to another agent now.
relay_wallet_summary says how much each account has left; relay_detected_agents lists the
agent sessions on this machine. Pipelines (graphs of sessions) run with relay_run_pipeline
and relay_pipeline_status. relay_session_history shows who did what (agent stints,
handoffs, checks, snapshot commits); relay_diff shows what changed; relay_review_comment
sends the agent a comment on a line; relay_rewind makes a new branch at a snapshot (nothing
is lost); relay_retrieve searches the project's code and what agents decided before. The
'demo' runtime is a SIMULATION, not a real agent.
"""


def build_server(engine: Engine) -> MCPServer:
    """An ``MCPServer`` whose tools act on ``engine`` (which the caller opens and closes)."""
    server: MCPServer = MCPServer("relay", title="Relay", version=__version__,
                                  instructions=INSTRUCTIONS, log_level="WARNING")
    for tools in (SessionTools(engine), MachineTools(engine), PipelineTools(engine),
                  HistoryTools(engine), KnowledgeTools(engine), QuestionTools(engine)):
        tools.register(server)
    return server


async def serve(config: Config) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin (or sends SIGTERM)."""
    engine = await Engine.open(config, recover=False)
    try:
        server = build_server(engine)
        log.info("relay mcp: serving on stdio (data folder %s)", config.home)
        async with anyio.create_task_group() as group:
            if sys.platform != "win32":  # the client's SIGTERM closes the engine too
                group.start_soon(_stop_on_signal, group.cancel_scope)
            await run_stdio(server)
            group.cancel_scope.cancel()
    finally:
        await engine.close()
    return 0


async def run_stdio(server: MCPServer) -> None:
    """``server.run_stdio_async()`` over Relay's checked stdin (relay.mcp.stdio): a line that
    is no JSON-RPC message is answered, never dropped."""
    lowlevel = server._lowlevel_server  # what run_stdio_async runs; the SDK has no public handle
    async with stdio_transport() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("relay mcp: %s, closing", signal.Signals(signum).name)
            scope.cancel()
            return
