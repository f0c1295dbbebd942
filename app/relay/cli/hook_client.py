"""The Claude Code hook client: stdin → the host's ``POST /api/v1/hooks/claude`` → stdout.

Claude Code starts it once per hook event (``relay.board.claude_setup`` writes the entries):
``<python> -I -m relay.cli.hook_client --data-dir DIR`` (or, in the frozen build,
``relay-cli hook claude --data-dir DIR``, which runs :func:`main` before anything else is
imported). It reads ``DIR/host.json`` (the host's URL) and ``DIR/api-token`` itself, so no
token is in Claude's settings, posts the event with a 0.3 s connect timeout and a 0.8 s
deadline for the whole exchange, and prints the answer only when it is a 200 with a JSON
body. Anything else — no host, a stale ``host.json``, a refused or slow connection, a bad
token, a body too large — ends it silently with exit 0: Claude Code must never be slowed or
broken by Relay being down.

``--headers`` prints ``{"Authorization": "Bearer <token>"}`` (``{}`` without a token): the
``headersHelper`` Claude Code runs to connect to Relay's MCP server at ``<host>/mcp``.

Standard library only, and nothing of Relay: ``python -I -X importtime -m
relay.cli.hook_client`` must show no module of ``relay`` but ``relay``, ``relay.cli`` and
this one (tests/cli/test_hook_client.py). No argparse, no http.client: a plain socket.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

#: where the host takes hook events
ENDPOINT = "/api/v1/hooks/claude"
HOST_JSON = "host.json"
TOKEN_FILE = "api-token"
#: what the host accepts; a larger event is shrunk (long strings cut) before it is sent
MAX_BODY = 256 * 1024
#: what is read from stdin at most (a larger event is not sent at all)
MAX_INPUT = 8 * 1024 * 1024
#: a string longer than this in a shrunk event is cut (the host keeps ≤ 2 KiB summaries)
KEEP_CHARS = 4096
CONNECT_TIMEOUT = 0.3
TOTAL_TIMEOUT = 0.8
#: the most of an answer that is read
MAX_ANSWER = 1024 * 1024


def _arguments(argv: list[str]) -> tuple[str | None, bool]:
    """``--data-dir DIR`` (or ``--data-dir=DIR``) and ``--headers``; anything else is ignored
    (a newer Relay's setup must not make an older client fail)."""
    data_dir, headers = None, False
    items = iter(argv)
    for arg in items:
        if arg == "--headers":
            headers = True
        elif arg == "--data-dir":
            data_dir = next(items, None)
        elif arg.startswith("--data-dir="):
            data_dir = arg.partition("=")[2]
    return data_dir or os.environ.get("RELAY_HOME") or None, headers


def _read_token(data_dir: str) -> str | None:
    try:
        with open(os.path.join(data_dir, TOKEN_FILE), encoding="ascii") as file:
            return file.read(4096).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _pid_gone(pid: object) -> bool:
    """Whether ``host.json``'s process is certainly not running (POSIX; elsewhere the
    connection attempt decides)."""
    if os.name != "posix" or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it runs as someone else, or we may not ask: try the connection
    return False


def _host_url(data_dir: str) -> str | None:
    """The URL in ``host.json``; None when there is none, or its process is gone."""
    try:
        with open(os.path.join(data_dir, HOST_JSON), "rb") as file:
            info = json.loads(file.read(65536))
        url = info["url"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(url, str) or _pid_gone(info.get("pid")):
        return None
    return url


def _split_url(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of ``http[s]://host:port`` (IPv6 in brackets)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        return None
    netloc = rest.split("/", 1)[0]
    if netloc.startswith("["):
        host, _, after = netloc[1:].partition("]")
        port_text = after[1:] if after.startswith(":") else ""
    else:
        host, _, port_text = netloc.partition(":")
    try:
        port = int(port_text) if port_text else (443 if scheme == "https" else 80)
    except ValueError:
        return None
    return (scheme, host, port) if host else None


def _shrunk(body: bytes) -> bytes | None:
    """An event over :data:`MAX_BODY` with its long strings cut (a Write's content, a tool's
    output); None when it is still too large or is not JSON."""
    try:
        event = json.loads(body)
    except ValueError:
        return None

    def cut(value: object) -> object:
        if isinstance(value, str):
            return value if len(value) <= KEEP_CHARS else value[:KEEP_CHARS] + "…"
        if isinstance(value, dict):
            return {key: cut(item) for key, item in value.items()}
        if isinstance(value, list):
            return [cut(item) for item in value[:200]]
        return value

    small = json.dumps(cut(event), ensure_ascii=False).encode("utf-8")
    return small if len(small) <= MAX_BODY else None


def _read_stdin() -> bytes | None:
    try:
        data = sys.stdin.buffer.read(MAX_INPUT + 1)
    except (OSError, ValueError, AttributeError):
        return None
    if len(data) > MAX_INPUT:
        return None
    return data if len(data) <= MAX_BODY else _shrunk(data)


def _chunked(data: bytes) -> bytes | None:
    out = bytearray()
    while True:
        size_line, sep, data = data.partition(b"\r\n")
        if not sep:
            return None
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            return None
        if size == 0:
            return bytes(out)
        out += data[:size]
        data = data[size + 2:]


def post(url: str, token: str, body: bytes, *, connect_timeout: float = CONNECT_TIMEOUT,
         total_timeout: float = TOTAL_TIMEOUT) -> tuple[int, bytes] | None:
    """POST ``body`` (JSON) to ``url`` + :data:`ENDPOINT`; ``(status, body)`` or None on any
    failure, within ``total_timeout`` seconds."""
    parts = _split_url(url)
    if parts is None:
        return None
    scheme, host, port = parts
    deadline = time.monotonic() + total_timeout
    hostname = f"[{host}]" if ":" in host else host
    request = (f"POST {ENDPOINT} HTTP/1.1\r\nHost: {hostname}:{port}\r\n"
               f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
               f"Accept: application/json\r\nContent-Length: {len(body)}\r\n"
               "Connection: close\r\nUser-Agent: relay-hook-client\r\n\r\n").encode("latin-1")
    try:
        sock: socket.socket = socket.create_connection((host, port), timeout=connect_timeout)
    except (OSError, ValueError):
        return None
    try:
        if scheme == "https":
            import ssl

            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        sock.sendall(request + body)
        received = bytearray()
        while len(received) <= MAX_ANSWER:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
            if _complete(received):
                break
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
    return _parse_response(bytes(received))


def _complete(received: bytearray) -> bool:
    """Whether a Content-Length response is whole (the server may keep the socket open)."""
    head, sep, rest = bytes(received).partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(rest) >= int(value.strip())
            except ValueError:
                return False
    return False


def _parse_response(data: bytes) -> tuple[int, bytes] | None:
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.split(b"\r\n")
    status_parts = lines[0].split(b" ", 2)
    if len(status_parts) < 2 or not status_parts[0].startswith(b"HTTP/"):
        return None
    try:
        status = int(status_parts[1])
    except ValueError:
        return None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _chunked(rest)
        if body is None:
            return None
        return status, body
    length = headers.get(b"content-length")
    if length is not None:
        try:
            rest = rest[:int(length)]
        except ValueError:
            return None
    return status, rest


def forward(data_dir: str, body: bytes) -> bytes | None:
    """The host's JSON answer to one hook event (None: nothing to print)."""
    url = _host_url(data_dir)
    token = _read_token(data_dir) if url else None
    if not url or not token:
        return None
    answer = post(url, token, body)
    if answer is None or answer[0] != 200:
        return None
    try:
        json.loads(answer[1])
    except ValueError:
        return None
    return answer[1]


def headers(data_dir: str | None) -> bytes:
    """The MCP ``headersHelper``'s output: the bearer header, ``{}`` without a token."""
    token = _read_token(data_dir) if data_dir else None
    value = {"Authorization": f"Bearer {token}"} if token else {}
    return json.dumps(value).encode("ascii") + b"\n"


def main(argv: list[str] | None = None) -> int:
    """Run the client; always 0 (Claude Code reads exit 2 as "block")."""
    try:
        data_dir, want_headers = _arguments(sys.argv[1:] if argv is None else list(argv))
        if want_headers:
            out: bytes | None = headers(data_dir)
        else:
            body = _read_stdin()
            out = forward(data_dir, body) if data_dir and body else None
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.buffer.flush()
    except BaseException:  # noqa: BLE001 — never a traceback, never a non-zero exit
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
