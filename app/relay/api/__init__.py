"""The host's local API: the engine of a data folder served over HTTP and a live event stream.

A *host* (the window by default, or ``relay-cli serve``) runs the one engine of a data folder
and serves it here; every other front end is a client (:mod:`relay.api.client`). Routes live
under ``/api/v1`` (:mod:`relay.api.app`); events stream over SSE (:mod:`relay.api.stream`);
the official MCP SDK's Streamable HTTP app is mounted at ``/mcp``. :mod:`relay.api.security`
holds the gate every request passes: loopback, token, Host and Origin, a bounded body.
"""
