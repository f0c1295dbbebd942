"""The loopback Gemini API mock (tests/fakes/mock_gemini.py) speaks the recorded wire format.

The real CLI's side is in tests/integration/test_gemini_real.py; these check the mock alone,
against what ``tests/fixtures/gemini/NOTES.md`` and the captures' requests show.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.conftest import fixtures_root
from tests.fakes import mock_gemini
from tests.fakes.mock_gemini import MockGemini

CAPTURES = fixtures_root() / "gemini" / "captures"
STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"


def post(mock: MockGemini, path: str, body: dict[str, Any] | None = None) -> tuple[int, str]:
    data = json.dumps(body or {"contents": []}).encode()
    request = urllib.request.Request(mock.base_url + path, data=data, method="POST",
                                     headers={"content-type": "application/json",
                                              "x-goog-api-key": "k"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line.removeprefix("data: ")) for line in text.split("\r\n\r\n")
            if line.startswith("data: ")]


def parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = chunk["candidates"][0]["content"]["parts"]
    return found


def test_text_streams_in_chunks_with_usage_on_the_last() -> None:
    script = json.loads((CAPTURES / "a_text_stream_json" / "mock_script.json").read_text())
    with mock_gemini.serve(script) as mock:
        status, text = post(mock, STREAM)
        (request,) = mock.stream_requests()
    assert status == 200
    chunks = sse(text)
    assert parts(chunks[0]) == [{"text": "**Greeting** Considering how to greet.", "thought": True}]
    assert [parts(c)[0]["text"] for c in chunks[1:]] == ["Hello from the m", "ock Gemini model", "."]
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    last = chunks[-1]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"] == {"promptTokenCount": 1500, "candidatesTokenCount": 30,
                                     "totalTokenCount": 1560, "cachedContentTokenCount": 1000,
                                     "thoughtsTokenCount": 30}
    assert last["modelVersion"] == "gemini-2.5-pro"
    assert request["query"] == {"alt": "sse"}
    assert {k.lower(): v for k, v in request["headers"].items()}["x-goog-api-key"] == "k"


def test_function_calls_follow_the_text() -> None:
    script = json.loads((CAPTURES / "b_tools_yolo" / "mock_script.json").read_text())
    with mock_gemini.serve(script) as mock:
        _, first = post(mock, STREAM)
    calls = [p["functionCall"] for c in sse(first) for p in parts(c) if "functionCall" in p]
    assert calls == [{"name": "run_shell_command",
                      "args": {"command": "echo hi", "description": "Print hi"}}]


def test_quota_errors_carry_the_google_details() -> None:
    script = json.loads((CAPTURES / "d_429_daily_quota" / "mock_script.json").read_text())
    with mock_gemini.serve(script) as mock:
        status, text = post(mock, STREAM)
    assert status == 429
    error = json.loads(text)["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    assert "PerDay" in error["details"][0]["violations"][0]["quotaId"]
    built = mock_gemini.quota_error(per_day=False, retry_s=2)["error"]["body"]["error"]
    assert built["details"][-1] == {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                    "retryDelay": "2s"}
    assert "PerMinute" in built["details"][0]["violations"][0]["quotaId"]


def test_a_dropped_stream_has_no_finish_reason() -> None:
    with mock_gemini.serve({"steps": [{"kind": "disconnect"}, {"kind": "text", "text": "ok"}]}) as mock:
        _, dropped = post(mock, STREAM)
        _, retried = post(mock, STREAM)
    (chunk,) = sse(dropped)
    assert parts(chunk) == [{"text": "Partial "}]
    assert "finishReason" not in chunk["candidates"][0]
    assert sse(retried)[-1]["candidates"][0]["finishReason"] == "STOP"


def test_side_calls_get_the_aux_answers() -> None:
    script = json.loads((CAPTURES / "a4_model_auto_routing" / "mock_script.json").read_text())
    with mock_gemini.serve(script) as mock:
        _, routed = post(mock, "/v1beta/models/gemini-3.5-flash-lite:generateContent")
        _, fallback = post(mock, "/v1beta/models/gemini-3.5-flash-lite:generateContent")
        assert mock.stream_requests() == []
    answer = json.loads(parts(json.loads(routed))[0]["text"])
    assert answer == {"complexity_reasoning": "simple greeting", "complexity_score": 5}
    assert "complexity_score" in json.loads(parts(json.loads(fallback))[0]["text"])


@pytest.mark.parametrize("path", ["/v1beta/models", "/v1/models/x:streamGenerateContent"])
def test_unknown_routes_are_404(path: str) -> None:
    with mock_gemini.serve({"turns": []}) as mock:
        status, text = post(mock, path)
    assert (status, json.loads(text)["error"]["status"]) == (404, "NOT_FOUND")


def test_an_exhausted_script_is_a_400() -> None:
    with mock_gemini.serve({"turns": []}) as mock:
        status, _ = post(mock, STREAM)
    assert status == 400
