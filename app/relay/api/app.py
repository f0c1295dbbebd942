"""The host's ASGI application: FastAPI routes under ``/api/v1`` behind :class:`~relay.api.
security.Gate`, with the engine's pydantic models as the wire format and an OpenAPI document
at ``/api/v1/openapi.json`` (docs/api.md).

Why FastAPI: it serves the same pydantic models the engine already uses (no second schema),
writes the OpenAPI document from them, and sits on Starlette, the ASGI stack the official MCP
SDK's Streamable HTTP app is built on — so ``/mcp`` mounts in the same app on the same loop.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from relay import __version__
from relay.api.context import HostContext, HostDep, host
from relay.api.errors import error_response, relay_error_response, unexpected_response
from relay.api.responses import ScrubbedJSONResponse
from relay.api.routes import (
    accounts,
    audit,
    board,
    detect,
    events,
    history,
    hooks,
    integrations,
    knowledge,
    pipelines,
    sessions,
    talk,
    vault,
    wallet,
)
from relay.api.schemas import ERRORS, Health, HostStatus
from relay.api.security import MAX_BODY_BYTES, BodyTooLargeError, Gate
from relay.api.stream import Broadcaster
from relay.api.web import install as install_web_board
from relay.core.errors import RelayError

if TYPE_CHECKING:
    from relay.engine.engine import Engine

#: an ASGI app served at exactly a path beside the API (``/mcp``: relay.api.mcp_mount) and
#: the context its lifespan needs
Mount = tuple[str, ASGIApp, Callable[[], AbstractAsyncContextManager[object]] | None]


def build_app(engine: Engine, token: str, *, kind: str = "serve",
              allowed_hosts: Sequence[str] = (), mounts: Sequence[Mount] = (),
              started_at: float = 0.0) -> tuple[ASGIApp, HostContext]:
    """The API over ``engine``, gated by ``token``; returns the ASGI app and its context."""
    ctx = HostContext(engine=engine, broadcaster=Broadcaster(engine.bus), kind=kind,
                      lifespans=[context for _path, _app, context in mounts if context])
    api = FastAPI(title="Relay", version=__version__,
                  openapi_url="/api/v1/openapi.json", docs_url=None, redoc_url=None,
                  default_response_class=ScrubbedJSONResponse,
                  summary="The local API of a Relay host: sessions, events and what the "
                          "window and relay-cli do.")
    api.state.host = ctx
    for routes in (sessions, events, wallet, accounts, detect, pipelines, history, knowledge,
                   audit, vault, board, hooks, integrations, talk):
        api.include_router(routes.router)
    install_web_board(api, token)

    @api.get("/api/v1/health", response_model=Health, tags=["host"])
    async def health() -> Health:
        """Whether a Relay host answers here (the one route without a token)."""
        return Health(ok=True, version=__version__)

    @api.get("/api/v1/status", response_model=HostStatus, tags=["host"], responses=ERRORS)
    async def status(ctx: HostDep) -> HostStatus:
        """The host: which process, where, and what it runs."""
        return HostStatus(version=__version__, pid=os.getpid(), kind=ctx.kind, url=ctx.url,
                          home=str(ctx.engine.config.home), started_at=started_at,
                          running=ctx.engine.running_sessions(),
                          subscribers=ctx.broadcaster.subscribers)

    for path, mounted, _context in mounts:  # at the path itself: no redirect to ``path/``
        api.router.routes.append(Route(path, mounted))
    _handle_errors(api)
    return Gate(api, token, allowed_hosts), ctx


def _handle_errors(api: FastAPI) -> None:
    @api.exception_handler(RelayError)
    async def relay_error(_request: Request, exc: RelayError) -> JSONResponse:
        return relay_error_response(exc)

    @api.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"msg": "invalid request", "loc": ()}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body") or "request"
        return error_response(422, "invalid_request", f"Invalid {where}: {first['msg']}.",
                              "docs/api.md and /api/v1/openapi.json describe each route.")

    @api.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail),
                              "docs/api.md lists the routes." if exc.status_code in (404, 405)
                              else None)

    @api.exception_handler(BodyTooLargeError)
    async def too_big(_request: Request, _exc: BodyTooLargeError) -> JSONResponse:
        return error_response(413, "body_too_large",
                              f"The request body is larger than {MAX_BODY_BYTES // 2**20} MiB.",
                              "Send less: a session's task is at most 1 MB.")

    @api.exception_handler(sqlite3.DatabaseError)
    async def store_damage(request: Request, exc: sqlite3.DatabaseError) -> JSONResponse:
        from relay.core.store.faults import is_store_damage, read_error

        if is_store_damage(exc):  # relay.db's bytes, not Relay: which file, what to do
            return relay_error_response(read_error(host(request).engine.config.db_path, exc))
        return unexpected_response(exc)

    @api.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        return unexpected_response(exc)
