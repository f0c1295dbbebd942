"""What the talk tests share: an engine, and waiting for a session's stream to show a row."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from relay.core.events import AgentEvent, AssistantText
from relay.engine.engine import Engine


async def until_event(engine: Engine, session_id: str, matches: Callable[[AgentEvent], bool],
                      within: float = 30.0) -> AgentEvent:
    """The first stored event of the session (from the start) that ``matches``."""
    async def scan() -> AgentEvent:
        async for record in engine.follow(session_id, 0, replay=True):
            if matches(record.event):
                return record.event
        raise AssertionError(f"session {session_id} ended without the event")

    return await asyncio.wait_for(scan(), within)


async def busy(engine: Engine, session_id: str) -> None:
    """Until the session's agent has shown it works (its first message)."""
    await until_event(engine, session_id, lambda e: e.kind == "assistant_text")
    assert (await engine.talk.abilities(session_id)).busy


async def said(engine: Engine, session_id: str, run_id: str) -> str:
    """What the agent said in a run (its messages, joined)."""
    return " ".join(r.event.text for r in await engine.session_events(session_id)
                    if r.run_id == run_id and isinstance(r.event, AssistantText))
