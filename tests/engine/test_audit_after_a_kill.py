"""A record committed just before Relay is killed must reach the audit log all the same.

Found by ``benchmarks/faults/kill_handoff.py``: SIGKILLed right after a handoff state was
committed (the fault hook), the process died before its audit trail — which appends in
the background, after the commit — wrote that step; recovery carried the handoff on, and
the log lacked the step for good (2 of 6 trials in the first quick run: ``snapshotted``,
and the second ``dispatched``). core/audit.py promises that every entry "must survive a
crash that the state machine survives".

The kill is modelled deterministically: the first engine's trail never appends (as when
the process dies between the commit and the append); a second engine then opens on the
same data folder, as ``relay-cli recover`` does.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import pytest

from relay.core.audit import iter_entries
from relay.core.audit_trail import AuditTrail
from relay.core.config import load_config
from relay.core.events import EventRecord
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from tests.conftest import make_repo


async def test_steps_committed_before_a_kill_are_audited_once_relay_opens_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def died_before_appending(self: AuditTrail, records: Sequence[EventRecord]) -> None:
        """The process is gone before the trail's background append."""

    repo = make_repo(tmp_path / "repo")
    with monkeypatch.context() as patch:
        patch.setattr(AuditTrail, "on_records", died_before_appending)
        engine = await Engine.open(load_config(demo_step_delay=0))
        try:
            row = await engine.run_session(
                SessionSpec(
                    repo=repo, task="Write the notes", chain=["demo", "demo:second"], demo_limit_after=1
                )
            )
        finally:
            await engine.close()
    assert row.state == "completed", row.reason

    engine = await Engine.open(load_config(demo_step_delay=0), recover=True)
    try:
        committed = [
            r.event.state for r in await engine.session_events(row.id) if r.event.kind == "handoff_step"
        ]
    finally:
        await engine.close()
    assert committed == ["pausing", "snapshotted", "envelope_built", "dispatched", "resuming", "done"]
    audit = engine.config.audit_path
    audited = [e.data["state"] for e in iter_entries(audit) if e.event == "session.handoff_step"]
    assert audited == committed
    late = [e for e in iter_entries(audit) if e.data.get("late")]
    assert len(late) == len(list(iter_entries(audit)))  # each written when Relay opened again
    assert engine.audit.log.verify().ok

    again = await Engine.open(load_config(demo_step_delay=0), recover=True)  # nothing twice
    await again.close()
    assert [e.data["event_id"] for e in iter_entries(audit)] == [e.data["event_id"] for e in late]


async def test_a_live_process_keeps_its_own_queued_records(tmp_path: Path) -> None:
    """What a running Relay committed and still has queued is its to append: an engine
    opening beside it writes none of it (the owner here: a live process holding the
    session, as a relay-cli run does)."""
    repo = make_repo(tmp_path / "repo")
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        row = await engine.run_session(SessionSpec(repo=repo, task="Write the notes"))
    finally:
        await engine.close()
    audit = engine.config.audit_path
    lines = audit.read_bytes().splitlines(keepends=True)
    assert len(lines) > 1
    audit.write_bytes(lines[0])  # the rest is still queued in the owner, as it were
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.stdin.read()", stdin=asyncio.subprocess.PIPE)
    try:
        with closing(sqlite3.connect(engine.config.db_path)) as conn:
            conn.execute("UPDATE sessions SET owner_pid=? WHERE id=?", (owner.pid, row.id))
            conn.commit()
        other = await Engine.open(load_config(demo_step_delay=0), recover=True)
        await other.close()
        assert audit.read_bytes() == lines[0]  # its owner still runs: nothing written for it
    finally:
        await owner.communicate(b"")
    dead = await Engine.open(load_config(demo_step_delay=0), recover=True)  # owner gone
    await dead.close()
    assert len(audit.read_bytes().splitlines()) == len(lines)
