"""The hook client (relay.cli.hook_client) as Claude Code runs it: a real process, started
with the very argument list ``relay-cli setup claude`` writes, against a real loopback HTTP
server — silent and quick without a host, the host's JSON answer printed with one, and
nothing of Relay imported but itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from relay.board.claude_setup import Wiring
from relay.cli import hook_client

EVENT = {"session_id": "s-1", "hook_event_name": "PreToolUse", "cwd": "/tmp",
         "tool_name": "Bash", "tool_input": {"command": "ls"}}
TOKEN = "t0ken-for-the-test"


@dataclass
class Seen:
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)


@dataclass
class Server:
    url: str
    seen: Seen
    answer: Callable[[BaseHTTPRequestHandler, bytes], None]


def _json_answer(status: int, body: bytes, content_type: str = "application/json"
                 ) -> Callable[[BaseHTTPRequestHandler, bytes], None]:
    def answer(handler: BaseHTTPRequestHandler, _body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return answer


@pytest.fixture
def server() -> Iterator[Server]:
    seen = Seen()
    box: dict[str, Server] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            seen.requests.append((self.path, dict(self.headers.items()), body))
            box["s"].answer(self, body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box["s"] = Server(f"http://127.0.0.1:{httpd.server_address[1]}", seen,
                      _json_answer(200, b'{"ok": true}'))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield box["s"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def _data_dir(path: Path, url: str | None, *, pid: int | None = None,
              token: str | None = TOKEN) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if url is not None:
        (path / "host.json").write_text(json.dumps({
            "url": url, "pid": pid or os.getpid(), "started_at": time.time(),
            "version": "0", "kind": "serve", "home": str(path)}))
    if token is not None:
        (path / "api-token").write_text(token + "\n")
    return path


def _run(data_dir: Path, stdin: bytes = json.dumps(EVENT).encode(), *extra: str,
         importtime: bool = False) -> subprocess.CompletedProcess[bytes]:
    argv = list(Wiring.make(data_dir, "http://127.0.0.1:1").hook_argv)
    if importtime:
        argv[1:1] = ["-X", "importtime"]
    return subprocess.run([*argv, *extra], input=stdin, capture_output=True, timeout=30,
                          check=False)


def test_the_host_answer_is_printed_and_the_event_posted_with_the_token(
        tmp_path: Path, server: Server) -> None:
    server.answer = _json_answer(200, b'{"hookSpecificOutput": {"hookEventName": "PreToolUse"}}')
    done = _run(_data_dir(tmp_path / "data", server.url))
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"hookSpecificOutput": {"hookEventName": "PreToolUse"}}
    path, headers, body = server.seen.requests[0]
    assert path == "/api/v1/hooks/claude"
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(body) == EVENT
    assert done.stderr == b""


@pytest.mark.parametrize("answer", [
    _json_answer(200, b"<html>not json</html>", "text/html"),
    _json_answer(401, b'{"error": {"code": "unauthorized"}}'),
    _json_answer(500, b'{"error": {"code": "internal"}}'),
], ids=["non-json", "bad-token", "server-error"])
def test_anything_but_a_200_json_answer_prints_nothing(
        tmp_path: Path, server: Server, answer: Callable[..., None]) -> None:
    server.answer = answer
    done = _run(_data_dir(tmp_path / "data", server.url))
    assert server.seen.requests, "the client did post"
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_host_is_silent_and_quick(tmp_path: Path) -> None:
    started = time.monotonic()
    done = _run(_data_dir(tmp_path / "data", None))
    took = time.monotonic() - started
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert took < 1.0, f"the client took {took:.3f} s with no host"


def test_a_stale_host_json_is_silent(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    for name, pid in (("dead-pid", dead_pid), ("refused", os.getpid())):
        data = _data_dir(tmp_path / name, f"http://127.0.0.1:{_free_port()}", pid=pid)
        done = _run(data)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), name


def test_a_host_that_never_answers_is_given_up_within_the_deadline(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts the connection, never answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        started = time.monotonic()
        done = _run(_data_dir(tmp_path / "data", url))
        took = time.monotonic() - started
    assert (done.returncode, done.stdout) == (0, b"")
    assert hook_client.TOTAL_TIMEOUT <= took < hook_client.TOTAL_TIMEOUT + 1.5


def test_an_event_over_the_limit_is_sent_shrunk_with_its_paths(tmp_path: Path,
                                                             server: Server) -> None:
    big = {**EVENT, "tool_name": "Write",
           "tool_input": {"file_path": "/repo/big.txt", "content": "x" * 600_000}}
    done = _run(_data_dir(tmp_path / "data", server.url), json.dumps(big).encode())
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"ok": True}
    sent = server.seen.requests[0][2]
    assert len(sent) <= hook_client.MAX_BODY
    event = json.loads(sent)
    assert event["tool_input"]["file_path"] == "/repo/big.txt"
    assert len(event["tool_input"]["content"]) <= hook_client.KEEP_CHARS + 1


def test_headers_print_the_bearer_header_for_the_mcp_headers_helper(tmp_path: Path) -> None:
    with_token = _run(_data_dir(tmp_path / "a", None), b"", "--headers")
    assert json.loads(with_token.stdout) == {"Authorization": f"Bearer {TOKEN}"}
    without = _run(_data_dir(tmp_path / "b", None, token=None), b"", "--headers")
    assert (without.returncode, json.loads(without.stdout)) == (0, {})


def test_relay_cli_hook_claude_runs_the_same_client(tmp_path: Path, server: Server) -> None:
    data = _data_dir(tmp_path / "data", server.url)
    done = subprocess.run([sys.executable, "-c", "import sys; from relay.cli.main import main; "
                           "sys.exit(main())", "hook", "claude", "--data-dir", str(data)],
                          input=json.dumps(EVENT).encode(), capture_output=True, timeout=30,
                          check=False)
    assert (done.returncode, json.loads(done.stdout)) == (0, {"ok": True})
    assert json.loads(server.seen.requests[0][2]) == EVENT


def _imported(stderr: bytes) -> list[str]:
    names = []
    for line in stderr.decode().splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.append(name)
    return names


def test_nothing_of_relay_nor_any_third_party_module_is_imported(tmp_path: Path) -> None:
    baseline = subprocess.run([sys.executable, "-I", "-X", "importtime", "-c", "pass"],
                              capture_output=True, check=True)
    at_start = set(_imported(baseline.stderr))  # the interpreter's own start (site, .pth)
    done = _run(_data_dir(tmp_path / "data", None), importtime=True)
    loaded = [n for n in _imported(done.stderr) if n not in at_start]
    relay = [n for n in loaded if n == "relay" or n.startswith("relay.")]
    # ``-m`` runs the client as ``__main__`` (an installed Relay); ``-c`` (a source checkout
    # the isolated interpreter cannot find by itself) imports it by name
    assert "relay.cli" in relay
    assert set(relay) <= {"relay", "relay.cli", "relay.cli.hook_client"}
    foreign = [n for n in loaded if n.split(".")[0] not in sys.stdlib_module_names
               and n not in relay]
    assert foreign == []
