"""The live event stream: Server-Sent Events from a cursor, gap-free and duplicate-free.

Why SSE and not WebSocket: the stream goes one way (commands are plain HTTP calls), SSE's
``Last-Event-ID`` is exactly the resume-from-a-cursor the sync protocol needs, a browser's
``EventSource`` reconnects with it by itself (the board, a phone), and it is plain HTTP that
passes an SSH tunnel or a proxy unchanged and that httpx reads without another protocol stack.

Every frame is ``id: <event id>`` + ``event: event`` + ``data: <record JSON>``
(:func:`relay.core.events.record_json`). A client that resumes with ``Last-Event-ID`` (or
``?after=``) first gets the stored events after it, read from the store in pages, then the
live ones; the two overlap and are merged by id, so nothing is missed or repeated — and since
ids are the store's, the same holds after the host restarts.

One :class:`Broadcaster` per host turns each committed batch into frames once and hands them
to every subscriber's bounded queue (:data:`QUEUE_FRAMES`). A subscriber that falls that far
behind is dropped: its stream ends with an ``event: resync`` frame naming the last id it was
sent, and the client reconnects from there (seed 004's rule) — a slow client never slows the
host or the others. A session's stream ends with ``event: end`` once the session is finished
and all its events were sent; the all-sessions stream never ends.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import orjson

from relay.core.bus import EventBus
from relay.core.events import EventRecord, StateChanged, record_json
from relay.core.states import FINAL_STATES

#: how many frames a subscriber may be behind before it is dropped (and resyncs)
QUEUE_FRAMES = 20_000
#: a comment frame after this long without events, so proxies and clients know it lives
PING_S = 15.0
#: how soon a session stream looks again when its end event came before its final state
END_RECHECK_S = 0.25
#: how many stored events one catch-up read takes
CATCH_UP_PAGE = 2000


def frame(record: EventRecord) -> bytes:
    data = orjson.dumps(record_json(record))
    return b"id: %d\nevent: event\ndata: %s\n\n" % (record.id, data)


def control_frame(kind: str, after: int) -> bytes:
    return b"event: %s\ndata: {\"after\": %d}\n\n" % (kind.encode(), after)


PING = b": ping\n\n"


@dataclass(eq=False)
class Subscriber:
    """One live stream's bounded queue of ``(id, frame)``."""

    session_id: str | None
    maxsize: int
    queue: deque[tuple[int, bytes]] = field(default_factory=deque)
    #: a record that may end its session arrived since the last batch
    ending: bool = False
    woken: asyncio.Event = field(default_factory=asyncio.Event)
    dropped: bool = False

    def offer(self, frames: Sequence[tuple[int, str, bool, bytes]]) -> None:
        if self.dropped:
            return
        for event_id, session_id, ends, data in frames:
            if self.session_id is not None and session_id != self.session_id:
                continue
            if len(self.queue) >= self.maxsize:
                self.dropped = True  # it resyncs from the store; its queue is let go of
                self.queue.clear()
                break
            self.queue.append((event_id, data))
            self.ending = self.ending or ends
        self.woken.set()

    async def next_batch(self, wait_s: float) -> list[tuple[int, bytes]] | None:
        """What arrived since the last call; ``None`` when ``wait_s`` passed with nothing."""
        if not self.queue and not self.dropped:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await self.woken.wait()
        self.woken.clear()
        if not self.queue:
            return None
        batch = list(self.queue)
        self.queue.clear()
        return batch


class Broadcaster:
    """Committed batches → frames, once, → every subscriber's queue."""

    def __init__(self, bus: EventBus, maxsize: int = QUEUE_FRAMES) -> None:
        self.maxsize = maxsize
        self._subs: set[Subscriber] = set()
        self._remove = bus.add_listener(self._on_records, replayed=True)

    def close(self) -> None:
        self._remove()
        for sub in self._subs:
            sub.dropped = True
            sub.woken.set()

    def subscribe(self, session_id: str | None) -> Subscriber:
        sub = Subscriber(session_id, self.maxsize)
        self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subs.discard(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def _on_records(self, records: Sequence[EventRecord]) -> None:
        if not self._subs:
            return
        frames = [(r.id, r.session_id, _ends(r), frame(r)) for r in records]
        for sub in list(self._subs):
            sub.offer(frames)
            if sub.dropped:
                self._subs.discard(sub)


#: reads the store: ``(after, session_id, limit)`` → the events after ``after``
Reader = Callable[[int, str | None, int], Awaitable[list[EventRecord]]]
#: whether a session is over (no process runs it and its state is final)
Finished = Callable[[str], Awaitable[bool]]


def _ends(record: EventRecord) -> bool:
    """Whether a record may be a session's last word (then its stream checks the store)."""
    event = record.event
    return event.kind == "session_ended" or (isinstance(event, StateChanged)
                                              and event.state in FINAL_STATES)


async def event_frames(broadcaster: Broadcaster, after: int, session_id: str | None,
                       read: Reader, finished: Finished | None,
                       stopping: asyncio.Event) -> AsyncIterator[bytes]:
    """The frames of one stream: stored events after ``after``, then live ones.

    ``read(after, session_id, limit)`` reads the store; ``finished(session_id)`` says whether
    a session is over (its stream then ends); ``stopping`` ends every stream when the host
    closes (the client reconnects to the next host from its last id)."""
    sub = broadcaster.subscribe(session_id)  # before the catch-up: the two overlap, never gap
    last = after
    try:
        while True:  # catch up from the store
            batch = await read(last, session_id, CATCH_UP_PAGE)
            for record in batch:
                last = record.id
                yield frame(record)
            if len(batch) < CATCH_UP_PAGE:
                break
        if session_id is not None and finished is not None and await finished(session_id):
            async for data in _drain(read, last, session_id):
                yield data
            yield control_frame("end", last)
            return
        #: a record that may end the session came before its row said so: look again soon
        unsure = False
        while not stopping.is_set():
            frames = await sub.next_batch(END_RECHECK_S if unsure else PING_S)
            if sub.dropped:
                yield control_frame("resync", last)
                return
            if frames is None:
                if (session_id is not None and finished is not None
                        and (unsure or not stopping.is_set()) and await finished(session_id)):
                    yield control_frame("end", last)
                    return
                yield PING
                continue
            for event_id, data in frames:
                if event_id > last:
                    last = event_id
                    yield data
            ending, sub.ending = sub.ending or unsure, False
            if ending and session_id is not None and finished is not None:
                if await finished(session_id):
                    async for data in _drain(read, last, session_id):
                        yield data
                    yield control_frame("end", last)
                    return
                unsure = True
        yield control_frame("resync", last)  # the host is closing: resume with the next one
    finally:
        broadcaster.unsubscribe(sub)


async def _drain(read: Reader, last: int, session_id: str) -> AsyncIterator[bytes]:
    """The session's last stored events after ``last`` (committed with its end)."""
    while batch := await read(last, session_id, CATCH_UP_PAGE):
        for record in batch:
            last = record.id
            yield frame(record)
