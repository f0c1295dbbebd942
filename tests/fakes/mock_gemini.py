"""A scriptable mock of the Gemini API (generativelanguage ``v1beta``, stdlib only), for
driving the real Gemini CLI 0.61.0 on loopback.

Point the CLI at it with ``GOOGLE_GEMINI_BASE_URL=<base_url>`` and any ``GEMINI_API_KEY``
(sent as ``x-goog-api-key``), with ``security.auth.selectedType`` pinned to
``gemini-api-key`` in its settings (``tests/fixtures/gemini/NOTES.md``: a base URL alone
makes the CLI derive the ``gateway`` auth type, which headless mode refuses).

What it answers
---------------
* ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (every main turn): the next
  scripted turn as server-sent events, one ``data: <GenerateContentResponse>`` per chunk —
  a thought part first (when scripted), the text in ``chunk``-character pieces (16, like the
  recorded mock), function calls, and a last chunk with ``finishReason: "STOP"`` and
  ``usageMetadata`` — or an HTTP error with a ``google.rpc`` error body, a stream that drops
  after a partial chunk (no finish reason: the CLI retries), or silence.
* ``POST /v1beta/models/<model>:generateContent`` (side calls: the router's classifier when
  ``-m`` is omitted, session titles for ``--list-sessions``): the next ``aux`` turn as one
  JSON response, else :data:`AUX_DEFAULT`.
* ``HEAD`` anything: 200; anything else: 404 with a Google-style error.

Script
------
``{"turns": [turn, ...], "aux": [turn, ...], "default": turn}``, a bare list of turns, or a
recorded ``tests/fixtures/gemini/captures/*/mock_script.json`` (``{"steps": [...],
"aux_steps": [...]}``, kinds ``text``, ``output``, ``http_error``, ``disconnect``; ``times``).

Reply turn (all keys optional)::

    {"thought": "**Plan** Considering …",         # a thought part (never streamed by the CLI)
     "text": "final answer",                      # text parts
     "parts": [{"text": "…"},                     # explicit parts, in order, instead
               {"functionCall": {"name": "write_file",
                                 "args": {"file_path": "a.txt", "content": "x"}}}],
     "usage": {"prompt": 1500, "candidates": 30, "cached": 1000, "thoughts": 30},
     "chunk": 16}

Failure turns::

    {"error": {"status": 429, "headers": {"retry-after": "2"},
               "body": {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                                  "message": "…", "details": [...]}}}}
    {"disconnect": true, "text": "Partial "}      # 200, one chunk, then the stream ends
    {"hang_s": 30}                                # 200, then silence

Common keys: ``"repeat": n`` (``-1`` = forever, default 1), ``"delay_s": x``. Helpers build
the recorded bodies: :func:`quota_error` (a ``QuotaFailure`` per-day or per-minute, with
``RetryInfo``), :func:`overloaded_error` (503 ``UNAVAILABLE``).

Use
---
::

    with serve({"turns": [{"text": "hi"}]}) as mock:
        env["GOOGLE_GEMINI_BASE_URL"] = mock.base_url
        ...
        assert mock.stream_requests()[0]["headers"]["x-goog-api-key"] == "mock-key"

By hand: ``python -m tests.fakes.mock_gemini --script s.json --port 8767 --log r.jsonl``.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
from typing import Any

from tests.fakes import mock_http
from tests.fakes.mock_http import JSONDict, MockHandler, MockServer, Route, chunks, cli_main, new_id

__all__ = ["AUX_DEFAULT", "MockGemini", "main", "normalise_script", "overloaded_error",
           "quota_error", "serve"]

#: what a side call gets when no ``aux`` turn is left: it satisfies the router's classifier
#: (``complexity_*``) and reads as a title for ``--list-sessions``
AUX_DEFAULT: JSONDict = {"text": json.dumps({
    "complexity_reasoning": "mock", "complexity_score": 5, "reasoning": "mock",
    "next_speaker": "user", "model_choice": "pro"})}
DEFAULT_USAGE = {"prompt": 1500, "candidates": 30, "cached": 1000, "thoughts": 30}
_MODEL_CALL = re.compile(
    r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)$")
_RPC = "type.googleapis.com/google.rpc."


# -------------------------------------------------------------------- bodies


def quota_error(*, per_day: bool, retry_s: int | None = 2, model: str = "gemini-2.5-pro") -> JSONDict:
    """A 429 turn with the Gemini API's quota body (``QuotaFailure``, ``Help``, ``RetryInfo``)."""
    quota_id = ("GenerateRequestsPerDayPerProjectPerModel-FreeTier" if per_day
                else "GenerateRequestsPerMinutePerProjectPerModel")
    details: list[JSONDict] = [
        {"@type": _RPC + "QuotaFailure", "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
            "quotaId": quota_id, "quotaDimensions": {"location": "global", "model": model},
            "quotaValue": "50"}]},
        {"@type": _RPC + "Help", "links": [{"description": "Learn more about Gemini API quotas",
                                            "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}]
    if retry_s is not None:
        details.append({"@type": _RPC + "RetryInfo", "retryDelay": f"{retry_s}s"})
    return {"error": {"status": 429, "body": {"error": {
        "code": 429, "status": "RESOURCE_EXHAUSTED", "details": details,
        "message": "You exceeded your current quota, please check your plan and billing details."
                   " For more information on this error, head to: "
                   "https://ai.google.dev/gemini-api/docs/rate-limits."}}}}


def overloaded_error() -> JSONDict:
    """A 503 turn: ``UNAVAILABLE`` "The model is overloaded." (retried by the CLI)."""
    return {"error": {"status": 503, "body": {"error": {
        "code": 503, "message": "The model is overloaded. Please try again later.",
        "status": "UNAVAILABLE"}}}}


# -------------------------------------------------------------------- script


def _from_step(step: JSONDict) -> JSONDict:
    """A recorded ``{"kind": ...}`` step (captures' mock_script.json) as a turn."""
    kind = step.get("kind")
    turn: JSONDict = {k: v for k, v in step.items() if k in ("usage", "delay_s", "chunk")}
    if "times" in step:
        turn["repeat"] = step["times"]
    if kind == "text":
        turn.update({k: step[k] for k in ("text", "thought") if k in step})
    elif kind == "output":
        turn["parts"] = copy.deepcopy(step.get("parts", []))
    elif kind == "http_error":
        turn["error"] = {"status": step.get("status", 500), "headers": step.get("headers", {}),
                         "body": step.get("body", {})}
    elif kind == "disconnect":
        turn.update({"disconnect": True, "text": step.get("text", "Partial ")})
    elif kind == "hang":
        turn["hang_s"] = step.get("seconds", 30)
    else:
        raise ValueError(f"unknown step kind {kind!r}")
    return turn


def _convert(turn: JSONDict) -> JSONDict:
    return _from_step(turn) if "kind" in turn else copy.deepcopy(turn)


def normalise_script(script: Any) -> JSONDict:
    """Main turns (``turns`` / ``steps``), ``aux`` turns (``aux`` / ``aux_steps``), ``default``."""
    out = mock_http.normalise_script(script, convert=_convert, turn_keys=("turns", "steps"))
    raw_aux: list[JSONDict] = next(
        (script[k] for k in ("aux", "aux_steps") if k in script), []) if isinstance(script, dict) else []
    out["aux"] = [_convert(t) for t in raw_aux]
    return out


def _usage(turn: JSONDict) -> JSONDict:
    given = {**DEFAULT_USAGE, **(turn.get("usage") or {})}
    prompt, cand = int(given["prompt"]), int(given["candidates"])
    cached, thoughts = int(given["cached"]), int(given["thoughts"])
    return {"promptTokenCount": prompt, "candidatesTokenCount": cand,
            "totalTokenCount": prompt + cand + thoughts, "cachedContentTokenCount": cached,
            "thoughtsTokenCount": thoughts}


def _parts(turn: JSONDict) -> list[JSONDict]:
    """The reply's parts in order: thought, then the explicit parts or the text."""
    parts: list[JSONDict] = []
    if turn.get("thought"):
        parts.append({"text": str(turn["thought"]), "thought": True})
    if turn.get("parts") is not None:
        parts += copy.deepcopy(list(turn["parts"]))
    elif turn.get("text") is not None:
        parts.append({"text": str(turn["text"])})
    return parts


def _response(parts: list[JSONDict], model: str, *, finish: bool, usage: JSONDict | None,
              response_id: str) -> JSONDict:
    candidate: JSONDict = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = "STOP"
    body: JSONDict = {"candidates": [candidate], "modelVersion": model, "responseId": response_id}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


# -------------------------------------------------------------------- server


class _Handler(MockHandler):
    server_version = "MockGemini/1.0"
    request_id_header = "x-goog-request-id"
    request_id_prefix = "req_"

    @property
    def gemini(self) -> MockGemini:
        mock = self.mock
        assert isinstance(mock, MockGemini)
        return mock

    def _route(self, method: str, path: str) -> Route | None:
        match = _MODEL_CALL.match(path)
        if method != "POST" or match is None:
            return None
        if match.group("method") == "generateContent":
            return self._aux
        return self._serve_turn

    def _error_payload(self, status: int, message: str) -> JSONDict:
        google = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND"}.get(status, "UNKNOWN")
        return {"error": {"code": status, "message": message, "status": google}}

    def _model(self) -> str:
        match = _MODEL_CALL.match(self.path.split("?", 1)[0])
        return match.group("model") if match else "gemini-mock"

    def _turn_kind(self, turn: JSONDict, body: JSONDict) -> str:
        return next((k for k in ("error", "disconnect", "hang_s") if turn.get(k)), "stream")

    def _answer_turn(self, turn: JSONDict, kind: str, status: int, body: JSONDict) -> None:
        if kind == "error":
            err = turn["error"]
            headers = {**self._request_id(), **(err.get("headers") or {})}
            self._send_json(status, err.get("body") or self._error_payload(status, "mock error"),
                            headers)
            return
        self._start_sse()
        model, rid = self._model(), new_id("resp_")
        if kind == "hang_s":
            self.mock._wait(float(turn["hang_s"]))
            return
        if kind == "disconnect":
            partial = str(turn.get("text") or "Partial ")
            self._data(_response([{"text": partial}], model, finish=False, usage=None,
                                 response_id=rid))
            return  # the stream ends without a finish reason
        pieces = self._pieces(turn)
        for index, part in enumerate(pieces):
            last = index == len(pieces) - 1
            self._data(_response([part], model, finish=last,
                                 usage=_usage(turn) if last else None, response_id=rid))

    def _pieces(self, turn: JSONDict) -> list[JSONDict]:
        """One part per SSE chunk, text split into ``chunk``-character pieces."""
        size = int(turn.get("chunk") or 16)
        pieces: list[JSONDict] = []
        for part in _parts(turn) or [{"text": ""}]:
            if "text" in part and not part.get("thought"):
                pieces += [{**part, "text": piece} for piece in chunks(str(part["text"]), size)]
            else:
                pieces.append(part)
        return pieces

    def _data(self, body: JSONDict) -> None:
        self.wfile.write(f"data: {json.dumps(body)}\r\n\r\n".encode())
        self.wfile.flush()

    def _aux(self, body: JSONDict | None, raw: str | None) -> None:
        turn = self.gemini.next_aux()
        self._log_request(body, raw, 200, "aux")
        answer = _response(_parts(turn), self._model(), finish=True, usage=_usage(turn),
                           response_id=new_id("resp_"))
        self._send_json(200, answer, self._request_id())


class MockGemini(MockServer):
    """The mock server. Use :func:`serve` (context manager) or ``start()`` / ``stop()``.
    ``base_url`` is what ``GOOGLE_GEMINI_BASE_URL`` must be (no path)."""

    handler_class = _Handler
    thread_name = "mock-gemini"

    def __init__(self, script: Any, **kwargs: Any) -> None:
        super().__init__(script, **kwargs)
        self._aux_turns: list[JSONDict] = list(normalise_script(script)["aux"])
        self._aux_lock = threading.Lock()

    @classmethod
    def normalise(cls, script: Any) -> JSONDict:
        return normalise_script(script)

    def next_aux(self) -> JSONDict:
        """The next ``aux`` turn, else :data:`AUX_DEFAULT`."""
        with self._aux_lock:
            if self._aux_turns:
                return mock_http.expand_time(self._aux_turns.pop(0))  # type: ignore[no-any-return]
        return copy.deepcopy(AUX_DEFAULT)

    def stream_requests(self) -> list[JSONDict]:
        """Only the main turns (``…:streamGenerateContent``), in order."""
        return [r for r in self.requests if r["path"].endswith(":streamGenerateContent")]


serve = MockGemini.serving


def main(argv: list[str] | None = None) -> int:
    return cli_main(MockGemini, argv, __doc__, "GOOGLE_GEMINI_BASE_URL")


if __name__ == "__main__":
    sys.exit(main())
