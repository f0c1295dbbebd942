"""A scriptable mock of the OpenAI **Chat Completions** API (stdlib only), for driving the
real Pi CLI (``api: "openai-completions"``) and Relay's own Chat Completions clients on
loopback.

What it answers
---------------
* ``POST /v1/chat/completions``: the next scripted turn. With ``"stream": true`` an SSE
  stream of ``chat.completion.chunk`` objects (``data: {...}`` lines, no event names):
  a role chunk, ``choices[0].delta.reasoning_content`` pieces, ``delta.content`` pieces,
  ``delta.tool_calls`` (first piece carries ``index``/``id``/``type``/``function.name``,
  later pieces only ``function.arguments``), a chunk with ``finish_reason`` (``stop`` or
  ``tool_calls``), then — when ``stream_options.include_usage`` — a usage chunk with
  ``choices: []``, then ``data: [DONE]``. Without ``stream`` one ``chat.completion``
  object (``message.content``, ``message.tool_calls``, ``usage``).
  An error turn answers with its HTTP status, headers (e.g. ``retry-after``) and an
  OpenAI-style JSON error body.
* ``GET /v1/models``: ``{"object": "list", "data": [{"id": ..., "object": "model"}]}`` for the
  ``models`` list given to the server (default ``["mock-model"]``).
* ``HEAD`` anything: 200. Anything else: 404 with an OpenAI-style JSON error.

Script (stable format — other adapters' tests depend on it)
------------------------------------------------------------
``{"turns": [turn, ...], "default": turn}`` or a bare list of turns. Each POST consumes the
first remaining turn; when none is left ``default`` is served, otherwise an HTTP 400
``invalid_request_error`` "mock script exhausted".

Reply turn (all keys optional)::

    {"reasoning": "thinking text",               # delta.reasoning_content pieces first
     "text": "final answer",                     # delta.content pieces
     "tool_calls": [                             # after the text
        {"name": "bash", "arguments": {"command": "echo hi"},   # dict or JSON string
         "id": "call_1"}],                       # id optional (generated)
     "finish_reason": "stop",                    # default: "tool_calls" if any, else "stop"
     "usage": {"prompt_tokens": 1100, "cached_tokens": 800,
               "completion_tokens": 25, "reasoning_tokens": 0},
     "headers": {"x-ratelimit-remaining-requests": "59"},   # extra response headers
     "chunk": 8}                                 # content / argument pieces of n characters

Failure turns::

    {"error": {"status": 429, "headers": {"retry-after": "1"},
               "body": {"error": {"message": "Rate limit reached ...", "type": "requests",
                                  "code": "rate_limit_exceeded"}}}}   # or "body_text": "..."
    {"disconnect": true, "text": "Partial "}   # 200, the text, then the stream closes
                                               # (no finish_reason, no usage, no [DONE])
    {"hang_s": 8}                               # 200, role chunk, then silence for 8 s

An error turn without ``body`` gets a default body per status (429 ``rate_limit_exceeded``,
500 ``server_error``, 503 "The server is overloaded. Please try again later.").

Common keys: ``"repeat": n`` (``-1`` = forever, default 1), ``"delay_s": x`` (wait before
answering), ``"match": {"model_contains": "gpt"}``.

The ``{"steps": [{"kind": ...}]}`` scripts recorded in
``tests/fixtures/pi/captures/*/mock_script.json`` are accepted too (kinds ``text``,
``output``, ``http_error``, ``disconnect``, ``hang``; ``times`` = ``repeat``).

Strings ``@now+N`` / ``@iso+N`` are expanded when served; ``substitutions`` apply at load.

Use
---
::

    with serve({"turns": [{"text": "hi"}]}) as mock:
        base_url = mock.base_url                 # http://127.0.0.1:<port>/v1
        ...
        assert mock.completion_requests()[0]["body"]["model"] == "mock-model"

By hand: ``python -m tests.fakes.mock_chat_completions --script s.json --port 8767``.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from typing import Any, ClassVar

from tests.fakes import mock_http
from tests.fakes.mock_http import JSONDict, MockHandler, MockServer, Route, chunks, cli_main, new_id

__all__ = ["JSONDict", "MockChatCompletions", "main", "normalise_script", "serve"]

DISCONNECT_TEXT = "Partial "

_DEFAULT_ERRORS: dict[int, JSONDict] = {
    429: {"message": "Rate limit reached for requests. Please try again in 1s.",
          "type": "requests", "param": None, "code": "rate_limit_exceeded"},
    500: {"message": "The server had an error while processing your request.",
          "type": "server_error", "param": None, "code": None},
    503: {"message": "The server is overloaded. Please try again later.",
          "type": "server_error", "param": None, "code": None},
}


def _from_step(step: JSONDict) -> JSONDict:
    """Translate a recorded ``{"kind": ...}`` step into a turn."""
    kind = step.get("kind")
    turn: JSONDict = {k: v for k, v in step.items()
                      if k in ("headers", "usage", "match", "delay_s", "chunk", "repeat")}
    if "times" in step:
        turn["repeat"] = step["times"]
    if kind in ("text", "output"):
        turn.update({k: step[k] for k in ("text", "reasoning", "tool_calls", "finish_reason")
                     if k in step})
    elif kind == "http_error":
        err: JSONDict = {"status": step.get("status", 500), "headers": step.get("headers", {})}
        for key in ("body", "body_text"):
            if key in step:
                err[key] = step[key]
        turn["error"] = err
        turn.pop("headers", None)
    elif kind == "disconnect":
        turn["disconnect"] = True
        turn["text"] = step.get("text", DISCONNECT_TEXT)
    elif kind == "hang":
        turn["hang_s"] = step.get("seconds", 30)
    else:
        raise ValueError(f"unknown step kind {kind!r}")
    return turn


def _convert(turn: JSONDict) -> JSONDict:
    return _from_step(turn) if "kind" in turn else copy.deepcopy(turn)


def normalise_script(script: Any) -> JSONDict:
    """``{"turns": [...], "default": {...}}``, a bare list, or recorded ``{"steps": [...]}``."""
    return mock_http.normalise_script(script, convert=_convert, turn_keys=("turns", "steps"))


def _usage(turn: JSONDict) -> JSONDict:
    u = {"prompt_tokens": 1100, "cached_tokens": 800, "completion_tokens": 25,
         "reasoning_tokens": 0}
    u.update(turn.get("usage") or {})
    prompt, completion = int(u["prompt_tokens"]), int(u["completion_tokens"])
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": int(u.get("total_tokens", prompt + completion)),
        "prompt_tokens_details": {"cached_tokens": int(u["cached_tokens"])},
        "completion_tokens_details": {"reasoning_tokens": int(u["reasoning_tokens"])},
    }


def _tool_calls(turn: JSONDict) -> list[JSONDict]:
    """The scripted tool calls with ids and JSON-string arguments."""
    out = []
    for spec in turn.get("tool_calls") or []:
        args = spec.get("arguments", {})
        out.append({"id": str(spec.get("id") or new_id("call_")), "type": "function",
                    "function": {"name": str(spec["name"]),
                                 "arguments": args if isinstance(args, str) else json.dumps(args)}})
    return out


def _finish_reason(turn: JSONDict, calls: list[JSONDict]) -> str:
    return str(turn.get("finish_reason") or ("tool_calls" if calls else "stop"))


class _Handler(MockHandler):
    server_version = "MockChatCompletions/1.0"
    request_id_header = "x-request-id"
    request_id_prefix = "req_"
    json_request_id = True

    def _route(self, method: str, path: str) -> Route | None:
        return {("GET", "/v1/models"): self._models,
                ("POST", "/v1/chat/completions"): self._serve_turn}.get((method, path))

    def _error_payload(self, status: int, message: str) -> JSONDict:
        code = "not_found" if status == 404 else None
        return {"error": {"message": message, "type": "invalid_request_error",
                          "param": None, "code": code}}

    def _models(self, body: JSONDict | None, raw: str | None) -> None:
        self._log_request(None, None, 200, "models")
        ids = getattr(self.mock, "model_ids", ("mock-model",))
        self._send_json(200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "mock"} for m in ids]})

    def _turn_kind(self, turn: JSONDict, body: JSONDict) -> str:
        for key in ("error", "disconnect", "hang_s"):
            if turn.get(key):
                return key
        return "stream" if body.get("stream") else "json"

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        model = str(body.get("model") or "mock-model")
        if kind == "error":
            err = turn["error"]
            headers = {**self._request_id(), **(err.get("headers") or {})}
            if "body_text" in err:
                self._send_bytes(status, str(err["body_text"]).encode(), "text/plain", headers)
                return
            default = _DEFAULT_ERRORS.get(status, {"message": f"mock error {status}",
                                                   "type": "server_error", "param": None,
                                                   "code": None})
            self._send_json(status, err.get("body") or {"error": default}, headers)
        elif kind == "json":
            self._complete(turn, model)
        else:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(turn, kind, model, include_usage)

    def _complete(self, turn: JSONDict, model: str) -> None:
        calls = _tool_calls(turn)
        message: JSONDict = {"role": "assistant", "content": turn.get("text") or None,
                             "refusal": None}
        if turn.get("reasoning"):
            message["reasoning_content"] = turn["reasoning"]
        if calls:
            message["tool_calls"] = calls
        self._send_json(200, {
            "id": new_id("chatcmpl-"), "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": _finish_reason(turn, calls)}],
            "usage": _usage(turn)}, turn.get("headers"))

    def _stream(self, turn: JSONDict, kind: str, model: str, include_usage: bool) -> None:
        self._start_sse(turn.get("headers"))
        base = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}

        def emit(delta: JSONDict, finish: str | None = None) -> None:
            self._data({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                             "finish_reason": finish}]})

        emit({"role": "assistant", "content": ""})
        if kind == "hang_s":
            self.mock._wait(float(turn["hang_s"]))
            return
        size = int(turn.get("chunk") or 0)
        if turn.get("reasoning"):
            for piece in chunks(str(turn["reasoning"]), size):
                emit({"reasoning_content": piece})
        if turn.get("text"):
            for piece in chunks(str(turn["text"]), size):
                emit({"content": piece})
        if kind == "disconnect":
            return
        calls = _tool_calls(turn)
        for index, call in enumerate(calls):
            fn = call["function"]
            emit({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                  "function": {"name": fn["name"], "arguments": ""}}]})
            for piece in chunks(fn["arguments"], size):
                emit({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        emit({}, _finish_reason(turn, calls))
        if include_usage:
            self._data({**base, "choices": [], "usage": _usage(turn)})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _data(self, payload: JSONDict) -> None:
        self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
        self.wfile.flush()


class MockChatCompletions(MockServer):
    """The mock server. Use :func:`serve` (context manager) or ``start()`` / ``stop()``.
    ``base_url`` ends in ``/v1`` (what an OpenAI-compatible client's base URL must be)."""

    handler_class = _Handler
    base_path = "/v1"
    thread_name = "mock-chat-completions"
    model_ids: ClassVar[tuple[str, ...]] = ("mock-model",)

    @classmethod
    def normalise(cls, script: Any) -> JSONDict:
        return normalise_script(script)

    def completion_requests(self) -> list[JSONDict]:
        """Only the ``POST /v1/chat/completions`` requests."""
        return self.requests_to("/v1/chat/completions")


serve = MockChatCompletions.serving


def main(argv: list[str] | None = None) -> int:
    return cli_main(MockChatCompletions, argv, __doc__, "base_url")


if __name__ == "__main__":
    sys.exit(main())
