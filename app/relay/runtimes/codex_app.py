"""Codex over ``codex app-server`` (JSON-RPC on stdio): the opt-in way to talk to Codex
mid-turn (``RELAY_CODEX_PROTOCOL=app-server`` in the environment or an account's).

``codex exec`` is one process per turn with stdin at ``/dev/null``; ``app-server`` (marked
experimental in 0.171.0; docs/codex-talk.md) keeps the process and the thread between
turns and takes ``turn/steer`` (a user message into the running turn, before its next
model request) and ``turn/interrupt`` (the turn ends ``interrupted``, the process stays).
One run here: ``initialize``; ``thread/start`` (or ``thread/resume`` / ``thread/fork`` for
``resume_id``), ``turn/start`` the prompt, then at each turn end
``RunRequest.next_input()`` — a queued message starts the next turn in the same process,
none closes stdin and the run ends.

The notifications are translated into the ``codex exec --json`` lines they correspond to
and fed to :class:`~relay.runtimes.codex_stream.CodexStreamParser`, so items, usage (the
thread's cumulative total, per turn by difference) and failures (the same wording as
``exec``) have one reading. Approval requests do not come (``approvalPolicy: never``, as
``exec``); any server request is answered "method not found".
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from relay.core.capabilities import Cap, Capabilities, Level
from relay.core.errors import RelayError
from relay.core.events import AgentEvent, SessionEnded, SessionStarted
from relay.core.jsonvalue import as_dict
from relay.core.procs import AgentProcess, ProcessResult, StdinMode
from relay.runtimes.acp_rpc import (
    METHOD_NOT_FOUND,
    ConnectionClosed,
    JsonRpcConnection,
    RpcError,
    drain,
)
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest
from relay.runtimes.codex_stream import CodexStreamParser

if TYPE_CHECKING:
    from relay.runtimes.codex import CodexAdapter

PROTOCOL_ENV = "RELAY_CODEX_PROTOCOL"
APP_SERVER = "app-server"
#: what app-server adds to codex's row (tests/integration/test_codex_talk_real.py)
APP_SERVER_LEVELS: Mapping[Cap, Level] = {Cap.STEER: Level.YES, Cap.INTERRUPT: Level.YES}
#: how long a stop waits for the interrupted turn before the process is stopped
STOP_WAIT = 3.0

_STATUS = {"inProgress": "in_progress", "completed": "completed", "failed": "failed",
           "declined": "declined"}
_ITEM_TYPES = {"agentMessage": "agent_message", "reasoning": "reasoning",
               "commandExecution": "command_execution", "fileChange": "file_change",
               "mcpToolCall": "mcp_tool_call", "webSearch": "web_search", "plan": "plan"}


def uses_app_server(env: Mapping[str, str]) -> bool:
    """Whether the user opted in to ``codex app-server``."""
    return env.get(PROTOCOL_ENV, "").strip().lower() == APP_SERVER


def app_server_capabilities(base: Capabilities) -> Capabilities:
    levels = {cap: base.level(cap) for cap in Cap}
    levels.update(APP_SERVER_LEVELS)
    return Capabilities(base.runtime, levels)


def exec_item(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """An app-server ``ThreadItem`` as the ``codex exec --json`` item it corresponds to."""
    kind = _ITEM_TYPES.get(str(item.get("type")))
    if kind is None:
        return None  # userMessage (Relay knows what it sent), and kinds exec has no line for
    out: dict[str, Any] = {"id": str(item.get("id") or ""), "type": kind}
    if "status" in item:
        out["status"] = _STATUS.get(str(item.get("status")), str(item.get("status")))
    if kind in ("agent_message", "plan"):
        out["text"] = str(item.get("text") or "")
    elif kind == "reasoning":
        out["text"] = "\n".join(str(s) for s in (item.get("summary") or item.get("content") or []))
    elif kind == "command_execution":
        out.update(command=str(item.get("command") or ""),
                   aggregated_output=str(item.get("aggregatedOutput") or ""),
                   exit_code=item.get("exitCode"))
    elif kind == "file_change":
        out["changes"] = [{"path": str(c.get("path") or ""),
                           "kind": str(as_dict(c.get("kind")).get("type") or c.get("kind"))}
                          for c in item.get("changes") or [] if isinstance(c, Mapping)]
    elif kind == "mcp_tool_call":
        out.update({k: item.get(k) for k in ("server", "tool", "arguments", "result", "error")})
    else:
        out["query"] = str(item.get("query") or "")
    return out


def exec_usage(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A ``TokenUsageBreakdown`` in ``turn.completed.usage``'s words."""
    return {"input_tokens": raw.get("inputTokens"), "cached_input_tokens": raw.get("cachedInputTokens"),
            "cache_write_input_tokens": raw.get("cacheWriteInputTokens"),
            "output_tokens": raw.get("outputTokens"),
            "reasoning_output_tokens": raw.get("reasoningOutputTokens")}


class AppServerRun:
    """One :class:`~relay.runtimes.codex.CodexAdapter` run over ``codex app-server``."""

    def __init__(self, adapter: CodexAdapter, request: RunRequest,
                 parser: CodexStreamParser) -> None:
        self.adapter, self.request, self.parser = adapter, request, parser
        self.queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        self.conn: JsonRpcConnection | None = None
        self.thread_id: str | None = None
        self.turn_id: str | None = None
        self.turn_over = asyncio.Event()
        self.turn_status = ""
        self.total: Mapping[str, Any] = {}
        self.interrupted = False
        self.stopping = False

    # -- the run ---------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        request, adapter = self.request, self.adapter
        argv = [adapter.executable(), "app-server", *adapter.brief_args(request)]
        proc = AgentProcess(argv, request.cwd, adapter.build_env(request), stdin=StdinMode.PIPE,
                            inactivity_timeout=request.inactivity_timeout)
        adapter.attach(proc)
        await proc.start()
        self.conn = conn = JsonRpcConnection(proc, on_request=self._on_request,
                                             on_notification=self._on_notification,
                                             on_malformed=lambda line: None, strict=False)
        reader = asyncio.create_task(conn.read_until_eof())
        driver = asyncio.create_task(self._drive(conn, proc))
        async for event in drain(self.queue, (driver, reader), proc):
            yield event

    def _emit(self, obj: dict[str, Any]) -> None:
        for event in self.parser.feed(obj):
            if isinstance(event, SessionStarted):
                self.adapter.handshake(event)
            self.queue.put_nowait(event)

    async def _drive(self, conn: JsonRpcConnection, proc: AgentProcess) -> None:
        ended: SessionEnded | None = None
        try:
            ended = await self._conversation(conn)
        except (ConnectionClosed, RpcError) as exc:
            if isinstance(exc, RpcError) and not self.stopping:
                self._emit({"type": "error", "message": f"{exc.method}: {exc.message}"})
        await conn.close_stdin()
        with contextlib.suppress(TimeoutError):  # app-server exits when its input ends
            await asyncio.wait_for(asyncio.shield(proc.wait()), STOP_WAIT)
        await proc.stop(grace=1.0)
        result = await proc.wait()
        if ended is None or self.stopping:
            clean = ProcessResult(result.exit_code if result.exit_code else 1, result.signal,
                                  result.stderr_tail, stopped=self.stopping)
            for event in self.parser.finish(clean):
                self.queue.put_nowait(event)
        else:
            self.queue.put_nowait(ended)
        self.queue.put_nowait(None)

    async def _conversation(self, conn: JsonRpcConnection) -> SessionEnded | None:
        request = self.request
        await conn.request("initialize", {"clientInfo": {"name": "relay", "version": "1"}})
        await conn.notify("initialized", {})
        params: dict[str, Any] = {"cwd": str(request.cwd), "approvalPolicy": "never",
                                  "sandbox": self.adapter.sandbox_mode(request)}
        if request.model:
            params["model"] = request.model
        if request.resume_id is None:
            opened = await conn.request("thread/start", params)
        else:
            method = "thread/fork" if request.fork else "thread/resume"
            opened = await conn.request(method, {"threadId": request.resume_id, **params})
        self.thread_id = str(as_dict(as_dict(opened).get("thread")).get("id") or "")
        self._emit({"type": "thread.started", "thread_id": self.thread_id})
        prompt: str | None = request.prompt
        while prompt is not None and not self.stopping:
            await self._turn(conn, prompt)
            if self.turn_status == "failed":
                return None  # the parser has the failure: finish() reports it
            prompt = await request.next_input() if request.next_input else None
            if self.turn_status == "interrupted" and prompt is None:
                return SessionEnded(runtime=self.adapter.name, outcome="interrupted",
                                    reason=INTERRUPTED_REASON,
                                    result_text=self.parser.result_text)
        if self.stopping:
            return None
        return SessionEnded(runtime=self.adapter.name, outcome="completed", exit_code=0,
                            result_text=self.parser.result_text)

    async def _turn(self, conn: JsonRpcConnection, text: str) -> None:
        self.turn_over.clear()
        self.interrupted = False
        started = await conn.request("turn/start", {"threadId": self.thread_id, "input": [
            {"type": "text", "text": text}]})
        self.turn_id = str(as_dict(as_dict(started).get("turn")).get("id") or "") or None
        await self.turn_over.wait()
        self.turn_id = None

    # -- what app-server says ------------------------------------------------------------

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "turn/started":
            self._emit({"type": "turn.started"})
        elif method in ("item/started", "item/completed"):
            item = exec_item(as_dict(params.get("item")))
            if item is not None:
                self._emit({"type": method.replace("/", "."), "item": item})
        elif method == "thread/tokenUsage/updated":
            self.total = as_dict(as_dict(params.get("tokenUsage")).get("total"))
        elif method == "error":
            message = str(as_dict(params.get("error")).get("message") or "")
            retry = "Reconnecting... " if params.get("willRetry") else ""
            self._emit({"type": "error", "message": f"{retry}{message}"})
        elif method == "turn/completed":
            self._turn_completed(as_dict(params.get("turn")))

    def _turn_completed(self, turn: Mapping[str, Any]) -> None:
        self.turn_status = str(turn.get("status") or "")
        if self.turn_status == "completed":
            self._emit({"type": "turn.completed", "usage": exec_usage(self.total)})
        elif self.turn_status == "failed":
            error = as_dict(turn.get("error"))
            self._emit({"type": "turn.failed", "error": {"message": error.get("message")}})
        self.turn_over.set()

    async def _on_request(self, method: str, rpc_id: int | str, params: dict[str, Any]) -> None:
        if self.conn is not None:
            with contextlib.suppress(ConnectionClosed):
                await self.conn.respond_error(rpc_id, METHOD_NOT_FOUND,
                                              f"Relay does not answer {method}")

    # -- what Relay says -----------------------------------------------------------------

    async def steer(self, text: str) -> None:
        conn, turn = self.conn, self.turn_id
        if conn is None or turn is None or self.stopping:
            raise RelayError("No Codex turn is running to steer.",
                             "Send the message queued: it goes when the turn ends.")
        try:
            await conn.request("turn/steer", {"threadId": self.thread_id, "expectedTurnId": turn,
                                              "input": [{"type": "text", "text": text}]})
        except (RpcError, ConnectionClosed) as exc:
            raise RelayError(f"Codex did not take the message mid-turn: {exc}",
                             "The turn may just have ended; send it queued.") from exc

    async def interrupt(self) -> None:
        conn, turn = self.conn, self.turn_id
        if conn is None or turn is None:
            raise RelayError("No Codex turn is running to interrupt.",
                             "Send a message to continue the session.")
        self.interrupted = True
        with contextlib.suppress(RpcError, ConnectionClosed):
            await conn.request("turn/interrupt", {"threadId": self.thread_id, "turnId": turn})

    async def stop(self) -> None:
        self.stopping = True
        if self.turn_id is not None:
            with contextlib.suppress(RpcError, ConnectionClosed, TimeoutError):
                await asyncio.wait_for(self.interrupt(), STOP_WAIT)
        self.turn_over.set()
