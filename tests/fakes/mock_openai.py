"""A scriptable mock of the OpenAI Responses API (stdlib only), for driving the real
Codex CLI on loopback.

What it answers
---------------
* ``POST /v1/responses``: the next scripted turn as an SSE stream
  (``response.created`` … ``response.output_item.added`` / deltas /
  ``response.output_item.done`` … ``response.completed`` with usage), or an HTTP error,
  an SSE ``response.failed``, a dropped stream or a silent stream.
* ``GET /v1/models``: an empty model list (codex does not call it with a custom
  provider, but a harmless answer beats a 404 if a version does).
* ``HEAD`` anything: 200. Anything else: 404 with an OpenAI-style JSON error.

Codex 0.171.0 only acts on ``response.output_item.done`` items, text/reasoning deltas,
``response.failed`` and ``response.completed``, and it only finishes a turn when the
stream *ends* after ``response.completed``, so every SSE answer closes the connection.

Script
------
``{"turns": [turn, ...], "default": turn}`` or a bare list of turns. Each POST consumes
the first remaining turn; when none is left ``default`` is served, otherwise an HTTP 400
``invalid_request_error`` "mock script exhausted" (not retried by codex).

Reply turn (all keys optional)::

    {"reasoning": "summary text",                 # a reasoning item first
     "text": "final answer",                      # an assistant message
     "phase": "final_answer",                     # optional message phase
     "items": [                                   # explicit output items, in order
        {"type": "message", "text": "...", "phase": "commentary"},
        {"type": "reasoning", "text": "..."},
        {"type": "function_call", "name": "exec_command",
         "arguments": {"cmd": "echo hi"}},         # dict or JSON string
        {"type": "custom_tool_call", "name": "apply_patch",
         "input": "*** Begin Patch\\n...*** End Patch\\n"}],
     "usage": {"input_tokens": 1200, "cached_tokens": 1000,
               "output_tokens": 40, "reasoning_tokens": 8},
     "headers": {"x-codex-primary-used-percent": "42"},   # extra response headers
     "chunk": 8}                                  # text deltas of n characters

Output order: the ``reasoning`` item, then ``items``, then the ``text`` message.

Failure turns::

    {"error": {"status": 429, "headers": {"retry-after": "2"},
               "body": {"error": {"type": "usage_limit_reached", "plan_type": "pro",
                                  "resets_at": "@now+10800"}}}}   # or "body_text": "..."
    {"failed": {"code": "rate_limit_exceeded", "message": "... try again in 1.5s."}}
    {"disconnect": true}        # 200, response.created, then the stream closes
    {"hang_s": 8}               # 200, response.created, then silence for 8 s

Common keys: ``"repeat": n`` (``-1`` = forever, default 1), ``"delay_s": x`` (wait
before answering), ``"match": {"model_contains": "gpt"}``.

The ``{"steps": [{"kind": ...}]}`` scripts recorded in
``shared/fixtures/codex/captures/*/mock_script.json`` are accepted too (kinds ``text``,
``output``, ``http_error``, ``sse_failed``, ``disconnect``, ``hang``; ``times``).

Strings ``@now+N`` (→ int epoch seconds) and ``@iso+N`` (→ ISO-8601) are expanded when
served, so ``resets_at`` / ``x-codex-primary-reset-at`` stay in the future.
``substitutions`` (e.g. ``{"<CWD>": "/repo"}``) apply to every script string at load.

Use
---
::

    with serve({"turns": [{"text": "hi"}]}) as mock:
        config_toml = f'base_url = "{mock.base_url}"'   # .../v1
        ...
        assert mock.response_requests()[0]["body"]["model"] == "gpt-5.5"

By hand: ``python -m tests.fakes.mock_openai --script s.json --port 8766 --log r.jsonl``.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import gzip
import json
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
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def _from_step(step: JSONDict) -> JSONDict:
    """Translate a recorded ``{"kind": ...}`` step into a turn."""
    kind = step.get("kind")
    turn: JSONDict = {k: v for k, v in step.items()
                      if k in ("headers", "usage", "match", "delay_s", "chunk")}
    if "times" in step:
        turn["repeat"] = step["times"]
    if "repeat" in step:
        turn["repeat"] = step["repeat"]
    if kind == "text":
        turn.update({k: step[k] for k in ("text", "reasoning", "phase") if k in step})
    elif kind == "output":
        turn["items"] = step.get("items", [])
    elif kind == "http_error":
        err: JSONDict = {"status": step.get("status", 500), "headers": step.get("headers", {})}
        if "body" in step:
            err["body"] = step["body"]
        if "body_text" in step:
            err["body_text"] = step["body_text"]
        turn["error"] = err
        turn.pop("headers", None)
    elif kind == "sse_failed":
        turn["failed"] = step.get("error", {})
    elif kind == "disconnect":
        turn["disconnect"] = True
    elif kind == "hang":
        turn["hang_s"] = step.get("seconds", 30)
    else:
        raise ValueError(f"unknown step kind {kind!r}")
    return turn


def normalise_script(script: Any) -> JSONDict:
    """``{"turns": [...], "default": {...}}``, a bare list, or recorded ``{"steps": [...]}``."""
    if isinstance(script, list):
        script = {"turns": script}
    if not isinstance(script, dict):
        raise ValueError(f"unsupported script: {type(script).__name__}")
    raw_turns = script.get("turns", script.get("steps", []))
    if not isinstance(raw_turns, list):
        raise ValueError("script 'turns' must be a list")
    turns = [_from_step(t) if "kind" in t else copy.deepcopy(t) for t in raw_turns]
    out: JSONDict = {"turns": turns}
    default = script.get("default")
    if default is not None:
        out["default"] = _from_step(default) if "kind" in default else copy.deepcopy(default)
    return out


class MockOpenAI:
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

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What a codex provider's ``base_url`` must be (it ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> MockOpenAI:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"mock-openai-{self.port}",
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

    def __enter__(self) -> MockOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def requests(self) -> list[JSONDict]:
        """Every request so far (method, path, query, headers, body, response)."""
        with self._lock:
            return copy.deepcopy(self._requests)

    def response_requests(self) -> list[JSONDict]:
        """Only the ``POST /v1/responses`` requests."""
        return [r for r in self.requests
                if r["method"] == "POST" and r["path"].rstrip("/") == "/v1/responses"]

    def unserved_turns(self) -> list[int]:
        with self._lock:
            return [i for i, n in enumerate(self._served) if n == 0]

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
                wanted = (turn.get("match") or {}).get("model_contains")
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
        return not self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    mock: MockOpenAI


def _usage(turn: JSONDict) -> JSONDict:
    u = {"input_tokens": 1200, "cached_tokens": 0, "output_tokens": 40, "reasoning_tokens": 0}
    u.update(turn.get("usage") or {})
    inp, out = int(u["input_tokens"]), int(u["output_tokens"])
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": int(u["cached_tokens"])},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": int(u["reasoning_tokens"])},
        "total_tokens": int(u.get("total_tokens", inp + out)),
    }


def _output_items(turn: JSONDict) -> list[JSONDict]:
    """The scripted items in order: reasoning, explicit items, final text."""
    specs: list[JSONDict] = []
    if turn.get("reasoning"):
        specs.append({"type": "reasoning", "text": turn["reasoning"]})
    specs.extend(turn.get("items") or [])
    if turn.get("text"):
        spec: JSONDict = {"type": "message", "text": turn["text"]}
        if turn.get("phase"):
            spec["phase"] = turn["phase"]
        specs.append(spec)
    return specs


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "MockOpenAI/1.0"

    @property
    def mock(self) -> MockOpenAI:
        return cast(_Server, self.server).mock

    def log_message(self, format: str, *args: Any) -> None:
        return

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

    def _send_bytes(self, status: int, data: bytes, content_type: str,
                    headers: Mapping[str, Any] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def _send_json(self, status: int, payload: Any,
                   headers: Mapping[str, Any] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def do_HEAD(self) -> None:
        self.mock._record({**self._entry(None, None), "response": {"status": 200, "kind": "head"}})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        if urlsplit(self.path).path.rstrip("/") == "/v1/models":
            self.mock._record({**self._entry(None, None),
                               "response": {"status": 200, "kind": "models"}})
            self._send_json(200, {"object": "list", "data": [], "models": []})
            return
        self._not_found(None, None)

    def do_POST(self) -> None:
        body, raw = self._read_body()
        if urlsplit(self.path).path.rstrip("/") == "/v1/responses":
            self._responses(body, raw)
        else:
            self._not_found(body, raw)

    def _not_found(self, body: JSONDict | None, raw: str | None) -> None:
        self.mock._record({**self._entry(body, raw), "response": {"status": 404, "kind": "404"}})
        self._send_json(404, {"error": {"message": f"mock: no route {self.command} {self.path}",
                                        "type": "invalid_request_error", "code": "not_found"}})

    def _responses(self, body: JSONDict | None, raw: str | None) -> None:
        entry = self._entry(body, raw)
        turn, label = self.mock._next_turn(body)
        if turn is None:
            entry["response"] = {"status": 400, "kind": "exhausted"}
            self.mock._record(entry)
            self._send_json(400, {"error": {
                "message": "mock script exhausted: no scripted turn left for this request",
                "type": "invalid_request_error", "code": None}})
            return
        kind = next((k for k in ("error", "failed", "disconnect", "hang_s") if turn.get(k)),
                    "output")
        status = int(turn["error"].get("status", 500)) if kind == "error" else 200
        entry["response"] = {"status": status, "kind": kind, "turn": label}
        self.mock._record(entry)
        delay = float(turn.get("delay_s") or 0)
        if delay and not self.mock._wait(delay):
            self.close_connection = True
            return
        try:
            if kind == "error":
                err = turn["error"]
                headers = {"x-request-id": _new_id("req"), **(err.get("headers") or {})}
                if "body_text" in err:
                    self._send_bytes(status, str(err["body_text"]).encode(), "text/plain",
                                     headers)
                else:
                    self._send_json(status, err.get("body") or {"error": {
                        "message": "mock error", "type": "server_error", "code": None}},
                        headers)
            else:
                self._stream(turn, kind, (body or {}).get("model"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _sse(self, data: JSONDict) -> None:
        self.wfile.write(f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _stream(self, turn: JSONDict, kind: str, model: Any) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("x-request-id", _new_id("req"))
        for k, v in (turn.get("headers") or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.close_connection = True

        seq = iter(range(1_000_000))
        resp_id = _new_id("resp")
        response: JSONDict = {"id": resp_id, "object": "response", "created_at": int(time.time()),
                              "status": "in_progress", "model": str(model or "gpt-mock"),
                              "output": [], "usage": None, "error": None}

        def emit(data: JSONDict) -> None:
            self._sse({**data, "sequence_number": next(seq)})

        emit({"type": "response.created", "response": response})
        emit({"type": "response.in_progress", "response": response})
        if kind == "disconnect":
            return
        if kind == "hang_s":
            self.mock._wait(float(turn["hang_s"]))
            return
        if kind == "failed":
            error = dict(turn["failed"])
            emit({"type": "response.failed",
                  "response": {**response, "status": "failed", "error": error}})
            return

        chunk = int(turn.get("chunk") or 0)
        done_items: list[JSONDict] = []
        for index, spec in enumerate(_output_items(turn)):
            done_items.append(self._emit_item(emit, index, spec, chunk))
        emit({"type": "response.completed",
              "response": {**response, "status": "completed", "output": done_items,
                           "usage": _usage(turn)}})

    def _emit_item(self, emit: Any, index: int, spec: JSONDict, chunk: int) -> JSONDict:
        itype = spec.get("type", "message")
        if itype == "message":
            item_id = str(spec.get("id") or _new_id("msg"))
            text = str(spec.get("text", ""))
            extra = {"phase": spec["phase"]} if spec.get("phase") else {}
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "message", "status": "in_progress",
                           "role": "assistant", "content": [], **extra}})
            part = {"type": "output_text", "text": "", "annotations": []}
            emit({"type": "response.content_part.added", "item_id": item_id,
                  "output_index": index, "content_index": 0, "part": part})
            for piece in _chunks(text, chunk):
                emit({"type": "response.output_text.delta", "item_id": item_id,
                      "output_index": index, "content_index": 0, "delta": piece})
            emit({"type": "response.output_text.done", "item_id": item_id,
                  "output_index": index, "content_index": 0, "text": text})
            emit({"type": "response.content_part.done", "item_id": item_id,
                  "output_index": index, "content_index": 0, "part": {**part, "text": text}})
            item: JSONDict = {"id": item_id, "type": "message", "status": "completed",
                              "role": "assistant",
                              "content": [{"type": "output_text", "text": text,
                                           "annotations": []}], **extra}
        elif itype == "reasoning":
            item_id = str(spec.get("id") or _new_id("rs"))
            text = str(spec.get("text", ""))
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "reasoning", "summary": []}})
            emit({"type": "response.reasoning_summary_part.added", "item_id": item_id,
                  "output_index": index, "summary_index": 0,
                  "part": {"type": "summary_text", "text": ""}})
            for piece in _chunks(text, chunk):
                emit({"type": "response.reasoning_summary_text.delta", "item_id": item_id,
                      "output_index": index, "summary_index": 0, "delta": piece})
            emit({"type": "response.reasoning_summary_text.done", "item_id": item_id,
                  "output_index": index, "summary_index": 0, "text": text})
            emit({"type": "response.reasoning_summary_part.done", "item_id": item_id,
                  "output_index": index, "summary_index": 0,
                  "part": {"type": "summary_text", "text": text}})
            item = {"id": item_id, "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": text}],
                    "encrypted_content": None}
        elif itype == "function_call":
            item_id = str(spec.get("id") or _new_id("fc"))
            call_id = str(spec.get("call_id") or _new_id("call"))
            args = spec.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args)
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                           "name": spec["name"], "arguments": "", "call_id": call_id}})
            for piece in _chunks(arguments, chunk):
                emit({"type": "response.function_call_arguments.delta", "item_id": item_id,
                      "output_index": index, "delta": piece})
            emit({"type": "response.function_call_arguments.done", "item_id": item_id,
                  "output_index": index, "arguments": arguments})
            item = {"id": item_id, "type": "function_call", "status": "completed",
                    "name": spec["name"], "arguments": arguments, "call_id": call_id}
        elif itype == "custom_tool_call":
            item_id = str(spec.get("id") or _new_id("ctc"))
            call_id = str(spec.get("call_id") or _new_id("call"))
            tool_input = str(spec.get("input", ""))
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "custom_tool_call", "status": "in_progress",
                           "call_id": call_id, "name": spec["name"], "input": ""}})
            for piece in _chunks(tool_input, chunk):
                emit({"type": "response.custom_tool_call_input.delta", "item_id": item_id,
                      "output_index": index, "delta": piece})
            emit({"type": "response.custom_tool_call_input.done", "item_id": item_id,
                  "output_index": index, "input": tool_input})
            item = {"id": item_id, "type": "custom_tool_call", "status": "completed",
                    "call_id": call_id, "name": spec["name"], "input": tool_input}
        else:
            raise ValueError(f"unknown output item type {itype!r}")
        emit({"type": "response.output_item.done", "output_index": index, "item": item})
        return item


@contextlib.contextmanager
def serve(
    script: Any,
    *,
    log_path: str | Path | None = None,
    substitutions: Mapping[str, str] | None = None,
    port: int = 0,
) -> Iterator[MockOpenAI]:
    """Run the mock on an ephemeral 127.0.0.1 port for the duration of the block."""
    server = MockOpenAI(script, port=port, log_path=log_path, substitutions=substitutions)
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
    server = MockOpenAI(script, host=args.host, port=args.port, log_path=args.log,
                        substitutions=subs)
    print(f"base_url=http://{args.host}:{server.port}/v1", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
