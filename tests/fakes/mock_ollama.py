"""A scriptable mock of Ollama's HTTP API (stdlib only), on loopback.

What it answers
---------------
* ``POST /api/chat``: the next scripted turn as NDJSON (``application/x-ndjson``): one line
  per content piece (``{"model", "created_at", "message": {"role": "assistant",
  "content": piece}, "done": false}``), then a line whose ``message`` carries
  ``tool_calls`` (``[{"function": {"name", "arguments": {...}}}]`` — objects, no ids,
  as Ollama sends them), then the ``done`` line with ``done_reason``,
  ``prompt_eval_count``, ``eval_count`` and the durations. With ``"stream": false`` one
  JSON object. A request with ``tools`` for a model in ``no_tools`` answers 400
  ``{"error": "registry.ollama.ai/library/<model> does not support tools"}`` (what
  Ollama says) without consuming a turn.
* ``GET /api/tags``: ``{"models": [{"name", "model", "size", "details"...}]}`` for the
  server's ``models``; ``GET /api/version``: ``{"version": "0.12.3"}``.
* Anything else: 404 ``{"error": "..."}``.

Script: ``{"turns": [...], "default": turn}`` or a bare list (see :mod:`tests.fakes.mock_http`)::

    {"text": "answer", "thinking": "...", "chunk": 8,
     "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
     "usage": {"prompt_eval_count": 120, "eval_count": 30}, "done_reason": "stop"}
    {"error": {"status": 500, "message": "model runner crashed"}}   # HTTP error
    {"stream_error": "out of memory", "text": "Partial"}           # an error line mid-stream
    {"malformed": true}                                            # a line that is not JSON
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tests.fakes.mock_http import JSONDict, MockHandler, MockServer, Route, chunks, cli_main

__all__ = ["MockOllama", "serve"]

VERSION = "0.12.3"


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())


class _Handler(MockHandler):
    server_version = "MockOllama/1.0"

    def _route(self, method: str, path: str) -> Route | None:
        return {("GET", "/api/tags"): self._tags, ("GET", "/api/version"): self._version,
                ("POST", "/api/chat"): self._chat}.get((method, path))

    def _error_payload(self, status: int, message: str) -> JSONDict:
        return {"error": message}

    def _tags(self, body: JSONDict | None, raw: str | None) -> None:
        self._log_request(None, None, 200, "tags")
        mock: MockOllama = self.mock  # type: ignore[assignment]
        self._send_json(200, {"models": [
            {"name": m, "model": m, "modified_at": _stamp(), "size": 4_000_000_000,
             "digest": "0" * 64, "details": {"format": "gguf", "family": m.split(":")[0]}}
            for m in mock.models]})

    def _version(self, body: JSONDict | None, raw: str | None) -> None:
        self._log_request(None, None, 200, "version")
        self._send_json(200, {"version": VERSION})

    def _chat(self, body: JSONDict | None, raw: str | None) -> None:
        mock: MockOllama = self.mock  # type: ignore[assignment]
        model = str((body or {}).get("model", ""))
        if (body or {}).get("tools") and model in mock.no_tools:
            self._log_request(body, raw, 400, "no_tools")
            self._send_json(400, {"error": f"registry.ollama.ai/library/{model} does not "
                                           "support tools"})
            return
        self._serve_turn(body, raw)

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        model = str(body.get("model") or "mock")
        if kind == "error":
            err = turn["error"]
            self._send_json(status, {"error": err.get("message", "mock error")},
                            err.get("headers"))
            return
        lines = _lines(turn, model)
        if not body.get("stream", True):
            final = dict(lines[-1])
            final["message"] = {"role": "assistant", "content": turn.get("text", ""),
                                "tool_calls": _calls(turn) or None}
            self._send_json(200, final)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for line in lines:
            self.wfile.write((json.dumps(line) + "\n").encode())
            self.wfile.flush()
        if turn.get("malformed"):
            self.wfile.write(b"{not json\n")
            self.wfile.flush()


def _calls(turn: JSONDict) -> list[JSONDict]:
    return [{"function": {"name": c["name"], "arguments": c.get("arguments", {})}}
            for c in turn.get("tool_calls") or []]


def _lines(turn: JSONDict, model: str) -> list[JSONDict]:
    def chunk(message: JSONDict, done: bool = False, **extra: Any) -> JSONDict:
        return {"model": model, "created_at": _stamp(), "message": message, "done": done,
                **extra}

    size = int(turn.get("chunk") or 0)
    out = [chunk({"role": "assistant", "content": "", "thinking": piece})
           for piece in (chunks(turn["thinking"], size) if turn.get("thinking") else [])]
    out += [chunk({"role": "assistant", "content": piece})
            for piece in (chunks(turn["text"], size) if turn.get("text") else [])]
    if turn.get("stream_error"):
        return [*out, {"error": turn["stream_error"]}]
    if turn.get("malformed"):
        return out
    if turn.get("tool_calls"):
        out.append(chunk({"role": "assistant", "content": "", "tool_calls": _calls(turn)}))
    usage = {"prompt_eval_count": 120, "eval_count": 30, **(turn.get("usage") or {})}
    out.append(chunk({"role": "assistant", "content": ""}, True,
                     done_reason=turn.get("done_reason", "stop"), total_duration=1_500_000_000,
                     load_duration=1_000_000, prompt_eval_duration=200_000_000,
                     eval_duration=900_000_000, **usage))
    return out


class MockOllama(MockServer):
    """``base_url`` is what ``OLLAMA_HOST`` must be (``http://127.0.0.1:<port>``)."""

    handler_class = _Handler
    thread_name = "mock-ollama"
    #: what /api/tags lists
    models: tuple[str, ...] = ("qwen3-coder:30b", "gemma2:2b")
    #: models that answer 400 "does not support tools" to a request with tools
    no_tools: frozenset[str] = frozenset({"gemma2:2b"})

    def chat_requests(self) -> list[JSONDict]:
        return self.requests_to("/api/chat")


serve = MockOllama.serving


def main(argv: list[str] | None = None) -> int:
    return cli_main(MockOllama, argv, __doc__, "OLLAMA_HOST")


if __name__ == "__main__":
    sys.exit(main())
