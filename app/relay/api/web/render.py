"""The board's templates: Jinja2 with autoescape on everywhere, so agent text is text.

Titles, reports, decisions and comments come from agents and are untrusted: they reach the
page only through ``{{ … }}``, which escapes them (no ``|safe``, no markdown), and the CSP
(``default-src 'self'``, no inline script or style) stops whatever might slip past.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse

#: the vendored htmx (static/htmx.min.js, from the npm package htmx.org; static/htmx.LICENSE.txt)
HTMX_VERSION = "2.0.11"
HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
#: the static files the board serves, and their types
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".txt": "text/plain; charset=utf-8", ".svg": "image/svg+xml"}


def _static_url(name: str) -> str:
    path = STATIC / name
    stamp = int(path.stat().st_mtime) if path.is_file() else 0
    return f"/board/static/{name}?v={HTMX_VERSION if name.startswith('htmx') else stamp}"


def _iso(ms: int | None) -> str:
    if not ms:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _when(ms: int | None) -> str:
    """A time as the board shows it: the host's local time, to the minute."""
    if not ms:
        return ""
    then = time.localtime(ms / 1000)
    if time.strftime("%Y-%m-%d", then) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M", then)
    return time.strftime("%Y-%m-%d %H:%M", then)


def _live_state(link: Any) -> str:
    """A linked session's state: its hooks' live state, else the Relay session's, else
    "unknown" (no hook has reported yet)."""
    if getattr(link, "live", None) is not None:
        return str(link.live.state)
    return str(getattr(link, "relay_state", None) or "unknown")


ENV = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                  undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
ENV.filters["iso"] = _iso
ENV.filters["when"] = _when
ENV.globals["static"] = _static_url
ENV.globals["live_state"] = _live_state


def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("csrf", "")
    context.setdefault("events", "")
    context.setdefault("projects", [])
    context.setdefault("project", None)
    return HTMLResponse(ENV.get_template(template).render(**context), status_code=status)
