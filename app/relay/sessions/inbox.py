"""The session inbox: messages to a session's agent, from queued to delivered.

A message (table ``session_messages``, migration 12) is the user's (kind ``message``), a
review comment on a line of the diff (``review``, :mod:`relay.history.review` keeps the
anchor and the thread) or a comment on the session's board task (``board``). It is stored
``queued`` — editable and cancellable — until the runner or the engine claims it
(``sending``: one conditional UPDATE, so two engines never send the same message; a claim
left by a dead engine is taken over after :data:`STALE_CLAIM_MS`), then ``delivered``
(``how``: steered in, at a turn boundary, as a resumed run or with Relay's brief) or
``failed``. Bodies are scrubbed before they are stored; every write is one
:class:`~relay.core.store.writer.WriteOp` with its :class:`~relay.core.events.MessageChanged`
event, so every front end sees a queued row appear and go live. :func:`render` turns the
claimed messages into the one prompt they are delivered as.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relay.core.errors import MessageNotFoundError, MessageRefusedError
from relay.core.events import (
    DeliveredHow,
    MessageChanged,
    MessageKind,
    MessageMode,
    MessageState,
)
from relay.core.models import SessionMessage, check_task
from relay.core.present import clip
from relay.core.redact import scrub
from relay.core.store.db import Store
from relay.core.store.sql import Statement, from_ms, id_text_problem, now_ms
from relay.core.store.writer import EventWriter, WriteOp

#: a claim older than this was left by an engine that stopped: it is taken over
STALE_CLAIM_MS = 60_000
#: the most of a message its event carries (the inbox keeps all of it)
EVENT_TEXT = 4096
MAX_ATTACHMENTS = 20
PENDING: tuple[MessageState, ...] = ("queued", "sending")
_COLS = ("id, session_id, kind, body, mode, source, state, how, attachments, meta,"
         " created_ms, delivered_ms, run_id, error")
#: the first line of a prompt carrying review comments
REVIEW_HEADER = ("The user reviewed your changes and left these comments. Address each one in "
                 "the code, then say briefly what you changed for each.")


@dataclass(frozen=True)
class Letter:
    """A stored message and what its kind carries (a review comment's anchor, a board
    comment's task) — what :func:`render` needs beyond the message itself."""

    message: SessionMessage
    meta: dict[str, Any] = field(default_factory=dict)


def _letter(row: Sequence[Any]) -> Letter:
    return Letter(SessionMessage(
        id=row[0], session_id=row[1], kind=row[2], text=row[3], mode=row[4], source=row[5],
        state=row[6], how=row[7], attachments=json.loads(row[8] or "[]"),
        created_at=from_ms(row[10]), delivered_at=from_ms(row[11]) if row[11] else None,
        run_id=row[12], error=row[13]), json.loads(row[9] or "{}"))


def message_body(text: str, hint: str = "Write what the agent should do.") -> str:
    """A message's text as it is stored and sent: stripped, scrubbed, not empty and within
    the task's size limit (every way a message reaches an agent checks it here first)."""
    body = scrub(text.strip())
    if not body:
        raise MessageRefusedError("The message is empty.", hint)
    return check_task(body, "The message")


def check_attachments(paths: Sequence[str], worktree: Path | None) -> list[str]:
    """The attachments as absolute paths: each must exist, a relative one inside the
    session's worktree (an absolute path is one the user gave)."""
    if len(paths) > MAX_ATTACHMENTS:
        raise MessageRefusedError(f"{len(paths)} attachments is too many.",
                                  f"Attach at most {MAX_ATTACHMENTS} files to one message.")
    out: list[str] = []
    for raw in paths:
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise MessageRefusedError("An attachment is not a path.",
                                      "Attach a file by its path.")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            if worktree is None:
                raise MessageRefusedError(f"{raw} is not an absolute path.",
                                          "The session has no worktree: give the full path.")
            path = (worktree / path).resolve()
            if not path.is_relative_to(worktree.resolve()):
                raise MessageRefusedError(f"{raw} lies outside the session's worktree.",
                                          "Give the file's absolute path instead.")
        if not path.exists():
            raise MessageRefusedError(f"No such file: {raw}.",
                                      "Attach a file that exists (its path as you see it).")
        out.append(str(path))
    return out


def render(letters: Sequence[Letter]) -> str:
    """The one prompt that delivers ``letters``, in order: a message as written, review
    comments with where they point (under one heading), board comments with their task;
    attachments as ``Attached: <path>`` lines."""
    out: list[str] = []
    in_review = False
    for letter in letters:
        m, meta = letter.message, letter.meta
        if m.kind == "review":
            if not in_review:
                out += ([""] if out else []) + [REVIEW_HEADER, ""]
                in_review = True
            out += _review_lines(m.text, meta)
        else:
            in_review = False
            if out:
                out.append("")
            if m.kind == "board":
                task = meta.get("task")
                out.append(f"A comment on your board task {task}:" if task else
                           "A comment on your board task:")
                out += [f"    {part}" for part in m.text.splitlines() or [""]]
            else:
                out.append(m.text)
        out += [f"Attached: {path}" for path in m.attachments]
    return "\n".join(out).strip("\n")


def _review_lines(body: str, meta: Mapping[str, Any]) -> list[str]:
    where = f"{meta.get('path', '?')} line {meta.get('line', '?')}" + (
        " (the old version)" if meta.get("side") == "old" else "")
    lines = [f"- {where}, commit {str(meta.get('sha', ''))[:10]}:"]
    if meta.get("excerpt"):
        lines.append(f"    `{meta['excerpt']}`")
    lines.extend(f"    {part}" for part in body.splitlines() or [""])
    return lines


class Inbox:
    """Every session's messages (``engine.inbox``; the runner's through its services)."""

    def __init__(self, store: Store, writer: EventWriter) -> None:
        self.store, self.writer = store, writer
        #: the check before an edit or cancel holds when it commits (this process's claims)
        self._lock = asyncio.Lock()

    # -- reading ----------------------------------------------------------------------

    async def _select(self, where: str, params: Sequence[Any]) -> list[Letter]:
        async with self.store.conn.execute(
                f"SELECT {_COLS} FROM session_messages WHERE {where}"
                " ORDER BY created_ms, rowid", params) as cur:
            return [_letter(r) for r in await cur.fetchall()]

    async def messages(self, session_id: str, *, pending: bool = False) -> list[SessionMessage]:
        """The session's messages, oldest first (``pending``: queued or sending only)."""
        where = "session_id=?" + (" AND state IN ('queued','sending')" if pending else "")
        return [letter.message for letter in await self._select(where, (session_id,))]

    async def letter(self, session_id: str, message_id: str) -> Letter:
        problem = id_text_problem(message_id, "A message id")
        found = [] if problem else await self._select("session_id=? AND id=?",
                                                       (session_id, message_id))
        if not found:
            raise MessageNotFoundError(
                problem or f"Session {session_id} has no message {message_id!r}.",
                f"List them with `relay-cli messages {session_id} --all`.")
        return found[0]

    async def get(self, session_id: str, message_id: str) -> SessionMessage:
        return (await self.letter(session_id, message_id)).message

    async def has_queued(self, session_id: str) -> bool:
        async with self.store.conn.execute(
                "SELECT 1 FROM session_messages WHERE session_id=? AND state='queued' LIMIT 1",
                (session_id,)) as cur:
            return await cur.fetchone() is not None

    async def pending_sessions(self) -> list[str]:
        """Sessions with messages waiting (queued, or a claim that went stale); a message
        held for the session's next run (meta ``held``) does not start one by itself."""
        async with self.store.conn.execute(
                "SELECT DISTINCT session_id FROM session_messages WHERE state IN"
                " ('queued','sending') AND json_extract(meta, '$.held') IS NULL") as cur:
            return [r[0] for r in await cur.fetchall()]

    # -- writing ----------------------------------------------------------------------

    async def _write(self, letter: Letter, statements: list[Statement],
                     run_id: str | None = None) -> None:
        m = letter.message
        await self.writer.write(WriteOp(m.session_id, run_id, MessageChanged(
            message_id=m.id, state=m.state, mode=m.mode, message_kind=m.kind, how=m.how,
            text=clip(m.text, EVENT_TEXT), source=m.source, error=m.error),
            statements=statements))

    async def add(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  kind: MessageKind = "message", source: str = "api",
                  attachments: Sequence[str] = (), meta: Mapping[str, Any] | None = None,
                  message_id: str | None = None, delivered: DeliveredHow | None = None,
                  run_id: str | None = None) -> SessionMessage:
        """Store a message ``queued`` (or already ``delivered`` — a steer, a follow-up —
        when ``delivered`` says how). ``attachments`` are checked by the caller
        (:func:`check_attachments`)."""
        body = message_body(text)
        now = now_ms()
        state: MessageState = "delivered" if delivered else "queued"
        message = SessionMessage(
            id=message_id or uuid.uuid4().hex[:12], session_id=session_id, text=body, mode=mode,
            kind=kind, source=scrub(source)[:40], state=state, how=delivered,
            attachments=list(attachments), created_at=from_ms(now),
            delivered_at=from_ms(now) if delivered else None, run_id=run_id)
        letter = Letter(message, dict(meta or {}))
        await self._write(letter, [(
            "INSERT INTO session_messages (id, session_id, kind, body, mode, source, state, how,"
            " attachments, meta, created_ms, updated_ms, delivered_ms, run_id)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (message.id, session_id, kind, body, mode, message.source, state, delivered,
             json.dumps(message.attachments), json.dumps(letter.meta, default=str), now, now,
             now if delivered else None, run_id))], run_id)
        return message

    async def _queued(self, session_id: str, message_id: str, doing: str) -> Letter:
        letter = await self.letter(session_id, message_id)
        if letter.message.state != "queued":
            state = letter.message.state
            raise MessageRefusedError(
                f"Message {message_id} is {'being sent' if state == 'sending' else state};"
                f" it can no longer be {doing}.",
                "Only a queued message can be edited or cancelled; send a new one instead.")
        return letter

    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage:
        """A queued message's new text (refused once it is being sent)."""
        body = message_body(text, "Cancel the message instead of emptying it.")
        async with self._lock:
            letter = await self._queued(session_id, message_id, "edited")
            changed = Letter(letter.message.model_copy(update={"text": body}), letter.meta)
            await self._write(changed, [(
                "UPDATE session_messages SET body=?, updated_ms=? WHERE id=? AND state='queued'",
                (body, now_ms(), message_id))])
            return changed.message

    async def cancel(self, session_id: str, message_id: str) -> SessionMessage:
        """Cancel a queued message (refused once it is being sent)."""
        async with self._lock:
            letter = await self._queued(session_id, message_id, "cancelled")
            changed = Letter(letter.message.model_copy(update={"state": "cancelled"}),
                             letter.meta)
            await self._write(changed, [(
                "UPDATE session_messages SET state='cancelled', updated_ms=? WHERE id=? AND"
                " state='queued'", (now_ms(), message_id))])
            return changed.message

    async def claim(self, session_id: str) -> list[Letter]:
        """Claim what the session has queued (and stale claims), oldest first: one
        conditional UPDATE, so no other engine sends them too."""
        async with self._lock:
            claim, now = uuid.uuid4().hex, now_ms()
            await self.writer.write(WriteOp(session_id, statements=[(
                "UPDATE session_messages SET state='sending', claim=?, claimed_ms=?,"
                " updated_ms=? WHERE session_id=? AND (state='queued' OR (state='sending'"
                " AND claimed_ms<?))", (claim, now, now, session_id, now - STALE_CLAIM_MS))]))
            letters = await self._select("claim=? AND state='sending'", (claim,))
            for letter in letters:
                await self._write(letter, [])
            return letters

    async def delivered(self, letters: Sequence[Letter], how: DeliveredHow,
                        run_id: str | None) -> None:
        """The claimed messages reached the agent (``how``, in run ``run_id``)."""
        now = now_ms()
        for letter in letters:
            done = Letter(letter.message.model_copy(update={
                "state": "delivered", "how": how, "run_id": run_id,
                "delivered_at": from_ms(now)}), letter.meta)
            await self._write(done, [(
                "UPDATE session_messages SET state='delivered', how=?, run_id=?, delivered_ms=?,"
                " updated_ms=?, claim=NULL WHERE id=?", (how, run_id, now, now,
                                                         letter.message.id))], run_id)

    async def failed(self, letters: Sequence[Letter], error: str) -> None:
        """The claimed messages could not be delivered: ``error`` says why."""
        why = scrub(error)
        for letter in letters:
            done = Letter(letter.message.model_copy(update={"state": "failed", "error": why}),
                          letter.meta)
            await self._write(done, [(
                "UPDATE session_messages SET state='failed', error=?, updated_ms=?, claim=NULL"
                " WHERE id=?", (why, now_ms(), letter.message.id))])

    async def requeue(self, letters: Sequence[Letter]) -> None:
        """Claimed messages go back to the queue (the run that was to carry them did not
        start): the next delivery point takes them."""
        for letter in letters:
            back = Letter(letter.message.model_copy(update={"state": "queued"}), letter.meta)
            await self._write(back, [(
                "UPDATE session_messages SET state='queued', claim=NULL, updated_ms=? WHERE id=?"
                " AND state='sending'", (now_ms(), letter.message.id))])

