"""Records the engine hands to front ends (sessions, runs) and what they ask for."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from relay.core.events import SessionState, Usage
from relay.runtimes.base import PermissionPolicy


class SessionSpec(BaseModel):
    """What a user asks for when starting a session."""

    model_config = ConfigDict(frozen=True)

    repo: Path
    task: str = Field(min_length=1)
    runtime: str = "demo"
    model: str | None = None
    #: the provider chain, ``runtime[:account]`` entries in order; empty means just
    #: ``runtime``. When an entry hits a limit the task is handed to the next one.
    chain: list[str] = Field(default_factory=list)
    worktree: bool = True
    permission: PermissionPolicy = PermissionPolicy.WORKSPACE
    setup_command: list[str] | None = None
    #: demo only: hit a simulated usage limit after this many turns.
    demo_limit_after: int | None = None


def chain_of(spec: SessionSpec) -> list[str]:
    """The effective provider chain of a session (at least its runtime)."""
    return list(spec.chain) or [spec.runtime]


def entry_runtime(entry: str) -> str:
    """``"claude:work"`` → ``"claude"``."""
    return entry.partition(":")[0]


class SessionRow(BaseModel):
    """A session as the store has it."""

    model_config = ConfigDict(frozen=True)

    id: str
    repo: str
    task: str
    runtime: str
    model: str | None
    state: SessionState
    permission: PermissionPolicy
    workdir: str | None
    branch: str | None
    agent_session_id: str | None
    reason: str | None
    simulated: bool
    created_at: datetime
    updated_at: datetime
    usage: Usage = Field(default_factory=Usage)

    @property
    def finished(self) -> bool:
        return self.state in ("completed", "failed", "cancelled", "interrupted")


class RunRow(BaseModel):
    """One agent process attempt within a session."""

    model_config = ConfigDict(frozen=True)

    id: str
    session_id: str
    attempt: int
    runtime: str
    model: str | None
    agent_session_id: str | None = None
    started_at: datetime
    ended_at: datetime | None
    outcome: str | None
    exit_code: int | None
    usage: Usage
