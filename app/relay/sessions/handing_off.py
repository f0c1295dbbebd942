"""The runner's handoffs: "hand off now", the handoff a limit or a failure leads to, and the
receiving entry's first step.

A part of :class:`~relay.sessions.runner.SessionRunner` (its base): the runner module keeps
the state machine, this one how a session moves from one chain entry to the next.
"""

from __future__ import annotations

import asyncio
import contextlib

from relay.core.config import Config
from relay.core.errors import HandoffRefusedError
from relay.core.events import AgentEvent, Notice
from relay.core.models import SessionSpec, entry_runtime
from relay.runtimes.base import RuntimeAdapter
from relay.runtimes.registry import adapter_class
from relay.sessions.coordinator import Brief, HandoffCoordinator, HandoffRequest
from relay.sessions.handoff import HandoffRecord
from relay.sessions.pause import PauseRequest, SafePoints, pause_agent
from relay.sessions.receiver import prepare_receiver
from relay.sessions.run_types import Outcome, Phase, Services, Step
from relay.sessions.worktree import Workspace

#: how a refused "hand off now" names what the session is doing
_DOING: dict[Phase, str] = {"preparing": "preparing", "deciding": "between two runs",
                            "verifying": "verifying", "handing_off": "handing off",
                            "finished": "not running"}


class Handoffs:
    """The handoff half of a session runner (the runner's fields it works with are
    declared here for the type checker; :class:`SessionRunner` has them)."""

    session_id: str
    spec: SessionSpec
    config: Config
    services: Services
    adapter: RuntimeAdapter | None
    simulated: bool
    phase: Phase
    _chain: list[str]
    _index: int
    _ws: Workspace | None
    _run_id: str | None
    _agent_sid: str | None
    _pause: PauseRequest | None
    _safe: SafePoints
    _pauser: asyncio.Task[None] | None
    _wake: asyncio.Event

    async def _emit(self, event: AgentEvent, run_id: str | None = None) -> None:
        raise NotImplementedError

    @property
    def coordinator(self) -> HandoffCoordinator:
        return self.services.coordinator

    def request_handoff(self, to_entry: str | None = None,
                        reason: str = "requested by the user") -> str:
        """Pause the agent at its next safe point and hand the task to ``to_entry``.

        ``to_entry`` defaults to the chain's next entry; an entry not in the chain
        is inserted after the current one. Returns what will happen.

        Raises:
            HandoffRefusedError: nowhere to go, not handed off-able, or already under way.
        """
        if self._ws is None or self.phase not in ("running", "waiting"):
            raise HandoffRefusedError(
                f"Session {self.session_id} is {_DOING.get(self.phase, self.phase)}"
                " right now, so it cannot be handed off.",
                "Try again once its agent is working." if self.phase != "handing_off"
                else "A handoff is already under way; watch it with `relay-cli show`.")
        if self._pause is not None:
            raise HandoffRefusedError("A handoff of this session was already requested.",
                                      f"It goes to {self._pause.to_entry} at the next safe point.")
        if not self._ws.is_worktree:
            raise HandoffRefusedError("In-place sessions (--no-worktree) cannot be handed off.",
                                      "Start the task in a worktree to be able to hand it off.")
        current = self._chain[self._index]
        target = to_entry or (self._chain[self._index + 1]
                              if self._index + 1 < len(self._chain) else None)
        if target is None:
            raise HandoffRefusedError(f"{current} is the last entry of this session's chain.",
                                      "Name where to hand off to: --to provider[:account].")
        adapter_class(entry_runtime(target))  # an unknown runtime fails here, not later
        if target == current:
            raise HandoffRefusedError(f"The session already runs on {current}.",
                                      "Name another provider or account.")
        self._pause = PauseRequest(target, reason, agent_running=self.phase == "running")
        self._safe.arm()
        self._pauser = asyncio.create_task(self._pause_agent(self._pause),
                                           name=f"relay-pause-{self.session_id}")
        if self.phase == "waiting":
            self._wake.set()
            return f"handing off to {target} now (the session was waiting)"
        return (f"pausing at the next safe point (at most {self.config.pause_timeout:g} s), "
                f"then handing off to {target}")

    async def _pause_agent(self, pause: PauseRequest) -> None:
        coordinator, ws, run_id = self.coordinator, self._ws, self._run_id
        assert ws is not None
        current = self._chain[self._index]

        async def stop() -> None:
            if self.adapter is not None:
                await self.adapter.stop(grace=self.config.stop_grace)

        await pause_agent(pause, self._safe, begin=lambda: coordinator.begin(self._handoff_request(
            ws, run_id, current, pause.to_entry, pause.reason)),
            stop=stop, within=self.config.pause_timeout)

    def _handoff_request(self, ws: Workspace, from_run_id: str | None, from_entry: str,
                         to_entry: str, reason: str | None,
                         paused: str | None = None) -> HandoffRequest:
        return HandoffRequest(session_id=self.session_id, task=self.spec.task, workspace=ws,
                              from_run_id=from_run_id, from_entry=from_entry, to_entry=to_entry,
                              reason=reason, simulated=self.simulated, paused=paused,
                              acceptance=self.spec.verify)

    async def _prepare_handoff(self, ws: Workspace, outcome: Outcome, from_entry: str,
                               index: int, reason: str) -> Step:
        self.phase = "handing_off"
        record, brief = await self.coordinator.prepare(self._handoff_request(
            ws, outcome.run_id, from_entry, self._chain[index], reason))
        self._index = index
        return await self._receiver(ws, record, brief, outcome.agent_session_id)

    async def _receiver(self, ws: Workspace, record: HandoffRecord, brief: Brief,
                        agent_session_id: str | None) -> Step:
        """The receiving entry's first step: its brief, and its carried conversation."""
        to_entry = record.to_entry or self._chain[self._index]
        receiver = await prepare_receiver(
            brief, from_entry=record.from_entry or "", to_entry=to_entry,
            agent_session_id=agent_session_id, cwd=ws.path,
            accounts=self.services.accounts)
        if receiver.note:
            await self._emit(Notice(category="fallback", message=receiver.note))
        return Step(entry=to_entry, prompt=receiver.prompt, resume_id=receiver.resume_id,
                    handoff=record, brief_file=receiver.brief_file)

    async def _hand_off_now(self, ws: Workspace) -> Step:
        """The agent has stopped (or was not running): carry the requested handoff out."""
        assert self._pause is not None
        pause, self._pause = self._pause, None
        self.phase = "handing_off"
        await self._settle(pause)
        if pause.to_entry not in self._chain[self._index + 1:]:
            self._chain.insert(self._index + 1, pause.to_entry)
        index = self._chain.index(pause.to_entry, self._index + 1)
        from_entry = self._chain[self._index]
        req = self._handoff_request(ws, self._run_id, from_entry, pause.to_entry, pause.reason,
                                    paused=pause.how or "the agent was not running")
        record = pause.record or await self.coordinator.begin(req)
        record, brief = await self.coordinator.resume(record, req)
        self._index = index
        return await self._receiver(ws, record, brief, self._agent_sid)

    async def _drop_pause(self, why: str) -> None:
        pause, self._pause = self._pause, None
        if pause is None:
            return
        await self._settle(pause)
        if pause.record is not None:
            await self.coordinator.failed(pause.record, why)

    async def _settle(self, pause: PauseRequest) -> None:
        """The agent run is over: wait until the handoff is journaled, end the pauser."""
        await pause.begun.wait()
        task, self._pauser = self._pauser, None
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _hand_off_early(self, reason: str, run_id: str) -> None:
        """The account nears its limit: hand off at the next safe point, before it blocks."""
        if self._pause is not None or self.phase != "running":
            return
        try:
            self.request_handoff(None, reason=reason)
        except HandoffRefusedError as exc:
            await self._emit(Notice(category="warning", message=(
                f"No pre-emptive handoff: {exc.message}")), run_id)
