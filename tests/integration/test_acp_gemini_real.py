"""The real Gemini CLI 0.61.0 in ACP mode (``gemini --acp``) driven by the ACP adapter,
against a minimal loopback mock of the Gemini API (``streamGenerateContent?alt=sse``).

The mock answers every main turn with one text part (the shape recorded in
tests/fixtures/gemini); Gemini's auth type is pinned in its settings because a
custom base URL otherwise selects the ``gateway`` auth type (fixtures NOTES).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from relay.core.events import AgentEvent, AssistantText, SessionEnded, SessionStarted
from relay.runtimes.acp_agents import GeminiAcpAdapter
from relay.runtimes.base import RunRequest
from tests.integration.helpers import locate_cli

pytestmark = pytest.mark.integration

GEMINI_VERSION = "0.61.0"
ANSWER = "Hello over ACP from the mock Gemini."
SETTINGS = {"general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "maxAttempts": 1},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "security": {"auth": {"selectedType": "gemini-api-key"}}}


class _Handler(BaseHTTPRequestHandler):
    paths: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.paths.append(self.path)
        if ":streamGenerateContent" not in self.path:
            self.send_error(404)
            return
        chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]},
                                 "index": 0, "finishReason": "STOP"}],
                 "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 8,
                                   "totalTokenCount": 18},
                 "modelVersion": "gemini-2.5-pro"}
        body = f"data: {json.dumps(chunk)}\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def mock_gemini() -> Iterator[tuple[str, list[str]]]:
    paths: list[str] = []
    handler = type("Handler", (_Handler,), {"paths": paths})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="mock-gemini-acp", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_gemini_acp_turn_against_a_loopback_mock(
        mock_gemini: tuple[str, list[str]], tmp_path: Path, git_repo: Path) -> None:
    exe = locate_cli("gemini", GEMINI_VERSION)
    base_url, paths = mock_gemini
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TMPDIR": str(tmp_path),
           "GEMINI_API_KEY": "test-key-not-secret", "GOOGLE_GEMINI_BASE_URL": base_url,
           "RELAY_GEMINI_ACP_BIN": str(exe), "TZ": "UTC"}
    adapter = GeminiAcpAdapter(env)
    events: list[AgentEvent] = [e async for e in adapter.run(
        RunRequest(prompt="Say hello", cwd=git_repo, model="gemini-2.5-pro",
                   inactivity_timeout=120))]
    started = next(e for e in events if isinstance(e, SessionStarted))
    assert started.version == GEMINI_VERSION
    assert started.agent_session_id
    end = events[-1]
    assert isinstance(end, SessionEnded)
    assert end.outcome == "completed", end.reason
    texts = [e.text for e in events if isinstance(e, AssistantText) and not e.reasoning]
    assert ANSWER in "".join(texts)
    assert any("gemini-2.5-pro:streamGenerateContent" in p for p in paths)
