"""Requests to the Relay process that runs a session, through the shared database.

``relay-cli handoff`` (or a window that does not own the session) cannot call
the runner of another process. It posts a request row; the owning engine polls
for requests of the sessions it runs, carries each out and writes the answer,
which the asking process waits for. Rows are small and few; answered ones stay
as a record of who asked for what.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass
from typing import Literal

from relay.core.store.db import Store, now_ms
from relay.core.store.writer import EventWriter, WriteOp

RequestKind = Literal["handoff", "answer", "stop"]


@dataclass(frozen=True, slots=True)
class ControlRequest:
    id: int
    session_id: str
    kind: RequestKind
    arg: str | None


@dataclass(frozen=True, slots=True)
class Answer:
    ok: bool
    message: str
    hint: str | None = None


class ControlRequests:
    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store = store
        self.writer = writer

    async def post(self, session_id: str, kind: RequestKind, arg: str | None) -> int:
        request_id = secrets.randbits(62)
        await self.writer.write(WriteOp(session_id, statements=[(
            "INSERT INTO requests (id, session_id, kind, arg, created_ms) VALUES (?,?,?,?,?)",
            (request_id, session_id, kind, arg, now_ms()))]))
        return request_id

    async def pending(self, session_ids: list[str]) -> list[ControlRequest]:
        """Unanswered requests for the given sessions, oldest first."""
        if not session_ids:
            return []
        marks = ",".join("?" * len(session_ids))
        async with self.store.conn.execute(
                f"SELECT id, session_id, kind, arg FROM requests WHERE taken_ms IS NULL"
                f" AND session_id IN ({marks}) ORDER BY created_ms", session_ids) as cur:
            rows = await cur.fetchall()
        return [ControlRequest(r[0], r[1], r[2], r[3]) for r in rows]

    async def answer(self, request: ControlRequest, answer: Answer) -> None:
        body = json.dumps({"ok": answer.ok, "message": answer.message, "hint": answer.hint})
        await self.writer.write(WriteOp(request.session_id, statements=[(
            "UPDATE requests SET taken_ms=?, answer=? WHERE id=?", (now_ms(), body, request.id))]))

    async def wait_answer(self, request_id: int, within: float,
                          poll: float = 0.1) -> Answer | None:
        """The answer, or None when nobody answered within ``within`` seconds."""
        deadline = time.monotonic() + within
        while True:
            async with self.store.conn.execute(
                    "SELECT answer FROM requests WHERE id=?", (request_id,)) as cur:
                row = await cur.fetchone()
            if row is not None and row[0] is not None:
                data = json.loads(row[0])
                return Answer(bool(data["ok"]), str(data["message"]), data.get("hint"))
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(poll)

    async def withdraw(self, request_id: int) -> None:
        """Nobody answered: take the request back so a later owner does not act on it."""
        await self.writer.write(WriteOp("", statements=[(
            "UPDATE requests SET taken_ms=?, answer=? WHERE id=? AND taken_ms IS NULL",
            (now_ms(), json.dumps({"ok": False, "message": "withdrawn: no answer"}), request_id))]))
