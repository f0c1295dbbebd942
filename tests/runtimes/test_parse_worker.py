"""The parse worker (relay.runtimes.parse_worker): a busy Claude stream parsed, scrubbed and
serialised in a second process — every event stored, in order, scrubbed; backpressure
reaches the agent; a worker that cannot start leaves the parsing in process; one that dies
mid-stream ends the run with a clear error."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from relay.core.config import load_config
from relay.core.errors import RelayError
from relay.core.events import AgentEvent, SessionEnded
from relay.core.models import PermissionPolicy, SessionSpec
from relay.core.procs import LineSplitter
from relay.engine.engine import Engine
from relay.runtimes import parse_worker
from relay.runtimes.base import RunRequest
from relay.runtimes.claude import ClaudeAdapter
from relay.runtimes.claude_stream import ClaudeStreamParser
from relay.runtimes.parse_worker import Parsed, ParseWorker, worker_policy
from tests.sessions.test_secrets_and_audit import ANTHROPIC, GITHUB, PRINT_FILE

SESSION = "22222222-2222-4222-8222-222222222222"


def stream(turns: int) -> list[str]:
    """Claude stream-json lines: ``turns`` × (text, tool call, tool result) — a secret in
    every 50th text and tool output —, then the result."""
    lines: list[dict[str, Any]] = [{"type": "system", "subtype": "init", "session_id": SESSION, "model": "m",
              "tools": []}]
    for i in range(turns):
        secret = f" key {ANTHROPIC}" if i % 50 == 7 else ""
        lines.append({"type": "assistant", "session_id": SESSION, "message": {
            "id": f"m{i}", "model": "m", "content": [{"type": "text", "text": f"step {i}{secret}"}]}})
        lines.append({"type": "assistant", "session_id": SESSION, "message": {
            "id": f"m{i}", "model": "m", "content": [{"type": "tool_use", "id": f"t{i}",
                                                      "name": "Bash", "input": {"command": f"ls {i}"}}]}})
        lines.append({"type": "user", "session_id": SESSION, "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{i}",
             "content": f"out {i}" + (f" token={GITHUB}" if secret else "")}]}})
    lines.append({"type": "result", "subtype": "success", "is_error": False,
                  "session_id": SESSION, "result": "done",
                  "usage": {"input_tokens": 1, "output_tokens": 1}, "total_cost_usd": 0.001})
    return [json.dumps(line) for line in lines]


def shape(event: AgentEvent) -> dict[str, Any]:
    """What an event says, without its time stamp."""
    return event.model_dump(exclude={"ts"})


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The fake agent prints a 1,200-turn stream (3,602 lines); parsing moves to a worker at
    once (``RELAY_PARSE_WORKER=always``)."""
    lines = stream(1200)
    path = tmp_path / "stream.ndjson"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("RELAY_CLAUDE_BIN", str(PRINT_FILE))
    monkeypatch.setenv("RELAY_BENCH_LINES", str(path))
    monkeypatch.setenv("RELAY_PARSE_WORKER", "always")
    return lines


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ParseWorker]:
    """The workers that started (ready) in this test."""
    workers: list[ParseWorker] = []
    start = ParseWorker.start

    async def recording(env: dict[str, str] | None = None) -> ParseWorker | None:
        worker = await start(env)
        if worker is not None:
            workers.append(worker)
        return worker

    monkeypatch.setattr(ParseWorker, "start", recording)
    return workers


def request(cwd: Path) -> RunRequest:
    return RunRequest(prompt="go", cwd=cwd, permission=PermissionPolicy.FULL,
                      extra_env={"IS_SANDBOX": "1"})


async def test_a_session_s_events_are_all_stored_in_order_and_scrubbed(
        agent: list[str], started: list[ParseWorker], git_repo: Path, relay_home: Path) -> None:
    parser = ClaudeStreamParser()
    expected = [shape(e) for line in agent for e in parser.feed(json.loads(line))]
    engine = await Engine.open(load_config())
    try:
        row = await engine.run_session(SessionSpec(repo=git_repo, task="t", runtime="claude",
                                                   worktree=False))
        records = await engine.store.events_after(0, session_id=row.id, limit=100_000,
                                                  replay=False)
    finally:
        await engine.close()
    assert row.state == "completed", row.reason
    assert len(started) == 1  # the worker parsed (most of) it
    stored = [shape(r.event) for r in records
              if r.event.runtime == "claude" and r.event.kind not in ("state_changed",
                                                                      "session_ended")]
    assert len(stored) == len(expected)
    for got_d, want_d in zip(stored, expected, strict=True):
        for key in ("text", "output"):  # the secrets are replaced, the rest is equal
            if key in want_d and (ANTHROPIC in want_d[key] or GITHUB in want_d[key]):
                assert "[REDACTED:" in got_d[key]
                got_d.pop(key), want_d.pop(key)
        assert got_d == want_d
    assert [r.id for r in records] == sorted(r.id for r in records)
    db = relay_home / "relay.db"
    with sqlite3.connect(db) as conn:
        payloads = b"".join(bytes(p) if isinstance(p, bytes) else p.encode()
                            for (p,) in conn.execute("SELECT payload FROM events"))
    for secret in (ANTHROPIC, GITHUB):
        assert secret.encode() not in payloads
    assert payloads.count(b"[REDACTED:") >= 2 * (1200 // 50)


async def test_the_adapter_s_batches_come_from_the_worker_with_their_json(
        agent: list[str], started: list[ParseWorker], git_repo: Path) -> None:
    adapter = ClaudeAdapter()
    batches: list[list[Parsed]] = []
    async for batch in adapter.batches(request(git_repo)):
        batches.append(batch)
    events = [event for batch in batches for event, _ in batch]
    assert len(started) == 1
    assert isinstance(events[-1], SessionEnded)
    assert events[-1].outcome == "completed"
    from_worker = [(e, p) for batch in batches for e, p in batch if p is not None]
    assert len(from_worker) > len(events) // 2
    for event, payload in from_worker:  # the JSON stored is the event the engine validated
        assert parse_worker._EVENTS.validate_json(b"[" + payload + b"]") == [event]


async def test_a_worker_that_cannot_start_leaves_the_parsing_in_process(
        agent: list[str], git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.executable", "/bin/false")  # exits, never ready
    events: list[Parsed] = []
    async for batch in ClaudeAdapter().batches(request(git_repo)):
        events += batch
    assert all(payload is None for _, payload in events)
    parser = ClaudeStreamParser()
    expected = [e.kind for line in agent for e in parser.feed(json.loads(line))]
    assert [event.kind for event, _ in events[:-1]] == expected
    assert isinstance(events[-1][0], SessionEnded)
    assert events[-1][0].outcome == "completed"


async def test_a_worker_dying_mid_stream_ends_the_run_with_a_clear_error(
        agent: list[str], started: list[ParseWorker], git_repo: Path) -> None:
    adapter = ClaudeAdapter()
    batches = adapter.batches(request(git_repo))
    pids: list[int | None] = []

    async def kill_the_worker_at_its_first_batch() -> None:
        async for batch in batches:
            pids.append(adapter.pid)
            if any(payload is not None for _, payload in batch):
                os.kill(started[0].proc.pid, signal.SIGKILL)

    with pytest.raises(RelayError, match=r"parse worker .* ended mid-stream"):
        await kill_the_worker_at_its_first_batch()
    agent_pid = pids[0]
    await batches.aclose()
    assert agent_pid is not None
    assert not _alive(agent_pid)  # the agent was stopped with the run


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_backpressure_reaches_the_source_and_memory_stays_bounded() -> None:
    """A consumer that stops taking batches stops the worker, and the worker stops the
    forwarding of stdout: what is pulled from the source stays bounded."""
    line = (json.dumps({"type": "assistant", "session_id": SESSION, "message": {
        "id": "m", "model": "m", "content": [{"type": "text", "text": "x" * 900}]}}) + "\n").encode()
    chunk = line * 64  # ~60 KiB
    pulled = 0
    limit = 512 << 20  # unbounded forwarding would get here

    async def source() -> AsyncIterator[bytes]:
        nonlocal pulled
        while pulled < limit:
            pulled += len(chunk)
            yield chunk

    worker = await ParseWorker.start()
    assert worker is not None
    try:
        batches = worker.take_over(ClaudeStreamParser(), LineSplitter(1 << 20), source())
        first = await anext(batches)
        assert first
        assert worker._pump is not None
        stdin, out = worker.proc.stdin, worker.proc.stdout
        assert stdin is not None
        assert out is not None
        # wait for the state where nothing can move: the batches nobody reads fill the
        # parent's reader (the worker then blocks writing) and the forwarder is held on
        # drain (the worker's stdin is full). Polled; the test's timeout is the only clock.
        high_water = stdin.transport.get_write_buffer_limits()[1]
        while not (stdin.transport.get_write_buffer_size() > high_water  # noqa: ASYNC110
                   and len(out._buffer) >= parse_worker.WIDE_PIPE):  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)
        held = pulled
        assert held < 64 << 20, f"{held >> 20} MiB pulled while nobody read the batches"
        await batches.aclose()
    finally:
        await worker.close()


def test_one_core_or_off_parses_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_policy({"RELAY_PARSE_WORKER": "off"}) is None
    assert worker_policy({"RELAY_PARSE_WORKER": "always"}) == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert worker_policy({}) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert worker_policy({}) == parse_worker.AFTER_LINES


def test_no_worker_starts_while_the_machine_has_no_core_to_spare(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.5, 2.0, 1.0))
    assert not parse_worker.core_free()
    monkeypatch.setattr(os, "getloadavg", lambda: (0.7, 2.0, 1.0))
    assert parse_worker.core_free()
