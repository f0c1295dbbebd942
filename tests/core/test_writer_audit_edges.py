"""Edge cases of the writer and the audit trail (found in review; each once failed)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from relay.core.audit import AuditLog, iter_entries
from relay.core.audit_trail import AuditTrail
from relay.core.bus import EventBus
from relay.core.errors import StoreError
from relay.core.events import EventRecord, StateChanged, TurnCompleted, Usage
from relay.core.store.db import Store
from relay.core.store.writer import EventWriter, WriteOp


async def test_aclose_waits_for_the_audit_batch_in_flight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    real_append = log.append

    def slow_append(*args: object, **kwargs: object) -> object:
        time.sleep(0.3)  # an fsync on a slow disk
        return real_append(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(log, "append", slow_append)
    trail = AuditTrail(log)
    trail.start()
    trail.on_records([EventRecord(1, "s1", None, StateChanged(state="completed"))])
    await asyncio.sleep(0.05)  # the background task has taken the batch into its thread
    await trail.aclose()  # Engine.close() -> "write what is queued, then stop"
    assert len(list(iter_entries(tmp_path / "audit.jsonl"))) == 1
    await asyncio.sleep(0.5)  # let the orphaned thread finish before tmp_path goes


async def test_a_non_sqlite_error_stops_the_writer_without_hanging_later_writes(tmp_path: Path) -> None:
    store = await Store.open(tmp_path / "relay.db")
    writer = EventWriter(store, EventBus())
    writer.start()
    try:
        await writer.write(WriteOp("s1", statements=[(
            "INSERT INTO sessions (id, repo, task, runtime, state, permission, spec_json, created_ms,"
            " updated_ms) VALUES ('s1', '/r', 't', 'codex', 'running', 'workspace', '{}', 0, 0)", ())]))
        # a CLI reporting an absurd (u64) token count: orjson parses it, SQLite cannot bind it
        bad = TurnCompleted(usage=Usage(input_tokens=2**64 - 1))
        # expected: a StoreError (and on every later write); actual: the writer task died
        # with OverflowError and this write never completes (TimeoutError after 2 s)
        with pytest.raises(StoreError):
            await asyncio.wait_for(writer.write(WriteOp("s1", "r1", bad)), 2)
    finally:
        if writer._task is not None and not writer._task.done():
            await writer.close()
        await store.close()
