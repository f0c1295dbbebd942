"""A scriptable mock of the Anthropic Messages API (stdlib only), for driving the real
Claude Code CLI on loopback.

What it answers
---------------
* ``HEAD /`` (any path): 200, empty — Claude Code 2.1.197 sends it as a warm-up.
* ``POST /v1/messages`` (``?beta=true`` or not): the next scripted turn, as SSE when the
  body has ``"stream": true`` and as one JSON message otherwise (the CLI falls back to a
  non-streaming request after a mid-stream error). Any ``role`` is accepted inside
  ``messages`` (the CLI sends a ``"role": "system"`` message there).
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": <rough estimate>}``.
* Anything else: 404 with an Anthropic-style JSON error.

Script
------
``{"turns": [turn, ...], "default": turn}`` (a bare list of turns is accepted too). Each
POST to ``/v1/messages`` consumes the first remaining turn whose ``match`` fits the
request; when no turn is left (or none matches) ``default`` is served, and without a
default the mock answers 400 ``invalid_request_error`` "mock script exhausted" (400 is
not retried by the CLI, so an unexpected extra request fails a test quickly).

A turn is either a reply::

    {"text": "...",                      # a text block (optional)
     "thinking": "...",                  # a thinking block before the text (optional)
     "tool_use": {"name": "Write", "input": {...}, "id": "toolu_1"},   # optional
     "tool_uses": [{...}, ...],          # several tool_use blocks (optional)
     "usage": {"input_tokens": 1200, "output_tokens": 17,
               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
     "stop_reason": "end_turn",          # default: "tool_use" if there is a tool call
     "headers": {"name": "value"},       # extra response headers
     "chunk": 8}                         # split text / tool JSON deltas into n-char pieces

or an HTTP error::

    {"error": {"status": 429, "type": "rate_limit_error", "message": "...",
               "headers": {"retry-after": "1", "anthropic-ratelimit-unified-status": "rejected"},
               "body": {...}}}          # "body" replaces the generated error JSON

or a mid-stream failure (HTTP 200, some text, then an SSE ``error`` event)::

    {"stream_error": {"type": "overloaded_error", "message": "Overloaded",
                      "after_text": "Partial text"}}

Common keys: ``"repeat": n`` serves the turn n times (``-1`` = forever; default 1),
``"delay_s": x`` waits x seconds before answering (interrupted by shutdown),
``"match": {"model_contains": "opus"}`` restricts the turn to matching requests.

Strings of the form ``@now+N`` / ``@iso+N`` (N seconds, sign optional) are replaced when
served by the epoch seconds / an ISO-8601 UTC time N seconds from now, so usage-limit
headers such as ``anthropic-ratelimit-unified-reset: "@now+7200"`` stay in the future.
``substitutions`` (e.g. ``{"<CWD>": "/path/to/repo"}``) are applied to every string of
the script at load time, so the recorded ``mock_script.json`` files can be reused.

This is the same script format as the ``mock_script.json`` files in
``shared/fixtures/claude/captures``.

Use
---
In tests::

    with serve({"turns": [{"text": "hi"}]}) as mock:
        env["ANTHROPIC_BASE_URL"] = mock.base_url
        ...
        assert mock.message_requests()[0]["body"]["stream"] is True

By hand: ``python -m tests.fakes.mock_anthropic --script s.json --port 8765 --log r.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import gzip
import json
import math
import re
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

JSONDict = dict[str, Any]

_TIME_PLACEHOLDER = re.compile(r"^@(now|iso)([+-]\d+(?:\.\d+)?)?$")


def _expand_time(value: Any) -> Any:
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
        return [_expand_time(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand_time(v) for k, v in value.items()}
    return value


def _substitute(value: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in mapping.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_substitute(v, mapping) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, mapping) for k, v in value.items()}
    return value


def _chunks(text: str, size: int) -> list[str]:
    if size <= 0 or len(text) <= size:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def normalise_script(script: Any) -> JSONDict:
    """Accept ``{"turns": [...], "default": {...}}`` or a bare list of turns."""
    if isinstance(script, list):
        return {"turns": copy.deepcopy(script)}
    if isinstance(script, dict):
        turns = script.get("turns", [])
        if not isinstance(turns, list):
            raise ValueError("script 'turns' must be a list")
        out: JSONDict = {"turns": copy.deepcopy(turns)}
        if script.get("default") is not None:
            out["default"] = copy.deepcopy(script["default"])
        return out
    raise ValueError(f"unsupported script: {type(script).__name__}")


class MockAnthropic:
    """The mock server. Use :func:`serve` (context manager) or ``start()`` / ``stop()``."""

    def __init__(
        self,
        script: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | Path | None = None,
        substitutions: Mapping[str, str] | None = None,
    ) -> None:
        normalised = normalise_script(script)
        if substitutions:
            normalised = _substitute(normalised, substitutions)
        self._turns: list[JSONDict] = list(normalised["turns"])
        self._remaining: list[int] = [int(t.get("repeat", 1)) for t in self._turns]
        self._default: JSONDict | None = normalised.get("default")
        self._served = [0] * len(self._turns)
        self._lock = threading.Lock()
        self._requests: list[JSONDict] = []
        self._log_path = Path(log_path) if log_path else None
        self._stopping = threading.Event()
        self._httpd = _Server((host, port), _Handler)
        self._httpd.mock = self
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What ``ANTHROPIC_BASE_URL`` must be (no trailing slash, no ``/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MockAnthropic:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"mock-anthropic-{self.port}",
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

    def __enter__(self) -> MockAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- inspection
    @property
    def requests(self) -> list[JSONDict]:
        """Every request so far (method, path, query, headers, body, response)."""
        with self._lock:
            return copy.deepcopy(self._requests)

    def message_requests(self) -> list[JSONDict]:
        """Only the ``POST /v1/messages`` requests (not count_tokens, HEAD, ...)."""
        return [
            r
            for r in self.requests
            if r["method"] == "POST" and r["path"].rstrip("/") == "/v1/messages"
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

    def _next_turn(self, body: JSONDict | None) -> tuple[JSONDict | None, str]:
        model = str((body or {}).get("model", ""))
        with self._lock:
            for i, turn in enumerate(self._turns):
                if self._remaining[i] == 0:
                    continue
                match = turn.get("match") or {}
                wanted = match.get("model_contains")
                if wanted is not None and str(wanted) not in model:
                    continue
                if self._remaining[i] > 0:
                    self._remaining[i] -= 1
                self._served[i] += 1
                return _expand_time(copy.deepcopy(turn)), f"turn[{i}]#{self._served[i]}"
            if self._default is not None:
                return _expand_time(copy.deepcopy(self._default)), "default"
        return None, "exhausted"

    def _wait(self, seconds: float) -> bool:
        """Wait (interruptibly); False if the server is shutting down."""
        return not self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    mock: MockAnthropic


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "MockAnthropic/1.0"

    @property
    def mock(self) -> MockAnthropic:
        return cast(_Server, self.server).mock

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    # ---------------------------------------------------------------- helpers
    def _read_body(self) -> tuple[JSONDict | None, str | None]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None, None
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            raw = gzip.decompress(raw)
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

    def _send_json(
        self, status: int, payload: Any, headers: Mapping[str, Any] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", _new_id("req_mock"))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, event: str, data: JSONDict) -> None:
        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    # ---------------------------------------------------------------- verbs
    def do_HEAD(self) -> None:
        self.mock._record({**self._entry(None, None), "response": {"status": 200, "kind": "head"}})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._not_found(None, None)

    def do_POST(self) -> None:
        body, raw = self._read_body()
        path = urlsplit(self.path).path.rstrip("/")
        if path == "/v1/messages":
            self._messages(body, raw)
        elif path == "/v1/messages/count_tokens":
            tokens = max(1, len(json.dumps(body or {})) // 4)
            self.mock._record(
                {**self._entry(body, raw), "response": {"status": 200, "kind": "count_tokens"}}
            )
            self._send_json(200, {"input_tokens": tokens})
        else:
            self._not_found(body, raw)

    def _not_found(self, body: JSONDict | None, raw: str | None) -> None:
        self.mock._record({**self._entry(body, raw), "response": {"status": 404, "kind": "404"}})
        self._send_json(
            404,
            {"type": "error", "error": {"type": "not_found_error",
                                        "message": f"mock: no route {self.command} {self.path}"}},
        )

    def _messages(self, body: JSONDict | None, raw: str | None) -> None:
        entry = self._entry(body, raw)
        turn, label = self.mock._next_turn(body)
        if turn is None:
            entry["response"] = {"status": 400, "kind": "exhausted"}
            self.mock._record(entry)
            self._send_json(400, {"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "mock script exhausted: no scripted turn left for this request"}})
            return
        stream = bool((body or {}).get("stream"))
        kind = ("error" if "error" in turn else "stream_error" if "stream_error" in turn
                else "stream" if stream else "json")
        entry["response"] = {"status": int(turn["error"].get("status", 500))
                             if kind == "error" else 200, "kind": kind, "turn": label}
        self.mock._record(entry)
        delay = float(turn.get("delay_s") or 0)
        if delay and not self.mock._wait(delay):
            self.close_connection = True
            return
        try:
            if kind == "error":
                self._error(turn["error"])
            elif kind == "stream_error":
                self._stream_error(turn["stream_error"], body or {})
            else:
                message = _build_message(turn, body or {})
                if stream:
                    self._stream(message, turn)
                else:
                    self._send_json(200, message, turn.get("headers"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _error(self, err: JSONDict) -> None:
        status = int(err.get("status", 500))
        payload = err.get("body") or {
            "type": "error",
            "error": {"type": err.get("type", "api_error"), "message": err.get("message", "Error")},
            "request_id": _new_id("req_mock"),
        }
        self._send_json(status, payload, err.get("headers"))

    def _start_sse(self, headers: Mapping[str, Any] | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", _new_id("req_mock"))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.close_connection = True

    def _stream_error(self, err: JSONDict, body: JSONDict) -> None:
        self._start_sse(None)
        message = _build_message({"text": err.get("after_text", "")}, body)
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {**message["usage"], "output_tokens": 1}
        self._sse("message_start", {"type": "message_start", "message": start})
        if err.get("after_text"):
            self._sse("content_block_start", {"type": "content_block_start", "index": 0,
                                              "content_block": {"type": "text", "text": ""}})
            self._sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta",
                                                        "text": err["after_text"]}})
        self._sse("error", {"type": "error", "error": {
            "type": err.get("type", "overloaded_error"),
            "message": err.get("message", "Overloaded")}})

    def _stream(self, message: JSONDict, turn: JSONDict) -> None:
        chunk = int(turn.get("chunk") or 0)
        self._start_sse(turn.get("headers"))
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
        start["usage"] = {**message["usage"], "output_tokens": 1}
        self._sse("message_start", {"type": "message_start", "message": start})
        self._sse("ping", {"type": "ping"})
        for index, block in enumerate(message["content"]):
            btype = block["type"]
            if btype == "text":
                self._sse("content_block_start", {"type": "content_block_start", "index": index,
                                                  "content_block": {"type": "text", "text": ""}})
                for piece in _chunks(block["text"], chunk):
                    self._sse("content_block_delta", {
                        "type": "content_block_delta", "index": index,
                        "delta": {"type": "text_delta", "text": piece}})
            elif btype == "thinking":
                self._sse("content_block_start", {
                    "type": "content_block_start", "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
                for piece in _chunks(block["thinking"], chunk):
                    self._sse("content_block_delta", {
                        "type": "content_block_delta", "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece}})
                self._sse("content_block_delta", {
                    "type": "content_block_delta", "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]}})
            elif btype == "tool_use":
                self._sse("content_block_start", {
                    "type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": block["id"],
                                      "name": block["name"], "input": {}}})
                for piece in _chunks(json.dumps(block["input"]), chunk):
                    self._sse("content_block_delta", {
                        "type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}})
            self._sse("content_block_stop", {"type": "content_block_stop", "index": index})
        self._sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": message["usage"]})
        self._sse("message_stop", {"type": "message_stop"})


def _build_message(turn: JSONDict, body: JSONDict) -> JSONDict:
    """The complete assistant message a reply turn stands for."""
    content: list[JSONDict] = []
    if turn.get("thinking"):
        content.append({"type": "thinking", "thinking": str(turn["thinking"]),
                        "signature": "mock-signature-" + uuid.uuid4().hex})
    if turn.get("text"):
        content.append({"type": "text", "text": str(turn["text"])})
    calls = list(turn.get("tool_uses") or [])
    if turn.get("tool_use"):
        calls.insert(0, turn["tool_use"])
    for call in calls:
        content.append({"type": "tool_use", "id": str(call.get("id") or _new_id("toolu_mock")),
                        "name": str(call["name"]), "input": call.get("input") or {}})
    text_len = sum(len(json.dumps(b)) for b in content)
    usage: JSONDict = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": max(1, math.ceil(text_len / 4)),
    }
    usage.update(turn.get("usage") or {})
    stop = turn.get("stop_reason") or ("tool_use" if calls else "end_turn")
    return {
        "id": _new_id("msg_mock"),
        "type": "message",
        "role": "assistant",
        "model": str(turn.get("model") or body.get("model") or "claude-mock"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


@contextlib.contextmanager
def serve(
    script: Any,
    *,
    log_path: str | Path | None = None,
    substitutions: Mapping[str, str] | None = None,
    port: int = 0,
) -> Iterator[MockAnthropic]:
    """Run the mock on an ephemeral 127.0.0.1 port for the duration of the block."""
    server = MockAnthropic(script, port=port, log_path=log_path, substitutions=substitutions)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--script", required=True, help="JSON script file (see module doc)")
    parser.add_argument("--port", type=int, default=0, help="port (0 = ephemeral)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log", help="append every request as a JSON line to this file")
    parser.add_argument("--sub", action="append", default=[], metavar="OLD=NEW",
                        help="string substitution applied to the script (repeatable)")
    args = parser.parse_args(argv)
    subs = dict(s.split("=", 1) for s in args.sub)
    script = json.loads(Path(args.script).read_text(encoding="utf-8"))
    server = MockAnthropic(script, host=args.host, port=args.port, log_path=args.log,
                           substitutions=subs)
    print(f"ANTHROPIC_BASE_URL=http://{args.host}:{server.port}", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
