"""Performs a handoff, one durable step at a time (see relay.sessions.handoff).

pausing → snapshotted → envelope_built → dispatched → resuming → done. The
session runner calls :meth:`HandoffCoordinator.prepare` when a run ended on a
limit and the chain has a next entry; it returns the verified prompt for the
next agent. The runner then starts that run and reports its id
(:meth:`dispatched`) and its first event (:meth:`confirmed`).

A simulation's handoff (the demo) is signed with a throwaway demo key written beside its
contract (:mod:`relay.sessions.demo_key`), never the vault's: a simulation never needs the
user's passphrase. Everything else is signed with the vault's key, unlocked once per
process; a front end asks for its passphrase before work starts, never in the middle of
a handoff.

The contract also carries the session's decisions and constraints from the knowledge
graph when :attr:`HandoffCoordinator.facts_source` is set (the engine sets it); if that
fails, the handoff goes on without them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from relay.core.config import Config
from relay.core.errors import RelayError
from relay.core.events import HandoffState
from relay.core.fsutil import write_atomic
from relay.core.redact import scrub_obj
from relay.core.store.db import Store
from relay.core.store.writer import EventWriter
from relay.core.vault import PassphraseProvider, Vault
from relay.sessions.briefing import KnownFacts, build_contract
from relay.sessions.contract import read_envelope, render_markdown, write_envelope
from relay.sessions.demo_key import DEMO_SIGNED, demo_key
from relay.sessions.handoff import HandoffJournal, HandoffRecord
from relay.sessions.snapshot import SnapshotRequest, take_snapshot
from relay.sessions.worktree import Workspace

log = logging.getLogger(__name__)

#: the verified contract rendered for the receiving agent (rewritten at every resume)
BRIEF_FILE = "brief.md"
#: a session's decisions and constraints from the knowledge graph
FactsSource = Callable[[str], Awaitable[KnownFacts]]


@dataclass(frozen=True)
class Brief:
    """What the receiver is told: the verified contract as markdown, and its file."""

    markdown: str
    path: Path


@dataclass(frozen=True)
class HandoffRequest:
    session_id: str
    task: str
    workspace: Workspace
    from_run_id: str | None
    from_entry: str
    to_entry: str
    reason: str | None
    simulated: bool = False
    #: how the agent was paused ("hand off now"); None when it had stopped on its own
    paused: str | None = None
    #: the task's acceptance commands (they go into the contract)
    acceptance: list[list[str]] = field(default_factory=list)


#: called with each handoff state (and ``waiting``) right after it is committed: where the
#: crash tests inject their fault (``tests/fakes/relay_killed_after.py`` kills the process
#: there); Relay itself injects none
FaultHook = Callable[[str], None]


def no_faults(state: str) -> None:
    """The fault hook of real use: nothing happens."""


async def verified_brief(folder: Path, key: bytes) -> Brief:
    """The contract in ``folder`` read back and verified (never inject an unverified one),
    rendered for the next agent and kept beside it as ``brief.md``."""
    verified = await asyncio.to_thread(read_envelope, folder, key)
    brief = Brief(render_markdown(verified), folder / BRIEF_FILE)
    await asyncio.to_thread(write_atomic, brief.path, brief.markdown.encode())
    return brief


class HandoffCoordinator:
    """Takes a session from one chain entry to the next."""

    def __init__(self, config: Config, store: Store, writer: EventWriter,
                 passphrase_provider: PassphraseProvider | None = None,
                 fault: FaultHook = no_faults) -> None:
        self.config = config
        self.fault = fault
        self.store = store
        self.journal = HandoffJournal(store, writer)
        self.passphrase_provider = passphrase_provider
        self._simulated: set[str] = set()  # handoff ids of demo sessions (labelled)
        self._key: bytes | None = None
        self.facts_source: FactsSource | None = None

    def _folder(self, record: HandoffRecord) -> Path:
        return self.config.home / "handoffs" / record.session_id / record.id

    async def prepare(self, req: HandoffRequest) -> tuple[HandoffRecord, Brief]:
        """Pause (the agent has stopped), snapshot, build and verify the contract.

        Returns the journal record (state ``envelope_built``) and the verified
        next agent's brief. A failed step marks the handoff failed and re-raises.
        """
        return await self.resume(await self.begin(req), req)

    async def begin(self, req: HandoffRequest) -> HandoffRecord:
        """Record the handoff as ``pausing`` (the agent is stopping, or has stopped)."""
        record = await self.journal.begin(
            req.session_id, from_run_id=req.from_run_id, from_entry=req.from_entry,
            to_entry=req.to_entry, reason=req.reason, simulated=req.simulated)
        self.fault("pausing")
        return record

    async def resume(self, record: HandoffRecord,
                     req: HandoffRequest) -> tuple[HandoffRecord, Brief]:
        """Carry a handoff on from its last committed state (also after a crash).

        Each step's work is idempotent — the snapshot is keyed by the handoff id, an
        envelope already written is verified and reused — so repeating the step a
        crash interrupted does nothing twice.
        """
        if req.simulated:
            self._simulated.add(record.id)
        try:
            return await self._steps(record, req)
        except RelayError as exc:
            await self._advance(record, "failed", detail=exc.message)
            raise
        except BaseException as exc:  # cancelled (Relay closing) or a bug: never left half-way
            why = "Relay was closed during the handoff" if isinstance(
                exc, asyncio.CancelledError) else f"internal error: {exc!r}"
            with contextlib.suppress(Exception):
                await asyncio.shield(self._advance(record, "failed", detail=why))
            raise

    async def _advance(self, record: HandoffRecord, state: HandoffState, *,
                       detail: str | None = None, **produced: str) -> HandoffRecord:
        simulated = record.id in self._simulated
        if state in ("done", "failed"):
            self._simulated.discard(record.id)
        record = await self.journal.advance(record, state, detail=detail, simulated=simulated,
                                            **produced)
        self.fault(state)
        return record

    async def _steps(self, record: HandoffRecord, req: HandoffRequest) -> tuple[HandoffRecord, Brief]:
        if record.state == "pausing":
            snap = await asyncio.to_thread(take_snapshot, SnapshotRequest(
                worktree=req.workspace.path, session_id=req.session_id, handoff_id=record.id,
                run_id=req.from_run_id, from_entry=req.from_entry, to_entry=req.to_entry,
                reason=req.reason))
            paused = f"{req.paused}; " if req.paused else ""
            record = await self._advance(record, "snapshotted", snapshot_sha=snap.sha,
                                         detail=f"{paused}commit {snap.sha[:12]} on {snap.branch}")
        folder = self._folder(record)
        key = await self._key_for(req, folder, create=record.state == "snapshotted")
        if record.state == "snapshotted":
            records = await self.store.events_after(0, session_id=req.session_id, limit=1_000_000)
            facts = await self._known_facts(req.session_id)
            contract = await asyncio.to_thread(
                build_contract, session_id=req.session_id, task=req.task, records=records,
                worktree=req.workspace.path, branch=req.workspace.branch,
                snapshot_sha=record.snapshot_sha or "", reason=req.reason,
                acceptance=req.acceptance, facts=facts)
            detail = f"contract signed in {folder}"
            if req.simulated:
                contract = contract.model_copy(update={"simulated": True})
                detail = f"contract {DEMO_SIGNED}: {folder}"  # said first: never clipped
            await asyncio.to_thread(write_envelope, folder, contract, key, scrub=scrub_obj)
            record = await self._advance(record, "envelope_built", contract_dir=str(folder),
                                         detail=detail)
        return record, await verified_brief(folder, key)

    async def _known_facts(self, session_id: str) -> KnownFacts:
        if self.facts_source is None:
            return KnownFacts()
        try:
            return await self.facts_source(session_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # the knowledge graph is an aid: the handoff goes on without it
            log.exception("knowledge: no decisions/constraints for session %s's contract",
                          session_id)
            return KnownFacts()

    async def _key_for(self, req: HandoffRequest, folder: Path, *, create: bool) -> bytes:
        return await self.contract_key(folder, simulated=req.simulated, create=create)

    async def contract_key(self, folder: Path, *, simulated: bool, create: bool = True) -> bytes:
        """The key a contract in ``folder`` is signed with: a simulation's is its own
        throwaway demo key (the user's vault is never asked); any other the vault's."""
        if simulated:
            return await asyncio.to_thread(demo_key, folder, create=create)
        return await self._signing_key()

    async def _signing_key(self) -> bytes:
        """The contract signing key, unlocked once per process (the file vault's key
        derivation takes a few hundred milliseconds by design)."""
        if self._key is None:
            self._key = await asyncio.to_thread(
                lambda: Vault.open(self.config, self.passphrase_provider).signing_key())
        return self._key

    async def dispatched(self, record: HandoffRecord, run_id: str) -> HandoffRecord:
        return await self._advance(record, "dispatched", to_run_id=run_id,
                                          detail=f"{record.to_entry} started as run {run_id}")

    async def confirmed(self, record: HandoffRecord) -> HandoffRecord:
        """The receiver produced its first event: the handoff is done."""
        record = await self._advance(record, "resuming",
                                            detail=f"{record.to_entry} is working")
        return await self._advance(record, "done")

    async def confirmed_after_crash(self, record: HandoffRecord) -> HandoffRecord:
        """The receiver had started working before Relay stopped: the handoff happened."""
        return await self._advance(record, "done", detail="the receiver was working when "
                                                          "Relay stopped")

    async def failed(self, record: HandoffRecord, why: str) -> HandoffRecord:
        return await self._advance(record, "failed", detail=why)
