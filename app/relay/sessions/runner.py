"""Runs one session: workspace → agent runs → final state, every step stored.

The runner never talks to a front end: it writes state changes and agent
events through the :class:`~relay.core.store.writer.EventWriter` (committed
together, published after commit) and front ends watch the bus or the store.
It guarantees a final state — completed, failed (with the reason), cancelled
or interrupted — whatever the adapter does.

It is a state machine over :data:`~relay.sessions.run_types.Phase`::

    preparing ─▶ running ─▶ deciding ─┬─▶ verifying ──▶ finished, or handing_off
                    ▲                 ├─▶ waiting ────▶ running (the same entry), or handing_off
                    │                 ├─▶ handing_off ─▶ running (the next entry)
                    └─────────────────┴─▶ finished

Each agent run's outcome goes to one handler (:meth:`SessionRunner._decide`): the wallet
stopped the session, a "hand off now" is pending, the agent completed (then the acceptance
commands decide), a failure the fallback takes over (a snag), a limit (retry, wait, hand
off or fail: :func:`~relay.sessions.decision.decide`), or any other end. A handler returns
the next step to run or how the session ended. "Hand off now" is accepted while an agent
runs or the session waits, and only then.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from relay.core.config import Config
from relay.core.errors import RelayError, StoreError
from relay.core.events import (
    AgentError,
    AgentEvent,
    LimitHit,
    Notice,
    SessionEnded,
    SessionStarted,
    StateChanged,
    utcnow,
)
from relay.core.models import SessionSpec, chain_of, entry_runtime
from relay.core.states import SessionState
from relay.core.store.sessions_repo import SessionsRepo
from relay.core.store.writer import EventWriter, WriteOp
from relay.runtimes.base import INTERRUPTED_REASON, RunRequest, RuntimeAdapter
from relay.runtimes.permissions import shortfall
from relay.runtimes.registry import adapter_class, make_adapter
from relay.sessions import forking
from relay.sessions.approvals import InputGate
from relay.sessions.decision import Decision, Rules, decide
from relay.sessions.guarding import NONE_OPEN, GuardWatch, choose_entry
from relay.sessions.handing_off import Handoffs
from relay.sessions.orphans import process_start_time
from relay.sessions.pause import PauseRequest, SafePoints
from relay.sessions.run_request import build_request, prepare_workspace, snapshot_run
from relay.sessions.run_types import (
    Attempt,
    Continuation,
    Ended,
    Outcome,
    OutcomeKind,
    Phase,
    Recovery,
    Services,
    Step,
    WaitRecovery,
    entry_index,
    retry_step,
)
from relay.sessions.talking import Talking
from relay.sessions.verifier import run_checks
from relay.sessions.worktree import Workspace
from relay.wallet.model import GuardVerdict

_FINAL: dict[str, SessionState] = {"completed": "completed", "failed": "failed",
                                   "cancelled": "cancelled", "interrupted": "interrupted"}
CANCELLED_WAITING = "cancelled by the user while waiting"
#: the agent events the input gate or the wallet's watch act on
_ANSWERED = InputGate.KINDS | GuardWatch.KINDS

def new_id() -> str:
    """A short, sortable-enough session / run id."""
    return uuid.uuid4().hex[:12]


@dataclass
class SessionRunner(Handoffs):
    """Drives one session (or one follow-up run of it) to a final state."""

    session_id: str
    spec: SessionSpec
    config: Config
    writer: EventWriter
    services: Services
    continuation: Continuation | None = None
    recovery: Recovery | WaitRecovery | None = None
    adapter: RuntimeAdapter | None = None
    _cancel: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    #: interrupts a wait (cancel, or "hand off now" while waiting for a reset)
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    simulated: bool = field(default=False, init=False)
    #: what the runner does now (the module docstring draws the transitions)
    phase: Phase = field(default="preparing", init=False)
    _chain: list[str] = field(default_factory=list, init=False)
    _index: int = field(default=0, init=False)
    _ws: Workspace | None = field(default=None, init=False)
    _run_id: str | None = field(default=None, init=False)
    _agent_sid: str | None = field(default=None, init=False)
    _pause: PauseRequest | None = field(default=None, init=False)
    _safe: SafePoints = field(default_factory=SafePoints, init=False)
    _pauser: asyncio.Task[None] | None = field(default=None, init=False)
    #: why the wallet stopped this session (a budget is spent), once it has
    _stopped: str | None = field(default=None, init=False)
    gate: InputGate = field(init=False)  # the agent's open questions (needs input)
    talk: Talking = field(init=False)  # steer, interrupt, the queue's delivery points

    def __post_init__(self) -> None:
        self.talk = Talking(self.session_id, self.services.inbox, self.writer.store,
                            self.spec.task)
        self.simulated = any(adapter_class(entry_runtime(e)).simulated for e in chain_of(self.spec))
        self.gate = InputGate(self.spec.approvals, lambda ev: self._emit(ev, self._run_id), self._state)

    def _label(self, event: AgentEvent) -> AgentEvent:
        """Stamp runtime and the simulation flag on Relay's own events too (the writer
        scrubs every event it is given)."""
        update: dict[str, object] = {}
        if not event.runtime:
            update["runtime"] = self.spec.runtime
        if self.simulated and not event.simulated:
            update["simulated"] = True
        return event.model_copy(update=update) if update else event

    async def _emit(self, event: AgentEvent, run_id: str | None = None) -> None:
        await self.writer.submit(WriteOp(self.session_id, run_id, self._label(event)))

    def _op(self, event: AgentEvent, payload: bytes | None, run_id: str) -> WriteOp:
        """An agent event's write; its worker-made JSON is kept unless labelling changed it."""
        if event.runtime and (event.simulated or not self.simulated):  # labelled already
            return WriteOp(self.session_id, run_id, event, payload=payload)
        return WriteOp(self.session_id, run_id, self._label(event))

    async def _state(self, state: SessionState, reason: str | None = None,
                     until: datetime | None = None, refused: int | None = None) -> None:
        await self.writer.write(WriteOp(self.session_id, None, self._label(
            StateChanged(state=state, reason=reason, until=until, refused_calls=refused))))

    async def _refused(self) -> int:
        """The session's refused tool calls so far, as stored (its end state carries them)."""
        await self.writer.flush()
        return await self.writer.store.sessions.refused_calls(self.session_id)

    async def run(self) -> SessionState:
        """Run to the end; returns the final state."""
        try:
            await self._state("starting")
            if isinstance(self.recovery, WaitRecovery):
                end = await self._recover_wait(self.recovery)
            elif self.recovery is not None:
                end = await self._recover(self.recovery)
            else:
                workspace = (self.continuation.workspace if self.continuation
                             else await self._workspace())
                end = await self._run_chain(workspace)
        except StoreError:
            raise
        except RelayError as exc:
            await self._emit(AgentError(category="config", message=str(exc), runtime=self.spec.runtime))
            end = Ended("failed", exc.message)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._state("interrupted", "Relay was closed while the session ran"))
            raise
        finally:
            self.phase = "finished"
            if self._pauser is not None:
                self._pauser.cancel()
        await self.talk.not_carried(f"the session {end.state} before a run carried it")
        await self._state(end.state, end.reason, refused=await self._refused())
        return end.state

    async def cancel(self) -> None:
        """Ask the agent to stop; the run ends as cancelled."""
        self._cancel.set()
        self._wake.set()
        if self.adapter is not None:
            await self.adapter.stop(grace=self.config.stop_grace)

    @property
    def run_id(self) -> str | None:
        """The agent run under way (or the last one)."""
        return self._run_id

    async def steer(self, text: str) -> None:
        """Give the agent ``text`` mid-turn (the runtime's steer capability)."""
        await self.talk.steer(self.adapter if self.phase == "running" else None, text)

    async def interrupt(self) -> None:
        """Stop the current turn, not the session: queued messages go next, else the
        session ends ``interrupted`` and the next message continues it."""
        await self.talk.interrupt(self.adapter if self.phase == "running" else None)

    # -- the chain ------------------------------------------------------------------

    async def _workspace(self) -> Workspace:
        return await prepare_workspace(self.spec, self.config, self.session_id, self.writer,
                                       self._emit)

    async def _run_chain(self, ws: Workspace) -> Ended:
        """Run the chain's entries in turn: a run that ends on a limit hands off to the next."""
        cont = self.continuation
        chain = [cont.runtime] if cont else chain_of(self.spec)
        step = Step(entry=chain[0], prompt=cont.prompt if cont else self.spec.task,
                     resume_id=cont.agent_session_id if cont else None,
                     model=cont.model if cont else self.spec.model)
        index = await self._first_open_entry(chain)  # a follow-up is new work too
        if index is None:
            return Ended("failed", self._stopped)
        step.entry = chain[index]
        if index:
            step.model = None  # the model asked for belongs to the first entry
        if cont is None and self.spec.fork_of is not None:  # a fork carries its parent on
            step = await forking.first_step(self.spec, step, ws, self.session_id,
                                            self.coordinator, simulated=self.simulated,
                                            emit=self._emit)
        return await self._run_from(ws, chain, index, step)

    async def _first_open_entry(self, chain: list[str], start: int = 0) -> int | None:
        """The entry to run from ``start`` (see :func:`choose_entry`); None sets ``_stopped``."""
        index, why = await choose_entry(chain, start, self.session_id, self.services.guard,
                                        self.services.breakers, utcnow(), self._emit)
        if index is None:
            self._stopped = why
        return index

    async def _recover(self, recovery: Recovery) -> Ended:
        """Carry on a handoff from its last committed state, then the rest of the chain."""
        record, ws = recovery.handoff, recovery.workspace
        chain = chain_of(self.spec)
        if record.to_entry and record.to_entry not in chain:  # a "hand off now" target
            chain = [*chain, record.to_entry]
        index = entry_index(chain, record.from_entry, record.to_entry)
        if record.state == "resuming":  # the receiver was working when Relay stopped
            await self.coordinator.confirmed_after_crash(record)
            return Ended("interrupted", f"Relay stopped while {record.to_entry} worked; continue "
                                        f"with `relay-cli run TASK --resume {self.session_id}`")
        self._ws, self._chain, self._index, self.phase = ws, chain, index, "handing_off"
        record, brief = await self.coordinator.resume(record, self._handoff_request(
            ws, record.from_run_id, record.from_entry or "", record.to_entry or "",
            record.reason))
        step = await self._receiver(ws, record, brief, agent_session_id=None)
        return await self._run_from(ws, chain, index, step)

    async def _recover_wait(self, recovery: WaitRecovery) -> Ended:
        """Wait out the rest of a reset a stopped Relay was waiting for, then resume."""
        chain = chain_of(self.spec)
        if recovery.entry not in chain:
            chain = [*chain, recovery.entry]
        self._ws, self._chain, self._index = recovery.workspace, chain, chain.index(recovery.entry)
        decision = Decision("wait", "waiting for the reset (carried on after Relay restarted)",
                            until=recovery.until)
        waited = Attempt(Step(entry=recovery.entry, prompt=self.spec.task),
                         Outcome("failed", None, agent_session_id=recovery.agent_session_id))
        step = await self._on_wait(recovery.workspace, decision, waited)
        if isinstance(step, Ended):
            return step
        return await self._run_from(recovery.workspace, chain, self._index, step)

    async def _run_from(self, ws: Workspace, chain: list[str], start: int, step: Step) -> Ended:
        """Run ``step``, then what its outcome's handler says, until one says how it ended."""
        self._ws, self._chain, self._index = ws, chain, start
        retries = 0  # of the same entry in a row; a handoff starts the count again
        while True:
            attempt = Attempt(step, await self._run_agent(ws, step), retries)
            self.phase = "deciding"
            after = await self._decide(ws, attempt)
            if isinstance(after, Ended):
                return after
            step, retries = after, (0 if after.handoff is not None else retries + 1)

    async def _decide(self, ws: Workspace, attempt: Attempt) -> Step | Ended:
        """The handler of the attempt's outcome: the next step, or how the session ended."""
        if self.talk.interrupted and not self._cancel.is_set() and self._stopped is None:
            nxt = await self.talk.follow_up(attempt.step, attempt.outcome.agent_session_id, ws)
            return nxt or Ended("interrupted", INTERRUPTED_REASON)
        match self._outcome_of(attempt.outcome, ws):
            case "stopped":
                return await self._on_stopped()
            case "paused":
                return await self._hand_off_now(ws)
            case "completed":
                return await self._on_completed(ws, attempt)
            case "snag":
                return await self._on_snag(ws, attempt)
            case "limit":
                return await self._on_limit(ws, attempt)
            case "ended":
                return Ended(attempt.outcome.state, attempt.outcome.reason)

    def _outcome_of(self, outcome: Outcome, ws: Workspace) -> OutcomeKind:
        """Which handler an agent run's outcome goes to; the first that applies wins."""
        cancelled = self._cancel.is_set()
        if self._stopped is not None:
            return "stopped"
        if self._pause is not None and not cancelled and outcome.state != "completed":
            return "paused"
        if outcome.state == "completed":
            return "completed"
        if outcome.state != "failed" or cancelled:
            return "ended"
        if outcome.limit is not None:
            return "limit"
        return "snag" if self.spec.fallback_on_failure and ws.is_worktree else "ended"

    async def _on_stopped(self) -> Ended:
        """The wallet stopped the session (a budget is spent): no handoff either."""
        await self._drop_pause("the wallet stopped the session")
        return Ended("failed", self._stopped)

    async def _on_completed(self, ws: Workspace, attempt: Attempt) -> Step | Ended:
        """The agent finished: a handoff asked for meanwhile is dropped, and the acceptance
        commands decide."""
        if self._pause is not None and not self._cancel.is_set():
            await self._emit(Notice(message="The agent finished before it could be paused; "
                                            "no handoff."))
            await self._drop_pause("the agent finished first")
        nxt = await self.talk.follow_up(attempt.step, attempt.outcome.agent_session_id, ws)
        if nxt is not None:  # queued messages: the next run; verified after the last
            return nxt
        failed = await self._verify(ws)
        if failed is None:
            return Ended("completed", attempt.outcome.reason)
        return await self._on_verify_failed(ws, attempt, failed)

    async def _on_verify_failed(self, ws: Workspace, attempt: Attempt, failed: str) -> Step | Ended:
        """The acceptance commands failed: the next entry takes the task over, if any."""
        nxt = await self._next_index()
        if nxt is None or not ws.is_worktree:
            return Ended("failed", failed)
        return await self._prepare_handoff(ws, attempt.outcome, attempt.step.entry, nxt,
                                           "verify_failed")

    async def _on_snag(self, ws: Workspace, attempt: Attempt) -> Step | Ended:
        """A failure without a limit: the fallback takes the task over (a pipeline node's
        ``fallback_on_failure``), if one may run."""
        outcome, entry = attempt.outcome, attempt.step.entry
        nxt = await self._next_index()
        if nxt is None:
            return Ended(outcome.state, outcome.reason)
        await self._emit(Notice(message=(
            f"{entry} failed ({outcome.reason or 'no reason given'}); the "
            f"fallback {self._chain[nxt]} takes the task over.")))
        return await self._prepare_handoff(ws, outcome, entry, nxt, "failed")

    async def _on_limit(self, ws: Workspace, attempt: Attempt) -> Step | Ended:
        """A limit ended the run: retry, wait for the reset, hand off, or fail (as
        :func:`~relay.sessions.decision.decide` says); a limit that will not pass soon trips
        the entry's breaker."""
        outcome, entry, limit = attempt.outcome, attempt.step.entry, attempt.outcome.limit
        assert limit is not None  # (what makes it a limit's outcome)
        nxt = await self._next_index()
        decision = decide(limit, now=utcnow(), rules=Rules.for_task(self.spec, self.config),
                          has_next=nxt is not None and ws.is_worktree, retries=attempt.retries)
        if decision.terminal:
            await self.services.breakers.trip(self.session_id, entry, limit.limit,
                                              limit.resets_at, limit.message, now=utcnow())
        if decision.action in ("retry", "wait"):
            return await self._on_wait(ws, decision, attempt)
        if decision.action == "handoff" and nxt is not None:
            return await self._prepare_handoff(ws, outcome, entry, nxt, limit.limit)
        if not ws.is_worktree and nxt is not None:
            await self._emit(AgentError(category="config", message=(
                "No handoff: in-place sessions (--no-worktree) cannot be handed off.")))
        return Ended("failed", f"{outcome.reason or 'limit reached'} — {decision.why}")

    async def _on_wait(self, ws: Workspace, decision: Decision, attempt: Attempt) -> Step | Ended:
        """Wait; then the same entry again — or the handoff asked for meanwhile."""
        if await self._wait(decision, attempt.step.entry):
            return retry_step(attempt.step, attempt.outcome)
        if self._pause is not None and not self._cancel.is_set():
            return await self._hand_off_now(ws)
        return Ended("cancelled", CANCELLED_WAITING)

    async def _next_index(self) -> int | None:
        if self._index + 1 >= len(self._chain):
            return None
        index = await self._first_open_entry(self._chain, self._index + 1)
        if index is None and self._stopped is not None and self._stopped.startswith(NONE_OPEN):
            self._stopped = None  # nowhere to go is the caller's to say, not a stop
        return index

    async def _wait(self, decision: Decision, entry: str) -> bool:
        """Wait for a retry or a reset; False when cancelled or handed off meanwhile."""
        assert decision.until is not None
        self.phase = "waiting"
        self._wake.clear()
        if decision.action == "wait":
            await self._state("waiting", f"{entry}: {decision.why}", until=decision.until)
            self.coordinator.fault("waiting")
        else:
            await self._emit(Notice(category="retry", message=decision.why))
        delay = max((decision.until - utcnow()).total_seconds(), 0.0)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), delay)
        if self._cancel.is_set() or self._pause is not None:
            return False
        await self._state("running", f"{entry}: resuming after the wait")
        return True

    async def _verify(self, ws: Workspace) -> str | None:
        """Run the acceptance commands; the failure to report, or None when all pass."""
        if not self.spec.verify:
            return None
        self.phase = "verifying"
        return await run_checks(self.spec.verify, ws.path, self.config.verify_timeout,
                                lambda result: self._emit(result, self._run_id))

    # -- one agent run --------------------------------------------------------------

    async def _run_agent(self, ws: Workspace, step: Step) -> Outcome:
        if self._cancel.is_set():  # stopped while the workspace (or a handoff) was prepared
            await self.talk.not_carried("the session was cancelled")
            await self._fail_handoff(step, "cancelled by the user")
            return Outcome("cancelled", "cancelled by the user before the agent started")
        runtime = entry_runtime(step.entry)
        request = await build_request(self.spec, self.config, self.continuation, self.services,
                                      ws, step, self._emit)
        try:  # before a run exists: a receiver that cannot start fails the handoff cleanly
            adapter = make_adapter(runtime)
            adapter.preflight(request)
        except RelayError as exc:
            await self.talk.not_carried(f"{step.entry} cannot start: {exc.message}")
            await self._fail_handoff(step, f"{step.entry} cannot start: {exc.message}")
            raise
        self.adapter = adapter
        run_id = new_id()
        self._run_id, self._agent_sid = run_id, None
        await self.writer.write(WriteOp(self.session_id, statements=[SessionsRepo.insert_run(
            run_id, self.session_id, runtime, step.entry, step.model)]))
        await self.talk.run_started(run_id)
        request = dataclasses.replace(request, next_input=self.talk.next_input(
            lambda: self._run_id))
        self.phase = "running"  # (before it is said: a message then finds the turn)
        self._safe.new_run()
        await self._state("running")
        short = shortfall(runtime, request.permission)
        if short is not None:  # said before the agent works, not found later in the docs
            await self._emit(Notice(category="warning", message=short), run_id)
        if step.handoff is not None:
            step.handoff = await self.coordinator.dispatched(step.handoff, run_id)
        ended, limit, agent_sid = await self._stream(adapter, request, run_id, step)
        await snapshot_run(ws, self.session_id, run_id, step.entry, ended.outcome, self._emit)
        if self._cancel.is_set():
            return Outcome("cancelled", "cancelled by the user", run_id)
        return Outcome(_FINAL[ended.outcome], ended.reason, run_id, limit, agent_sid)

    async def _fail_handoff(self, step: Step, why: str) -> None:
        if step.handoff is not None:
            await self.coordinator.failed(step.handoff, why)
            step.handoff = None

    async def _first_event(self, adapter: RuntimeAdapter, run_id: str, step: Step) -> None:
        """The agent is working: confirm the handoff, record its pid, close a probed breaker."""
        if step.handoff is not None:
            await self.coordinator.confirmed(step.handoff)  # the receiver works
            step.handoff = None
        pid = adapter.pid
        if pid is not None:
            await self.writer.write(WriteOp(self.session_id, statements=[
                SessionsRepo.run_pid(run_id, pid, process_start_time(pid))]))
        if await self.services.breakers.get(step.entry, now=utcnow()) is not None:
            await self.services.breakers.reset(self.session_id, step.entry)

    async def _stream(self, adapter: RuntimeAdapter, request: RunRequest, run_id: str,
                      step: Step) -> tuple[SessionEnded, LimitHit | None, str | None]:
        ended: SessionEnded | None = None
        limit: LimitHit | None = None
        agent_sid: str | None = None
        first = True
        watch = self._watch(run_id, step.entry)
        try:
            # aclosing: if storing fails mid-stream, the adapter's cleanup (stopping the
            # agent's process tree) runs now, not whenever the generator is collected.
            async with contextlib.aclosing(adapter.batches(request)) as batches:
                async for batch in batches:
                    if first:
                        first = False
                        await self._first_event(adapter, run_id, step)
                    ops: list[WriteOp] = []  # submitted together, in order
                    for event, payload in batch:
                        if isinstance(event, SessionEnded):
                            ended = event
                        elif isinstance(event, LimitHit) and event.blocking:
                            limit = event
                        elif isinstance(event, LimitHit) and self.spec.preempt:
                            await self.writer.submit_many(ops)
                            ops = []
                            await self._hand_off_early(f"pre-emptive: {event.message}", run_id)
                        elif isinstance(event, SessionStarted):
                            agent_sid = self._agent_sid = event.agent_session_id
                        self._safe.note(event)
                        ops.append(self._op(event, payload, run_id))
                        if event.kind in _ANSWERED:  # may emit: after this event, in order
                            await self.writer.submit_many(ops)
                            ops = []
                            await self.gate.seen(event, adapter)
                            await watch.seen(event)
                    await self.writer.submit_many(ops)
        except StoreError:
            raise  # nothing more can be recorded; the engine reports it
        except RelayError as exc:
            ended = SessionEnded(runtime=adapter.name, outcome="failed", reason=exc.message)
            await self._emit(AgentError(runtime=adapter.name, category="process", message=str(exc)), run_id)
            await self._emit(ended, run_id)
        except asyncio.CancelledError:
            await watch.close()
            with contextlib.suppress(Exception):
                await asyncio.shield(adapter.stop(grace=1.0))
                await asyncio.shield(self._emit(SessionEnded(
                    runtime=adapter.name, outcome="interrupted", reason="Relay was closed"), run_id))
            raise
        await watch.close()
        await self.gate.close()
        if ended is None:  # an adapter bug; never leave a run without an end
            ended = SessionEnded(runtime=adapter.name, outcome="failed",
                                 reason="the agent run ended without a result")
            await self._emit(ended, run_id)
        await self._fail_handoff(step, f"{step.entry} ended before working: "
                                       f"{ended.reason or ended.outcome}")
        return ended, limit, agent_sid

    def _watch(self, run_id: str, entry: str) -> GuardWatch:
        """The wallet's watch over this run."""
        watch = GuardWatch(self.services.guard, self.session_id, run_id, entry,
                           functools.partial(self._act, run_id=run_id), self.config.wallet_interval)
        watch.start()
        return watch

    async def _act(self, verdict: GuardVerdict, run_id: str) -> None:
        """The wallet's verdict at a safe moment: hand off early, stop, or warn."""
        if verdict.action == "handoff":
            await self._hand_off_early(verdict.reason, run_id)
        elif verdict.action == "stop" and self._stopped is None:
            self._stopped = verdict.reason
            await self._emit(Notice(category="warning", message=verdict.reason), run_id)
            if self.adapter is not None:
                await self.adapter.stop(grace=self.config.stop_grace)
        elif verdict.action == "warn":
            await self._emit(Notice(category="warning", message=verdict.reason), run_id)
