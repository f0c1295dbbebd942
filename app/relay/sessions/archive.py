"""``engine.sessions``: the session list, and archive instead of delete.

An archived session keeps everything (its events, worktree, branch, contract); the lists
leave it out unless asked for (``recent(archived=True)``, ``relay-cli sessions --archived``,
the window's "Show archived"). Only a finished session is archived: one that is still at
work would vanish from sight while it runs.
"""

from __future__ import annotations

import time

from relay.core.errors import RelayError
from relay.core.models import SessionRow
from relay.core.store.db import Store
from relay.core.store.writer import EventWriter, WriteOp


class SessionList:
    """The sessions as the store has them, and their archiving."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self._store = store
        self._writer = writer

    async def recent(self, limit: int = 200, archived: bool = False) -> list[SessionRow]:
        """The newest ``limit`` sessions, most recently changed first; with ``archived``,
        the archived ones too."""
        return await self._store.sessions.recent(limit, archived)

    async def archive(self, session_id: str) -> SessionRow:
        """Archive a finished session (a unique id prefix will do); archiving an archived
        one changes nothing. Returns its row."""
        row = await self._store.sessions.get(session_id)
        if not row.finished:
            raise RelayError(f"Session {row.id} is still {row.state}: only a finished "
                             "session is archived.", "Stop it first, or archive it once it ends.")
        if row.archived_at is not None:
            return row
        return await self._set(row.id, time.time())

    async def unarchive(self, session_id: str) -> SessionRow:
        """Bring an archived session back into the lists. Returns its row."""
        row = await self._store.sessions.get(session_id)
        return row if row.archived_at is None else await self._set(row.id, None)

    async def _set(self, session_id: str, at: float | None) -> SessionRow:
        await self._writer.write(WriteOp(session_id, statements=[
            self._store.sessions.archived(session_id, at)]))
        return await self._store.sessions.get(session_id)
