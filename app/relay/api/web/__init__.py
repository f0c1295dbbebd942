"""The web board: the same board as the window's dock, served by the host as web pages.

Server-rendered (Jinja2, autoescaped) with progressive enhancement: every page and form
works without JavaScript; with it, the vendored htmx (``static/htmx.min.js``, htmx.org
2.0.11 from npm, 0BSD: ``static/htmx.LICENSE.txt``) posts the forms and swaps fragments,
and ``static/app.js`` follows ``/board/events`` (the host's event stream filtered to board
events) to refetch the fragments an event touches. No Node build step; no inline script or
style (CSP ``default-src 'self'``). Sign-in and CSRF: :mod:`relay.api.web.auth`; the gate
in :mod:`relay.api.security` lets ``/board`` through on the cookie instead of the token.
"""

from __future__ import annotations

from fastapi import FastAPI

from relay.api.web.auth import BoardAuth


def install(api: FastAPI, token: str) -> None:
    """Serve the board from ``api``, signing browsers in against ``token``."""
    from relay.api.web.pages import api_router, open_router, router

    api.state.board_auth = BoardAuth(token)
    for routes in (api_router, open_router, router):
        api.include_router(routes)
