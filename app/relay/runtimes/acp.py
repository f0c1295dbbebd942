"""Agent Client Protocol runtimes: one adapter for every ACP agent.

ACP is JSON-RPC 2.0 over the agent's stdio (:mod:`relay.runtimes.acp_rpc`). One run
is one agent process and one prompt turn:

1. ``initialize`` with protocol version 1 and every client capability Relay does not
   offer declared false (``fs.readTextFile``, ``fs.writeTextFile``, ``terminal``); an
   agent that answers another version is refused;
2. ``session/new`` (cwd = the worktree, no MCP servers), or for ``resume_id``
   ``session/load`` when the agent advertises ``loadSession`` — the conversation it
   replays comes out with ``replay=True``; without ``loadSession`` RESUME is ``no``;
3. ``session/prompt``; its ``stopReason`` ends the run: ``end_turn`` → completed,
   ``cancelled`` → cancelled (Relay asked) or interrupted, ``refusal`` /
   ``max_tokens`` / ``max_turn_requests`` → failed with the reason.

Agent → client requests: ``session/request_permission`` becomes a
:class:`~relay.core.events.NeedsInput` answered through :meth:`AcpAdapter.answer_input`
(answered with a reject option, by a person or by the approval policy, the refused call
is also a :class:`~relay.core.events.PermissionDenied`);
every other method (``fs/*``, ``terminal/*``, ``_vendor/…``) is answered with -32601
(method not found); unknown ``_``-prefixed methods and notifications are logged.
:meth:`AcpAdapter.stop` sends ``session/cancel``, answers every open permission request
with the ``cancelled`` outcome (an :class:`InputWithdrawn` each) and keeps reading
until the turn unwinds; only then is the process stopped. :meth:`AcpAdapter.interrupt` is
the same cancel without the stop: the turn ends ``cancelled``, the run ``interrupted``, the
session stays loadable (INTERRUPT partial: the turn's unfinished work is lost; STEER no —
ACP has no message into a running prompt turn). ACP reports no usage or
cost, so ``TurnCompleted.usage`` is all ``None``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Mapping
from typing import Any, ClassVar

from relay.core.capabilities import Cap, Level
from relay.core.errors import RelayError
from relay.core.events import (
    AgentError,
    AgentEvent,
    InputOptionKind,
    InputWithdrawn,
    NeedsInput,
    Notice,
    PermissionDenied,
    SessionEnded,
    SessionStarted,
    TurnCompleted,
    Usage,
)
from relay.core.jsonvalue import as_dict
from relay.core.models import PermissionPolicy
from relay.core.procs import AgentProcess, StdinMode, find_executable
from relay.runtimes.acp_map import AcpEventMapper
from relay.runtimes.acp_rpc import (
    METHOD_NOT_FOUND,
    ConnectionClosed,
    JsonRpcConnection,
    RpcError,
    drain,
)
from relay.runtimes.base import (
    INTERRUPT_GRACE,
    INTERRUPTED_REASON,
    CliAdapter,
    RunRequest,
    StreamParser,
)
from relay.runtimes.guarded import Guarded, as_question, check_call

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
CLIENT_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
#: how long after the end of the turn the agent gets to exit once its stdin is closed
EXIT_GRACE = 3.0
#: session mode ids (``session/set_mode``) that match a permission policy, by agent
POLICY_MODES: Mapping[PermissionPolicy, tuple[str, ...]] = {
    PermissionPolicy.READ_ONLY: ("read-only", "plan"),
    PermissionPolicy.WORKSPACE: ("acceptEdits", "auto", "autoEdit", "auto_edit"),
    PermissionPolicy.FULL: ("bypassPermissions", "full-access", "yolo"),
}
_REJECTS: frozenset[InputOptionKind] = frozenset({"reject_once", "reject_always"})
_STOP_FAILURES = {"refusal": "the agent refused to continue",
                  "max_tokens": "the agent reached its maximum number of tokens",
                  "max_turn_requests": "the agent reached its maximum number of model requests"}


class AcpAdapter(CliAdapter):
    """Drives one ACP agent over stdio. Subclasses name the executable and its argv."""

    name: ClassVar[str] = "acp"
    binary: ClassVar[str] = "acp-agent"
    install_hint: ClassVar[str] = "Install an ACP agent and set RELAY_ACP_BIN to it"
    stdin_mode: ClassVar[str] = StdinMode.PIPE
    #: extra arguments that start the agent in ACP mode
    acp_args: ClassVar[tuple[str, ...]] = ()

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self._conn: JsonRpcConnection | None = None
        self._mapper = AcpEventMapper(self.name)
        self._queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
        #: open permission requests: their JSON-RPC id and the question Relay asked
        self._pending: dict[str, tuple[int | str, NeedsInput, str | None]] = {}
        self._session_id: str | None = None
        self._request: RunRequest | None = None
        self._in_turn = False
        self._turn_over = asyncio.Event()

    # -- argv ---------------------------------------------------------------

    def executable(self) -> str:
        """``RELAY_<NAME>_BIN`` (``-`` as ``_``: ``RELAY_GEMINI_ACP_BIN``), then PATH."""
        return find_executable(self.name.replace("-", "_"), self.binary, self.install_hint,
                               env=self.env)

    def build_argv(self, request: RunRequest) -> list[str]:
        return [self.executable(), *self.acp_args, *self.model_args(request.model)]

    def model_args(self, model: str | None) -> list[str]:
        """Arguments choosing the model (none: the agent's own default)."""
        return []

    def make_parser(self, request: RunRequest) -> StreamParser:
        raise NotImplementedError("ACP runs are driven by JSON-RPC, not a line parser")

    # -- the run --------------------------------------------------------------

    async def run(self, request: RunRequest) -> AsyncGenerator[AgentEvent, None]:
        self.preflight(request)
        self._request = request
        proc = AgentProcess(self.build_argv(request), request.cwd, self.build_env(request),
                            stdin=StdinMode.PIPE, inactivity_timeout=None)
        self._process = proc
        await proc.start()
        conn = JsonRpcConnection(proc, on_request=self._on_request,
                                 on_notification=self._on_notification,
                                 on_malformed=self._on_malformed)
        self._conn = conn
        reader = asyncio.create_task(conn.read_until_eof())
        driver = asyncio.create_task(self._drive(request, conn, reader))
        self._between_turns.clear()
        try:
            async for event in drain(self._queue, (driver, reader), proc):
                yield event
        finally:
            self._between_turns.set()

    def _emit(self, *events: AgentEvent) -> None:
        for event in events:
            if isinstance(event, SessionStarted):
                self.handshake(event)
            self._queue.put_nowait(event)

    async def _drive(self, request: RunRequest, conn: JsonRpcConnection,
                     reader: asyncio.Task[None]) -> None:
        try:
            ended = await self._session(request, conn)
        except ConnectionClosed:
            self._emit(*self._mapper.flush())
            ended = await self._crashed(reader)
        except RpcError as exc:
            self._emit(*self._mapper.flush())
            category = "auth" if "auth" in exc.message.lower() else "request"
            self._emit(AgentError(runtime=self.name, category=category, message=str(exc)))
            ended = SessionEnded(runtime=self.name, outcome="failed", reason=str(exc))
        except RelayError as exc:
            self._emit(AgentError(runtime=self.name, category="config", message=exc.message))
            ended = SessionEnded(runtime=self.name, outcome="failed", reason=exc.message)
        self._emit(*self._mapper.flush())
        for request_id in list(self._pending):  # still open: the agent moved on without it
            await self._resolve(request_id, None, "the turn ended")
        self._turn_over.set()
        if self._stop_requested and ended.outcome != "completed":
            ended = ended.model_copy(update={"outcome": "cancelled",
                                             "reason": "stopped by Relay"})
        elif self._interrupt_requested and ended.outcome != "completed":
            # also an agent that ignored the cancel and was stopped: the session stays
            ended = ended.model_copy(update={"outcome": "interrupted",
                                             "reason": INTERRUPTED_REASON})
        await conn.close_stdin()
        if self._process is not None:
            with contextlib.suppress(TimeoutError):  # an ACP agent exits when stdin ends
                await asyncio.wait_for(asyncio.shield(self._process.wait()), EXIT_GRACE)
            await self._process.stop(grace=1.0)
            result = await self._process.wait()
            if ended.exit_code is None and not result.stopped:
                ended = ended.model_copy(update={"exit_code": result.exit_code})
        self._queue.put_nowait(ended)
        self._queue.put_nowait(None)

    async def _session(self, request: RunRequest, conn: JsonRpcConnection) -> SessionEnded:
        init = await conn.request("initialize", {"protocolVersion": PROTOCOL_VERSION,
                                                 "clientCapabilities": CLIENT_CAPABILITIES})
        init = init if isinstance(init, dict) else {}
        version = init.get("protocolVersion")
        if version != PROTOCOL_VERSION:
            raise RelayError(f"The agent speaks ACP protocol version {version!r}; Relay speaks "
                             f"version {PROTOCOL_VERSION}.", "Install a compatible agent version.")
        caps = init.get("agentCapabilities") or {}
        can_load = isinstance(caps, dict) and caps.get("loadSession") is True
        if not can_load:
            self.capabilities = self.capabilities.narrow(resume=Level.NO)
        info = as_dict(init.get("agentInfo"))
        agent_version = str(info.get("version")) if info.get("version") else None
        session = await self._open_session(request, conn, can_load, agent_version)
        if isinstance(session, SessionEnded):
            return session
        await self._apply_policy(request.permission, session, conn)
        return await self._prompt(request, conn)

    async def _open_session(self, request: RunRequest, conn: JsonRpcConnection, can_load: bool,
                            agent_version: str | None) -> dict[str, Any] | SessionEnded:
        params = {"cwd": str(request.cwd.resolve()), "mcpServers": []}
        started = {"runtime": self.name, "model": request.model, "cwd": params["cwd"],
                   "permission_mode": request.permission.value, "version": agent_version}
        if request.resume_id is None:
            result = await conn.request("session/new", params)
            result = result if isinstance(result, dict) else {}
            self._session_id = str(result.get("sessionId") or "")
            self._emit(SessionStarted(agent_session_id=self._session_id or None, **started))
            return result
        if not can_load:
            message = "This ACP agent does not offer session/load, so it cannot resume."
            self._emit(AgentError(runtime=self.name, category="resume", message=message))
            return SessionEnded(runtime=self.name, outcome="failed", reason=message)
        self._session_id = request.resume_id
        self._emit(SessionStarted(agent_session_id=request.resume_id, **started))
        self._mapper.replay = True
        result = await conn.request("session/load", {"sessionId": request.resume_id, **params},
                                    on_settle=self._replay_done)
        return result if isinstance(result, dict) else {}

    def _replay_done(self) -> None:
        self._emit(*self._mapper.flush())
        self._mapper.replay = False

    async def _apply_policy(self, policy: PermissionPolicy, session: dict[str, Any],
                            conn: JsonRpcConnection) -> None:
        modes = as_dict(session.get("modes"))
        offered = {str(m.get("id")) for m in modes.get("availableModes") or []
                   if isinstance(m, dict)}
        mode = next((m for m in POLICY_MODES[policy] if m in offered), None)
        if mode is None:
            if offered:
                self._emit(Notice(runtime=self.name, category="warning", message=(
                    f"The agent offers no session mode for the {policy.value} policy "
                    f"(it offers {', '.join(sorted(offered))}); its permission requests "
                    "come to Relay.")))
            return
        if mode != modes.get("currentModeId"):
            await conn.request("session/set_mode", {"sessionId": self._session_id,
                                                    "modeId": mode})

    async def _prompt(self, request: RunRequest, conn: JsonRpcConnection) -> SessionEnded:
        self._in_turn = True
        try:
            result = await conn.request("session/prompt", {
                "sessionId": self._session_id,
                "prompt": [{"type": "text", "text": request.prompt}]})
        finally:
            self._in_turn = False
        self._emit(*self._mapper.flush())
        reason = result.get("stopReason") if isinstance(result, dict) else None
        text = "".join(self._mapper.turn_text) or None
        self._emit(TurnCompleted(runtime=self.name, usage=Usage(), model=request.model,
                                 result_text=text))
        if reason == "end_turn":
            return SessionEnded(runtime=self.name, outcome="completed", result_text=text)
        if reason == "cancelled":
            outcome = "cancelled" if self._stop_requested else "interrupted"
            why = INTERRUPTED_REASON if self._interrupt_requested else "the turn was cancelled"
            return SessionEnded(runtime=self.name, outcome=outcome, reason=why, result_text=text)
        why = _STOP_FAILURES.get(str(reason), f"unknown stop reason {reason!r}")
        self._emit(AgentError(runtime=self.name, category="max_turns" if reason and
                              str(reason).startswith("max_") else "unknown", message=why))
        return SessionEnded(runtime=self.name, outcome="failed", reason=why, result_text=text)

    async def _crashed(self, reader: asyncio.Task[None]) -> SessionEnded:
        with contextlib.suppress(Exception):
            await reader
        assert self._process is not None
        result = await self._process.wait()
        lines = result.stderr_tail.strip().splitlines()
        if result.signal is not None:
            why = f"the agent was killed by signal {result.signal}"
        else:
            why = f"the agent exited (code {result.exit_code}) before the turn ended"
        reason = f"{why}: {lines[-1]}" if lines else why
        if not self._stop_requested:
            self._emit(AgentError(runtime=self.name, category="process", message=reason))
        return SessionEnded(runtime=self.name, outcome="failed", reason=reason,
                            exit_code=result.exit_code)

    # -- what the agent sends ---------------------------------------------------

    async def _on_request(self, method: str, rpc_id: int | str, params: dict[str, Any]) -> None:
        assert self._conn is not None
        if method == "session/request_permission":
            self._emit(*self._mapper.flush())
            request_id = f"{self._session_id or 'acp'}:{rpc_id}"
            event = self._mapper.permission(request_id, params)
            call_id = as_dict(params.get("toolCall")).get("toolCallId")
            guarded = self._guarded(params, str(call_id) if call_id else None)
            if guarded is not None:
                self._emit(*guarded.events)
                if guarded.verdict.decision == "deny":
                    await self._refuse(rpc_id, event, guarded.refusal)
                    return
                if guarded.verdict.decision == "ask":
                    event = as_question(event, guarded.verdict)
            self._pending[request_id] = (rpc_id, event, str(call_id) if call_id else None)
            self._emit(event)
            if self._stop_requested:  # asked while Relay is cancelling: cancelled at once
                await self._resolve(request_id, None, "the turn is being cancelled")
            return
        if method.startswith("_"):
            log.warning("%s: unknown extension request %s (answered: method not found)",
                        self.name, method)
        else:
            log.info("%s: the agent called %s, which Relay does not offer (-32601)",
                     self.name, method)
        with contextlib.suppress(ConnectionClosed):
            await self._conn.respond_error(rpc_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _guarded(self, params: dict[str, Any], call_id: str | None) -> Guarded | None:
        """The guard's verdict on the call a permission request asks about: named by its
        ACP kind (execute, edit, delete, move, fetch…) or title, its raw input and
        locations as the input."""
        request = self._request
        if request is None or request.guard is None:
            return None
        tool = self._mapper.asked_tool(params)
        raw = tool.get("rawInput")
        tool_input: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        if isinstance(tool.get("locations"), list):
            tool_input.setdefault("locations", tool["locations"])
        kind = str(tool.get("kind") or "")
        name = kind if kind and kind != "other" else str(tool.get("title") or "tool")
        return check_call(request.guard, runtime=self.name, where="acp", tool=name,
                          tool_input=tool_input, cwd=str(request.cwd), call_id=call_id,
                          agent_session_id=self._session_id)

    async def _refuse(self, rpc_id: int | str, asked: NeedsInput, why: str) -> None:
        """Answer a permission request with its reject option (cancelled when it has none)
        without asking anyone: the guard refused the call."""
        reject = next((o for o in asked.options if o.kind == "reject_once"), None) or next(
            (o for o in asked.options if o.kind in _REJECTS), None)
        outcome = ({"outcome": "selected", "optionId": reject.id} if reject is not None
                   else {"outcome": "cancelled"})
        assert self._conn is not None
        with contextlib.suppress(ConnectionClosed):
            await self._conn.respond(rpc_id, {"outcome": outcome})

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update":
            self._emit(*self._mapper.update(params))
        elif method.startswith("_"):
            log.warning("%s: unknown extension notification %s: %s", self.name, method,
                        sorted(params))
        else:
            log.info("%s: ignored notification %s", self.name, method)

    def _on_malformed(self, line: str) -> None:
        shown = line if len(line) <= 200 else line[:200] + "…"
        self._emit(AgentError(runtime=self.name, category="malformed", fatal=False,
                              message=f"Ignored a line that is not a JSON-RPC message: {shown}"))

    # -- answers, stop ----------------------------------------------------------

    async def answer_input(self, request_id: str, option_id: str | None = None, *,
                           text: str | None = None) -> None:
        """Answer a permission request: one of its option ids, or neither (cancelled)."""
        self.capabilities.require(Cap.SEND_INPUT)
        pending = self._pending.get(request_id)
        if pending is None:
            raise RelayError(f"The {self.name} agent is not waiting for an answer to {request_id}.",
                             "It may have been answered, withdrawn or the run may have ended.")
        ids = sorted(o.id for o in pending[1].options)
        if text is not None:
            raise RelayError("An ACP permission request takes one of its options, not text.",
                             f"Answer with one of: {', '.join(ids)}.")
        if option_id is not None and option_id not in ids:
            raise RelayError(f"{option_id!r} is not an option of {request_id}.",
                             f"Answer with one of: {', '.join(ids)}.")
        await self._resolve(request_id, option_id, None)

    async def _resolve(self, request_id: str, option_id: str | None,
                       withdrawn: str | None) -> None:
        pending = self._pending.pop(request_id, None)
        if pending is None or self._conn is None:
            return
        outcome = ({"outcome": "selected", "optionId": option_id} if option_id is not None
                   else {"outcome": "cancelled"})
        if withdrawn is not None:
            self._emit(InputWithdrawn(runtime=self.name, request_id=request_id, reason=withdrawn))
        _, asked, call_id = pending
        chosen = next((o for o in asked.options if o.id == option_id), None)
        if chosen is not None and chosen.kind in _REJECTS:
            self._emit(PermissionDenied(runtime=self.name, tool=asked.tool or "unknown",
                                        call_id=call_id,
                                        detail=f"{asked.prompt} answered: {chosen.label}"))
        with contextlib.suppress(ConnectionClosed):
            await self._conn.respond(pending[0], {"outcome": outcome})

    async def stop(self, grace: float = 5.0) -> None:
        """Cancel the turn (answering open requests ``cancelled``), then end the process."""
        self._stop_requested = True
        await self._cancel_turn(grace)
        if self._process is not None:
            await self._process.stop(grace=grace)

    async def interrupt(self) -> None:
        """End the prompt turn the ACP way: ``session/cancel`` (open permission requests
        answered ``cancelled``); the agent answers the prompt with stop reason
        ``cancelled`` and the run ends ``interrupted``. The session stays: the next message
        loads it (``session/load``) and goes on. An agent that ignores the cancel is
        stopped after :data:`~relay.runtimes.base.INTERRUPT_GRACE` seconds."""
        self.capabilities.require(Cap.INTERRUPT)
        self._interrupt_requested = True
        await self._cancel_turn(INTERRUPT_GRACE)
        if not self._turn_over.is_set() and self._process is not None:
            await self._process.stop(grace=1.0)

    async def _cancel_turn(self, grace: float) -> None:
        conn = self._conn
        if conn is not None and self._in_turn and not conn.closed and self._session_id:
            with contextlib.suppress(ConnectionClosed):
                await conn.notify("session/cancel", {"sessionId": self._session_id})
            for request_id in list(self._pending):
                await self._resolve(request_id, None, "the turn was cancelled")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._turn_over.wait(), grace)
