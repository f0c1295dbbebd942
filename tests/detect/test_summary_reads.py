"""Summary reads (``detect --all``'s older sessions): a transcript's head and tail, what the
table shows — and the whole intent lifted on demand (find, ``whole``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from relay.detect.lift import lift
from relay.detect.reading import ReadJob, read_many, read_one
from relay.detect.service import Detector
from relay.detect.stores.base import StoreItem, tail_start
from relay.detect.stores.claude import STORE
from relay.detect.stores.transcript import HEAD_BYTES, TAIL_BYTES, TranscriptRead
from relay.engine.engine import Engine
from relay.wallet import usage_pool
from tests.detect.conftest import no_processes

SID = "5e55a0a1-0000-4000-8000-000000000001"
CWD = "/home/me/src/shop"
PROMPT = "Port the billing module to the new API"


def stamp(n: int) -> str:
    return f"2026-11-30T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def base(n: int) -> dict[str, Any]:
    return {"isSidechain": False, "timestamp": stamp(n), "cwd": CWD, "sessionId": SID,
            "version": "2.1.197", "gitBranch": "main"}


def prompt(n: int, text: str = PROMPT) -> dict[str, Any]:
    return {**base(n), "type": "user", "permissionMode": "acceptEdits",
            "message": {"role": "user", "content": text}}


def call(n: int, command: str) -> dict[str, Any]:
    return {**base(n), "type": "assistant", "message": {
        "id": f"msg_{n}", "role": "assistant", "model": "claude-opus-4-8",
        "stop_reason": "tool_use", "content": [
            {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
             "input": {"command": command}}]}}


def result(n: int, of: int, output: str) -> dict[str, Any]:
    return {**base(n), "type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": f"toolu_{of}", "type": "tool_result", "content": output}]}}


def reply(n: int, text: str) -> dict[str, Any]:
    return {**base(n), "type": "assistant", "message": {
        "id": f"msg_{n}", "role": "assistant", "model": "claude-opus-4-8",
        "stop_reason": "end_turn", "content": [{"type": "text", "text": text}]}}


def turns(count: int, start: int = 1) -> list[dict[str, Any]]:
    """``count`` finished tool calls, each with 8 KB of output (the bytes between)."""
    lines = []
    for i in range(count):
        n = start + 3 * i
        lines += [call(n, f"pytest -q tests/part{i}"), result(n + 1, n, f"{i} " * 4000)]
    return lines


def write(path: Path, lines: Sequence[dict[str, Any]], tail: bytes = b"") -> StoreItem:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in lines) + tail)
    info = path.stat()
    return StoreItem(runtime="claude", agent_session_id=SID, entry="claude", path=path,
                     size=info.st_size, mtime_ns=info.st_mtime_ns)


def table(read: TranscriptRead) -> tuple[Any, ...]:
    """What the table shows of a session (and what its state is decided from)."""
    lifted = lift(read, None, read.item.mtime_ns // 1_000_000 + 3_600_000)
    return (lifted.state, lifted.why, read.cwd, read.started_ms, read.last_activity_ms,
            read.initial_prompt, lifted.intent.initial_prompt, lifted.intent.last_message,
            read.open_turn)


def both(item: StoreItem) -> tuple[TranscriptRead, TranscriptRead]:
    return STORE.read(item), STORE.summary(item)


def test_a_long_transcript_is_read_at_its_head_and_tail_and_shows_as_the_full_read(
        tmp_path: Path) -> None:
    lines = [prompt(0), *turns(40), reply(200, "Done: the module is ported. Shall I merge?")]
    item = write(tmp_path / "long.jsonl", lines)
    assert item.size > 4 * (HEAD_BYTES + TAIL_BYTES)
    full, summary = both(item)
    assert table(summary) == table(full)
    assert table(summary)[0] == "ended"
    assert summary.whole is False
    assert full.whole is True
    assert summary.initial_prompt == PROMPT
    assert summary.cwd == CWD
    # the calls between head and tail were not read: the summary's intent is the table's
    assert len(lift(full, None, 0).intent.commands) == 40
    assert len(lift(summary, None, 0).intent.commands) < 40


def test_a_call_whose_result_was_skipped_is_not_left_open(tmp_path: Path) -> None:
    """The head's calls get their results in the bytes a summary skips: not pending."""
    lines = [prompt(0), call(1, "make"), *[result(2, 1, "x " * 4000)] * 12, *turns(10, 40),
             reply(200, "All green.")]
    full, summary = both(write(tmp_path / "gap.jsonl", lines))
    assert table(summary) == table(full)
    assert not summary.open_turn


def test_a_huge_last_line_is_read_whole(tmp_path: Path) -> None:
    """A last line longer than the tail window: looked for further back, never cut."""
    words = "the new API is in place; " * 20_000  # ~500 KB, one line
    lines = [prompt(0), *turns(30), reply(300, words + "Merge it?")]
    item = write(tmp_path / "huge-last.jsonl", lines)
    full, summary = both(item)
    assert len(words) > 10 * TAIL_BYTES
    assert table(summary) == table(full)
    assert summary.whole is False
    last = lift(summary, None, 0).intent.last_message
    assert last.startswith("the new API is in place")
    # a huge tool result last: mid-turn, as the full read says
    lines = [prompt(0), *turns(30), call(300, "cat big.log"), result(301, 300, "y" * 400_000)]
    full, summary = both(write(tmp_path / "huge-result.jsonl", lines))
    assert table(summary) == table(full)
    assert table(summary)[0] == "crashed"


def test_a_truncated_file_reports_its_cut_line_and_shows_as_the_full_read(
        tmp_path: Path) -> None:
    lines = [prompt(0), *turns(30), reply(200, "Halfway.")]
    cut = json.dumps(call(201, "pytest"))[:70].encode()  # the agent died mid-write
    full, summary = both(write(tmp_path / "cut.jsonl", lines, tail=cut))
    assert table(summary) == table(full)
    assert "the last line is incomplete (still being written, or cut off)" in summary.problems
    assert summary.problems == full.problems


def test_a_file_of_one_line(tmp_path: Path) -> None:
    """One line — a prompt longer than head and tail together — is read once, whole."""
    long_prompt = "Refactor everything: " + "step. " * 40_000
    full, summary = both(write(tmp_path / "one.jsonl", [prompt(0, long_prompt)]))
    assert table(summary) == table(full)
    assert summary.whole is True
    assert table(summary)[0] == "crashed"  # a prompt that got no answer, no process
    # one line without its newline (cut): nothing readable, the same in both
    full, summary = both(write(tmp_path / "one-cut.jsonl", [], tail=b'{"type":"user","mes'))
    assert table(summary) == table(full)
    assert table(summary)[0] == "unknown"


def test_tail_start_finds_a_line_start_with_a_whole_line_after_it() -> None:
    data = b"a" * 10 + b"\n" + b"b" * 100 + b"\n" + b"c" * 5 + b"\n"
    handle = io.BytesIO(data)
    assert tail_start(handle, len(data), 8, 0) == 112  # the last line, short: from its start
    assert tail_start(handle, len(data), 50, 0) == 112  # mid-line: on to the next line
    assert tail_start(handle, len(data), 110, 0) == 11
    assert tail_start(handle, len(data), 8, 112) == 112  # never before the floor
    huge = b"h" * 1000 + b"\n"
    handle = io.BytesIO(b"x" * 600 + b"\n" + huge)
    assert tail_start(handle, 601 + len(huge), 16, 0) == 601  # further back, to its start
    assert tail_start(handle, 601 + len(huge), 16, 0, limit=100) == 0  # past the limit: floor


def test_many_reads_go_to_the_wallets_worker_processes(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    items = [write(tmp_path / f"s{i}.jsonl", [prompt(0, f"task {i}"), *turns(25 + i),
                                              reply(300, f"finished {i}")]) for i in range(6)]
    jobs = [ReadJob(item, whole=i % 2 == 0) for i, item in enumerate(items)]
    monkeypatch.setattr(usage_pool, "PARALLEL_BYTES", 1)
    started: list[int] = []
    real = subprocess.Popen

    def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", counted)
    pooled = {job.item.path: (read, intent) for job, read, intent in
              read_many(jobs, {"claude": STORE}, workers=2)}
    assert started  # read by worker processes, not here
    assert len(pooled) == 6
    for job in jobs:
        _, read, intent = read_one(STORE, job)
        assert pooled[job.item.path][1] == intent
        assert pooled[job.item.path][0].whole == read.whole
        assert table(pooled[job.item.path][0]) == table(read)  # type: ignore[arg-type]


# -- on demand ---------------------------------------------------------------------------------

async def test_older_sessions_are_summaries_and_their_whole_intent_is_lifted_on_demand(
        engine: Engine, tmp_path: Path) -> None:
    folder = tmp_path / "claude"
    path = folder / "projects" / "-home-me-src-shop" / f"{SID}.jsonl"
    write(path, [prompt(0), *turns(40), reply(200, "Ported. Merge it?")])
    three_days_ago = time.time() - 3 * 86_400
    os.utime(path, (three_days_ago, three_days_ago))
    await engine.accounts.add("claude", "work", folder)
    detector = Detector(engine.accounts, engine.wallet, process_scan=no_processes)

    assert (await detector.scan()).sessions == []  # not in the default view
    (older,) = (await detector.scan(all_sessions=True)).sessions
    assert older.lifted is False
    assert older.intent.initial_prompt == PROMPT
    assert older.intent.last_message == "Ported. Merge it?"
    assert older.state == "ended"
    assert len(older.intent.commands) < 40

    found, read = await detector.find(older.id)  # the detail pane, adoption
    assert found.lifted is True
    assert read.whole is True
    assert len(found.intent.commands) == 40
    assert found.intent.files_touched == older.intent.files_touched == []
    assert (found.state, found.why, found.cwd, found.last_activity_ms) == (
        older.state, older.why, older.cwd, older.last_activity_ms)
    (again,) = (await detector.scan(all_sessions=True)).sessions
    assert again.lifted is True  # read in full once: kept until the file changes

    fresh = Detector(engine.accounts, engine.wallet, process_scan=no_processes)
    (whole,) = (await fresh.scan(all_sessions=True, whole=True)).sessions  # detect --json
    assert whole.lifted is True
    assert whole.intent == found.intent
