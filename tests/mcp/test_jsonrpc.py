"""Raw JSON-RPC to the real ``relay-cli mcp``: every line that is not a JSON-RPC 2.0 message
gets the error JSON-RPC defines (-32700, -32600), and the server goes on serving."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.mcp.stdio import INVALID_REQUEST, MAX_LINE_BYTES, PARSE_ERROR, Reject, check_line
from tests.mcp.conftest import server_params

#: the longest a reply may take (a bound, not a pause: a reply ends the wait at once)
REPLY_S = 60.0


class RawClient:
    """``relay-cli mcp`` in a subprocess, spoken to in bytes, its replies read with a bound."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.replies: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.replies.put(line)

    def send_bytes(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, frame: Any) -> None:
        self.send_bytes(json.dumps(frame).encode())

    def reply(self) -> dict[str, Any]:
        try:
            line = self.replies.get(timeout=REPLY_S)
        except queue.Empty:
            pytest.fail(f"no reply within {REPLY_S:g} s")
        frame = json.loads(line)
        assert isinstance(frame, dict)
        return frame

    def ping(self, request_id: int) -> None:
        """The server still answers a real request (and nothing came before the answer)."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        assert self.reply() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


@pytest.fixture
def raw(relay_home: Path, tmp_path: Path) -> Iterator[RawClient]:
    params = server_params(relay_home, tmp_path)
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(params.env or {})},
    )
    client = RawClient(proc)
    try:
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert client.reply()["result"]["serverInfo"]["name"] == "relay"
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client
    finally:
        _, log = proc.communicate(timeout=REPLY_S)  # closing stdin ends the server
    assert proc.returncode == 0, log
    assert b"Traceback" not in log


def error_of(frame: dict[str, Any]) -> tuple[int, Any]:
    assert frame["jsonrpc"] == "2.0"
    assert "result" not in frame
    assert isinstance(frame["error"]["message"], str)
    return frame["error"]["code"], frame["id"]


def test_malformed_lines_get_the_json_rpc_errors_and_the_server_keeps_serving(raw: RawClient) -> None:
    for garbage in (
        b"this is not json",
        b'{"jsonrpc": "2.0", "id": 1,',
        b"\xff\xfe{}",
        b"NaN",
        b"[" * 100_000,
        b'{"a":' * 50_000,
        b"1" * 5_000,
    ):
        raw.send_bytes(garbage)
        assert error_of(raw.reply()) == (PARSE_ERROR, None), garbage[:40]
    raw.ping(1)
    for frame, request_id in (
        ({"jsonrpc": "2.0"}, None),
        ({"jsonrpc": "1.0", "id": 7, "method": "ping"}, 7),
        ({"id": 8, "method": "ping"}, 8),
        ({"jsonrpc": "2.0", "id": "nine", "method": 5}, "nine"),
        ({"jsonrpc": "2.0", "method": ["x"]}, None),
        ({"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}, None),
        (42, None),
        ("ping", None),
        (None, None),
        ([], None),
        ([{"jsonrpc": "2.0", "id": 10, "method": "ping"}], None),
    ):
        raw.send(frame)
        assert error_of(raw.reply()) == (INVALID_REQUEST, request_id), frame
    raw.ping(2)
    # a notification, even of a method nobody knows, gets no reply: the next reply is the ping's
    raw.send({"jsonrpc": "2.0", "method": "notifications/nosuch"})
    raw.send_bytes(b"")  # nor a blank line
    raw.send_bytes(b"  \r")
    raw.ping(3)


def test_a_line_over_the_bound_is_refused_without_being_kept(raw: RawClient) -> None:
    raw.send_bytes(
        b'{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "' + b"y" * MAX_LINE_BYTES + b'"}}'
    )
    code, request_id = error_of(raw.reply())
    assert (code, request_id) == (INVALID_REQUEST, None)
    raw.ping(5)  # what followed the long line is read as the next message


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=200)
    | st.text(max_size=200).map(str.encode)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "x"]),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    ).map(lambda v: json.dumps(v).encode())
)
def test_every_line_is_passed_on_answered_or_blank(line: bytes) -> None:
    """Whatever a line holds, the reader decides without raising: hand it on, or the error."""
    checked = check_line(line)
    if isinstance(checked, Reject):
        assert checked.code in (PARSE_ERROR, INVALID_REQUEST)
        assert checked.request_id is None or isinstance(checked.request_id, str | int)
    elif checked is None:
        assert not line.strip(b" \t\r\n")
    else:
        assert isinstance(checked, str)
        message = json.loads(checked)
        assert message["jsonrpc"] == "2.0"
        assert isinstance(message.get("method", ""), str)
        request_id = message.get("id")
        assert request_id is None or type(request_id) in (str, int)
