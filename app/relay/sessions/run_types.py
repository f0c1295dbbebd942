"""The records a session runner works with: what it resumes, recovers and runs, the
services it needs, its phases and the outcomes it tells apart.

Kept apart from :mod:`relay.sessions.runner` so the runner module holds behaviour only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal, Protocol

from relay.core.accounts import AccountBook
from relay.core.capabilities import Cap
from relay.core.events import LimitHit, Usage
from relay.core.guard import Guard
from relay.core.models import SessionSpec, entry_runtime
from relay.core.states import SessionState
from relay.runtimes.registry import adapter_class
from relay.sessions.breaker import CircuitBreakers
from relay.sessions.coordinator import HandoffCoordinator
from relay.sessions.handoff import HandoffRecord
from relay.sessions.inbox import Inbox
from relay.sessions.worktree import Workspace
from relay.wallet.model import GuardVerdict


@dataclass(frozen=True)
class Continuation:
    """What a follow-up run of an existing session needs."""

    prompt: str
    #: the agent conversation to resume; None: a new run with Relay's brief in its prompt
    agent_session_id: str | None
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


@dataclass(frozen=True)
class WaitRecovery:
    """A session a stopped engine left waiting for a limit's reset, to wait on and resume."""

    entry: str
    agent_session_id: str | None
    until: datetime
    workspace: Workspace


#: what a runner is doing (:mod:`relay.sessions.runner` draws the transitions); "hand off
#: now" is accepted while ``running`` (an agent works) or ``waiting`` (for a retry or reset)
Phase = Literal["preparing", "running", "deciding", "verifying", "waiting", "handing_off",
                "finished"]

#: how an agent run ended, as the runner tells outcomes apart (each has its handler):
#: the wallet ``stopped`` the session; a "hand off now" is pending (``paused``); the agent
#: ``completed``; a failure the fallback takes over (a ``snag``); a ``limit``; any other end
OutcomeKind = Literal["stopped", "paused", "completed", "snag", "limit", "ended"]


#: the port through which the engine hands a session its tool-call guard: the session's
#: spec and the folder it works in → the guard (None: no guard for it)
GuardFor = Callable[[SessionSpec, Path], Awaitable[Guard | None]]


@dataclass(frozen=True)
class Services:
    """What every runner of one engine shares."""

    coordinator: HandoffCoordinator
    breakers: CircuitBreakers
    accounts: AccountBook
    #: the wallet's budgets, paused accounts and forecasts
    guard: TurnGuard
    #: the guard on a session's tool calls (:mod:`relay.core.guard`): the engine gives one
    #: per session from the project's environments; None: nothing is guarded
    guard_for: GuardFor | None = None
    #: the sessions' inbox (:mod:`relay.sessions.inbox`): queued messages go at a turn's
    #: end; None: nothing is delivered (a runner without an engine)
    inbox: Inbox | None = None


class TurnGuard(Protocol):
    """What the wallet says before a run starts and after each turn of a session.

    ``before_run``: "handoff" skips the entry (a paused account), "stop" starts no new work
    (a budget is spent). ``after_turn``: "handoff" hands off at this safe point (the account
    is about to run out), "stop" ends the session (a budget is spent), "warn" is a notice.
    """

    async def before_run(self, session_id: str, entry: str) -> GuardVerdict | None: ...

    async def after_turn(self, session_id: str, run_id: str, entry: str) -> GuardVerdict | None: ...


@dataclass
class Step:
    """One chain entry's run: what it is told, and the handoff that led to it."""

    entry: str
    prompt: str
    resume_id: str | None = None
    model: str | None = None
    handoff: HandoffRecord | None = None
    brief_file: Path | None = None


@dataclass(frozen=True)
class Outcome:
    """How one agent run ended."""

    state: SessionState
    reason: str | None
    run_id: str | None = None
    limit: LimitHit | None = None
    agent_session_id: str | None = None


@dataclass(frozen=True)
class Attempt:
    """A step that ran, how it ended, and how often its entry was retried in a row before."""

    step: Step
    outcome: Outcome
    retries: int = 0


@dataclass(frozen=True)
class Ended:
    """How a session ended: its final state and why."""

    state: SessionState
    reason: str | None


def entry_index(chain: list[str], from_entry: str | None, to_entry: str | None) -> int:
    """Where ``to_entry`` stands in the chain (right after ``from_entry`` when repeated)."""
    for i in range(1, len(chain)):
        if chain[i] == to_entry and chain[i - 1] == from_entry:
            return i
    return chain.index(to_entry) if to_entry in chain else len(chain) - 1


def retry_step(step: Step, outcome: Outcome) -> Step:
    """The same entry again: its own conversation resumed where the runtime allows."""
    runtime = entry_runtime(step.entry)
    if outcome.agent_session_id and adapter_class(runtime)(None).capabilities.supports(Cap.RESUME):
        return Step(entry=step.entry, prompt="Continue the task from where you stopped.",
                    resume_id=outcome.agent_session_id, model=step.model)
    return Step(entry=step.entry, prompt=step.prompt, model=step.model)
