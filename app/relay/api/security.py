"""The gate every request to the host passes (seed 004's security layers), as ASGI middleware.

In order, before any route runs:

1. **Host allow-list** (DNS rebinding): the ``Host`` header must name the host itself —
   ``127.0.0.1``, ``localhost``, ``::1`` or an address the user listens on — whatever the
   port (an SSH tunnel maps the port). ``Host: evil.example`` is refused.
2. **Origin**: a browser page on another origin cannot call the API. A request that carries
   ``Origin`` (browsers do on every cross-origin call) must come from the host's own origin;
   ``Sec-Fetch-Site: cross-site`` is refused too. There is no CORS: no preflight is ever
   answered with permission.
3. **Token**: every route but ``GET /api/v1/health`` needs ``Authorization: Bearer <token>``
   (``<data>/api-token``), compared in constant time. ``?token=`` is accepted on the live
   stream only, for a browser's EventSource, which cannot set headers.
4. **A bounded body**: a ``Content-Length`` over :data:`MAX_BODY_BYTES` is refused before a
   byte is read; a chunked body is counted as it arrives and cut off at the limit.

The web board (``/board`` and below, :mod:`relay.api.web`) passes the same Host, Origin and
body checks but not the token: a browser signs in with a cookie, which the board checks
itself, with a CSRF token on every write. ``Sec-Fetch-Site: cross-site`` is let through to it
for a top-level GET navigation only (a link to the board in a mail; SameSite=Strict keeps the
cookie out of it), and every board answer gets :data:`BOARD_HEADERS` (CSP ``default-src
'self'``, no sniffing, no referrer; no caching unless the answer says otherwise).

Each refusal is the API's JSON error (:mod:`relay.api.errors`).
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from relay.api.errors import error_response

#: the largest request body the API reads (a session's task is at most 1 MB)
MAX_BODY_BYTES = 2 * 1024 * 1024
#: the routes anyone who can reach the socket may call
OPEN_PATHS = frozenset({"/api/v1/health"})
#: the routes that also take the token as ``?token=`` (a browser's EventSource)
QUERY_TOKEN_PATHS = ("/api/v1/stream", "/api/v1/sessions/")
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: where the web board lives (cookie sign-in instead of the token)
BOARD_PATH = "/board"
#: what every board answer carries
BOARD_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; "
                                 b"form-action 'self'; base-uri 'none'; object-src 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


def is_board_path(path: str) -> bool:
    return path == BOARD_PATH or path.startswith(BOARD_PATH + "/")


def host_name(value: str) -> str:
    """``Host`` without its port, lower case (``[::1]:4748`` → ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Gate:
    """ASGI middleware: Host, Origin, token and body size, in that order."""

    def __init__(self, app: ASGIApp, token: str, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.allowed = LOOPBACK_NAMES | {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if scope["type"] == "http" and is_board_path(scope.get("path", "")):
            send = _board_headers(send)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, code, message, hint = refusal
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await error_response(status, code, message, hint,
                                 {"WWW-Authenticate": "Bearer"} if status == 401 else None,
                                 )(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = _BoundedBody(receive, send)
        await self.app(scope, body.receive, body.send)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str, str, str] | None:
        host = host_name(headers.get("host", ""))
        if host not in self.allowed:
            return (421, "bad_host", f"Relay does not answer for the host name {host!r}.",
                    "Call it as 127.0.0.1 or localhost (or an address it was told to listen on "
                    "with --listen).")
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != headers.get("host", "").lower():
            # an origin is scheme, name *and port*: a page another local server serves on
            # 127.0.0.1:3000 is not the host's own
            return (403, "bad_origin", "Relay refuses calls from a web page on another origin.",
                    "Call the API from a program, not from a browser page.")
        board = scope["type"] == "http" and is_board_path(scope.get("path", ""))
        if headers.get("sec-fetch-site") == "cross-site" and not (
                board and scope.get("method") in ("GET", "HEAD")
                and headers.get("sec-fetch-mode") == "navigate"):
            return (403, "bad_origin", "Relay refuses calls from a web page on another site.",
                    "Call the API from a program, not from a browser page.")
        if scope["type"] == "http" and _too_big(headers):
            return (413, "body_too_large",
                    f"The request body is larger than {MAX_BODY_BYTES // 1024 // 1024} MiB.",
                    "Send less: a session's task is at most 1 MB.")
        if scope.get("path", "") in OPEN_PATHS or board:
            return None  # the board checks its cookie and CSRF itself (relay.api.web)
        presented = self._presented(scope, headers)
        if not hmac.compare_digest(presented.encode(), self.token.encode()):
            if presented:  # a token, but not this host's (rotated, or another data folder's)
                return (401, "unauthorized", "This Relay host refused the token: it is not "
                        "the host's (rotated, or another data folder's).",
                        "Use the host's current token: `relay-cli token` on the host prints "
                        "it (--token, RELAY_TOKEN).")
            return (401, "unauthorized", "Relay's API needs its token.",
                    "Send `Authorization: Bearer <token>`; the token is in the data folder's "
                    "api-token file (`relay-cli token` prints it).")
        return None

    @staticmethod
    def _presented(scope: Scope, headers: dict[str, str]) -> str:
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
        path = scope.get("path", "")
        if path.startswith(QUERY_TOKEN_PATHS) and path.endswith("stream"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            return str((query.get("token") or [""])[0])
        return ""


def _board_headers(send: Send) -> Send:
    """``send`` adding :data:`BOARD_HEADERS` (and ``Cache-Control: no-store`` unless the
    answer set its own) to the start of a board answer."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {k.lower() for k, _v in headers}
            headers += [h for h in BOARD_HEADERS if h[0] not in names]
            if b"cache-control" not in names:
                headers.append((b"cache-control", b"no-store"))
            message = {**message, "headers": headers}
        await send(message)
    return sending


def _too_big(headers: dict[str, str]) -> bool:
    length = headers.get("content-length")
    if length is None:
        return False
    try:
        return int(length) > MAX_BODY_BYTES
    except ValueError:
        return True


class _BoundedBody:
    """``receive`` that stops a body (chunked, or lying about its length) at the limit, and a
    ``send`` that answers 413 in place of whatever the app made of the cut-off body (FastAPI
    turns a failed body read into its own 400)."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send
        self.seen = 0
        self.over = False
        self._answered = False

    async def receive(self) -> Message:
        message: dict[str, Any] = dict(await self._receive())
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > MAX_BODY_BYTES:
                self.over = True
                raise BodyTooLargeError
        return message

    async def send(self, message: Message) -> None:
        if not self.over:
            await self._send(message)
            return
        if self._answered:
            return
        self._answered = True
        response = error_response(413, "body_too_large",
                                  f"The request body is larger than "
                                  f"{MAX_BODY_BYTES // 1024 // 1024} MiB.",
                                  "Send less: a session's task is at most 1 MB.")
        await self._send({"type": "http.response.start", "status": 413,
                          "headers": response.raw_headers})
        await self._send({"type": "http.response.body", "body": response.body})


class BodyTooLargeError(Exception):
    """A body grew past the limit while it was read (answered 413 by the app)."""
