"""JSON-RPC 2.0 over an agent's stdio: ACP's transport (one JSON object per line).

A :class:`JsonRpcConnection` owns the agent's stdin (writes are serialised) and,
through :meth:`JsonRpcConnection.read_until_eof`, its stdout. Both sides send
requests: the client's :meth:`~JsonRpcConnection.request` waits for the matching
response; the agent's requests and notifications go to the handlers given at
construction, in the order they arrive. A line that is not a JSON-RPC message goes
to ``on_malformed`` (never an exception). At end of output every request still
waiting fails with :class:`ConnectionClosed`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import orjson

from relay.core import jsonvalue
from relay.core.errors import AgentProcessError
from relay.core.events import AgentEvent
from relay.core.procs import AgentProcess

#: JSON-RPC error codes Relay sends.
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

RpcId = int | str
Params = dict[str, Any]
RequestHandler = Callable[[str, RpcId, Params], Awaitable[None]]
NotificationHandler = Callable[[str, Params], None]
MalformedHandler = Callable[[str], None]
Settled = Callable[[], None]


class RpcError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method}: {message} (JSON-RPC error {code})")
        self.method = method
        self.code = code
        self.message = message
        self.data = data


class ConnectionClosed(Exception):
    """The agent's output ended (it exited or crashed) before it answered."""


class JsonRpcConnection:
    """One JSON-RPC peer over an :class:`AgentProcess` started with a stdin pipe."""

    def __init__(self, process: AgentProcess, *, on_request: RequestHandler,
                 on_notification: NotificationHandler, on_malformed: MalformedHandler,
                 strict: bool = True) -> None:
        self._process = process
        #: incoming messages must carry ``"jsonrpc": "2.0"`` (``codex app-server`` omits it)
        self._strict = strict
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_malformed = on_malformed
        self._next_id = 0
        self._waiting: dict[RpcId, tuple[str, asyncio.Future[Any], Settled | None]] = {}
        self._write_lock = asyncio.Lock()
        self.closed = False

    # -- sending -------------------------------------------------------------

    async def request(self, method: str, params: Params, *,
                      on_settle: Settled | None = None) -> Any:
        """Send a request and return its result.

        ``on_settle`` runs in the reader the moment the response arrives, before any
        later message is handled (so a flag can end exactly with the response).

        Raises:
            RpcError: the agent answered with an error.
            ConnectionClosed: the agent's output ended first.
        """
        rpc_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[rpc_id] = (method, future, on_settle)
        try:
            await self._send({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(rpc_id, None)

    async def notify(self, method: str, params: Params) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def respond(self, rpc_id: RpcId, result: Any) -> None:
        await self._send({"jsonrpc": "2.0", "id": rpc_id, "result": result})

    async def respond_error(self, rpc_id: RpcId | None, code: int, message: str) -> None:
        await self._send({"jsonrpc": "2.0", "id": rpc_id,
                          "error": {"code": code, "message": message}})

    async def _send(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionClosed("the agent's connection is closed")
        data = orjson.dumps(message) + b"\n"
        async with self._write_lock:
            try:
                await self._process.write_stdin(data)
            except (OSError, AgentProcessError, RuntimeError) as exc:
                # a broken pipe, a closed transport: the agent is gone
                raise ConnectionClosed(f"cannot write to the agent: {exc}") from exc

    async def close_stdin(self) -> None:
        """Close the agent's stdin: ACP agents exit when their input ends."""
        async with self._write_lock:
            with contextlib.suppress(OSError, AgentProcessError, RuntimeError):
                await self._process.write_stdin(b"", close=True)

    # -- reading -------------------------------------------------------------

    async def read_until_eof(self) -> None:
        """Dispatch every line of the agent's output, then fail what still waits."""
        try:
            async for line in self._process.lines():
                if line.truncated:
                    self._on_malformed(line.text[:200] + "… (line cut at the size limit)")
                    continue
                await self._dispatch_line(line.text)
        finally:
            self.closed = True
            for method, future, _ in list(self._waiting.values()):
                if not future.done():
                    future.set_exception(ConnectionClosed(
                        f"the agent's output ended before it answered {method}"))

    async def _dispatch_line(self, text: str) -> None:
        stripped = text.strip()
        if not stripped:
            return
        try:
            message = jsonvalue.loads(stripped, fast=True)
        except ValueError:
            self._on_malformed(stripped)
            return
        if not isinstance(message, dict) or (self._strict and message.get("jsonrpc") != "2.0"):
            self._on_malformed(stripped)
            return
        method = message.get("method")
        if isinstance(method, str):
            await self._incoming(method, message, stripped)
        elif "id" in message and ("result" in message or "error" in message):
            self._settle(message, stripped)
        else:
            self._on_malformed(stripped)

    async def _incoming(self, method: str, message: dict[str, Any], raw: str) -> None:
        params = message.get("params", {})
        rpc_id = message.get("id")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self._on_malformed(raw)
            if isinstance(rpc_id, int | str):
                await self._safe(self.respond_error(rpc_id, INVALID_PARAMS,
                                                    "params must be an object"))
            return
        if "id" not in message:
            self._on_notification(method, params)
        elif isinstance(rpc_id, int | str) and not isinstance(rpc_id, bool):
            await self._on_request(method, rpc_id, params)
        else:
            self._on_malformed(raw)

    def _settle(self, message: dict[str, Any], raw: str) -> None:
        rpc_id = message.get("id")
        entry = self._waiting.get(rpc_id) if isinstance(rpc_id, int | str) else None
        if entry is None:
            self._on_malformed(raw)  # a response to nothing we asked
            return
        method, future, on_settle = entry
        if on_settle is not None:
            on_settle()
        if future.done():
            return
        error = message.get("error")
        if error is not None:
            err = error if isinstance(error, dict) else {}
            code = err.get("code")
            future.set_exception(RpcError(
                method, code if isinstance(code, int) else 0,
                str(err.get("message") or "no message"), err.get("data")))
        else:
            future.set_result(message.get("result"))

    @staticmethod
    async def _safe(sending: Awaitable[None]) -> None:
        with contextlib.suppress(ConnectionClosed):
            await sending


async def drain(queue: asyncio.Queue[AgentEvent | None], tasks: Sequence[asyncio.Task[None]],
                process: AgentProcess) -> AsyncIterator[AgentEvent]:
    """A JSON-RPC run's events: what ``queue`` gets until ``None``; then (also when the
    consumer stops early) the reader and driver ``tasks`` are cancelled and the process
    stopped."""
    try:
        while (item := await queue.get()) is not None:
            yield item
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if process.pid is not None:
            await process.stop(grace=1.0)
