"""Runs one session: workspace → agent run → final state, every step stored.

The runner never talks to a front end: it writes state changes and agent
events through the :class:`~relay.core.store.writer.EventWriter` (committed
together, published after commit) and front ends watch the bus or the store.
It guarantees a final state — completed, failed (with the reason), cancelled
or interrupted — whatever the adapter does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field

from relay.core.config import Config
from relay.core.errors import RelayError, StoreError
from relay.core.events import (
    AgentError,
    AgentEvent,
    LimitHit,
    SessionEnded,
    SessionState,
    StateChanged,
    Usage,
)
from relay.core.models import SessionSpec, chain_of, entry_runtime
from relay.core.scrub_events import scrub_event
from relay.core.store.db import now_ms
from relay.core.store.writer import EventWriter, WriteOp
from relay.runtimes.base import RunRequest, RuntimeAdapter
from relay.runtimes.registry import adapter_class, make_adapter
from relay.sessions.coordinator import HandoffCoordinator, HandoffRequest
from relay.sessions.handoff import HandoffRecord
from relay.sessions.worktree import Workspace, create_worktree, in_place, run_setup

log = logging.getLogger(__name__)

_FINAL: dict[str, SessionState] = {
    "completed": "completed", "failed": "failed",
    "cancelled": "cancelled", "interrupted": "interrupted",
}


def new_id() -> str:
    """A short, sortable-enough session / run id."""
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class Continuation:
    """What a follow-up run of an existing session needs."""

    prompt: str
    agent_session_id: str
    runtime: str
    workspace: Workspace
    #: the model that agent session ran with (None: the runtime's default)
    model: str | None
    #: usage of earlier runs on the same agent session (Codex reports thread totals).
    previous_total: Usage


@dataclass(frozen=True)
class Recovery:
    """A handoff a stopped engine left between two steps, to carry on with."""

    handoff: HandoffRecord
    workspace: Workspace


@dataclass
class SessionRunner:
    """Drives one session (or one follow-up run of it) to a final state."""

    session_id: str
    spec: SessionSpec
    config: Config
    writer: EventWriter
    continuation: Continuation | None = None
    recovery: Recovery | None = None
    coordinator: HandoffCoordinator | None = None
    adapter: RuntimeAdapter | None = None
    _cancel: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    simulated: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.simulated = any(adapter_class(entry_runtime(e)).simulated for e in chain_of(self.spec))

    def _label(self, event: AgentEvent) -> AgentEvent:
        """Scrub secrets; stamp runtime and the simulation flag on Relay's own events too."""
        event = scrub_event(event)
        update: dict[str, object] = {}
        if not event.runtime:
            update["runtime"] = self.spec.runtime
        if self.simulated and not event.simulated:
            update["simulated"] = True
        return event.model_copy(update=update) if update else event

    async def _emit(self, event: AgentEvent, run_id: str | None = None) -> None:
        await self.writer.submit(WriteOp(self.session_id, run_id, self._label(event)))

    async def _state(self, state: SessionState, reason: str | None = None) -> None:
        await self.writer.write(WriteOp(self.session_id, None,
                                        self._label(StateChanged(state=state, reason=reason))))

    async def run(self) -> SessionState:
        """Run to the end; returns the final state."""
        final: SessionState = "failed"
        reason: str | None = None
        try:
            await self._state("starting")
            if self.recovery is not None:
                final, reason = await self._recover(self.recovery)
            else:
                workspace = (self.continuation.workspace if self.continuation
                             else await self._workspace())
                final, reason = await self._run_chain(workspace)
        except StoreError:
            raise
        except RelayError as exc:
            await self._emit(AgentError(category="config", message=str(exc), runtime=self.spec.runtime))
            final, reason = "failed", exc.message
        except asyncio.CancelledError:
            final, reason = "interrupted", "Relay was closed while the session ran"
            with contextlib.suppress(Exception):
                await asyncio.shield(self._state(final, reason))
            raise
        await self._state(final, reason)
        return final

    async def cancel(self) -> None:
        """Ask the agent to stop; the run ends as cancelled."""
        self._cancel.set()
        if self.adapter is not None:
            await self.adapter.stop(grace=self.config.stop_grace)

    async def _workspace(self) -> Workspace:
        if self.spec.worktree:
            ws = await create_worktree(self.spec.repo, self.config.worktrees_dir, self.session_id)
        else:
            ws = await in_place(self.spec.repo)
        await self.writer.write(WriteOp(self.session_id, statements=[(
            "UPDATE sessions SET workdir=?, branch=? WHERE id=?",
            (str(ws.path), ws.branch, self.session_id))]))
        if ws.is_worktree and self.spec.setup_command:
            await run_setup(self.spec.setup_command, ws.path)
        return ws

    async def _run_chain(self, ws: Workspace) -> tuple[SessionState, str | None]:
        """Run the chain's entries in turn: a run that ends on a limit hands off to the next."""
        cont = self.continuation
        chain = [cont.runtime] if cont else chain_of(self.spec)
        step = _Step(entry=chain[0], prompt=cont.prompt if cont else self.spec.task,
                     resume_id=cont.agent_session_id if cont else None,
                     model=cont.model if cont else self.spec.model)
        return await self._run_from(ws, chain, 0, step)

    async def _recover(self, recovery: Recovery) -> tuple[SessionState, str | None]:
        """Carry on a handoff from its last committed state, then the rest of the chain."""
        record, ws = recovery.handoff, recovery.workspace
        chain = chain_of(self.spec)
        index = _entry_index(chain, record.from_entry, record.to_entry)
        assert self.coordinator is not None
        if record.state == "resuming":  # the receiver was working when Relay stopped
            await self.coordinator.confirmed_after_crash(record)
            return "interrupted", (f"Relay stopped while {record.to_entry} worked; continue "
                                   f"with `relay-cli run TASK --resume {self.session_id}`")
        record, prompt = await self.coordinator.resume(record, self._handoff_request(
            ws, record.from_run_id, record.from_entry or "", record.to_entry or "",
            record.reason))
        step = _Step(entry=chain[index], prompt=prompt, handoff=record)
        return await self._run_from(ws, chain, index, step)

    def _handoff_request(self, ws: Workspace, from_run_id: str | None, from_entry: str,
                         to_entry: str, reason: str | None) -> HandoffRequest:
        return HandoffRequest(session_id=self.session_id, task=self.spec.task, workspace=ws,
                              from_run_id=from_run_id, from_entry=from_entry, to_entry=to_entry,
                              reason=reason, simulated=self.simulated)

    async def _run_from(self, ws: Workspace, chain: list[str], start: int,
                        step: _Step) -> tuple[SessionState, str | None]:
        for index in range(start, len(chain)):
            outcome = await self._run_agent(ws, step)
            nxt = chain[index + 1] if index + 1 < len(chain) else None
            if (outcome.state != "failed" or outcome.limit is None or nxt is None
                    or self._cancel.is_set() or self.coordinator is None):
                return outcome.state, outcome.reason
            if not ws.is_worktree:
                why = "in-place sessions (--no-worktree) cannot be handed off"
                await self._emit(AgentError(category="config", message=f"No handoff: {why}."))
                return outcome.state, outcome.reason
            record, prompt = await self.coordinator.prepare(self._handoff_request(
                ws, outcome.run_id, step.entry, nxt, outcome.limit.limit))
            step = _Step(entry=nxt, prompt=prompt, handoff=record)
        return "failed", "the provider chain is exhausted"  # pragma: no cover - loop returns

    async def _run_agent(self, ws: Workspace, step: _Step) -> _Outcome:
        if self._cancel.is_set():  # stopped while the workspace (or a handoff) was prepared
            await self._fail_handoff(step, "cancelled by the user")
            return _Outcome("cancelled", "cancelled by the user before the agent started")
        runtime = entry_runtime(step.entry)
        request = self._request(ws, step)
        try:  # before a run exists: a receiver that cannot start fails the handoff cleanly
            adapter = make_adapter(runtime)
            adapter.preflight(request)
        except RelayError as exc:
            await self._fail_handoff(step, f"{step.entry} cannot start: {exc.message}")
            raise
        self.adapter = adapter
        run_id = new_id()
        await self.writer.write(WriteOp(self.session_id, statements=[(
            "INSERT INTO runs (id, session_id, attempt, runtime, model, started_ms) VALUES"
            " (?, ?, (SELECT coalesce(max(attempt), 0) + 1 FROM runs WHERE session_id=?), ?, ?, ?)",
            (run_id, self.session_id, self.session_id, runtime, step.model, now_ms()))]))
        await self._state("running")
        if step.handoff is not None and self.coordinator is not None:
            step.handoff = await self.coordinator.dispatched(step.handoff, run_id)
        ended, limit = await self._stream(adapter, request, run_id, step)
        if self._cancel.is_set():
            return _Outcome("cancelled", "cancelled by the user", run_id)
        return _Outcome(_FINAL[ended.outcome], ended.reason, run_id, limit)

    async def _fail_handoff(self, step: _Step, why: str) -> None:
        if step.handoff is not None and self.coordinator is not None:
            await self.coordinator.failed(step.handoff, why)
            step.handoff = None

    async def _stream(self, adapter: RuntimeAdapter, request: RunRequest, run_id: str,
                      step: _Step) -> tuple[SessionEnded, LimitHit | None]:
        ended: SessionEnded | None = None
        limit: LimitHit | None = None
        try:
            # aclosing: if storing fails mid-stream, the adapter's cleanup (stopping the
            # agent's process tree) runs now, not whenever the generator is collected.
            async with contextlib.aclosing(adapter.run(request)) as events:
                async for event in events:
                    if step.handoff is not None and self.coordinator is not None:
                        await self.coordinator.confirmed(step.handoff)  # the receiver works
                        step.handoff = None
                    if isinstance(event, SessionEnded):
                        ended = event
                    elif isinstance(event, LimitHit) and event.blocking:
                        limit = event
                    await self._emit(event, run_id)
        except StoreError:
            raise  # nothing more can be recorded; the engine reports it
        except RelayError as exc:
            ended = SessionEnded(runtime=adapter.name, outcome="failed", reason=exc.message)
            await self._emit(AgentError(runtime=adapter.name, category="process", message=str(exc)), run_id)
            await self._emit(ended, run_id)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(adapter.stop(grace=1.0))
                await asyncio.shield(self._emit(SessionEnded(
                    runtime=adapter.name, outcome="interrupted", reason="Relay was closed"), run_id))
            raise
        if ended is None:  # an adapter bug; never leave a run without an end
            ended = SessionEnded(runtime=adapter.name, outcome="failed",
                                 reason="the agent run ended without a result")
            await self._emit(ended, run_id)
        await self._fail_handoff(step, f"{step.entry} ended before working: "
                                       f"{ended.reason or ended.outcome}")
        return ended, limit

    def _request(self, ws: Workspace, step: _Step) -> RunRequest:
        options: dict[str, object] = {"step_delay": self.config.demo_step_delay}
        if self.spec.demo_limit_after is not None and step.handoff is None:
            options["limit_after"] = self.spec.demo_limit_after
        if self.continuation is not None:
            options["previous_total"] = self.continuation.previous_total
        return RunRequest(prompt=step.prompt, cwd=ws.path, model=step.model,
                          permission=self.spec.permission, resume_id=step.resume_id,
                          inactivity_timeout=self.config.inactivity_timeout, options=options)


def _entry_index(chain: list[str], from_entry: str | None, to_entry: str | None) -> int:
    """Where ``to_entry`` stands in the chain (right after ``from_entry`` when repeated)."""
    for i in range(1, len(chain)):
        if chain[i] == to_entry and chain[i - 1] == from_entry:
            return i
    return chain.index(to_entry) if to_entry in chain else len(chain) - 1


@dataclass
class _Step:
    """One chain entry's run: what it is told, and the handoff that led to it."""

    entry: str
    prompt: str
    resume_id: str | None = None
    model: str | None = None
    handoff: HandoffRecord | None = None


@dataclass(frozen=True)
class _Outcome:
    state: SessionState
    reason: str | None
    run_id: str | None = None
    limit: LimitHit | None = None
