"""Relay's MCP server: the engine's tools for any MCP client, served by the host at ``/mcp``.

Qt-free, on the official ``mcp`` SDK. ``server`` builds the server (relay.api.mcp_mount
serves it over Streamable HTTP); ``session_tools``, ``machine_tools``, ``pipeline_tools``,
``history_tools``, ``knowledge_tools`` and ``question_tools`` hold the tools; ``results``
turns their answers (and errors) into tool results; ``bridge`` and ``stdio`` are ``relay-cli
mcp``'s adapter from stdio to the host. docs/mcp.md lists the tools for users.
"""
