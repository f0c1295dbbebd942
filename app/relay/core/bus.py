"""In-process publish/subscribe of stored events, after commit.

Subscribers are either callbacks (the GUI bridge) or async iterators with a
bounded queue (the CLI). A slow async subscriber never blocks the publisher:
when its queue is full the oldest events are dropped and it is told how many
it missed, so it can re-read them from the store by id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Sequence

from relay.core.events import EventRecord

log = logging.getLogger(__name__)

Callback = Callable[[Sequence[EventRecord]], None]


class Subscription:
    """An async iterator over published records, optionally for one session."""

    def __init__(self, bus: EventBus, session_id: str | None, maxsize: int) -> None:
        self._bus = bus
        self.session_id = session_id
        self._queue: asyncio.Queue[EventRecord | None] = asyncio.Queue(maxsize)
        self.missed = 0

    def _offer(self, record: EventRecord) -> None:
        if self.session_id is not None and record.session_id != self.session_id:
            return
        if self._queue.full():
            self._queue.get_nowait()
            self.missed += 1
        self._queue.put_nowait(record)

    def close(self) -> None:
        self._bus._subs.discard(self)
        if self._queue.full():
            self._queue.get_nowait()
            self.missed += 1
        self._queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[EventRecord]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[EventRecord]:
        while (record := await self._queue.get()) is not None:
            yield record


class EventBus:
    """Fan-out of committed event records to subscribers in this process."""

    def __init__(self) -> None:
        self._subs: set[Subscription] = set()
        self._callbacks: list[Callback] = []
        #: callbacks that also get replayed records (the host's live stream: every stored
        #: event reaches its clients)
        self._all: list[Callback] = []

    def subscribe(self, session_id: str | None = None, maxsize: int = 10_000) -> Subscription:
        sub = Subscription(self, session_id, maxsize)
        self._subs.add(sub)
        return sub

    def add_listener(self, callback: Callback, *, replayed: bool = False) -> Callable[[], None]:
        """Call ``callback`` with each committed batch (with ``replayed``, the records replayed
        from an agent's transcript too); returns an unsubscribe function."""
        into = self._all if replayed else self._callbacks
        into.append(callback)
        return lambda: into.remove(callback) if callback in into else None

    def publish(self, records: Sequence[EventRecord]) -> None:
        """Deliver committed records (never replayed ones but to ``replayed`` listeners) to
        every subscriber."""
        for callback in list(self._all) if records else ():
            try:
                callback(records)
            except Exception:  # a broken stream must not stop the engine
                log.exception("event listener failed")
        live = [r for r in records if not r.event.replay]
        if not live:
            return
        for callback in list(self._callbacks):
            try:
                callback(live)
            except Exception:  # a broken view must not stop the engine
                log.exception("event listener failed")
        for sub in list(self._subs):
            for record in live:
                sub._offer(record)
