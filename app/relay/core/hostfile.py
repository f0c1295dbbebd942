"""Where a data folder's host is: its lock, ``host.json`` and the API token.

One process at a time *hosts* a data folder: it runs the engine and serves the local API
(:mod:`relay.api`); every other front end is a client of it. The host holds
``<data>/host.lock`` (an OS lock, let go of when the process dies, however it dies) and
writes ``<data>/host.json`` (its URL and pid); ``<data>/api-token`` (0600) is the secret a
client sends. A ``host.json`` whose lock nobody holds is stale (its host was killed) and is
ignored.

Standard library only: relay-cli's quick commands read this before deciding whether to
import anything else.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from relay.core.errors import HostError
from relay.core.fsutil import PRIVATE_FILE, ProcessLock, private_file, write_atomic

HOST_JSON = "host.json"
HOST_LOCK = "host.lock"
TOKEN_FILE = "api-token"
#: seed 000's port; the next free one is taken when it is in use
DEFAULT_PORT = 4748
#: the environment variable that names the port ``relay-cli serve`` and the window listen on
PORT_ENV = "RELAY_PORT"
#: the environment variables that point a front end at a host elsewhere (``--connect``)
CONNECT_ENV = "RELAY_CONNECT"
TOKEN_ENV = "RELAY_TOKEN"
#: what an API token looks like: 32 random bytes, URL-safe
TOKEN_BYTES = 32


@dataclass(frozen=True)
class HostInfo:
    """What ``host.json`` says: where the host listens and which process it is."""

    url: str
    pid: int
    started_at: float
    version: str
    #: "window" (the desktop app hosts) or "serve" (relay-cli serve / a CLI for its lifetime)
    kind: str = "serve"
    home: str = ""

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=2).encode() + b"\n"


def host_lock(home: Path) -> ProcessLock:
    return ProcessLock(home / HOST_LOCK)


def read_host(home: Path) -> HostInfo | None:
    """The live host of ``home``: ``None`` when no process holds its lock (there is no host,
    or its ``host.json`` is stale) or ``host.json`` cannot be read yet."""
    if not host_lock(home).held_elsewhere():
        return None
    try:
        raw = json.loads((home / HOST_JSON).read_bytes())
        return HostInfo(url=str(raw["url"]), pid=int(raw["pid"]),
                        started_at=float(raw["started_at"]), version=str(raw["version"]),
                        kind=str(raw.get("kind", "serve")), home=str(raw.get("home", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # the host is between taking its lock and writing the file


def write_host(home: Path, url: str, version: str, kind: str) -> HostInfo:
    info = HostInfo(url=url, pid=os.getpid(), started_at=time.time(), version=version,
                    kind=kind, home=str(home))
    write_atomic(home / HOST_JSON, info.to_json(), PRIVATE_FILE)
    return info


def remove_host(home: Path) -> None:
    """Remove ``host.json`` if it is this process's (a new host may have written its own)."""
    path = home / HOST_JSON
    try:
        if int(json.loads(path.read_bytes()).get("pid", -1)) == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def new_token() -> str:
    """A random API token that reads as a value on any command line: URL-safe base64 can
    start with ``-``, which ``--token -Xy…`` would take for an option (1 time in 64)."""
    while (token := secrets.token_urlsafe(TOKEN_BYTES)).startswith("-"):
        pass
    return token


def api_token(home: Path, *, rotate: bool = False) -> str:
    """The data folder's API token, made (random, mode 0600) on first use or by ``rotate``.

    Raises :class:`HostError` when the file cannot be read or written."""
    path = home / TOKEN_FILE
    try:
        token = "" if rotate else _existing_token(path)
        if not token:
            token = new_token()
            write_atomic(path, token.encode("ascii") + b"\n", PRIVATE_FILE)
    except (OSError, UnicodeDecodeError) as exc:
        raise HostError(f"Could not read or write the API token {path}: {exc}.",
                        "Check the data folder's permissions, or rotate the token with "
                        "`relay-cli token --rotate`.") from exc
    return token


def _existing_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return ""
    if token:
        private_file(path)  # a copy restored from a backup may have lost its mode
    return token


def read_token(home: Path) -> str | None:
    """The API token if the file exists (a client never makes one)."""
    try:
        return (home / TOKEN_FILE).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def quick_get(home: Path, path: str, query: dict[str, str], *,
              timeout: float = 30.0) -> object | None:
    """``GET /api/v1<path>?<query>`` of ``home``'s own live host over loopback, with the
    standard library (no API client loaded): the decoded JSON of a 200 answer, else None —
    no host, no token, an error answer or a broken connection; the caller then takes the
    API client's way, which explains what went wrong. For relay-cli's quick answers."""
    from urllib.parse import urlencode, urlsplit

    host, token = read_host(home), read_token(home)
    if host is None or token is None:
        return None
    url = urlsplit(host.url)
    if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost", "::1") \
            or url.port is None:
        return None
    import http.client

    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        target = f"/api/v1{path}" + (f"?{urlencode(query)}" if query else "")
        conn.request("GET", target, headers={"Authorization": f"Bearer {token}",
                                             "Accept": "application/json"})
        answer = conn.getresponse()
        body = answer.read()
        value: object = json.loads(body)
    except (OSError, http.client.HTTPException, ValueError):
        return None
    finally:
        conn.close()
    if answer.status != 200 or "json" not in (answer.getheader("Content-Type") or ""):
        return None
    return value
