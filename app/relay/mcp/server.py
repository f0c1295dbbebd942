"""The MCP server: Relay's engine behind the official SDK's ``MCPServer``.

:func:`build_server` gives the tools over an engine. The host serves it over Streamable
HTTP at ``/mcp`` (relay.api.mcp_mount), on its own engine and loop, so every MCP client —
over HTTP, or over stdio through ``relay-cli mcp``'s adapter (relay.mcp.bridge) — speaks to
the one engine that runs the data folder's sessions, and whatever it does shows in the
window and the other way round.

Decisions (docs/mcp.md says the same to users):

* Sessions and pipeline runs started through MCP run in the host, as the window's do: a
  client that closes (or is killed) leaves them running. Only when ``relay-cli mcp`` found
  no host and hosts the data folder itself do they end ``interrupted`` when it exits
  (``relay-cli run TASK --resume SESSION`` continues one).
* Work that would run a command needs the user's consent (relay.mcp.approval): nobody sits
  at the server to approve it.
* No passphrase prompt: nobody is at a terminal. Where the OS keyring is missing, the vault
  file is unlocked by ``RELAY_VAULT_PASSPHRASE`` in the host's environment, or the tools
  that need it (a handoff's signed brief) answer with the vault's error.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from relay import __version__
from relay.engine.engine import Engine
from relay.mcp.board_tools import BoardTools
from relay.mcp.history_tools import HistoryTools
from relay.mcp.knowledge_tools import KnowledgeTools
from relay.mcp.machine_tools import MachineTools
from relay.mcp.pipeline_tools import PipelineTools
from relay.mcp.question_tools import QuestionTools
from relay.mcp.session_tools import SessionTools
from relay.mcp.talk_tools import TalkTools

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

Talk to a session's agent with say_to_session: a finished session continues with the
message; a running one gets it when its turn ends (never interrupting it), or mid-turn with
mode "now" where the runtime can. session_messages lists what is queued; interrupt_session
stops a turn and keeps the session; fork_session starts a new session from a point of one.

Relay's board shows the owner every task: keep yours there. Find it with board_tasks or
create it with board_task_create, link your session with board_link (your session id is
given to you when your session starts), move it with board_set_stage, report with
board_report, record decisions with board_decision, and read and acknowledge the owner's
comments with board_comments and board_ack_comments.
"""


def build_server(engine: Engine) -> MCPServer:
    """An ``MCPServer`` whose tools act on ``engine`` (which the caller opens and closes)."""
    server: MCPServer = MCPServer("relay", title="Relay", version=__version__,
                                  instructions=INSTRUCTIONS, log_level="WARNING")
    for tools in (SessionTools(engine), MachineTools(engine), PipelineTools(engine),
                  HistoryTools(engine), KnowledgeTools(engine), QuestionTools(engine),
                  BoardTools(engine), TalkTools(engine)):
        tools.register(server)
    return server
