"""The runner's side of talking to its agent: steer, interrupt and the delivery points.

Queued messages (:mod:`relay.sessions.inbox`) reach the agent at a turn boundary, never by
killing a turn: in-process where the runtime keeps its process between turns (it asks
:attr:`~relay.runtimes.base.RunRequest.next_input` at each turn end: ``how="turn"``), else
when a run completes — the runner then continues the same session with them as its next run
(the agent's own conversation resumed: ``how="resume"``; a runtime that cannot resume gets
Relay's brief of the session with them: ``how="brief"``). Verification waits for the last
turn. An interrupt stops the current turn: queued messages go next; with none the session
ends ``interrupted``, to be continued by the next message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from relay.core.capabilities import Cap
from relay.core.errors import RelayError, UnsupportedCapabilityError
from relay.core.events import DeliveredHow, Usage
from relay.core.models import SessionRow, SessionSpec, chain_of, entry_runtime
from relay.core.store.db import Store
from relay.runtimes.base import RuntimeAdapter
from relay.runtimes.registry import adapter_class
from relay.sessions.briefing import build_contract
from relay.sessions.contract import render_markdown
from relay.sessions.inbox import Inbox, Letter, render
from relay.sessions.run_types import Continuation, Step
from relay.sessions.worktree import Workspace, git_boundary, open_repo

#: what a refused steer offers instead
STEER_HINT = "Queue it (it goes when this turn ends), or interrupt and send."


def steer_refused(error: UnsupportedCapabilityError) -> UnsupportedCapabilityError:
    """The runtime cannot take a message mid-turn: the error says what to do instead."""
    error.hint = STEER_HINT
    return error


def can_resume(runtime: str) -> bool:
    return adapter_class(runtime)(None).capabilities.supports(Cap.RESUME)


@git_boundary
def _head(worktree: Path) -> str:
    return str(open_repo(worktree).head.target)


async def brief_prompt(store: Store, session_id: str, task: str, ws: Workspace,
                       message: str) -> str:
    """A new run's prompt where the agent's conversation cannot be resumed: Relay's brief
    of the session (the continuation contract's text), then the user's message."""
    try:
        sha = await asyncio.to_thread(_head, ws.path)
        records = await store.events_after(0, session_id=session_id, limit=1_000_000)
        contract = await asyncio.to_thread(
            build_contract, session_id=session_id, task=task, records=records,
            worktree=ws.path, branch=ws.branch, snapshot_sha=sha, reason=None)
        brief = render_markdown(contract)
    except (RelayError, ValueError):  # no commit to point at: the task alone
        brief = f"You are continuing this task:\n\n{task}\n"
    return (f"{brief.rstrip()}\n\n---\nThe work so far is in this folder. The user now says:"
            f"\n\n{message}")


async def continuation(store: Store, row: SessionRow, spec: SessionSpec,
                       prompt: str) -> Continuation:
    """A finished session's next run: its agent's own conversation resumed with ``prompt``
    where the runtime can, else a new conversation told Relay's brief of the session and
    ``prompt``; in the session's folder."""
    assert row.workdir is not None
    previous = Usage()
    runs = await store.sessions.runs(row.id)
    for run in runs:
        if run.agent_session_id == row.agent_session_id:
            previous = previous + run.usage
    last = next((r for r in reversed(runs) if r.agent_session_id == row.agent_session_id),
                None)
    runtime = last.runtime if last else spec.runtime
    workspace = Workspace(Path(row.workdir), row.branch, row.branch is not None)
    resume = row.agent_session_id if row.agent_session_id and can_resume(runtime) else None
    if resume is None:  # Relay's brief carries the session instead
        prompt = await brief_prompt(store, row.id, spec.task, workspace, prompt)
    return Continuation(prompt=prompt, agent_session_id=resume, runtime=runtime,
                        # what the user asked for applies to the first entry's runtime;
                        # runs.model holds what the agent reported, not what to pass back
                        model=spec.model if runtime == entry_runtime(chain_of(spec)[0])
                        else None,
                        workspace=workspace, previous_total=previous if resume else Usage())


@dataclass
class Talking:
    """One runner's talk with its agent: what it steers, interrupts and carries over."""

    session_id: str
    inbox: Inbox | None
    store: Store
    task: str
    #: an interrupt asked for the current turn (reset when the runner decides)
    interrupted: bool = False
    #: claimed messages the next run carries, and how
    _carrying: list[Letter] = field(default_factory=list)
    _how: DeliveredHow = "resume"
    #: set once the carried messages are delivered or failed
    settled: asyncio.Event = field(default_factory=asyncio.Event)

    async def steer(self, adapter: RuntimeAdapter | None, text: str) -> None:
        """Give the running agent ``text`` now (the runtime's steer)."""
        if adapter is None:
            raise RelayError(f"Session {self.session_id} has no turn running to steer into.",
                             "Send it queued: it goes as the next message.")
        try:
            await adapter.steer(text)
        except UnsupportedCapabilityError as exc:
            raise steer_refused(exc) from None

    async def interrupt(self, adapter: RuntimeAdapter | None) -> None:
        """Stop the current turn; the runner decides what comes next."""
        if adapter is None:
            raise RelayError(f"Session {self.session_id} has no turn running to interrupt.",
                             "Send a message to continue it.")
        self.interrupted = True
        await adapter.interrupt()

    def next_input(self, run_id: Callable[[], str | None]) -> Callable[[], Awaitable[str | None]]:
        """The callback a runtime that keeps its process asks at each turn end."""

        async def ask() -> str | None:
            if self.inbox is None:
                return None
            letters = await self.inbox.claim(self.session_id)
            if not letters:
                return None
            self.interrupted = False  # an interrupted turn goes on in-process with them
            await self.inbox.delivered(letters, "turn", run_id())
            return render(letters)

        return ask

    async def follow_up(self, step: Step, agent_sid: str | None, ws: Workspace) -> Step | None:
        """The next run carrying what is queued (None: nothing is), the same entry resuming
        its own conversation where it can, else with Relay's brief."""
        self.interrupted = False
        if self.inbox is None:
            return None
        letters = await self.inbox.claim(self.session_id)
        if not letters:
            return None
        text = render(letters)
        self._carrying = letters
        if agent_sid and can_resume(entry_runtime(step.entry)):
            self._how = "resume"
            return Step(entry=step.entry, prompt=text, resume_id=agent_sid, model=step.model)
        self._how = "brief"
        return Step(entry=step.entry, model=step.model,
                    prompt=await brief_prompt(self.store, self.session_id, self.task, ws, text))

    def carry(self, letters: list[Letter], how: DeliveredHow) -> None:
        """The first run delivers ``letters`` (a follow-up the engine claimed)."""
        self._carrying, self._how = letters, how
        self.settled.clear()

    async def run_started(self, run_id: str) -> None:
        """The run carrying the claimed messages exists: they are delivered."""
        carrying, self._carrying = self._carrying, []
        if carrying and self.inbox is not None:
            await self.inbox.delivered(carrying, self._how, run_id)
        self.settled.set()

    async def not_carried(self, why: str) -> None:
        """The run that was to carry them did not start."""
        carrying, self._carrying = self._carrying, []
        if carrying and self.inbox is not None:
            await self.inbox.failed(carrying, why)
        self.settled.set()

