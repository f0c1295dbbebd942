"""Relay's MCP server (``relay-cli mcp``): the engine's tools for any MCP client, over stdio.

Qt-free, on the official ``mcp`` SDK. ``server`` builds the server and serves it;
``session_tools``, ``machine_tools``, ``pipeline_tools``, ``history_tools`` and
``knowledge_tools`` hold the tools; ``results`` turns their answers (and errors) into tool
results. docs/mcp.md lists the tools for users.
"""
