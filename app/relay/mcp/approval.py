"""Commands an MCP client asks Relay to run, and what each tool tells a client it does.

Any MCP client can call any tool, and nobody sits at the server to confirm what it asks
for. A session's verify commands (and a pipeline's, step by step) are run as given, so
work that would run a command is refused unless the user allowed it
(``mcp_require_approval = false`` in relay.toml, or ``RELAY_MCP_REQUIRE_APPROVAL=0`` in
the server's environment): the same "deny where nobody can answer" as the approval
policy for the agents' own requests. The window and ``relay-cli run`` are where the user
starts such work by hand.

The annotations are the tools' honest hints: :data:`READS` for a tool that changes
nothing a user owns (Relay's derived indexes may catch up), :data:`RUNS_AGENTS` for one
that makes an agent work — it edits a worktree and runs commands there, and talks to its
provider —, :data:`STOPS` for stopping one, and :data:`BOARD_WRITES` for a change to Relay's
board (no repository, no command).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from mcp.types import ToolAnnotations

from relay.core.config import Config
from relay.core.errors import ApprovalRequiredError

READS = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
RUNS_AGENTS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True
)
STOPS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
BOARD_WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


def require_approval(config: Config, commands: Sequence[Sequence[str]], what: str) -> None:
    """Refuse ``what`` when it would run ``commands`` and the user has not let MCP clients
    run commands; nothing has been created yet when this raises."""
    if not commands or not config.mcp_require_approval:
        return
    shown = "; ".join(shlex.join(argv) for argv in commands[:3])
    more = f" and {len(commands) - 3} more" if len(commands) > 3 else ""
    raise ApprovalRequiredError(
        f"{what} would run {len(commands)} command(s) ({shown}{more}), and commands an MCP "
        "client asks for need the user's approval, which nobody here can give.",
        "Start it from the Relay window or relay-cli, or let MCP clients run commands: "
        f"mcp_require_approval = false in {config.home / 'relay.toml'} (or "
        "RELAY_MCP_REQUIRE_APPROVAL=0 in the server's environment).",
    )
