"""The plumbing shared by the loopback mock model servers (stdlib only).

:mod:`tests.fakes.mock_anthropic` and :mod:`tests.fakes.mock_openai` differ only in their
wire format; everything else lives here:

* script handling — :func:`normalise_script` (``{"turns": [...], "default": turn}`` or a
  bare list), ``substitutions`` applied at load, ``@now+N`` / ``@iso+N`` expanded when a
  turn is served, turn consumption (``repeat``, ``match.model_contains``, ``default``);
* :class:`MockServer` — a daemon-threaded :class:`ThreadingHTTPServer` on 127.0.0.1 with
  ``start()`` / ``stop()`` / context manager / :meth:`MockServer.serving`, ``.base_url``,
  ``.requests`` (every request, optionally appended to a JSON-lines log) and
  ``.unserved_turns()``;
* :class:`MockHandler` — body reading (gzip), request recording, JSON / SSE writing,
  ``HEAD`` → 200, 404 for unknown routes and the scripted-turn flow (400 "mock script
  exhausted", ``delay_s``, broken pipes);
* :func:`cli_main` — ``python -m tests.fakes.mock_<api> --script s.json --port N --log f``.

A concrete mock subclasses both classes: the server names its handler, ``base_path`` and
thread name; the handler routes paths (:meth:`MockHandler._route`), shapes error bodies
(:meth:`MockHandler._error_payload`), classifies a turn (:meth:`MockHandler._turn_kind`)
and writes it (:meth:`MockHandler._answer_turn`).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import gzip
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, Self, cast
from urllib.parse import parse_qs, urlsplit

JSONDict = dict[str, Any]
Route = Callable[[JSONDict | None, str | None], None]

EXHAUSTED_MESSAGE = "mock script exhausted: no scripted turn left for this request"

_TIME_PLACEHOLDER = re.compile(r"^@(now|iso)([+-]\d+(?:\.\d+)?)?$")


# -------------------------------------------------------------------- script helpers
def expand_time(value: Any) -> Any:
    """Replace ``@now+N`` (epoch seconds, int) and ``@iso+N`` (ISO-8601) recursively."""
    if isinstance(value, str):
        m = _TIME_PLACEHOLDER.match(value)
        if not m:
            return value
        when = time.time() + float(m.group(2) or 0)
        if m.group(1) == "now":
            return int(when)
        return dt.datetime.fromtimestamp(when, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, list):
        return [expand_time(v) for v in value]
    if isinstance(value, dict):
        return {k: expand_time(v) for k, v in value.items()}
    return value


def substitute(value: Any, mapping: Mapping[str, str]) -> Any:
    """Apply every ``old → new`` replacement of ``mapping`` to every string, recursively."""
    if isinstance(value, str):
        for old, new in mapping.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [substitute(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, mapping) for k, v in value.items()}
    return value


def chunks(text: str, size: int) -> list[str]:
    """``text`` in ``size``-character pieces (one piece when ``size`` <= 0)."""
    if size <= 0 or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def new_id(prefix: str) -> str:
    """``prefix`` followed by 24 random hex digits."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def normalise_script(
    script: Any,
    *,
    convert: Callable[[JSONDict], JSONDict] = copy.deepcopy,
    turn_keys: tuple[str, ...] = ("turns",),
) -> JSONDict:
    """``{"turns": [...], "default": {...}}`` or a bare list of turns, each passed through
    ``convert`` (a deep copy by default). The turn list is read from the first of
    ``turn_keys`` the script has."""
    if isinstance(script, list):
        script = {"turns": script}
    if not isinstance(script, dict):
        raise TypeError(f"unsupported script: {type(script).__name__}")
    raw_turns: Any = next((script[k] for k in turn_keys if k in script), [])
    if not isinstance(raw_turns, list):
        raise TypeError("script 'turns' must be a list")
    out: JSONDict = {"turns": [convert(t) for t in raw_turns]}
    if script.get("default") is not None:
        out["default"] = convert(script["default"])
    return out


# -------------------------------------------------------------------- server
class MockServer:
    """A scripted mock server. Use :meth:`serving` (context manager) or ``start()`` /
    ``stop()``. Subclasses set :attr:`handler_class`, :attr:`base_path`,
    :attr:`thread_name` and may override :meth:`normalise`."""

    handler_class: ClassVar[type[MockHandler]]
    base_path: ClassVar[str] = ""
    thread_name: ClassVar[str] = "mock-http"

    def __init__(
        self,
        script: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | Path | None = None,
        substitutions: Mapping[str, str] | None = None,
    ) -> None:
        normalised = self.normalise(script)
        if substitutions:
            normalised = substitute(normalised, substitutions)
        self._turns: list[JSONDict] = list(normalised["turns"])
        self._remaining: list[int] = [int(t.get("repeat", 1)) for t in self._turns]
        self._default: JSONDict | None = normalised.get("default")
        self._served = [0] * len(self._turns)
        self._lock = threading.Lock()
        self._requests: list[JSONDict] = []
        self._log_path = Path(log_path) if log_path else None
        self._stopping = threading.Event()
        self._httpd = _Server((host, port), self.handler_class)
        self._httpd.mock = self
        self._thread: threading.Thread | None = None

    @classmethod
    def normalise(cls, script: Any) -> JSONDict:
        return normalise_script(script)

    # ---------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` followed by :attr:`base_path` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.thread_name}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @classmethod
    @contextlib.contextmanager
    def serving(
        cls,
        script: Any,
        *,
        log_path: str | Path | None = None,
        substitutions: Mapping[str, str] | None = None,
        port: int = 0,
    ) -> Iterator[Self]:
        """Run the mock on an ephemeral 127.0.0.1 port for the duration of the block."""
        server = cls(script, port=port, log_path=log_path, substitutions=substitutions)
        server.start()
        try:
            yield server
        finally:
            server.stop()

    # ---------------------------------------------------------------- inspection
    @property
    def requests(self) -> list[JSONDict]:
        """Every request so far (method, path, query, headers, body, response)."""
        with self._lock:
            return copy.deepcopy(self._requests)

    def requests_to(self, path: str, method: str = "POST") -> list[JSONDict]:
        """The requests for ``method`` ``path`` (trailing slashes ignored)."""
        return [
            r for r in self.requests if r["method"] == method and r["path"].rstrip("/") == path
        ]

    def unserved_turns(self) -> list[int]:
        """Indexes of turns that were never served (``repeat: -1`` turns count once)."""
        with self._lock:
            return [i for i, n in enumerate(self._served) if n == 0]

    # ---------------------------------------------------------------- internals
    def _record(self, entry: JSONDict) -> None:
        with self._lock:
            entry["n"] = len(self._requests) + 1
            self._requests.append(entry)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def _matches(self, match: JSONDict, body: JSONDict | None) -> bool:
        """Whether a turn's ``match`` admits this request (subclasses add conditions)."""
        wanted = match.get("model_contains")
        return wanted is None or str(wanted) in str((body or {}).get("model", ""))

    def _next_turn(self, body: JSONDict | None) -> tuple[JSONDict | None, str]:
        with self._lock:
            for i, turn in enumerate(self._turns):
                if self._remaining[i] == 0:
                    continue
                if not self._matches(turn.get("match") or {}, body):
                    continue
                if self._remaining[i] > 0:
                    self._remaining[i] -= 1
                self._served[i] += 1
                return expand_time(copy.deepcopy(turn)), f"turn[{i}]#{self._served[i]}"
            if self._default is not None:
                return expand_time(copy.deepcopy(self._default)), "default"
        return None, "exhausted"

    def _wait(self, seconds: float) -> bool:
        """Wait (interruptibly); False if the server is shutting down."""
        return not self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    mock: MockServer


# -------------------------------------------------------------------- handler
class MockHandler(BaseHTTPRequestHandler):
    """Request handling common to the mocks; see the module doc for the hooks."""

    protocol_version = "HTTP/1.1"
    server_version = "MockHTTP/1.0"
    #: the header carrying a generated request id, and the id's prefix
    request_id_header: ClassVar[str] = "request-id"
    request_id_prefix: ClassVar[str] = "req_mock"
    #: whether every JSON answer carries a request id (SSE answers always do)
    json_request_id: ClassVar[bool] = False
    sse_content_type: ClassVar[str] = "text/event-stream"

    @property
    def mock(self) -> MockServer:
        return cast(_Server, self.server).mock

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # ---------------------------------------------------------------- hooks
    def _route(self, method: str, path: str) -> Route | None:
        """The method answering ``method`` ``path`` (no trailing slash), or None (404)."""
        return None

    def _error_payload(self, status: int, message: str) -> JSONDict:
        """The JSON body of a 404 (unknown route) or 400 (script exhausted) answer."""
        return {"error": {"message": message}}

    def _turn_kind(self, turn: JSONDict, body: JSONDict) -> str:
        """How ``turn`` is answered; ``"error"`` means an HTTP error from ``turn["error"]``."""
        return "error" if "error" in turn else "json"

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        """Write the answer to a served turn (its request is already recorded)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- helpers
    def _request_id(self) -> dict[str, str]:
        return {self.request_id_header: new_id(self.request_id_prefix)}

    def _read_body(self) -> tuple[JSONDict | None, str | None]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, None
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding:
            return None, f"<{len(raw)} bytes, content-encoding {encoding}>"
        try:
            parsed = json.loads(raw)
        except ValueError:
            return None, raw.decode("utf-8", "replace")
        return (parsed if isinstance(parsed, dict) else {"_json": parsed}), None

    def _entry(self, body: JSONDict | None, raw: str | None) -> JSONDict:
        split = urlsplit(self.path)
        entry: JSONDict = {
            "ts": time.time(),
            "method": self.command,
            "path": split.path,
            "query": {k: v[-1] for k, v in parse_qs(split.query).items()},
            "headers": dict(self.headers.items()),
            "body": body,
        }
        if raw is not None:
            entry["raw_body"] = raw
        return entry

    def _log_request(self, body: JSONDict | None, raw: str | None, status: int, kind: str) -> None:
        self.mock._record({**self._entry(body, raw), "response": {"status": status, "kind": kind}})

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, Any] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, Any] | None = None) -> None:
        if self.json_request_id:
            headers = {**self._request_id(), **(headers or {})}
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _start_sse(self, headers: Mapping[str, Any] | None = None) -> None:
        """A 200 event-stream answer that closes the connection when done."""
        self.send_response(200)
        self.send_header("Content-Type", self.sse_content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for k, v in {**self._request_id(), **(headers or {})}.items():
            self.send_header(k, str(v))
        self.end_headers()
        self.close_connection = True

    def _sse(self, data: JSONDict) -> None:
        """One SSE event named after ``data["type"]``."""
        self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    # ---------------------------------------------------------------- verbs
    def do_HEAD(self) -> None:
        self._log_request(None, None, 200, "head")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._dispatch(None, None)

    def do_POST(self) -> None:
        self._dispatch(*self._read_body())

    def _dispatch(self, body: JSONDict | None, raw: str | None) -> None:
        route = self._route(self.command, urlsplit(self.path).path.rstrip("/"))
        if route is not None:
            route(body, raw)
            return
        self._log_request(body, raw, 404, "404")
        self._send_json(404, self._error_payload(404, f"mock: no route {self.command} {self.path}"))

    def _serve_turn(self, body: JSONDict | None, raw: str | None) -> None:
        """Consume the next scripted turn and answer with it."""
        entry = self._entry(body, raw)
        turn, label = self.mock._next_turn(body)
        if turn is None:
            entry["response"] = {"status": 400, "kind": "exhausted"}
            self.mock._record(entry)
            self._send_json(400, self._error_payload(400, EXHAUSTED_MESSAGE))
            return
        kind = self._turn_kind(turn, body or {})
        status = int(turn["error"].get("status", 500)) if kind == "error" else 200
        entry["response"] = {"status": status, "kind": kind, "turn": label}
        self.mock._record(entry)
        delay = float(turn.get("delay_s") or 0)
        if delay and not self.mock._wait(delay):
            self.close_connection = True
            return
        try:
            self._answer_turn(turn, kind, status, body or {})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


# -------------------------------------------------------------------- command line
def cli_main(
    server_class: type[MockServer], argv: list[str] | None, doc: str | None, url_name: str
) -> int:
    """Serve a script until interrupted, printing ``<url_name>=<base url>`` first."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("--script", required=True, help="JSON script file (see module doc)")
    parser.add_argument("--port", type=int, default=0, help="port (0 = ephemeral)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log", help="append every request as a JSON line to this file")
    parser.add_argument("--sub", action="append", default=[], metavar="OLD=NEW",
                        help="string substitution applied to the script (repeatable)")
    args = parser.parse_args(argv)
    subs = dict(s.split("=", 1) for s in args.sub)
    script = json.loads(Path(args.script).read_text(encoding="utf-8"))
    server = server_class(script, host=args.host, port=args.port, log_path=args.log,
                          substitutions=subs)
    print(f"{url_name}=http://{args.host}:{server.port}{server.base_path}", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0
