"""Safe pause: stop an agent where stopping loses the least ("hand off now").

A safe point is a turn boundary (``turn_completed``) or the end of a running tool
call that leaves no other tool call in flight (its result is in, so the work it
did is on disk). :func:`pause_agent` waits for the next safe point after the
request, up to a timeout, then stops the agent's process tree — and records
which of the two happened, so the handoff's journal says how the agent was left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from relay.core.events import AgentEvent
from relay.sessions.handoff import HandoffRecord


@dataclass
class PauseRequest:
    """A "hand off now": pause the agent at a safe point, then hand off to ``to_entry``."""

    to_entry: str
    #: why (recorded as the handoff's reason)
    reason: str = "requested by the user"
    #: the agent was working when asked (else the session was waiting for a reset)
    agent_running: bool = True
    requested: float = field(default_factory=time.monotonic)
    #: how the agent was paused (recorded with the snapshot step)
    how: str | None = None
    record: HandoffRecord | None = None
    #: set once the journal has the handoff (``record``) — or failed to record it
    begun: asyncio.Event = field(default_factory=asyncio.Event)


class SafePoints:
    """Follows one agent run's events; :attr:`reached` is set at each safe point."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.how = ""
        self._in_flight: dict[str, str] = {}

    def new_run(self) -> None:
        self._in_flight.clear()

    def arm(self) -> None:
        """Wait for the *next* safe point from now on."""
        self.reached.clear()

    def note(self, event: AgentEvent) -> None:
        if event.kind == "tool_call":
            self._in_flight[event.call_id] = event.name
        elif event.kind == "tool_result":
            name = self._in_flight.pop(event.call_id, "tool")
            if not self._in_flight:
                self.how = f"the end of tool call {name}"
                self.reached.set()
        elif event.kind == "turn_completed":
            self._in_flight.clear()
            self.how = "a turn boundary"
            self.reached.set()


async def pause_agent(pause: PauseRequest, safe: SafePoints, *,
                      begin: Callable[[], Awaitable[HandoffRecord]],
                      stop: Callable[[], Awaitable[None]], within: float) -> None:
    """Journal the handoff (``pausing``), then stop the agent at a safe point or on timeout."""
    try:
        pause.record = await begin()
    finally:
        pause.begun.set()
    if not pause.agent_running:
        return
    try:
        await asyncio.wait_for(safe.reached.wait(), within)
        how = f"paused at {safe.how}"
    except TimeoutError:
        how = f"no safe point within {within:g} s: stopped mid-turn"
    pause.how = f"{how} ({time.monotonic() - pause.requested:.1f} s after the request)"
    await stop()
