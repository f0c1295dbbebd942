"""``relay-cli mcp`` with a host running is a thin adapter to the host's ``/mcp``: what it
starts is the host's, and killing it changes nothing there. With no host it hosts the data
folder itself for as long as it runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from relay.api.client import RelayClient
from relay.core.hostfile import read_host
from tests.api.test_host_process import _serve, _stop
from tests.mcp.conftest import server_params
from tests.mcp.test_jsonrpc import RawClient
from tests.mcp.test_protocol import TOOLS

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "1"}}}


def _adapter(relay_home: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], RawClient]:
    """``relay-cli mcp`` spoken to in raw JSON-RPC lines, initialised."""
    params = server_params(relay_home, tmp_path)
    proc = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(params.env or {})})
    client = RawClient(proc)
    client.send(INITIALIZE)
    assert client.reply()["result"]["serverInfo"]["name"] == "relay"
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc, client


async def test_the_adapter_reaches_the_host_and_its_kill_leaves_the_session_running(
        relay_home: Path, tmp_path: Path, git_repo: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_DEMO_STEP_DELAY", "0.2")  # the host's demo: still running below
    host = _serve(relay_home)
    try:
        proc, raw = _adapter(relay_home, tmp_path)
        try:
            raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert {t["name"] for t in raw.reply()["result"]["tools"]} >= TOOLS
            raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "relay_start_session",
                "arguments": {"task": "via the adapter", "repo": str(git_repo),
                              "chain": ["demo"]}}})
            started = raw.reply()["result"]
            assert started["isError"] is False, started
            session_id = started["structuredContent"]["session"]["id"]
            info = read_host(relay_home)
            assert info is not None
            assert (info.pid, info.kind) == (host.pid, "serve")  # the adapter did not host
            client = RelayClient.for_home(relay_home)
            assert client is not None
            async with client:
                assert session_id in (await client.status()).running
                assert [s.id for s in await client.list_sessions()] == [session_id]
                proc.kill()  # SIGKILL: the adapter cannot tidy anything up
                proc.wait(timeout=60)
                row = await client.wait_session(session_id)
                assert row.state == "completed"
                assert row.task == "via the adapter"
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
    finally:
        _stop(host)


def test_with_no_host_the_adapter_hosts_while_it_runs(relay_home: Path, tmp_path: Path) -> None:
    proc, raw = _adapter(relay_home, tmp_path)
    try:
        info = read_host(relay_home)
        assert info is not None
        assert (info.pid, info.kind) == (proc.pid, "mcp")
        raw.ping(2)
    finally:
        _, log = proc.communicate(timeout=60)  # closing stdin ends it, and its hosting
    assert proc.returncode == 0, log
    assert b"Traceback" not in log
    assert read_host(relay_home) is None


def test_when_the_host_goes_away_the_adapter_answers_and_ends(relay_home: Path,
                                                              tmp_path: Path) -> None:
    host = _serve(relay_home)
    try:
        proc, raw = _adapter(relay_home, tmp_path)
    finally:
        _stop(host)
    try:
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        answer = raw.reply()
        assert answer["id"] == 7
        assert "went away" in answer["error"]["message"]
    finally:
        _, log = proc.communicate(timeout=60)
    assert proc.returncode == 1, log
    assert b"went away" in log
    assert b"Traceback" not in log
