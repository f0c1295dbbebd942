"""A fork's first run: how the new session carries its parent on (relay.engine.fork starts it).

``spec.fork_of.how`` says which way:

* ``conversation`` — the first step resumes a *copy* of the parent's agent conversation:
  ``resume_id`` is the parent's agent session and :func:`relay.sessions.run_request.build_request`
  adds ``fork`` and ``resume_at`` (the runtime's own cut after the turns the fork carries);
  the parent's conversation itself is never continued.
* ``brief`` — a continuation contract of the parent up to the fork point (its events up to
  ``fork_of.at_event``, the files of the fork's worktree at the snapshot), signed and
  verified like a handoff's (the demo's with its throwaway key), kept under
  ``<data>/forks/<session>/<contract>/`` and given to the agent the way a handoff's
  receiver gets it (:func:`relay.sessions.receiver.prepare_receiver`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from relay.core.events import AgentEvent, Notice
from relay.core.models import ForkOrigin, SessionSpec, entry_runtime
from relay.core.redact import scrub_obj
from relay.sessions.briefing import build_contract
from relay.sessions.contract import write_envelope
from relay.sessions.coordinator import Brief, HandoffCoordinator, verified_brief
from relay.sessions.receiver import prepare_receiver
from relay.sessions.run_types import Step
from relay.sessions.worktree import Workspace

#: the data folder's sub-folder holding the forks' contracts
FORKS_DIR = "forks"


async def first_step(spec: SessionSpec, step: Step, ws: Workspace, session_id: str,
                     coordinator: HandoffCoordinator, *, simulated: bool,
                     emit: Callable[[AgentEvent], Awaitable[None]]) -> Step:
    """The fork's first step in place of ``step`` (its entry, task and model kept)."""
    origin = spec.fork_of
    assert origin is not None
    if origin.how == "conversation" and origin.agent_session_id:
        if origin.runtime == entry_runtime(step.entry):
            await emit(Notice(message=_said(origin, "goes on in a copy of its conversation")))
            return Step(entry=step.entry, prompt=step.prompt, model=step.model,
                        resume_id=origin.agent_session_id)
        await emit(Notice(category="fallback", message=(
            f"The fork runs on {step.entry}, which cannot continue a {origin.runtime} "
            "conversation; Relay's signed brief carries the work.")))
    brief = await fork_brief(origin, spec, ws, session_id, coordinator, simulated=simulated)
    receiver = await prepare_receiver(brief, from_entry=origin.runtime or step.entry,
                                      to_entry=step.entry, agent_session_id=None, cwd=ws.path,
                                      accounts=None)
    await emit(Notice(message=_said(origin, f"goes on from Relay's signed brief ({brief.path})")))
    return Step(entry=step.entry, prompt=receiver.prompt, model=step.model,
                brief_file=receiver.brief_file)


def _said(origin: ForkOrigin, how: str) -> str:
    turns = f" after turn {origin.turns}" if origin.turns is not None else ""
    return (f"Forked from session {origin.session_id} at {(origin.sha or '?')[:10]}{turns}: "
            f"the work {how}.")


async def fork_brief(origin: ForkOrigin, spec: SessionSpec, ws: Workspace, session_id: str,
                     coordinator: HandoffCoordinator, *, simulated: bool) -> Brief:
    """The parent's continuation contract up to the fork point, signed and verified."""
    store = coordinator.store
    records = [r for r in await store.events_after(0, session_id=origin.session_id,
                                                   limit=10_000_000)
               if origin.at_event is None or r.id <= origin.at_event]
    base_sha, _ = await store.sessions.base_of(origin.session_id)
    contract = await asyncio.to_thread(
        build_contract, session_id=origin.session_id, task=spec.task, records=records,
        worktree=ws.path, branch=ws.branch, snapshot_sha=origin.sha or ws.base_sha or "",
        reason="fork", acceptance=spec.verify, base_sha=base_sha)
    if simulated:
        contract = contract.model_copy(update={"simulated": True})
    folder = coordinator.config.home / FORKS_DIR / session_id / contract.contract_id
    key = await coordinator.contract_key(folder, simulated=simulated)
    await asyncio.to_thread(write_envelope, folder, contract, key, scrub=scrub_obj)
    return await verified_brief(folder, key)
