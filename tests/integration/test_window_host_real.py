"""The desktop window is the host (issue 19): the REAL Claude Code CLI runs a task through
``relay-cli run`` while ``python -m relay`` (offscreen, in its own process) hosts the data
folder, against the project's loopback mock of the Messages API.

``relay-cli run`` is only a client there: the session runs in the window's process (the
host's status names it while the model is answering, and the agent is the window's child,
not the client's), the run prints the host's own stored events, and the window hosts on
afterwards. A client SIGKILLed mid-run leaves its session to finish in the window. SIGTERM
closes the window cleanly: exit 0, ``host.json`` gone.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from relay.api.client import RelayClient
from relay.core.events import AssistantText, ToolCall
from relay.core.hostfile import HOST_JSON, read_host
from tests.conftest import wait_until
from tests.fakes import mock_anthropic
from tests.integration.helpers import (
    RELAY,
    CliRun,
    claude_env,
    events_of,
    final_state,
    jsonl,
    kinds,
    real_claude_fixture,  # noqa: F401  (fixture "real_claude")
    relay_env,
    session_of,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                       reason="reads the process tree from /proc"),
]

WINDOW = [sys.executable, "-m", "relay"]
#: the window's start-up and shut-down on a loaded machine (Qt, the engine, the API)
WINDOW_S = 60.0
#: a run of the real CLI, end to end
RUN_S = 120.0
#: how long the mock holds the model's first answer: while it does, the session is
#: running, and the test looks at where (a few local calls, well under a second)
HOLD_S = 5.0

T = TypeVar("T")


@dataclass
class Proc:
    """A process started here, its output in files (a window writes more than a pipe holds)."""

    proc: subprocess.Popen[bytes]
    argv: list[str]
    out: Path
    err: Path
    started: float

    @classmethod
    def start(cls, argv: list[str], env: Mapping[str, str], cwd: Path, logs: Path,
              name: str) -> Proc:
        out, err = logs / f"{name}.out", logs / f"{name}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(argv, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=stderr)
        return cls(proc, argv, out, err, time.monotonic())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float) -> CliRun:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"{self.argv} did not finish within {timeout}s\n{self.result().describe()}",
                        pytrace=False)
        return self.result(code)

    def result(self, code: int | None = None) -> CliRun:
        return CliRun(self.argv, self.proc.returncode if code is None else code,
                      self.out.read_text(errors="replace"), self.err.read_text(errors="replace"),
                      time.monotonic() - self.started)


@dataclass
class Window(Proc):
    home: Path

    def call(self, fn: Callable[[RelayClient], Awaitable[T]]) -> T:
        """One call to the data folder's host, by a RelayClient found from ``host.json``."""
        async def call() -> T:
            client = RelayClient.for_home(self.home)
            assert client is not None, f"no live host\n{self.result().describe()}"
            async with client:
                return await asyncio.wait_for(fn(client), RUN_S)
        return asyncio.run(call())

    def hosts(self) -> bool:
        info = read_host(self.home)
        return info is not None and info.kind == "window" and info.pid == self.pid


def until(cond: Callable[[], object], within: float, what: str, *procs: Proc) -> None:
    """wait_until, failing with the processes' output."""
    try:
        wait_until(lambda: bool(cond()), within, what)
    except pytest.fail.Exception:
        pytest.fail(f"timed out waiting for {what}\n"
                    + "\n".join(p.result().describe() for p in procs), pytrace=False)


@contextmanager
def window(env: Mapping[str, str], home: Path, tmp_path: Path) -> Iterator[Window]:
    """``python -m relay`` offscreen on ``home``, once ``host.json`` says the window hosts."""
    cwd = tmp_path / "window-cwd"
    cwd.mkdir()
    started = Proc.start(WINDOW, {**env, "QT_QPA_PLATFORM": "offscreen", "RELAY_PORT": "0",
                                  "RELAY_WALLET_DEFAULT_FOLDERS": "0"}, cwd, tmp_path, "window")
    win = Window(**vars(started), home=home)
    try:
        until(lambda: win.hosts() or not win.alive(), WINDOW_S, "the window to host", win)
        assert win.alive(), win.result().describe()
        yield win
    finally:
        if win.alive():
            win.proc.kill()
            win.proc.wait()


def relay_cli_run(env: Mapping[str, str], repo: Path, logs: Path, task: str, *extra: str) -> Proc:
    """``relay-cli run TASK … --json`` with the real Claude Code, started (not awaited)."""
    return Proc.start([*RELAY, "run", task, "--repo", str(repo), "--provider", "claude",
                       "--json", *extra], env, repo, logs, "run")


def model_asked(mock: mock_anthropic.MockAnthropic, run: Proc, win: Window) -> None:
    """Wait until Claude Code has sent its first request (the mock holds the answer)."""
    until(lambda: mock.message_requests() or not run.alive(), RUN_S,
          "Claude Code to ask the model", run, win)
    assert run.alive(), run.result().describe()


def descendants(pid: int) -> set[int]:
    """The processes under ``pid`` (children, theirs, …), from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # gone meanwhile
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def agents_under(pid: int, exe: Path) -> list[int]:
    """The processes under ``pid`` that run the agent executable ``exe``."""
    found = []
    for child in descendants(pid):
        try:
            if Path(os.readlink(f"/proc/{child}/exe")) == exe.resolve():
                found.append(child)
        except OSError:
            continue
    return found


def close_window(win: Window) -> None:
    """SIGTERM: the window quits cleanly — exit 0, ``host.json`` removed, no host left."""
    win.proc.send_signal(signal.SIGTERM)
    result = win.finish(WINDOW_S)
    assert result.returncode == 0, result.describe()
    assert not (win.home / HOST_JSON).exists(), result.describe()
    assert read_host(win.home) is None
    assert "Traceback" not in result.stderr, result.describe()


def test_relay_cli_run_is_a_client_of_the_window(real_claude: Path, git_repo: Path,
                                                 tmp_path: Path, relay_home: Path) -> None:
    text = "Hello from the mock, through the window."
    script = {"turns": [{"delay_s": HOLD_S, "text": text,
                         "usage": {"input_tokens": 1300, "output_tokens": 19,
                                   "cache_creation_input_tokens": 200,
                                   "cache_read_input_tokens": 3000}}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        with window(env, relay_home, tmp_path) as win:
            run = relay_cli_run(env, git_repo, tmp_path, "say hi")
            model_asked(mock, run, win)
            # the model holds its answer: the session is running now — in the window
            status = win.call(lambda c: c.status())
            assert (status.pid, status.kind) == (win.pid, "window")
            assert len(status.running) == 1, status
            session = status.running[0]
            assert agents_under(win.pid, real_claude), "the agent is not the window's child"
            assert agents_under(run.pid, real_claude) == [], "the client started the agent"
            assert win.hosts()  # host.json names the window, not the run
            done = run.finish(RUN_S)
            assert done.returncode == 0, done.describe()

            events = events_of(done)
            assert session_of(done) == session
            assert [e["text"] for e in kinds(events, "assistant_text")] == [text]
            usage = kinds(events, "turn_completed")[0]["usage"]
            assert (usage["input_tokens"], usage["output_tokens"]) == (1300, 19)
            assert usage["cost_usd"] > 0
            assert final_state(events) == "completed"
            # what the run printed is the host's store, record for record
            stored = win.call(lambda c: c.events_after(0, session))
            assert [r["id"] for r in jsonl(done.stdout)] == [r.id for r in stored]

            # the window hosts on, and lists the session
            assert win.alive()
            assert win.hosts()
            until(lambda: win.call(lambda c: c.status()).running == [], WINDOW_S,
                  "the window to finish the session", win)
            rows = {r.id: r for r in win.call(lambda c: c.list_sessions())}
            assert rows[session].state == "completed"
            assert rows[session].runtime == "claude"
            close_window(win)


def test_a_killed_client_leaves_the_session_to_finish_in_the_window(
        real_claude: Path, git_repo: Path, tmp_path: Path, relay_home: Path) -> None:
    target = git_repo / "hello.txt"
    script = {"turns": [
        {"delay_s": HOLD_S, "text": "I'll create the file.",
         "tool_use": {"name": "Write", "id": "toolu_mock_write_1",
                      "input": {"file_path": str(target), "content": "hello world\n"}}},
        {"text": "Created hello.txt.", "usage": {"input_tokens": 900, "output_tokens": 7}}]}
    with mock_anthropic.serve(script) as mock:
        env = relay_env(claude_env(tmp_path, mock), relay_home, "claude", real_claude)
        with window(env, relay_home, tmp_path) as win:
            run = relay_cli_run(env, git_repo, tmp_path, "Create hello.txt", "--no-worktree")
            model_asked(mock, run, win)
            running = win.call(lambda c: c.status()).running
            assert len(running) == 1, run.result().describe()
            session = running[0]
            run.proc.kill()  # SIGKILL, mid-turn: the client cannot tell the host anything
            assert run.finish(RUN_S).returncode == -signal.SIGKILL

            row = win.call(lambda c: c.wait_session(session))
            assert row.state == "completed", win.result().describe()
            assert target.read_text() == "hello world\n"
            assert len(mock.message_requests()) == 2  # the turn after the tool call too
            events = [r.event for r in win.call(lambda c: c.events_after(0, session))]
            assert [e.name for e in events if isinstance(e, ToolCall)] == ["Write"]
            assert [e.text for e in events if isinstance(e, AssistantText)][-1] == \
                "Created hello.txt."
            # the dead client's stream is let go of; the window hosts on
            until(lambda: win.call(lambda c: c.status()).subscribers == 0, WINDOW_S,
                  "the host to drop the killed client's stream", win)
            assert win.alive()
            assert win.hosts()
            close_window(win)
