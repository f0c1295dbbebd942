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
``tests/fixtures/codex/captures/*/mock_script.json`` are accepted too (kinds ``text``,
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

import copy
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from tests.fakes import mock_http
from tests.fakes.mock_http import JSONDict, MockHandler, MockServer, Route, chunks, cli_main, new_id

__all__ = ["JSONDict", "MockOpenAI", "main", "normalise_script", "serve"]


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


def _convert(turn: JSONDict) -> JSONDict:
    return _from_step(turn) if "kind" in turn else copy.deepcopy(turn)


def normalise_script(script: Any) -> JSONDict:
    """``{"turns": [...], "default": {...}}``, a bare list, or recorded ``{"steps": [...]}``."""
    return mock_http.normalise_script(script, convert=_convert, turn_keys=("turns", "steps"))


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


Emit = Callable[[JSONDict], None]


class _Handler(MockHandler):
    server_version = "MockOpenAI/1.0"
    request_id_header = "x-request-id"
    request_id_prefix = "req_"

    def _route(self, method: str, path: str) -> Route | None:
        return {("GET", "/v1/models"): self._models,
                ("POST", "/v1/responses"): self._serve_turn}.get((method, path))

    def _error_payload(self, status: int, message: str) -> JSONDict:
        code = "not_found" if status == 404 else None
        return {"error": {"message": message, "type": "invalid_request_error", "code": code}}

    def _models(self, body: JSONDict | None, raw: str | None) -> None:
        self._log_request(None, None, 200, "models")
        self._send_json(200, {"object": "list", "data": [], "models": []})

    def _turn_kind(self, turn: JSONDict, body: JSONDict) -> str:
        return next((k for k in ("error", "failed", "disconnect", "hang_s") if turn.get(k)),
                    "output")

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        if kind != "error":
            self._stream(turn, kind, body.get("model"))
            return
        err = turn["error"]
        headers = {**self._request_id(), **(err.get("headers") or {})}
        if "body_text" in err:
            self._send_bytes(status, str(err["body_text"]).encode(), "text/plain", headers)
        else:
            self._send_json(status, err.get("body") or {"error": {
                "message": "mock error", "type": "server_error", "code": None}}, headers)

    def _stream(self, turn: JSONDict, kind: str, model: Any) -> None:
        self._start_sse(turn.get("headers"))
        seq = iter(range(1_000_000))
        resp_id = new_id("resp_")
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

    def _emit_item(self, emit: Emit, index: int, spec: JSONDict, chunk: int) -> JSONDict:
        itype = spec.get("type", "message")
        if itype == "message":
            item_id = str(spec.get("id") or new_id("msg_"))
            text = str(spec.get("text", ""))
            extra = {"phase": spec["phase"]} if spec.get("phase") else {}
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "message", "status": "in_progress",
                           "role": "assistant", "content": [], **extra}})
            part = {"type": "output_text", "text": "", "annotations": []}
            emit({"type": "response.content_part.added", "item_id": item_id,
                  "output_index": index, "content_index": 0, "part": part})
            for piece in chunks(text, chunk):
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
            item_id = str(spec.get("id") or new_id("rs_"))
            text = str(spec.get("text", ""))
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "reasoning", "summary": []}})
            emit({"type": "response.reasoning_summary_part.added", "item_id": item_id,
                  "output_index": index, "summary_index": 0,
                  "part": {"type": "summary_text", "text": ""}})
            for piece in chunks(text, chunk):
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
            item_id = str(spec.get("id") or new_id("fc_"))
            call_id = str(spec.get("call_id") or new_id("call_"))
            args = spec.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args)
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "function_call", "status": "in_progress",
                           "name": spec["name"], "arguments": "", "call_id": call_id}})
            for piece in chunks(arguments, chunk):
                emit({"type": "response.function_call_arguments.delta", "item_id": item_id,
                      "output_index": index, "delta": piece})
            emit({"type": "response.function_call_arguments.done", "item_id": item_id,
                  "output_index": index, "arguments": arguments})
            item = {"id": item_id, "type": "function_call", "status": "completed",
                    "name": spec["name"], "arguments": arguments, "call_id": call_id}
        elif itype == "custom_tool_call":
            item_id = str(spec.get("id") or new_id("ctc_"))
            call_id = str(spec.get("call_id") or new_id("call_"))
            tool_input = str(spec.get("input", ""))
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": item_id, "type": "custom_tool_call", "status": "in_progress",
                           "call_id": call_id, "name": spec["name"], "input": ""}})
            for piece in chunks(tool_input, chunk):
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


class MockOpenAI(MockServer):
    """The mock server. Use :func:`serve` (context manager) or ``start()`` / ``stop()``.
    ``base_url`` is what a codex provider's ``base_url`` must be (it ends in ``/v1``)."""

    handler_class = _Handler
    base_path = "/v1"
    thread_name = "mock-openai"

    @classmethod
    def normalise(cls, script: Any) -> JSONDict:
        return normalise_script(script)

    def response_requests(self) -> list[JSONDict]:
        """Only the ``POST /v1/responses`` requests."""
        return self.requests_to("/v1/responses")


serve = MockOpenAI.serving


def main(argv: list[str] | None = None) -> int:
    return cli_main(MockOpenAI, argv, __doc__, "base_url")


if __name__ == "__main__":
    sys.exit(main())
