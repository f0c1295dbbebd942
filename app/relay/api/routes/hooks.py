"""``POST /api/v1/hooks/claude``: Claude Code's hook events, forwarded by the hook client
(relay.cli.hook_client) behind the same token as every route.

The body is read up to :data:`MAX_HOOK_BYTES` (more is refused with 413 before it is parsed),
parsed leniently (anything but a JSON object is a 400: the hook client then stays silent and
Claude Code goes on), and handed to ``engine.board.hook``, which keeps only what it needs
and answers at once with the JSON Claude Code gets back (``{}`` when it has nothing to say).
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import JSONResponse

from relay.api.context import EngineDep
from relay.api.errors import error_response
from relay.api.schemas import ERRORS

router = APIRouter(prefix="/api/v1/hooks", tags=["hooks"], responses=ERRORS)

#: the most of a hook event's body the host reads (a tool input beyond it is not needed)
MAX_HOOK_BYTES = 256 * 1024


class _TooBig(Exception):
    pass


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_HOOK_BYTES:
        raise _TooBig
    chunks, seen = [], 0
    async for chunk in request.stream():
        seen += len(chunk)
        if seen > MAX_HOOK_BYTES:
            raise _TooBig
        chunks.append(chunk)
    return b"".join(chunks)


@router.post("/claude", response_model=dict[str, Any])
async def claude(request: Request, eng: EngineDep) -> Any:
    """One Claude Code hook event (its JSON as Claude Code hands it to the hook command);
    the answer is what the hook prints back to Claude Code."""
    try:
        raw = await _body(request)
    except _TooBig:
        return error_response(413, "body_too_large",
                              f"A hook event is at most {MAX_HOOK_BYTES // 1024} KiB.",
                              "The hook client sends Claude Code's event as it is; a larger "
                              "one is ignored.")
    try:
        event = orjson.loads(raw.decode("utf-8", errors="replace"))
    except orjson.JSONDecodeError as exc:
        return _bad(f"The hook event is not JSON ({exc.msg} at {exc.pos}).")
    if not isinstance(event, dict):
        return _bad(f"A hook event is a JSON object, not {type(event).__name__}.")
    return await eng.board.hook(event)


def _bad(message: str) -> JSONResponse:
    return error_response(400, "bad_hook_event", message,
                          "Claude Code sends each hook event's JSON on the hook's stdin; the "
                          "hook client forwards it unchanged.")
