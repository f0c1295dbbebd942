"""``/mcp``: Relay's MCP server (:mod:`relay.mcp.server`) over Streamable HTTP, in the host.

The official SDK's Streamable HTTP handler — what ``MCPServer.streamable_http_app()`` routes
its path to — is served at exactly ``/mcp`` in the host's FastAPI app, behind the same gate
as every route (Host, Origin, ``Authorization: Bearer <token>``, a bounded body). Its tools
act on the host's engine, on the host's loop: a session an MCP client starts is the host's,
and goes on when the client goes. The SDK's own DNS-rebinding check is off — the gate
already does it, for the addresses the host really listens on.

The SDK loads when a host starts, never for a client's command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay.api.app import Mount
    from relay.engine.engine import Engine

#: where the host serves MCP
MCP_PATH = "/mcp"


def mcp_mount(engine: Engine) -> Mount:
    """The ``/mcp`` mount over ``engine``: its ASGI handler and the session manager's run."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings

    from relay.mcp.server import build_server

    server = build_server(engine)
    server.streamable_http_app(streamable_http_path=MCP_PATH,  # makes server.session_manager
                               transport_security=TransportSecuritySettings(
                                   enable_dns_rebinding_protection=False))
    manager = server.session_manager
    return MCP_PATH, StreamableHTTPASGIApp(manager), manager.run
