"""The local API's one scrubbing point (``api/responses.py``): every route answers with it.

Structural: every route of the app — enumerated as tests/api/test_routes_leak.py does, so
a route added later is held to it — renders with :class:`ScrubbedJSONResponse` (its own
class, its router's or the app's default), but the SSE streams, whose frames are stored
events (scrubbed by the writer). Behavioural: a secret in what a route returns, here the
data folder's own path in ``/api/v1/status``, reaches the client as a marker.
"""

from __future__ import annotations

import secrets

import httpx
from fastapi.datastructures import DefaultPlaceholder
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from relay.api.app import build_app
from relay.api.responses import ScrubbedJSONResponse
from tests.api.conftest import Served

#: routes that stream (text/event-stream): their frames are stored, scrubbed events
STREAMS = {"/api/v1/stream", "/api/v1/sessions/{session_id}/stream"}


def _value(cls: object) -> object:
    return cls.value if isinstance(cls, DefaultPlaceholder) else cls


def test_every_route_renders_with_the_scrubbing_response(served: Served) -> None:
    gate, _ctx = build_app(served.engine, "unused")
    app = gate.app  # type: ignore[attr-defined]
    assert _value(app.router.default_response_class) is ScrubbedJSONResponse
    seen: list[str] = []
    wrong: list[str] = []

    def walk(routes: list[BaseRoute], include_default: object) -> None:
        for route in routes:
            if isinstance(route, APIRoute):
                seen.append(route.path)
                own = route.response_class
                effective = own if not isinstance(own, DefaultPlaceholder) else include_default
                if route.path not in STREAMS and _value(effective) is not ScrubbedJSONResponse:
                    wrong.append(f"{route.path}: {effective!r}")
            elif (inner := getattr(route, "original_router", None)) is not None:
                context = route.include_context  # type: ignore[attr-defined]
                given = context.default_response_class
                walk(inner.routes, given if not isinstance(given, DefaultPlaceholder)
                     else app.router.default_response_class)

    walk(app.router.routes, app.router.default_response_class)
    assert len(seen) > 50
    assert wrong == []


async def test_a_secret_in_an_answer_reaches_the_client_as_a_marker(served: Served) -> None:
    token = "ghp_" + "".join(secrets.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkm23456789")
                             for _ in range(36))
    async with httpx.AsyncClient(base_url=served.host.url,
                                 headers={"Authorization": f"Bearer {served.token}"}) as http:
        # the route answers the data folder's path as it is: make it carry the token
        served.engine.config.__dict__["home"] = served.engine.config.home / token
        answer = await http.get("/api/v1/status")
    assert answer.status_code == 200
    assert token not in answer.text
    assert "[REDACTED:github_token]" in answer.json()["home"]
