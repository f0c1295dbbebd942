"""Talking to a session's agent: follow-ups, the queue, steer, interrupt and forks.

``engine.talk`` is the one entry point every front end reaches (the window, relay-cli,
the TUI, MCP, the web board, over the host's API as ``client.talk`` with the same names).
The messages live in the session's inbox (:mod:`relay.sessions.inbox`); the runner
delivers the queued ones at the next turn boundary, never by killing a turn.

SCAFFOLD (issue 22): the signatures are binding; the bodies are being written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from relay.core.events import MessageMode
from relay.core.models import ForkResult, SessionMessage, TalkAbilities
from relay.engine.fork import fork_session

if TYPE_CHECKING:
    from relay.engine.engine import Engine


class Talk:
    """``engine.talk``: what a user says to a session, and what they can do with it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def say(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  source: str = "api", attachments: Sequence[str] = ()) -> SessionMessage:
        """Send ``text`` to the session's agent.

        A finished session: a follow-up, delivered at once as a new run of the same session
        (the runtime's resume, else Relay's brief) — whatever the mode. A running one:
        ``queue`` stores it for the next turn boundary; ``now`` steers it into the running
        turn (the capability ``steer``; else UnsupportedCapabilityError whose hint offers
        queue or interrupt); ``interrupt`` queues it and stops the turn, so it goes next.
        """
        raise NotImplementedError

    async def messages(self, session_id: str, *, pending: bool = False) -> list[SessionMessage]:
        """The session's messages, oldest first (``pending``: only queued/sending)."""
        raise NotImplementedError

    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage:
        """Change a queued message's text (refused once it is being delivered)."""
        raise NotImplementedError

    async def cancel(self, session_id: str, message_id: str) -> SessionMessage:
        """Cancel a queued message (refused once it is being delivered)."""
        raise NotImplementedError

    async def interrupt(self, session_id: str) -> str:
        """Stop the current turn without ending the conversation; returns what happens.
        Queued messages go next; with none, the session waits for the next message (its
        state ``interrupted``, continued by :meth:`say`)."""
        raise NotImplementedError

    async def fork(self, session_id: str, *, at_event: int | None = None,
                   at_commit: str | None = None, prompt: str | None = None) -> ForkResult:
        """A new session in a new worktree at the snapshot of ``at_event`` (a stream row)
        or ``at_commit`` (default: the session's last snapshot), carrying the conversation
        up to there where the runtime can, else the signed brief (relay.engine.fork)."""
        return await fork_session(self.engine, session_id, at_event=at_event,
                                  at_commit=at_commit, prompt=prompt)

    async def abilities(self, session_id: str) -> TalkAbilities:
        """What the composer offers for this session now."""
        raise NotImplementedError
