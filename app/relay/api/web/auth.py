"""The web board's sign-in and CSRF: one-time links, a cookie derived from the API token.

* ``POST /api/v1/board/login-link`` (bearer token, like every ``/api`` route) mints a
  one-time code — random, single use, valid :data:`CODE_TTL_S`, kept in the host's memory
  only — and answers the link ``<host url>/board/login?code=<code>``.
* ``GET /board/login?code=`` spends the code and sets the board cookie: HttpOnly,
  SameSite=Strict, Path=/. Its value is ``HMAC(token, COOKIE_PURPOSE)``, so a host restarted
  with the same token keeps everyone signed in and a rotated token signs everyone out — the
  host keeps no session table.
* Every cookie-authenticated write carries ``HMAC(cookie, "csrf")`` — a hidden form field
  (:data:`CSRF_FIELD`) or, from htmx, the ``X-CSRF-Token`` header — and comes from the board's
  own origin (``Origin`` equal to the host, or ``Sec-Fetch-Site: same-origin``).

The token itself never reaches a page: the cookie and the CSRF value are one-way from it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

from relay.api.web.render import Trusted

#: the board cookie's name
COOKIE = "relay_board"
#: what the cookie's HMAC of the token is for (another purpose gives another value)
COOKIE_PURPOSE = b"relay web board session v1"
#: the hidden form field that carries the CSRF token
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
#: how long a sign-in code is good for
CODE_TTL_S = 600.0
#: at most this many unspent codes are kept (the oldest go first)
MAX_CODES = 64


def _mac(key: bytes, message: bytes) -> str:
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class BoardAuth:
    """The host's one-time codes and the cookie and CSRF values of its token."""

    def __init__(self, token: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.cookie_value = _mac(token.encode(), COOKIE_PURPOSE)
        self._clock = clock
        self._codes: dict[str, float] = {}

    # -- one-time codes ------------------------------------------------------------

    def new_code(self) -> str:
        now = self._clock()
        self._codes = {c: t for c, t in self._codes.items() if t > now}
        while len(self._codes) >= MAX_CODES:
            self._codes.pop(next(iter(self._codes)))
        code = secrets.token_urlsafe(32)
        self._codes[code] = now + CODE_TTL_S
        return code

    def spend(self, code: str) -> bool:
        """Whether ``code`` is a live code; it is gone either way."""
        expires = self._codes.pop(code, None) if code else None
        return expires is not None and expires > self._clock()

    # -- the cookie and CSRF -------------------------------------------------------

    def signed_in(self, cookie_header: str | None) -> bool:
        presented = read_cookie(cookie_header)
        return hmac.compare_digest(presented.encode(), self.cookie_value.encode())

    def csrf_token(self) -> str:
        return Trusted(_mac(self.cookie_value.encode(), b"csrf"))

    def csrf_ok(self, presented: str | None) -> bool:
        return bool(presented) and hmac.compare_digest(str(presented).encode(),
                                                       self.csrf_token().encode())

    def set_cookie_header(self, secure: bool) -> str:
        attrs = f"{COOKIE}={self.cookie_value}; Path=/; HttpOnly; SameSite=Strict"
        return attrs + ("; Secure" if secure else "")


def read_cookie(header: str | None) -> str:
    """The board cookie's value in a ``Cookie`` header ("" when absent). Read by hand: the
    standard library's parser gives up on the whole header at one cookie it dislikes, and
    other local apps set cookies on ``localhost`` too."""
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value.strip()
    return ""


def same_origin(headers: Mapping[str, str]) -> bool:
    """Whether a write comes from the board's own origin: ``Origin`` names the host (scheme
    aside: a tunnel or TLS proxy may change it), or, without ``Origin``, the browser says
    ``Sec-Fetch-Site: same-origin``. A request with neither is refused: every browser that
    runs the board sends at least one of them on a POST."""
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        return urlsplit(origin).netloc.lower() == headers.get("host", "").lower()
    return headers.get("sec-fetch-site") == "same-origin"
