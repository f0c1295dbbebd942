"""The durable scheduler: one :class:`Scheduler` drives one run from one engine.

It launches every ready step up to the run's concurrency (and each group's), saves
each result (fenced) before any dependent reads it, and checks readiness again as
soon as a step settles, so a slow branch never holds back an independent one. Several
engines — other processes, possibly started later — may drive the same run: the
ledger's leases decide who runs what, a heartbeat keeps a lease, and a lease that
expires is taken over. Execution is at-least-once; a saved success is never re-run.

Group commit: the first result to settle in a loop pass is saved at once; results that
settle after it in the same pass are saved together, in one transaction, at the start of
the next pass — with the leases of the steps they make ready and of ready steps for the
slots they free. A step is saved (and its dependents may start) only once that
transaction has committed.

What a step *does* is the :class:`Executor`'s business (a full Relay session in
production — :mod:`relay.pipelines.executor`; a no-op in the benchmark).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from relay.core.pipeline_model import Node
from relay.pipelines.graph import Graph
from relay.pipelines.ledger import TERMINAL_STEP, Claim, Ledger, RunInfo, Save, StepInfo
from relay.pipelines.templates import StepOutputs, references, render

log = logging.getLogger(__name__)


class StepFailure(Exception):
    """A step's attempt failed; ``retryable`` False skips the node's retries."""

    def __init__(self, reason: str, retryable: bool = True,
                 cost_usd: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        #: what the failed attempt cost (USD; None unknown) — it counts against the budget
        self.cost_usd = cost_usd


@dataclass(frozen=True)
class StepWork:
    """Everything an executor needs for one attempt of one step."""

    run: RunInfo
    node: Node
    claim: Claim
    prompt: str
    #: saved results of the node's dependencies (direct and indirect), by node id
    inputs: dict[str, StepOutputs]
    #: record the Relay session the step runs in (fenced; False: the lease moved on)
    attach: Callable[[str], Awaitable[bool]]
    #: the session of the attempt before this one (a takeover: its worker stopped)
    previous_session: str | None = None


class Executor(Protocol):
    async def execute(self, work: StepWork) -> tuple[StepOutputs, float | None]:
        """Do the step; return its outputs and cost (USD, None unknown) or raise StepFailure."""
        ...


@dataclass
class Settings:
    lease_s: float = 30.0
    #: how often held leases are renewed (default a third of the lease)
    heartbeat_s: float | None = None
    #: how often an engine with nothing to do looks at the ledger again
    poll_s: float = 1.0

    @property
    def heartbeat(self) -> float:
        return self.heartbeat_s if self.heartbeat_s is not None else self.lease_s / 3

    @property
    def lease_ms(self) -> int:
        return int(self.lease_s * 1000)


def _with(step: StepInfo, changes: dict[str, Any]) -> StepInfo:
    """``dataclasses.replace`` for the view's hot path: a copy of ``step`` with ``changes``
    (a sixth of replace's cost, which looks the fields up on every call)."""
    new = object.__new__(StepInfo)
    new.__dict__.update(step.__dict__, **changes)
    return new


@dataclass
class Scheduler:
    ledger: Ledger
    executor: Executor
    owner: str
    settings: Settings = field(default_factory=Settings)
    #: called after each change this scheduler makes (the window refreshes its canvas)
    on_change: Callable[[str], None] | None = None
    _view: dict[str, StepInfo] = field(default_factory=dict, init=False)
    _seq: int = field(default=0, init=False)
    _tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict, init=False)
    _held: dict[str, Claim] = field(default_factory=dict, init=False)
    _lost: set[str] = field(default_factory=set, init=False)
    _wake: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _cancelling: bool = field(default=False, init=False)
    # Kept up to date by _refresh, so each step costs work in proportion to its own edges,
    # never to the size of the graph: every state, each node's count of dependencies not
    # yet succeeded, the steps that are ready (also as graph positions, in order) or
    # running, and how many are finished.
    _graph: Graph | None = field(default=None, init=False)
    _nodes: dict[str, Node] = field(default_factory=dict, init=False)
    _pos: dict[str, int] = field(default_factory=dict, init=False)
    _state: dict[str, str] = field(default_factory=dict, init=False)
    _unmet: dict[str, int] = field(default_factory=dict, init=False)
    _ready: set[str] = field(default_factory=set, init=False)
    _ready_at: list[int] = field(default_factory=list, init=False)
    _running: set[str] = field(default_factory=set, init=False)
    _terminal: int = field(default=0, init=False)
    #: per node, the saved results its task reads (its direct dependencies and the nodes
    #: its references name), worked out once
    _reads: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False)
    # Group commit: the first result that settles in a loop pass is saved at once; those
    # that settle after it in the same pass wait in _pending and are saved together by
    # _flusher at the start of the next pass, in one transaction.
    _pending: list[Save] = field(default_factory=list, init=False)
    _pass_saved: bool = field(default=False, init=False)
    _flusher: asyncio.Task[None] | None = field(default=None, init=False)

    async def drive(self, run_id: str) -> RunInfo:
        """Run steps of ``run_id`` until the run is finished; returns its final record."""
        run = self.ledger.run(run_id)
        graph = self._graph = Graph.of(run.pipeline)
        self._nodes = {n.id: n for n in run.pipeline.nodes}
        self._pos = {n: i for i, n in enumerate(graph.order)}
        self._unmet = {n: len(d) for n, d in graph.deps.items()}
        beat = asyncio.create_task(self._heartbeats(run.id), name=f"relay-heartbeat-{run.id}")
        try:
            while True:
                self._wake.clear()  # whatever settles from here on wakes the sleep below
                run = self.ledger.run(run.id)
                self._refresh(run.id)
                if run.finished:
                    return run
                if run.state == "cancelling":
                    await self._cancel_all(run)
                elif self._over_budget(run):
                    await self._stop_for_budget(run, graph)
                else:
                    await self._launch(run, graph, self._candidates(run, graph))
                if self._terminal == len(self._nodes):
                    await self._finish(run, graph)
                    continue
                await self._sleep(run)
        finally:
            beat.cancel()
            for task in self._tasks.values():
                task.cancel()
            # results that settled are still saved (the flusher never waits on a step)
            flusher = [self._flusher] if self._flusher is not None else []
            await asyncio.gather(beat, *self._tasks.values(), *flusher, return_exceptions=True)

    # -- the view ----------------------------------------------------------------------

    def _refresh(self, run_id: str) -> None:
        for step in self.ledger.steps(run_id, self._seq):
            old = self._view.get(step.node_id)
            self._view[step.node_id] = step
            self._seq = max(self._seq, step.seq)
            self._note(step.node_id, old.state if old else None, step.state)

    def _saw(self, seqs: list[int]) -> None:
        """This engine committed the changes stamped ``seqs`` (consecutive, in order) and
        applied them to its view: when nothing came between them and what it last read, the
        next refresh need not read them back."""
        if seqs and seqs[0] == self._seq + 1:
            self._seq = seqs[-1]

    def _local(self, node_id: str, **changes: Any) -> None:
        """Apply what this engine just committed to its view without reading it back."""
        old = self._view[node_id]
        self._view[node_id] = _with(old, changes)
        self._note(node_id, old.state, changes.get("state", old.state))

    def _claimed(self, claim: Claim) -> None:
        self._local(claim.node_id, state="running", epoch=claim.epoch, attempt=claim.attempt,
                    owner=self.owner,
                    lease_until_ms=int(time.time() * 1000) + self.settings.lease_ms)

    def _note(self, node_id: str, was: str | None, now: str) -> None:
        if was == now:
            return
        assert self._graph is not None
        self._state[node_id] = now
        self._terminal += (now in TERMINAL_STEP) - (was in TERMINAL_STEP)
        if now == "succeeded":  # a success is final: each dependent counts it once
            for dependent in self._graph.dependents[node_id]:
                self._unmet[dependent] -= 1
                if self._unmet[dependent] == 0 and self._state.get(dependent) == "waiting":
                    self._set_ready(dependent, True)
        self._set_ready(node_id, now == "waiting" and self._unmet[node_id] == 0)
        if now == "running":
            self._running.add(node_id)
        else:
            self._running.discard(node_id)

    def _set_ready(self, node_id: str, ready: bool) -> None:
        if ready == (node_id in self._ready):
            return
        pos = self._pos[node_id]
        if ready:
            self._ready.add(node_id)
            bisect.insort(self._ready_at, pos)
        else:
            self._ready.discard(node_id)
            del self._ready_at[bisect.bisect_left(self._ready_at, pos)]

    def _due(self) -> Iterator[str]:
        """Ready steps not yet started whose retry (if any) is due, in the graph's order."""
        assert self._graph is not None
        order = self._graph.order
        now = int(time.time() * 1000)
        for pos in self._ready_at:
            node_id = order[pos]
            if node_id not in self._tasks and self._view[node_id].not_before_ms <= now:
                yield node_id

    def _candidates(self, run: RunInfo, graph: Graph) -> list[str]:
        now = int(time.time() * 1000)
        out = list(self._due())
        taken = [n for n in self._running  # their workers stopped renewing: take them over
                 if n not in self._tasks and (self._view[n].lease_until_ms or 0) < now]
        if taken:
            out = sorted(out + taken, key=self._pos.__getitem__)
        return out

    def _fits(self, run: RunInfo, node_ids: Iterable[str], extra: int = 0) -> list[str]:
        """The first of ``node_ids`` the run's and groups' limits allow to start now."""
        now = int(time.time() * 1000)
        running = [self._view[n] for n in self._running
                   if (self._view[n].lease_until_ms or 0) >= now or n in self._tasks]
        slots = run.concurrency - len(running) - extra
        if slots <= 0:
            return []
        groups: dict[str, int] = {}
        for s in running:
            group = self._nodes[s.node_id].group
            if group:
                groups[group] = groups.get(group, 0) + 1
        out = []
        for node_id in node_ids:
            group = self._nodes[node_id].group
            if group and group in run.pipeline.groups:
                if groups.get(group, 0) >= run.pipeline.groups[group]:
                    continue
                groups[group] = groups.get(group, 0) + 1
            out.append(node_id)
            slots -= 1
            if slots <= 0:
                break
        return out

    # -- launching -----------------------------------------------------------------------

    async def _launch(self, run: RunInfo, graph: Graph, candidates: list[str]) -> None:
        chosen = self._fits(run, candidates)
        if not chosen:
            return
        claims = await self.ledger.claim(run.id, self.owner, chosen, self.settings.lease_ms)
        for claim in claims:
            self._claimed(claim)
            self._start(run, graph, claim)
        self._saw([c.seq for c in claims])
        if claims:
            self._changed(run.id)

    def _start(self, run: RunInfo, graph: Graph, claim: Claim) -> None:
        self._held[claim.node_id] = claim
        self._lost.discard(claim.node_id)
        self._tasks[claim.node_id] = asyncio.create_task(
            self._work(run, graph, claim), name=f"relay-step-{run.id}-{claim.node_id}")

    def _inputs(self, node: Node) -> dict[str, StepOutputs]:
        # what the executor and the task's references read: the direct dependencies and
        # any earlier step the task names (validation made those ancestors)
        reads = self._reads.get(node.id)
        if reads is None:
            reads = self._reads[node.id] = tuple(dict.fromkeys(
                [*node.depends_on, *(r.node for r in references(node.task)[0])]))
        return {d: self._view[d].outputs for d in reads if d in self._view}

    async def _work(self, run: RunInfo, graph: Graph, claim: Claim) -> None:
        node = self._nodes[claim.node_id]
        inputs = self._inputs(node)
        work = StepWork(run, node, claim, render(node.task, inputs), inputs,
                        lambda sid: self.ledger.attach_session(run.id, claim, self.owner, sid),
                        self._view[node.id].session_id)
        saving = False
        try:
            try:
                attempt = self.executor.execute(work)
                outputs, cost = await (attempt if node.timeout is None
                                       else asyncio.wait_for(attempt, node.timeout))
            except TimeoutError:
                await self._failed(run, graph, claim, node, StepFailure(
                    f"timed out after {node.timeout:g} s"))
            except StepFailure as failure:
                await self._failed(run, graph, claim, node, failure)
            except asyncio.CancelledError:
                if self._cancelling and claim.node_id not in self._lost:
                    await asyncio.shield(self.ledger.fail(
                        run.id, claim, self.owner, "cancelled with the run", None,
                        graph.downstream(node.id), state="cancelled"))
                raise  # closing: the lease expires and another engine takes the step over
            except Exception as exc:  # an executor bug must not stall the run
                log.exception("step %s of run %s crashed", node.id, run.id)
                await self._failed(run, graph, claim, node, StepFailure(f"internal error: {exc!r}"))
            else:
                saving = True  # from here the save's group sees to the step's lease
                await self._save(run, graph, Save(claim, outputs, cost))
        finally:
            if self._tasks.get(claim.node_id) is asyncio.current_task():
                del self._tasks[claim.node_id]
            if not saving:
                self._held.pop(claim.node_id, None)
                self._changed(run.id)
                self._wake.set()  # the loop has work to look at

    # -- saving: group commit --------------------------------------------------------------

    async def _save(self, run: RunInfo, graph: Graph, save: Save) -> None:
        """Save a step's result: at once when it is the first to settle in this loop pass,
        else with the others that settled after it, together at the start of the next."""
        self._pending.append(save)
        if not self._pass_saved:
            await self._flush(run, graph)
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(run, graph),
                                                name=f"relay-saves-{run.id}")

    async def _flush(self, run: RunInfo, graph: Graph) -> None:
        while self._pending:
            if not self._pass_saved:
                self._pass_saved = True
                asyncio.get_running_loop().call_soon(self._next_pass)
            batch, self._pending = self._pending, []
            await self._commit(run, graph, batch)

    def _next_pass(self) -> None:
        self._pass_saved = False

    async def _commit(self, run: RunInfo, graph: Graph, batch: list[Save]) -> None:
        """One transaction: the batch's results (each fenced) and, in the same transaction,
        the leases of the steps they make ready and of ready ones that fill the slots they
        free — a chain costs one commit per step, a fan-out one per group."""
        made: dict[str, int] = {}  # dependent → how many of its inputs this batch saves
        for save in batch:
            for dependent in graph.dependents[save.claim.node_id]:
                made[dependent] = made.get(dependent, 0) + 1
        ready = [d for d, n in made.items() if self._unmet[d] == n
                 and self._state[d] == "waiting" and d not in self._tasks]
        if len(ready) > 1:
            ready.sort(key=self._pos.__getitem__)
        over = run.budget_usd is not None and self._over_budget(
            run, extra=sum(s.cost_usd or 0.0 for s in batch))
        wanted = itertools.chain(ready, self._due()) if self._ready_at else ready
        nxt = [] if over else self._fits(run, wanted, extra=-len(batch))
        try:
            done = await self.ledger.save(run.id, self.owner, batch, nxt, self.settings.lease_ms)
        except BaseException as exc:
            for save in batch:  # not saved: their leases lapse and the steps run again
                self._held.pop(save.claim.node_id, None)
            self._wake.set()
            if not isinstance(exc, Exception):
                raise
            log.exception("saving %d result(s) of run %s failed", len(batch), run.id)
            return
        for save in done.refused:
            self._held.pop(save.claim.node_id, None)
            log.warning("step %s of run %s: result refused, the lease moved on",
                        save.claim.node_id, run.id)
        for save in done.saved:
            claim, outputs = save.claim, save.outputs
            self._held.pop(claim.node_id, None)
            old = self._view[claim.node_id]
            spent = old.cost_usd if save.cost_usd is None else (
                (old.cost_usd or 0.0) + save.cost_usd)
            if outputs.session is None and old.session_id:  # as the row reads back
                outputs = StepOutputs(outputs.output, outputs.files, outputs.commit,
                                      outputs.branch, old.session_id)
            self._local(claim.node_id, state="succeeded", outputs=outputs, saves=old.saves + 1,
                        cost_usd=spent, owner=None, lease_until_ms=None, error=None,
                        session_id=outputs.session)
        for claim in done.claims:
            self._claimed(claim)
            self._start(run, graph, claim)
        self._saw(done.seqs)
        self._changed(run.id)
        if done.refused or len(done.claims) < len(nxt) or not done.claims:
            self._wake.set()  # the loop has work to look at (else the steps started carry on)

    async def _failed(self, run: RunInfo, graph: Graph, claim: Claim, node: Node,
                      failure: StepFailure) -> None:
        retry_at = None
        if failure.retryable and claim.attempt <= node.retries:
            delay = run.pipeline.backoff * 2 ** (claim.attempt - 1)
            retry_at = int((time.time() + delay) * 1000)
        await self.ledger.fail(run.id, claim, self.owner, failure.reason, retry_at,
                               graph.downstream(node.id), cost_usd=failure.cost_usd)

    # -- leases ---------------------------------------------------------------------------

    async def _heartbeats(self, run_id: str) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat)
            held = [(c.node_id, c.epoch) for c in self._held.values()]
            try:
                lost = await self.ledger.heartbeat(run_id, self.owner, held, self.settings.lease_ms)
            except Exception:  # a locked or full database: try again at the next beat
                log.exception("heartbeat of run %s failed", run_id)
                continue
            for node_id in lost:
                self._lost.add(node_id)
                task = self._tasks.get(node_id)
                if task is not None:
                    task.cancel()  # another engine owns it now: stop working on it

    # -- cancel, budget, finish -------------------------------------------------------------

    async def _cancel_all(self, run: RunInfo) -> None:
        self._cancelling = True
        for task in list(self._tasks.values()):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._refresh(run.id)
        waiting = [s.node_id for s in self._view.values() if s.state == "waiting"]
        await self.ledger.settle_waiting(run.id, waiting, "cancelled", "the run was cancelled")
        self._refresh(run.id)
        if not self._running:
            await self.ledger.set_run_state(run.id, "cancelled", "cancelled by the user")

    def _spent(self) -> float:
        return sum(s.cost_usd or 0.0 for s in self._view.values())

    def _over_budget(self, run: RunInfo, extra: float = 0.0) -> bool:
        return run.budget_usd is not None and self._spent() + extra >= run.budget_usd

    async def _stop_for_budget(self, run: RunInfo, graph: Graph) -> None:
        if self._running:
            return  # in-flight steps finish (and may exceed the budget)
        waiting = [s.node_id for s in self._view.values() if s.state == "waiting"]
        await self.ledger.settle_waiting(
            run.id, waiting, "skipped",
            f"the run's budget of ${run.budget_usd:.2f} is spent (${self._spent():.2f})")
        self._refresh(run.id)

    async def _finish(self, run: RunInfo, graph: Graph) -> None:
        bad = [s for s in self._view.values() if s.state != "succeeded"]
        if run.state == "cancelling":
            await self.ledger.set_run_state(run.id, "cancelled", "cancelled by the user")
        elif not bad:
            commit = await self._result_commit(run, graph)
            await self.ledger.set_run_state(run.id, "succeeded", "every step succeeded",
                                            result_commit=commit)
        else:
            failed = [s.node_id for s in bad if s.state == "failed"]
            budget = [s for s in bad if s.state == "skipped" and s.error and "budget" in s.error]
            reason = (f"step {', '.join(failed)} failed" if failed else
                      budget[0].error if budget and budget[0].error else "steps were skipped")
            await self.ledger.set_run_state(run.id, "failed", reason)
        self._changed(run.id)

    async def _result_commit(self, run: RunInfo, graph: Graph) -> str | None:
        finisher = getattr(self.executor, "finish_run", None)
        if finisher is None:
            return None
        sinks = {n: self._view[n].outputs for n in graph.sinks()}
        result: str | None = await finisher(run, sinks)
        return result

    async def _sleep(self, run: RunInfo) -> None:
        now = int(time.time() * 1000)
        timeout = self.settings.poll_s
        for node_id in (*self._ready, *self._running):  # a retry falls due, a lease expires
            step = self._view[node_id]
            if step.state == "waiting" and step.not_before_ms > now:
                timeout = min(timeout, (step.not_before_ms - now) / 1000 + 0.01)
            elif step.state == "running" and step.node_id not in self._tasks and step.lease_until_ms:
                timeout = min(timeout, max(0.0, (step.lease_until_ms - now) / 1000) + 0.01)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _changed(self, run_id: str) -> None:
        if self.on_change is not None:
            self.on_change(run_id)
