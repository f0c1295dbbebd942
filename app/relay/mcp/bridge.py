"""``relay-cli mcp`` as an adapter: MCP over stdio, relayed message by message to a host's
``/mcp`` (Streamable HTTP), and the host's messages back to stdout.

Both ends are the official SDK's transports — Relay's checked stdio (:mod:`relay.mcp.stdio`:
every line that is no JSON-RPC message is answered here, never forwarded) and the SDK's
streamable-HTTP client — so the MCP session itself is between the client and the host: the
host runs the tools, and a Relay session they start is the host's. Only the HTTP headers a
message's body implies are added (``MCP-Protocol-Version``, and for a 2026 request its
``Mcp-Method``/``Mcp-Name``), as the SDK's own client session stamps them.

When the host goes away, each request still waiting is answered with an error and the
adapter ends (exit 1): the client sees its server close, as with any MCP server that stops.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

from relay.mcp.stdio import stdio_transport

log = logging.getLogger(__name__)


class _Relay:
    """What one bridge remembers: the requests the host has yet to answer, and the protocol
    version the legacy handshake settled on."""

    def __init__(self) -> None:
        self.pending: dict[RequestId, str] = {}
        self.version: str | None = None
        #: set when the host has answered ``initialize`` (its answer names the MCP session
        #: every later message belongs to)
        self.initialized = anyio.Event()
        #: set when no request is waiting for the host
        self.settled = anyio.Event()

    def asked(self, message: JSONRPCRequest) -> None:
        self.pending[message.id] = message.method
        if self.settled.is_set():
            self.settled = anyio.Event()

    def headers(self, message: Any) -> ClientMessageMetadata | None:
        """The headers the SDK's client would send with ``message``."""
        if isinstance(message, JSONRPCRequest):
            params: Mapping[str, Any] = message.params or {}
            meta = params.get("_meta")
            version = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, Mapping) else None
            if isinstance(version, str):  # a 2026 request carries its own envelope
                headers = {MCP_PROTOCOL_VERSION_HEADER: version, MCP_METHOD_HEADER: message.method}
                key = NAME_BEARING_METHODS.get(message.method)
                if key is not None and isinstance(name := params.get(key), str):
                    headers[MCP_NAME_HEADER] = encode_header_value(name)
                return ClientMessageMetadata(headers=headers)
        if self.version is not None:
            return ClientMessageMetadata(headers={MCP_PROTOCOL_VERSION_HEADER: self.version})
        return None

    def answered(self, message: Any) -> None:
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
            method = self.pending.pop(message.id, None)
            if method == "initialize":
                version = (message.result.get("protocolVersion")
                           if isinstance(message, JSONRPCResponse) else None)
                self.version = version if isinstance(version, str) else None
                self.initialized.set()
            if not self.pending:
                self.settled.set()


async def relay_stdio(url: str, token: str) -> int:
    """Relay stdin/stdout to the MCP endpoint ``url`` until stdin ends and what was asked is
    answered (0), or the host goes away (1). A client that will not wait for the answers
    closes the adapter with SIGTERM, as MCP's stdio transport has it."""
    relay = _Relay()
    gone: BaseException | None = None
    async with stdio_transport() as (from_client, to_client), to_client:  # closed: stdout ends
        try:
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}
                                              ) as http, \
                    streamable_http_client(url, http_client=http) as (from_host, to_host), \
                    anyio.create_task_group() as group:
                group.start_soon(_to_client, from_host, to_client, relay)
                async for item in from_client:
                    if not isinstance(item, SessionMessage):
                        log.warning("relay mcp: unreadable message from the client: %s", item)
                        continue
                    message = item.message
                    if isinstance(message, JSONRPCRequest):
                        relay.asked(message)
                    await to_host.send(SessionMessage(message, metadata=relay.headers(message)))
                    if isinstance(message, JSONRPCRequest) and message.method == "initialize":
                        await relay.initialized.wait()  # what follows needs its session id
                if relay.pending:  # stdin ended: answer what was asked, then go
                    await relay.settled.wait()
                group.cancel_scope.cancel()
        except* (httpx2.TransportError, anyio.BrokenResourceError,
                 anyio.ClosedResourceError) as failed:  # refused, reset, gone
            gone = failed
        if gone is not None:
            log.error("relay mcp: Relay's host at %s went away (%s)", url, _reason(gone))
            for request_id in list(relay.pending):
                await to_client.send(SessionMessage(JSONRPCError(
                    jsonrpc="2.0", id=request_id, error=ErrorData(
                        code=INTERNAL_ERROR,
                        message=f"Relay's host at {url} went away before it answered."))))
            return 1
    return 0


async def _to_client(from_host: Any, to_client: Any, relay: _Relay) -> None:
    async for item in from_host:
        if isinstance(item, Exception):
            log.warning("relay mcp: the host's stream: %s", _reason(item))
            continue
        await to_client.send(item)
        relay.answered(item.message)


def _reason(exc: BaseException) -> str:
    """The innermost error of an exception group, said in one line."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
