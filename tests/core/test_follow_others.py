"""The events table is the sync protocol: a process follows sessions others run."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from relay.core.config import load_config
from relay.core.models import SessionSpec
from relay.engine.engine import Engine


async def test_events_of_others_skips_own_sessions_and_advances(relay_home: Path,
                                                               git_repo: Path) -> None:
    engine = await Engine.open(load_config(demo_step_delay=0))
    try:
        mine = await engine.run_session(SessionSpec(repo=git_repo, task="mine"))
        cursor = 0
        records, cursor = await engine.store.sessions.events_of_others(cursor, os.getpid())
        assert records == []  # everything so far is this process's own
        assert cursor == await engine.last_event_id()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "relay.cli.main", "run", "theirs", "--repo", str(git_repo),
            "--provider", "demo", "--json", env={**os.environ, "RELAY_DEMO_STEP_DELAY": "0"},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0
        theirs = out.decode().splitlines()
        records, cursor = await engine.store.sessions.events_of_others(cursor, os.getpid())
        assert len(records) == len(theirs)
        assert {r.session_id for r in records} != {mine.id}
        assert all(not r.event.replay for r in records)
        again, _ = await engine.store.sessions.events_of_others(cursor, os.getpid())
        assert again == []
    finally:
        await engine.close()
