"""The loopback Chat Completions mock speaks the wire format an OpenAI client expects."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.conftest import fixtures_root
from tests.fakes.mock_chat_completions import serve

PI_CAPTURES = str(fixtures_root() / "pi" / "captures")


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


def _events(raw: bytes) -> list[Any]:
    out: list[Any] = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def test_streams_reasoning_text_tool_calls_and_usage() -> None:
    turn = {"reasoning": "Hmm.", "text": "Running tools.", "chunk": 4,
            "tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}, "id": "call_a"}],
            "usage": {"prompt_tokens": 100, "cached_tokens": 40, "completion_tokens": 7}}
    with serve({"turns": [turn]}) as mock:
        status, _, raw = _post(mock.base_url, {"model": "m", "stream": True,
                                               "stream_options": {"include_usage": True}})
    assert status == 200
    events = _events(raw)
    assert events[-1] == "[DONE]"
    deltas = [e["choices"][0]["delta"] for e in events[:-1] if e["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "Hmm."
    assert "".join(d.get("content") or "" for d in deltas) == "Running tools."
    calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
    assert calls[0]["id"] == "call_a"
    assert calls[0]["function"]["name"] == "bash"
    assert json.loads("".join(c["function"]["arguments"] for c in calls)) == {"command": "echo hi"}
    finishes = [e["choices"][0]["finish_reason"] for e in events[:-1] if e["choices"]]
    assert finishes[-1] == "tool_calls"
    usage = events[-2]
    assert usage["choices"] == []
    assert usage["usage"]["prompt_tokens"] == 100
    assert usage["usage"]["prompt_tokens_details"]["cached_tokens"] == 40
    assert usage["usage"]["total_tokens"] == 107


def test_no_usage_chunk_without_include_usage_and_non_streaming() -> None:
    with serve([{"text": "one"}, {"text": "two", "tool_calls": [{"name": "read",
                                                               "arguments": "{}"}]}]) as mock:
        _, _, raw = _post(mock.base_url, {"model": "m", "stream": True})
        status, _, raw2 = _post(mock.base_url, {"model": "m"})
        assert mock.unserved_turns() == []
        assert len(mock.completion_requests()) == 2
    assert all(e == "[DONE]" or e["choices"] for e in _events(raw))
    doc = json.loads(raw2)
    assert status == 200
    assert doc["object"] == "chat.completion"
    choice = doc["choices"][0]
    assert choice["message"]["content"] == "two"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "read"
    assert choice["finish_reason"] == "tool_calls"
    assert doc["usage"]["completion_tokens"] == 25


@pytest.mark.parametrize("status", [429, 500, 503])
def test_errors_carry_status_headers_and_openai_body(status: int) -> None:
    turn = {"error": {"status": status, "headers": {"retry-after": "3"}}}
    with serve([turn]) as mock:
        got, headers, raw = _post(mock.base_url, {"model": "m", "stream": True})
        exhausted, _, raw2 = _post(mock.base_url, {"model": "m", "stream": True})
    assert got == status
    assert {k.lower(): v for k, v in headers.items()}["retry-after"] == "3"
    assert json.loads(raw)["error"]["message"]
    assert exhausted == 400
    assert "exhausted" in json.loads(raw2)["error"]["message"]


def test_disconnect_models_and_recorded_pi_scripts() -> None:
    with open(f"{PI_CAPTURES}/e3_disconnect_then_ok/mock_script.json", encoding="utf-8") as fh:
        script = json.load(fh)
    with serve(script) as mock:
        _, _, raw = _post(mock.base_url, {"model": "m", "stream": True,
                                          "stream_options": {"include_usage": True}})
        with urllib.request.urlopen(mock.base_url + "/models", timeout=10) as resp:
            models = json.loads(resp.read())
    events = _events(raw)
    assert "[DONE]" not in events
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events) == "Partial "
    assert models["data"][0]["id"] == "mock-model"


def test_repeat_forever_serves_recorded_429s() -> None:
    with open(f"{PI_CAPTURES}/c2_429_exhausted/mock_script.json", encoding="utf-8") as fh:
        script = json.load(fh)
    with serve(script) as mock:
        codes = [_post(mock.base_url, {"model": "m", "stream": True})[0] for _ in range(3)]
    assert codes == [429, 429, 429]
