"""The Engine: the one object a front end holds.

It owns the store, the event writer, the bus and the session runners. The GUI
builds one on the qasync loop, the CLI on a plain asyncio loop; neither holds
business logic. Sessions keep running while front ends come and go; a session
whose owning process died is marked interrupted when the next engine opens.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from relay.board.service import BoardService
from relay.core.accounts import AccountBook
from relay.core.audit import AuditLog, DbAnchor
from relay.core.audit_trail import AuditTrail
from relay.core.bus import EventBus
from relay.core.config import Config, load_config
from relay.core.errors import HandoffRefusedError, RelayError, SessionNotFoundError, StoreError
from relay.core.events import (
    EventRecord,
    InputWithdrawn,
    NeedsInput,
    Notice,
    SessionEnded,
    StateChanged,
)
from relay.core.home import secure_home
from relay.core.models import RunRow, SessionRow, SessionSpec, chain_of, check_task, entry_runtime
from relay.core.redact import scrub_obj
from relay.core.store.db import Store
from relay.core.store.faults import Fault, disk_full_error, fault_of
from relay.core.store.writer import EventWriter, WriteOp
from relay.core.vault import PassphraseProvider, Vault
from relay.engine.follow import Follower
from relay.engine.talk import Talk
from relay.history.review import Review
from relay.pipelines.ledger import unfinished_runs_exist
from relay.runtimes.base import RuntimeInfo
from relay.runtimes.registry import adapter_class, available_runtimes
from relay.sessions.archive import SessionList
from relay.sessions.breaker import CircuitBreakers
from relay.sessions.coordinator import FaultHook, HandoffCoordinator, no_faults
from relay.sessions.handoff import HandoffRecord
from relay.sessions.inbox import Inbox, Letter
from relay.sessions.orphans import stop_orphan_agents
from relay.sessions.repo_check import check_repository
from relay.sessions.run_types import Recovery, Services, WaitRecovery
from relay.sessions.runner import SessionRunner, new_id
from relay.sessions.talking import continuation
from relay.sessions.worktree import Workspace
from relay.wallet.service import Wallet, WalletGuard

if TYPE_CHECKING:
    from relay.board.integrations import Integrations
    from relay.detect.service import Detector
    from relay.history.service import History
    from relay.knowledge.service import Knowledge
    from relay.pipelines.service import Pipelines

log = logging.getLogger(__name__)

_QUESTION_KINDS = ("needs_input", "input_withdrawn")


def _owned_elsewhere(pid: int | None) -> bool:
    """Whether another Relay process that still runs owns a session."""
    return pid is not None and pid != os.getpid() and psutil.pid_exists(pid)


class Engine:
    """Store + bus + runners. Create with :meth:`open`; end with :meth:`close`."""

    def __init__(self, config: Config, store: Store, bus: EventBus, writer: EventWriter,
                 audit: AuditTrail, passphrase_provider: PassphraseProvider | None = None,
                 fault: FaultHook = no_faults) -> None:
        self.config = config
        self.store = store
        self.bus = bus
        self.writer = writer
        self.audit = audit
        self.coordinator = HandoffCoordinator(config, store, writer, passphrase_provider, fault)
        self.breakers = CircuitBreakers(store, writer)
        self.accounts = AccountBook(store, writer, lambda: Vault.open(config, passphrase_provider))
        self.wallet = Wallet(config, store, writer, self.accounts)
        self._detector: Detector | None = None
        self._pipelines: Pipelines | None = None
        #: every session's messages to its agent: queued, steered, delivered
        self.inbox = Inbox(store, writer)
        #: review comments on diffs: queued in the inbox, sent when the agent is free
        self.review = Review(store, writer, self.inbox, lambda sid: self.talk.deliver(sid))
        self._history: History | None = None
        self.board = BoardService(store, writer)  # tasks, comments, hooked sessions' states
        #: follow-ups, the queue, steer, interrupt and forks (relay.engine.talk)
        self.talk = Talk(self)
        #: the session list, archive and unarchive (relay.sessions.archive)
        self.sessions = SessionList(store, writer)
        self.board.to_relay_session = self.talk.board_comment  # its comments reach the inbox
        self.services = Services(self.coordinator, self.breakers, self.accounts,
                                 guard=WalletGuard(self.wallet), guard_for=self.board.session_guard,
                                 inbox=self.inbox)
        self.recovered: list[str] = []
        #: unfinished pipeline runs a recovering engine took up
        self.recovered_runs: list[str] = []
        self._runners: dict[str, SessionRunner] = {}
        #: the store error that stopped a session's runner (nothing could record its end)
        self._stopped_by: dict[str, StoreError] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._watch: asyncio.Task[None] | None = None
        self._knowledge: Knowledge | None = None
        self._follower = Follower(store, bus, self.is_running_here)
        self.coordinator.facts_source = lambda sid: self.knowledge.contract_facts(self.store, sid)

    @classmethod
    async def open(cls, config: Config | None = None,
                   passphrase_provider: PassphraseProvider | None = None,
                   recover: bool = False, fault: FaultHook = no_faults) -> Engine:
        """Open the store and start the writer.

        Args:
            config: Settings (default: :func:`load_config`).
            passphrase_provider: Unlocks the vault file where there is no OS keyring
                (the CLI asks on a terminal).
            recover: Carry on the handoffs a stopped Relay left between two steps
                (:attr:`recovered` lists their sessions). Long-lived front ends and
                ``relay-cli recover`` pass True; one-shot commands leave them be.
            fault: Called after each committed handoff state: the crash tests' injection
                point (:data:`relay.sessions.coordinator.FaultHook`).
        """
        config = config or load_config()
        try:
            notice = await asyncio.to_thread(secure_home, config.home)
        except OSError as exc:
            raise StoreError(f"Cannot make the data folder {config.home} private: "
                             f"{exc.strerror or exc}.",
                             "Check that it is yours and writable (RELAY_HOME).") from exc
        if notice:  # once: the folder is private from now on
            log.warning("%s", notice)
        store = await Store.open(config.db_path, config.audit_path)  # closes all it opened on error
        engine: Engine | None = None
        try:
            bus = EventBus()
            writer = EventWriter(store, bus)
            writer.start()
            try:
                trail = AuditTrail(AuditLog(config.audit_path, scrub=scrub_obj,
                                            anchor=DbAnchor(config.db_path)))
                bus.add_listener(trail.on_records)
                trail.start()
                try:
                    engine = cls(config, store, bus, writer, trail, passphrase_provider, fault)
                    await engine.board.open()
                except BaseException:
                    await trail.aclose()
                    raise
            except BaseException:
                await writer.close()
                raise
            if recover:
                await engine.audit.catch_up_after_crash(store.sessions, _owned_elsewhere)
            await engine._recover_orphans(recover)
            if recover:  # a long-lived engine also takes up pipeline runs other engines abandon
                await engine.talk.deliver_all()  # what finished sessions have queued
                engine._watch = asyncio.create_task(engine._watch_pipelines(),
                                                    name="relay-pipelines")
        except BaseException:
            # An engine that fails to open closes everything it opened (the writer, the
            # audit trail, aiosqlite's worker thread): a thread left open would keep the
            # process from ever exiting after the error is printed.
            if engine is not None:
                await engine.close()
            else:
                await store.close()
            raise
        return engine

    async def close(self) -> None:
        """Stop what this process runs (they end as interrupted) and close the store.

        Every step runs even when an earlier one fails (a full disk fails the writer's last
        batch, the audit trail's append…): the store's connection, whose worker thread
        would keep the process alive, is always closed. The first error is raised after.
        """
        errors: list[BaseException] = []

        async def step(close: Callable[[], Awaitable[object]]) -> None:
            try:
                await close()
            except Exception as exc:  # noqa: BLE001 — raised after every step has run
                errors.append(exc)

        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        if self._pipelines is not None:  # before the sessions: their steps stay leased
            await step(self._pipelines.close)
        for task in list(self._tasks.values()):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        if self._knowledge is not None:  # after the sessions: their activity gets indexed
            await step(self._knowledge.close)
        await step(self.wallet.close)
        await step(self.board.close)
        await step(self.writer.close)
        await step(self.audit.aclose)
        await step(self.store.close)
        if errors:
            raise errors[0]

    async def reap_session(self, session_id: str) -> bool:
        """Mark a session interrupted (stopping its agents) when the Relay process that ran
        it has gone; returns whether it did. A live owner's session is left alone."""
        row = await self.store.sessions.active_one(session_id)
        if row is None or session_id in self._runners or _owned_elsewhere(row.owner_pid):
            return False
        await stop_orphan_agents(self.store, session_id)
        await self.writer.write(WriteOp(session_id, None, StateChanged(
            state="interrupted", reason="the Relay process running this session stopped")))
        return True

    async def _recover_orphans(self, recover: bool) -> None:
        running_elsewhere, waiting = set(), []
        for session_id, pid, state in await self.store.sessions.active():
            if _owned_elsewhere(pid):
                running_elsewhere.add(session_id)
                continue
            for agent in await stop_orphan_agents(self.store, session_id):
                log.warning("stopped agent pid %s left running by a stopped Relay", agent)
            if state == "waiting":  # nothing runs while waiting: it waits on, as committed
                waiting.append(session_id)
                continue
            await self.writer.write(WriteOp(session_id, None, StateChanged(
                state="interrupted", reason="Relay stopped while this session was running")))
        if not recover:
            return  # unfinished handoffs and waits stay, as committed, for a recovering engine
        for session_id in waiting:
            await self._wait_on(session_id)
        for handoff in await self.coordinator.journal.unfinished():
            if handoff.session_id not in running_elsewhere:
                await self._carry_on(handoff)
        if await self._has_unfinished_runs():
            self.recovered_runs = await self.pipelines.resume_all()

    async def _has_unfinished_runs(self) -> bool:
        return await unfinished_runs_exist(self.store)

    async def _watch_pipelines(self) -> None:
        """Now and then, take up pipeline runs whose engine stopped (a killed relay-cli)."""
        while True:
            await asyncio.sleep(self.config.pipeline_poll * 5)
            try:
                if await self._has_unfinished_runs():
                    await self.pipelines.adopt_abandoned()
            except RelayError as exc:
                log.warning("cannot look at pipeline runs: %s", exc)

    async def _carry_on(self, handoff: HandoffRecord) -> None:
        """Restart a session's runner from the handoff step a stopped Relay left."""
        row = await self.store.sessions.get(handoff.session_id)
        if not row.workdir:
            await self.coordinator.failed(handoff, "the session has no worktree to resume in")
            return
        if handoff.state == "dispatched" and handoff.to_run_id:  # its receiver was cut off
            await self.writer.write(WriteOp(row.id, handoff.to_run_id, SessionEnded(
                outcome="interrupted", reason="Relay stopped before the agent started working")))
        spec = await self.store.sessions.spec(row.id)
        await self._own(row.id)
        workspace = Workspace(Path(row.workdir), row.branch, row.branch is not None)
        self._launch(SessionRunner(row.id, spec, self.config, self.writer, self.services,
                                   recovery=Recovery(handoff, workspace)))
        self.recovered.append(row.id)

    async def _wait_on(self, session_id: str) -> None:
        """Restart a session a stopped Relay left waiting for a reset: wait on, then resume."""
        row = await self.store.sessions.get(session_id)
        last = await self.store.sessions.last_entry(row.id)
        if not row.workdir or last is None or row.wait_until is None:
            await self.writer.write(WriteOp(row.id, None, StateChanged(
                state="interrupted", reason="Relay stopped while this session waited")))
            return
        spec = await self.store.sessions.spec(row.id)
        await self._own(row.id)
        workspace = Workspace(Path(row.workdir), row.branch, row.branch is not None)
        self._launch(SessionRunner(row.id, spec, self.config, self.writer, self.services,
                                   recovery=WaitRecovery(last[0], last[1], row.wait_until,
                                                         workspace)))
        self.recovered.append(row.id)

    # -- sessions ---------------------------------------------------------------------

    async def start_session(self, spec: SessionSpec) -> str:
        """Create a session and start running it in the background; returns its id."""
        if spec.chain:  # the first entry is the runtime that starts
            spec = spec.model_copy(update={"runtime": entry_runtime(spec.chain[0])})
        classes = [adapter_class(entry_runtime(e)) for e in chain_of(spec)]  # unknown → error now
        # refused before anything exists: no session row, branch or worktree for a bad folder
        repo = await asyncio.to_thread(check_repository, Path(spec.repo), self.config.home,
                                       worktree=spec.worktree)
        spec = spec.model_copy(update={"repo": repo})
        session_id = new_id()
        simulated = any(c.simulated for c in classes)
        await self.writer.write(WriteOp(session_id, None, StateChanged(
            state="pending", runtime=spec.runtime, simulated=simulated), statements=[
                self.store.sessions.insert(session_id, spec, simulated=simulated,
                                           owner_pid=os.getpid())]))
        self._launch(SessionRunner(session_id, spec, self.config, self.writer, self.services))
        self.knowledge.scan_soon(repo)  # in the background: never delays or fails the session
        return session_id

    async def continue_session(self, session_id: str, prompt: str, *,
                               carrying: list[Letter] | None = None) -> str:
        """Continue a finished session with a new prompt (a new run of the same session).

        The agent resumes its own conversation (``--resume`` / ``exec resume``) in the same
        worktree; where there is none to resume (no agent session, a runtime without
        resume) the new run's prompt is Relay's brief of the session and ``prompt``.
        ``carrying``: inbox messages the run delivers (marked so when it starts). Raises a
        RelayError when there is nothing to continue in.
        """
        check_task(prompt, "The prompt")
        row = await self.store.sessions.get(session_id)
        if self.is_running_here(row.id) or not row.finished:
            raise SessionNotFoundError(f"Session {row.id} is still {row.state}.",
                                       "Send it a message instead: `relay-cli say "
                                       f"{row.id} TEXT` (it goes when the turn ends).")
        if not row.workdir:
            raise SessionNotFoundError(f"Session {row.id} never got a folder to work in.",
                                       "Start a new session instead.")
        spec = await self.store.sessions.spec(row.id)
        cont = await continuation(self.store, row, spec, prompt)
        await self._own(row.id)
        runner = SessionRunner(row.id, spec, self.config, self.writer, self.services,
                               continuation=cont)
        if carrying:
            runner.talk.carry(carrying, "resume" if cont.agent_session_id else "brief")
        self._launch(runner)
        return row.id

    async def _own(self, session_id: str) -> None:
        """This process runs the session from now on (another engine's orphan check says so)."""
        await self.writer.write(WriteOp(session_id, statements=[
            self.store.sessions.owned_by(session_id, os.getpid())]))

    def _launch(self, runner: SessionRunner) -> None:
        self._runners[runner.session_id] = runner
        task = asyncio.create_task(self._drive(runner), name=f"relay-session-{runner.session_id}")
        self._tasks[runner.session_id] = task
        task.add_done_callback(lambda _: self.knowledge.ingest_soon(self.store))

    async def _drive(self, runner: SessionRunner) -> None:
        sid = runner.session_id
        try:
            await self._run(runner)
            try:  # messages queued after the run's last delivery point: its next run
                await self.talk.deliver(sid, after_run=True)
            except RelayError as exc:
                log.warning("messages to %s not sent: %s", sid, exc.message)
        finally:  # (a delivered message registered the session's next task already)
            if self._tasks.get(sid) is asyncio.current_task():
                del self._tasks[sid]

    async def _run(self, runner: SessionRunner) -> None:
        try:
            await runner.run()
        except asyncio.CancelledError:
            raise
        except StoreError as exc:  # the database cannot be written: nothing to record it in
            log.info("session %s stopped: %s", runner.session_id, exc)
            self._stopped_by[runner.session_id] = exc  # wait_session raises it: said once
        except OSError as exc:
            if fault_of(exc) is not Fault.FULL:
                log.exception("session %s crashed", runner.session_id)
            else:  # the disk filled up under the agent: not a bug, one line
                log.error("session %s stopped: %s", runner.session_id,  # noqa: TRY400
                          disk_full_error(self.config.home, "the session cannot go on").message)
            await self._failed(runner.session_id, "the disk is full" if fault_of(exc) is
                               Fault.FULL else "internal error (see the log)")
        except Exception:  # the runner maps RelayErrors; anything else is a bug: log it
            log.exception("session %s crashed", runner.session_id)
            await self._failed(runner.session_id, "internal error (see the log)")
        finally:
            self._runners.pop(runner.session_id, None)

    async def _failed(self, session_id: str, reason: str) -> None:
        try:
            await self.writer.write(WriteOp(session_id, None, StateChanged(
                state="failed", reason=reason)))
        except StoreError as exc:  # the writer has failed: wait_session raises it
            self._stopped_by[session_id] = exc

    async def runner_stopped(self, session_id: str) -> None:
        """Wait until this process runs nothing more of a session (its end stored or not:
        a runner stopped by a failed writer stores nothing). Never raises its error;
        :meth:`wait_session` does."""
        while (task := self._tasks.get(session_id)) is not None:
            await asyncio.wait({task})

    async def wait_session(self, session_id: str) -> SessionRow:
        """Wait until a session this process runs is finished; return its row."""
        while (task := self._tasks.get(session_id)) is not None:  # and its continuations
            await asyncio.shield(task)
        if (stopped := self._stopped_by.pop(session_id, None)) is not None:
            raise stopped
        await self.writer.flush()
        return await self.store.sessions.get(session_id)

    async def run_session(self, spec: SessionSpec) -> SessionRow:
        return await self.wait_session(await self.start_session(spec))

    async def cancel_session(self, session_id: str) -> None:
        """Stop a session this engine runs (every session of a data folder runs in its host;
        front ends ask the host over its API)."""
        runner = self._runners.get(session_id)
        if runner is not None:
            await runner.cancel()
            return
        row = await self.store.sessions.get(session_id)
        if not row.finished:
            raise self._not_here(row, SessionNotFoundError)

    # -- hand off now ------------------------------------------------------------------

    async def request_handoff(self, session_id: str, to_entry: str | None = None) -> str:
        """Pause a running session at a safe point and hand it to ``to_entry`` (or the next entry).

        Returns what will happen.

        Raises:
            HandoffRefusedError: the session is not running, or cannot be handed off.
            SessionNotFoundError: no such session.
        """
        row = await self.store.sessions.get(session_id)
        runner = self._runners.get(row.id)
        if runner is not None:
            return runner.request_handoff(to_entry)
        if row.finished:
            raise HandoffRefusedError(f"Session {row.id} has {row.state}; nothing is running to "
                                      "hand off.", "Continue it with `relay-cli run TASK --resume "
                                      f"{row.id} --provider P`.")
        raise self._not_here(row, HandoffRefusedError)

    def _not_here(self, row: SessionRow, error: type[RelayError]) -> RelayError:
        """A session stored as unfinished that no runner of this engine runs. Sessions run
        in their data folder's host, and front ends act on them through its API; one that no
        host runs was left by a Relay that stopped, and the next host takes it up."""
        return error(f"Session {row.id} is {row.state}, but this Relay does not run it.",
                     "Sessions run in the data folder's host (`relay-cli status` says which); "
                     "one a stopped Relay left is taken up when a host opens "
                     "(`relay-cli recover`).")

    # -- needs input -------------------------------------------------------------------

    async def answer_input(self, session_id: str, request_id: str, option_id: str | None = None,
                           text: str | None = None) -> str:
        """Answer a question a session's agent asks (an option id, or free text); returns
        what was done."""
        row = await self.store.sessions.get(session_id)
        runner = self._runners.get(row.id)
        if runner is not None:
            return await runner.gate.answer(request_id, option_id, text)
        if row.finished:
            raise RelayError(f"Session {row.id} has {row.state}; its questions are closed.")
        raise self._not_here(row, RelayError)

    async def open_questions(self, session_id: str) -> list[NeedsInput]:
        """The session's questions nobody has answered or withdrawn yet, oldest first."""
        row = await self.store.sessions.get(session_id)
        runner = self._runners.get(row.id)
        if runner is not None:
            return list(runner.gate.pending.values())
        if row.state != "needs_input":
            return []
        asked: dict[str, NeedsInput] = {}
        for record in await self.store.events_after(0, session_id=row.id, kinds=_QUESTION_KINDS):
            event = record.event
            if isinstance(event, NeedsInput):
                asked[event.request_id] = event
            elif isinstance(event, InputWithdrawn):
                asked.pop(event.request_id, None)
        return list(asked.values())

    @property
    def detector(self) -> Detector:
        """The agent sessions on this machine (built on first use: its stores load then)."""
        if self._detector is None:
            from relay.detect.service import Detector as Built

            self._detector = Built(self.accounts, self.wallet, live=self.board.live_states())
        return self._detector

    @property
    def history(self) -> History:
        """The time machine: timelines, diffs, rewind, finishing a session (built on first
        use)."""
        if self._history is None:
            from relay.history.service import History as Built

            self._history = Built(self.config, self.store, self.review, self.start_session,
                                  lambda: self.pipelines)
        return self._history

    @property
    def pipelines(self) -> Pipelines:
        """Pipeline runs (built on first use)."""
        if self._pipelines is None:
            from relay.pipelines.service import Pipelines as Built

            self._pipelines = Built(self)
        return self._pipelines

    @property
    def knowledge(self) -> Knowledge:
        """The knowledge graph: code and session activity, searchable (built on first use)."""
        if self._knowledge is None:
            from relay.knowledge.service import Knowledge as Built

            self._knowledge = Built(self.config)
        return self._knowledge

    @cached_property
    def integrations(self) -> Integrations:
        """Claude Code's hooks and MCP server in its config folders (built on first use)."""
        from relay.board.integrations import Integrations as Built

        return Built(self.config.home, self.accounts)

    async def ingest_activity(self) -> None:
        """Index the session activity stored since the last ingest (any process's) now."""
        await self.knowledge.ingest(self.store)

    async def handoffs(self, session_id: str) -> list[HandoffRecord]:
        """A session's handoffs, oldest first, as last committed."""
        return await self.coordinator.journal.for_session(session_id)

    @property
    def passphrase_provider(self) -> PassphraseProvider | None:
        return self.coordinator.passphrase_provider

    async def session_cost(self, session_id: str) -> float | None:
        return (await self.wallet.costs.session(session_id)).value

    async def post_notice(self, session_id: str, notice: Notice) -> None:
        await self.writer.write(WriteOp(session_id, None, notice))

    def is_running_here(self, session_id: str) -> bool:
        return session_id in self._runners

    def running_sessions(self) -> list[str]:
        """The sessions this engine runs now."""
        return list(self._runners)

    async def list_sessions(self, limit: int = 200, archived: bool = False) -> list[SessionRow]:
        return await self.sessions.recent(limit, archived)

    async def get_session(self, session_id: str) -> SessionRow:
        return await self.store.sessions.get(session_id)

    async def session_spec(self, session_id: str) -> SessionSpec:
        """What the user asked of the session (``session_id`` in full)."""
        return await self.store.sessions.spec(session_id)

    async def runs(self, session_id: str) -> list[RunRow]:
        return await self.store.sessions.runs(session_id)

    async def session_events(self, session_id: str, after_id: int = 0,
                             limit: int = 100_000) -> list[EventRecord]:
        """A session's history from the store (events marked ``replay``)."""
        return await self.store.events_after(after_id, session_id=session_id, limit=limit)

    async def events_after(self, after_id: int = 0, session_id: str | None = None,
                           limit: int = 1000) -> list[EventRecord]:
        """Stored events after ``after_id`` in id order, every session's or one's (the API's
        pages and the catch-up of its live stream)."""
        return await self.store.events_after(after_id, session_id=session_id, limit=limit)

    def follow(self, session_id: str, after_id: int = 0,
               replay: bool = True) -> AsyncGenerator[EventRecord, None]:
        """A session's events after ``after_id`` as they are written, by whichever process
        runs it; ends when the session is finished (:mod:`relay.engine.follow`)."""
        return self._follower.session(session_id, after_id, replay)

    async def wait_finished(self, session_id: str, timeout_s: float) -> SessionRow:
        """The session's row once it is finished — whichever process runs it — or as it is
        when ``timeout_s`` passes (the session goes on)."""
        return await self._follower.until_finished(session_id, timeout_s)

    async def last_event_id(self) -> int:
        return await self.store.last_event_id()

    # -- runtimes --------------------------------------------------------------------

    def runtime_infos(self, env: Mapping[str, str] | None = None) -> list[RuntimeInfo]:
        return [adapter_class(name)(env).info() for name in available_runtimes()]
