"""Following a session as it is written, whichever Relay process runs it.

The one way a front end tails a session (``relay-cli show --follow``, ``adopt``,
``handoff``, the MCP server's waits): read
the store after a cursor; when nothing is new, wait until this process commits something
(the bus wakes the follower at once) or :data:`FOLLOW_POLL_S` passes (another process's
writes reach this one only through the database file). Events come in id order, each once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from relay.core.events import BOARD_SESSION

if TYPE_CHECKING:
    from relay.core.bus import EventBus
    from relay.core.events import EventRecord
    from relay.core.models import SessionRow
    from relay.core.store.db import Store

#: how often a follower looks at the store for another process's writes (this process's own
#: commits wake it at once)
FOLLOW_POLL_S = 0.2


class Follower:
    """Reads a store after a cursor, waking on this process's commits."""

    def __init__(self, store: Store, bus: EventBus, running_here: Callable[[str], bool]) -> None:
        self.store = store
        self.bus = bus
        self.running_here = running_here

    async def session(self, session_id: str, after_id: int = 0,
                      replay: bool = True) -> AsyncGenerator[EventRecord, None]:
        """The session's events after ``after_id`` as they are written; ends once the session
        is finished (no process runs it any more) and every one of its events was yielded."""
        with self._wakeup() as woken:
            while True:
                batch = await self.store.events_after(after_id, session_id=session_id,
                                                      replay=replay)
                for record in batch:
                    after_id = record.id
                    yield record
                if batch:
                    continue
                if await self._finished(session_id):  # its last events were committed with it
                    for record in await self.store.events_after(after_id, session_id=session_id,
                                                                replay=replay):
                        yield record
                    return
                await _nap(woken)

    async def until_finished(self, session_id: str, timeout_s: float) -> SessionRow:
        """The session's row once it is finished, or as it is when ``timeout_s`` passes."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                async for _ in self.session(session_id, await self.store.last_event_id()):
                    pass
        return await self.store.sessions.get(session_id)

    async def _finished(self, session_id: str) -> bool:
        if session_id == BOARD_SESSION:  # the board's stream: no session row, never over
            return False
        if self.running_here(session_id):
            return False
        return (await self.store.sessions.get(session_id)).finished

    @contextlib.contextmanager
    def _wakeup(self) -> Iterator[asyncio.Event]:
        woken = asyncio.Event()

        def wake(_: Sequence[EventRecord]) -> None:
            woken.set()

        remove = self.bus.add_listener(wake)
        try:
            yield woken
        finally:
            remove()



async def _nap(woken: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(woken.wait(), FOLLOW_POLL_S)
    woken.clear()
