"""The live state of an agent session as its hooks report it (seed 004's session states).

Claude Code calls Relay's hook client at every hook event; the host folds those events
into one :class:`HookedSession` per Claude session — for sessions Relay did not start as
well as its own. This module is only the vocabulary: the folding lives in
``relay.board.hooks``, and the Detector, the tray and ``relay-cli detect`` read the result
through :class:`LiveStates` (in memory, no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

#: working: a prompt or a tool is running; needs_input: a permission prompt or a question
#: waits for the user; idle: the turn ended and Claude waits for the user; quota_blocked: a
#: usage or rate limit stopped the turn; ended: the session ended.
LiveState = Literal["working", "needs_input", "idle", "quota_blocked", "ended"]
LIVE_STATES: tuple[LiveState, ...] = ("working", "needs_input", "idle", "quota_blocked", "ended")

#: what a session in ``needs_input`` waits for
Needs = Literal["permission", "question"]


@dataclass(frozen=True, slots=True)
class HookedSession:
    """One agent session as its hooks last described it."""

    agent_session_id: str
    runtime: str
    cwd: str
    state: LiveState
    #: the tool running, the notification's message, the question, or the error
    detail: str = ""
    needs: Needs | None = None
    #: SessionStart's source: startup, resume, clear or compact
    source: str = ""
    transcript_path: str = ""
    #: the Relay session running this agent session, when Relay runs it
    relay_session_id: str | None = None
    #: the agent's latest todo list (TodoWrite items: content, status, activeForm)
    todos: tuple[dict[str, Any], ...] = ()
    started_ms: int = 0
    updated_ms: int = 0


class LiveStates(Protocol):
    """What the Detector, the tray and ``relay-cli detect`` read (sync, in memory)."""

    def get(self, agent_session_id: str) -> HookedSession | None: ...

    def all(self) -> list[HookedSession]: ...


class NoLiveStates:
    """No hooks report here (an engine without a board, a test): every lookup is empty."""

    def get(self, agent_session_id: str) -> HookedSession | None:
        return None

    def all(self) -> list[HookedSession]:
        return []
