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
``"match": {"model_contains": "opus"}`` restricts the turn to matching requests;
``"match": {"credential": "key"}`` to requests made with that credential (the
``x-api-key`` header, else the ``Authorization: Bearer`` token — see
:func:`request_credential`), so one mock can answer two accounts differently;
``"match": {"has_tools": true}`` to requests that offer the model tools (the interactive
CLI also asks, without tools, for a title of the conversation — ``false`` matches those).

Strings of the form ``@now+N`` / ``@iso+N`` (N seconds, sign optional) are replaced when
served by the epoch seconds / an ISO-8601 UTC time N seconds from now, so usage-limit
headers such as ``anthropic-ratelimit-unified-reset: "@now+7200"`` stay in the future.
``substitutions`` (e.g. ``{"<CWD>": "/path/to/repo"}``) are applied to every string of
the script at load time, so the recorded ``mock_script.json`` files can be reused.

This is the same script format as the ``mock_script.json`` files in
``tests/fixtures/claude/captures``.

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

import json
import math
import sys
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from tests.fakes.mock_http import (
    JSONDict,
    MockHandler,
    MockServer,
    Route,
    chunks,
    cli_main,
    new_id,
    normalise_script,
)

__all__ = ["JSONDict", "MockAnthropic", "main", "normalise_script", "request_credential", "serve"]

#: The credential of the request the current handler thread is serving (each request is
#: served on its own thread), read by :meth:`MockAnthropic._next_turn`.
_serving = threading.local()


def request_credential(headers: Mapping[str, Any]) -> str | None:
    """The request's credential: ``x-api-key``, else the ``Authorization: Bearer`` token.

    ``headers`` is a request's headers, e.g. a recorded request's ``headers`` dict (names
    are matched case-insensitively)."""
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if lowered.get("x-api-key"):
        return lowered["x-api-key"]
    scheme, _, token = lowered.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


class _Handler(MockHandler):
    server_version = "MockAnthropic/1.0"
    request_id_header = "request-id"
    request_id_prefix = "req_mock"
    json_request_id = True
    sse_content_type = "text/event-stream; charset=utf-8"

    def _serve_turn(self, body: JSONDict | None, raw: str | None) -> None:
        _serving.credential = request_credential(dict(self.headers.items()))
        try:
            super()._serve_turn(body, raw)
        finally:
            _serving.credential = None

    def _route(self, method: str, path: str) -> Route | None:
        if method != "POST":
            return None
        return {"/v1/messages": self._serve_turn,
                "/v1/messages/count_tokens": self._count_tokens}.get(path)

    def _error_payload(self, status: int, message: str) -> JSONDict:
        kind = "not_found_error" if status == 404 else "invalid_request_error"
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _count_tokens(self, body: JSONDict | None, raw: str | None) -> None:
        tokens = max(1, len(json.dumps(body or {})) // 4)
        self._log_request(body, raw, 200, "count_tokens")
        self._send_json(200, {"input_tokens": tokens})

    def _turn_kind(self, turn: JSONDict, body: JSONDict) -> str:
        if "error" in turn:
            return "error"
        if "stream_error" in turn:
            return "stream_error"
        return "stream" if body.get("stream") else "json"

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        if kind == "error":
            self._error(turn["error"], status)
        elif kind == "stream_error":
            self._stream_error(turn["stream_error"], body)
        elif kind == "stream":
            self._stream(_build_message(turn, body), turn)
        else:
            self._send_json(200, _build_message(turn, body), turn.get("headers"))

    def _error(self, err: JSONDict, status: int) -> None:
        payload = err.get("body") or {
            "type": "error",
            "error": {"type": err.get("type", "api_error"), "message": err.get("message", "Error")},
            "request_id": new_id("req_mock"),
        }
        self._send_json(status, payload, err.get("headers"))

    def _block_start(self, index: int, block: JSONDict) -> None:
        self._sse({"type": "content_block_start", "index": index, "content_block": block})

    def _block_delta(self, index: int, delta: JSONDict) -> None:
        self._sse({"type": "content_block_delta", "index": index, "delta": delta})

    def _stream_error(self, err: JSONDict, body: JSONDict) -> None:
        self._start_sse(None)
        message = _build_message({"text": err.get("after_text", "")}, body)
        start = {**message, "content": [], "stop_reason": None}
        start["usage"] = {**message["usage"], "output_tokens": 1}
        self._sse({"type": "message_start", "message": start})
        if err.get("after_text"):
            self._block_start(0, {"type": "text", "text": ""})
            self._block_delta(0, {"type": "text_delta", "text": err["after_text"]})
        self._sse({"type": "error", "error": {
            "type": err.get("type", "overloaded_error"),
            "message": err.get("message", "Overloaded")}})

    def _stream(self, message: JSONDict, turn: JSONDict) -> None:
        chunk = int(turn.get("chunk") or 0)
        self._start_sse(turn.get("headers"))
        start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
        start["usage"] = {**message["usage"], "output_tokens": 1}
        self._sse({"type": "message_start", "message": start})
        self._sse({"type": "ping"})
        for index, block in enumerate(message["content"]):
            btype = block["type"]
            if btype == "text":
                self._block_start(index, {"type": "text", "text": ""})
                for piece in chunks(block["text"], chunk):
                    self._block_delta(index, {"type": "text_delta", "text": piece})
            elif btype == "thinking":
                self._block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
                for piece in chunks(block["thinking"], chunk):
                    self._block_delta(index, {"type": "thinking_delta", "thinking": piece})
                self._block_delta(index, {"type": "signature_delta",
                                          "signature": block["signature"]})
            elif btype == "tool_use":
                self._block_start(index, {"type": "tool_use", "id": block["id"],
                                          "name": block["name"], "input": {}})
                for piece in chunks(json.dumps(block["input"]), chunk):
                    self._block_delta(index, {"type": "input_json_delta", "partial_json": piece})
            self._sse({"type": "content_block_stop", "index": index})
        self._sse({
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": message["usage"]})
        self._sse({"type": "message_stop"})


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
        content.append({"type": "tool_use", "id": str(call.get("id") or new_id("toolu_mock")),
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
        "id": new_id("msg_mock"),
        "type": "message",
        "role": "assistant",
        "model": str(turn.get("model") or body.get("model") or "claude-mock"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


class MockAnthropic(MockServer):
    """The mock server. Use :func:`serve` (context manager) or ``start()`` / ``stop()``.
    ``base_url`` is what ``ANTHROPIC_BASE_URL`` must be (no trailing slash, no ``/v1``)."""

    handler_class = _Handler
    thread_name = "mock-anthropic"

    def message_requests(self) -> list[JSONDict]:
        """Only the ``POST /v1/messages`` requests (not count_tokens, HEAD, ...)."""
        return self.requests_to("/v1/messages")

    def _matches(self, match: JSONDict, body: JSONDict | None) -> bool:
        """:meth:`MockServer._matches` plus ``match.credential`` and ``match.has_tools`` (see
        the module doc)."""
        if "credential" in match and match["credential"] != getattr(_serving, "credential", None):
            return False
        if "has_tools" in match and bool((body or {}).get("tools")) != bool(match["has_tools"]):
            return False
        return super()._matches(match, body)


serve = MockAnthropic.serving


def main(argv: list[str] | None = None) -> int:
    return cli_main(MockAnthropic, argv, __doc__, "ANTHROPIC_BASE_URL")


if __name__ == "__main__":
    sys.exit(main())
