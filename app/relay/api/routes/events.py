"""Events, the sync protocol: pages after a cursor (``GET /api/v1/events``) and the live
stream (``GET /api/v1/stream``, ``GET /api/v1/sessions/{id}/stream``; :mod:`relay.api.stream`)."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Header, Query
from starlette.responses import Response, StreamingResponse

from relay.api.context import HostContext, HostDep
from relay.api.schemas import ERRORS, EventsPage
from relay.api.stream import event_frames
from relay.core.events import BOARD_SESSION, EventRecord, record_json

router = APIRouter(prefix="/api/v1", tags=["events"], responses=ERRORS)
#: the most events one page holds
MAX_PAGE = 5000


@router.get("/events", response_model=EventsPage)
async def events(ctx: HostDep, after: Annotated[int, Query(ge=0)] = 0,
                 session: str | None = None,
                 limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1000) -> Response:
    """The stored events after ``after`` (every session's, or ``session``'s — ``board`` for
    the board's stream of board, live-state and hook-guard events), oldest first."""
    if session == BOARD_SESSION:
        session_id: str | None = BOARD_SESSION
    else:
        session_id = (await ctx.engine.get_session(session)).id if session else None
    batch = await ctx.engine.events_after(after, session_id, limit + 1)
    page = batch[:limit]
    body = {"events": [record_json(r) for r in page], "next": page[-1].id if page else after,
            "more": len(batch) > limit}
    return Response(orjson.dumps(body), media_type="application/json")


def _cursor(after: int, last_event_id: str | None) -> int:
    if last_event_id is not None and last_event_id.strip().isdigit():
        return int(last_event_id.strip())  # an EventSource's reconnect says where it was
    return after


SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@router.get("/stream", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def stream(ctx: HostDep, after: Annotated[int, Query(ge=0)] = 0,
                 last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """Every session's events after the cursor, then live, as Server-Sent Events."""
    frames = event_frames(ctx.broadcaster, _cursor(after, last_event_id), None, _reader(ctx),
                          None, ctx.stopping)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


@router.get("/sessions/{session_id}/stream", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}}})
async def session_stream(session_id: str, ctx: HostDep, after: Annotated[int, Query(ge=0)] = 0,
                         last_event_id: Annotated[str | None, Header()] = None
                         ) -> StreamingResponse:
    """One session's events after the cursor, then live; ends (``event: end``) once the
    session is finished and every event was sent."""
    row = await ctx.engine.get_session(session_id)

    async def finished(sid: str) -> bool:
        return not ctx.engine.is_running_here(sid) and (await ctx.engine.get_session(sid)).finished

    frames = event_frames(ctx.broadcaster, _cursor(after, last_event_id), row.id, _reader(ctx),
                          finished, ctx.stopping)
    return StreamingResponse(frames, media_type="text/event-stream", headers=SSE_HEADERS)


def _reader(ctx: HostContext):  # type: ignore[no-untyped-def]
    async def read(after: int, session_id: str | None, limit: int) -> list[EventRecord]:
        return await ctx.engine.events_after(after, session_id, limit)
    return read
