"""The board's templates: Jinja2 with autoescape on everywhere, so agent text is text.

Titles, reports, decisions and comments come from agents and are untrusted: they reach the
page only through ``{{ … }}``, which escapes them (no ``|safe``, no markdown), and the CSP
(``default-src 'self'``, no inline script or style) stops whatever might slip past. Every
string a template prints passes the secret scrubber first (the environment's ``finalize``;
``clip`` scrubs before it shortens) — the pages are a boundary like the API's JSON
(relay.api.responses) — except :class:`Trusted` values the board made itself (the CSRF token).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from jinja2.filters import do_truncate
from starlette.responses import HTMLResponse

from relay.core.redact import scrub

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


def _folder(path: str) -> str:
    """A path's last folder (either slash: a Windows path too)."""
    return re.split(r"[\\/]", path.rstrip("\\/"))[-1] or path


class Trusted(str):
    """A value the board made itself (the CSRF token): printed as it is, not scrubbed."""

    __slots__ = ()


def _finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Trusted):
        return scrub(value)
    return value


def _clip(value: Any, length: int) -> str:
    """Scrubbed, then shortened (a secret cut in half would no longer be recognised)."""
    return do_truncate(ENV, scrub(str(value)), length)


ENV = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                  undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                  finalize=_finalize)
ENV.filters["clip"] = _clip
ENV.filters["iso"] = _iso
ENV.filters["when"] = _when
ENV.filters["folder"] = _folder
ENV.globals["static"] = _static_url
ENV.globals["live_state"] = _live_state


def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("csrf", "")
    context.setdefault("events", "")
    context.setdefault("projects", [])
    context.setdefault("project", None)
    return HTMLResponse(ENV.get_template(template).render(**context), status_code=status)
