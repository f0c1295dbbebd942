"""What `relay-cli setup claude` writes, read by the real Claude Code (pinned release): the
user-scope MCP server connects to a real host through its headersHelper, and the exec-form
hooks run the hook client, which posts each event with the data folder's token.

(The whole loop — the host's hook endpoint, live states, the guard — is the issue's Claude
integration test; here only the setup's side: that Claude reads and runs what it wrote.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from relay.core.hostfile import read_host, read_token
from tests.api.test_host_process import _serve
from tests.cli.test_cli import CLI
from tests.integration.helpers import (
    _base_env,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
)

pytestmark = pytest.mark.integration


def _claude_env(tmp_path: Path, config: Path, api: str = "http://127.0.0.1:9") -> dict[str, str]:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    return {**_base_env(home, tmp), "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api,
            "CLAUDE_CODE_MAX_RETRIES": "0", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def _setup(home: Path, config: Path) -> None:
    done = subprocess.run([*CLI, "--home", str(home), "setup", "claude", "--config-dir",
                           str(config)], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, "RELAY_HOME": str(home)})
    assert done.returncode == 0, done.stderr


@pytest.fixture
def host(relay_home: Path) -> Iterator[str]:
    proc = _serve(relay_home)
    try:
        info = read_host(relay_home)
        assert info is not None
        yield info.url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def test_claude_connects_to_the_registered_mcp_server_with_the_helpers_header(
        real_claude: Path, relay_home: Path, host: str, tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    _setup(relay_home, config)
    token = read_token(relay_home)
    assert token
    assert token not in (config / ".claude.json").read_text()
    got = subprocess.run([str(real_claude), "mcp", "get", "relay"], capture_output=True,
                         text=True, timeout=120, check=False, cwd=tmp_path,
                         env=_claude_env(tmp_path, config))
    assert got.returncode == 0, got.stderr
    assert "User config" in got.stdout
    assert f"URL: {host}/mcp" in got.stdout
    assert "Connected" in got.stdout, got.stdout


def test_claude_runs_the_hooks_and_the_client_posts_each_event(
        real_claude: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    seen: list[tuple[str, str | None, dict[str, object]]] = []

    class Recorder(BaseHTTPRequestHandler):  # a stand-in for the host's hook endpoint
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.append((self.path, self.headers.get("Authorization"), json.loads(body)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = tmp_path / "claude-config"
        _setup(data, config)
        (data / "host.json").write_text(json.dumps({
            "url": f"http://127.0.0.1:{server.server_address[1]}", "pid": os.getpid()}))
        (data / "api-token").write_text("hook-token\n")
        work = tmp_path / "work"
        work.mkdir()
        run = subprocess.run([str(real_claude), "-p", "say hi"], capture_output=True,
                             text=True, timeout=180, check=False, cwd=work,
                             env=_claude_env(tmp_path, config))  # no API: the turn fails
    finally:
        server.shutdown()
        server.server_close()
    events = [event["hook_event_name"] for _path, _auth, event in seen]
    assert events[:2] == ["SessionStart", "UserPromptSubmit"], (events, run.stderr)
    assert "StopFailure" in events
    assert "SessionEnd" in events
    assert {(path, auth) for path, auth, _event in seen} == {
        ("/api/v1/hooks/claude", "Bearer hook-token")}
    assert {event["cwd"] for _p, _a, event in seen} == {str(work)}
