"""What every route reaches: the host's engine, its broadcaster and its own facts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from relay.api.stream import Broadcaster

if TYPE_CHECKING:
    from relay.engine.engine import Engine


@dataclass
class HostContext:
    engine: Engine
    broadcaster: Broadcaster
    #: "window" or "serve" (host.json's kind)
    kind: str = "serve"
    url: str = ""
    #: set when the host closes: live streams end and clients resume with the next host
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    #: what the mounted apps need running while the host serves (the MCP session manager);
    #: the host enters them itself, so a failing one is an error it reports, not an exit
    lifespans: list[Callable[[], AbstractAsyncContextManager[object]]] = field(
        default_factory=list)


def host(request: Request) -> HostContext:
    """The FastAPI dependency: the host serving this request."""
    ctx: HostContext = request.app.state.host
    return ctx


def engine(request: Request) -> Engine:
    return host(request).engine


#: a route's host context and engine, as FastAPI dependencies (one spelling for every route)
HostDep = Annotated[HostContext, Depends(host)]
EngineDep = Annotated["Engine", Depends(engine)]
