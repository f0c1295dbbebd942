"""Talking to a session's agent: follow-ups, the queue, steer, interrupt and forks.

``engine.talk`` is the one entry point every front end reaches (the window, relay-cli,
the TUI, MCP, the web board, over the host's API as ``client.talk`` with the same names).
The messages live in the session's inbox (:mod:`relay.sessions.inbox`); the runner
delivers the queued ones at the next turn boundary, never by killing a turn
(:mod:`relay.sessions.talking`); a finished session's are delivered here, as a new run of
the same session (:meth:`Talk.deliver`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from relay.board.model import Comment
from relay.core.capabilities import Cap, Capabilities
from relay.core.errors import RelayError, SessionNotFoundError
from relay.core.events import MessageMode, Notice, utcnow
from relay.core.models import ForkResult, SessionMessage, SessionRow, TalkAbilities
from relay.engine.fork import fork_session
from relay.sessions.inbox import Inbox, Letter, check_attachments, message_body, render
from relay.sessions.talking import STEER_HINT

if TYPE_CHECKING:
    from relay.engine.engine import Engine

log = logging.getLogger(__name__)


#: final states after which queued messages do not start the session again by themselves
_KEPT_AFTER = {"cancelled": "was stopped", "failed": "failed"}


class Talk:
    """``engine.talk``: what a user says to a session, and what they can do with it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        #: one delivery of a finished session's messages at a time (two would race for it)
        self._delivering = asyncio.Lock()

    @property
    def inbox(self) -> Inbox:
        return self.engine.inbox

    async def say(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  source: str = "api", attachments: Sequence[str] = ()) -> SessionMessage:
        """Send ``text`` to the session's agent.

        A finished session: a follow-up, delivered at once as a new run of the same session
        (the runtime's resume, else Relay's brief) — whatever the mode. A running one:
        ``queue`` stores it for the next turn boundary; ``now`` steers it into the running
        turn (the capability ``steer``; else UnsupportedCapabilityError whose hint offers
        queue or interrupt); ``interrupt`` queues it and stops the turn, so it goes next.
        """
        if mode not in ("queue", "now", "interrupt"):
            raise RelayError(f"{mode!r} is not a way to send a message.",
                             "Send it with mode queue, now or interrupt.")
        row = await self.engine.store.sessions.get(session_id)
        files = check_attachments(attachments, Path(row.workdir) if row.workdir else None)
        runner = self.engine._runners.get(row.id)
        if runner is None:
            return await self._follow_up(row, text, mode, source, files)
        if mode == "now" and runner.phase == "running":
            body = message_body(text)
            await runner.steer(render([Letter(SessionMessage(
                id="-", session_id=row.id, text=body, attachments=files, created_at=utcnow()))]))
            return await self.inbox.add(row.id, body, mode=mode, source=source,
                                        attachments=files, delivered="steer",
                                        run_id=runner.run_id)
        message = await self.inbox.add(row.id, text, mode=mode, source=source, attachments=files)
        if mode == "interrupt" and runner.phase == "running":
            await runner.interrupt()
        return message

    async def _follow_up(self, row: SessionRow, text: str, mode: MessageMode, source: str,
                         files: list[str]) -> SessionMessage:
        if not row.finished:
            raise self.engine._not_here(row, RelayError)
        if not row.workdir:
            raise RelayError(f"Session {row.id} never got a folder to work in, so it cannot "
                             "be continued.", "Start a new session instead.")
        message = await self.inbox.add(row.id, text, mode=mode, source=source, attachments=files)
        await self.deliver(row.id, raising=True)
        return await self.inbox.get(row.id, message.id)

    async def deliver(self, session_id: str, *, raising: bool = False,
                      after_run: bool = False) -> bool:
        """A finished session's queued messages as its next run (one prompt); whether a run
        started. A message that cannot go is marked failed (``raising``: and the error
        raised). ``after_run``: the run just ended — a session the user stopped, or one that
        failed, is not started again by what was queued (the messages stay queued, and say
        so once); the user's next message carries them."""
        async with self._delivering:
            row = await self.engine.store.sessions.get(session_id)
            if not row.finished or self.engine.is_running_here(row.id):
                return False
            if after_run and row.state in _KEPT_AFTER:
                waiting = await self.inbox.messages(row.id, pending=True)
                if waiting:
                    count = f"{len(waiting)} queued message{'s' * (len(waiting) != 1)}"
                    await self.engine.post_notice(row.id, Notice(
                        category="warning", message=(
                            f"The session {_KEPT_AFTER[row.state]}, so {count} "
                            f"{'were' if len(waiting) != 1 else 'was'} not sent. Send a "
                            "message to continue with them, or cancel them.")))
                return False
            letters = await self.inbox.claim(row.id)
            if not letters:
                return False
            try:
                await self.engine.continue_session(row.id, render(letters), carrying=letters)
            except RelayError as exc:
                await self.inbox.failed(letters, exc.message)
                if raising:
                    raise
                log.warning("messages to %s not sent: %s", row.id, exc.message)
                return False
        await self._settled(row.id)
        return True

    async def _settled(self, session_id: str) -> None:
        """Until the run carrying the messages has started (they are delivered) or the
        session ended first (they failed)."""
        runner, task = self.engine._runners.get(session_id), self.engine._tasks.get(session_id)
        if runner is None or task is None:
            return
        settled = asyncio.ensure_future(runner.talk.settled.wait())
        try:
            await asyncio.wait({settled, task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            settled.cancel()

    async def deliver_all(self) -> None:
        """What every finished session has queued (an engine opening)."""
        for session_id in await self.inbox.pending_sessions():
            try:
                await self.deliver(session_id)
            except RelayError as exc:
                log.warning("messages to %s not sent: %s", session_id, exc.message)

    async def board_comment(self, session_id: str, comment: Comment) -> None:
        """The owner's comment on the board task linked to a session Relay runs: queued in
        its inbox (kind ``board``), delivered like any message (a finished session's at
        once); the board records it as delivered to the session, so no hook repeats it."""
        try:
            row = await self.engine.store.sessions.get(session_id)
        except SessionNotFoundError:
            return
        await self.inbox.add(row.id, comment.body, kind="board", source="board",
                             meta={"task": comment.task, "comment_id": comment.id})
        async with self.engine.board.lock:
            await self.engine.board.deliver([comment], row.id, "inbox")
        await self.deliver(row.id)

    async def messages(self, session_id: str, *, pending: bool = False) -> list[SessionMessage]:
        """The session's messages, oldest first (``pending``: only queued/sending)."""
        row = await self.engine.store.sessions.get(session_id)
        return await self.inbox.messages(row.id, pending=pending)

    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage:
        """Change a queued message's text (refused once it is being delivered)."""
        row = await self.engine.store.sessions.get(session_id)
        return await self.inbox.edit(row.id, message_id, text)

    async def cancel(self, session_id: str, message_id: str) -> SessionMessage:
        """Cancel a queued message (refused once it is being delivered)."""
        row = await self.engine.store.sessions.get(session_id)
        return await self.inbox.cancel(row.id, message_id)

    async def interrupt(self, session_id: str) -> str:
        """Stop the current turn without ending the conversation; returns what happens.
        Queued messages go next; with none, the session waits for the next message (its
        state ``interrupted``, continued by :meth:`say`)."""
        row = await self.engine.store.sessions.get(session_id)
        runner = self.engine._runners.get(row.id)
        if runner is None:
            if row.finished:
                raise RelayError(f"Session {row.id} has {row.state}; no turn is running.",
                                 f"Continue it with `relay-cli say {row.id} TEXT`.")
            raise self.engine._not_here(row, RelayError)
        queued = len(await self.inbox.messages(row.id, pending=True))
        await runner.interrupt()
        if queued:
            return (f"interrupting the turn: the {queued} queued message"
                    f"{'s go' if queued != 1 else ' goes'} next")
        return "interrupting the turn: the session then waits for your next message"

    async def fork(self, session_id: str, *, at_event: int | None = None,
                   at_commit: str | None = None, prompt: str | None = None) -> ForkResult:
        """A new session in a new worktree at the snapshot of ``at_event`` (a stream row)
        or ``at_commit`` (default: the session's last snapshot), carrying the conversation
        up to there where the runtime can, else the signed brief (relay.engine.fork)."""
        return await fork_session(self.engine, session_id, at_event=at_event,
                                  at_commit=at_commit, prompt=prompt)

    async def abilities(self, session_id: str) -> TalkAbilities:
        """What the composer offers for this session now."""
        row = await self.engine.store.sessions.get(session_id)
        runner = self.engine._runners.get(row.id)
        adapter = runner.adapter if runner is not None else None
        if adapter is not None:
            runtime, caps = adapter.name, adapter.capabilities
        else:
            runs = await self.engine.store.sessions.runs(row.id)
            runtime = runs[-1].runtime if runs else row.runtime
            caps = Capabilities.for_runtime(runtime)  # an unknown one: every level unknown
        busy = runner is not None and runner.phase == "running"
        can_send = runner is not None or (row.finished and bool(row.workdir))
        why: dict[str, str] = {}
        steer, interrupt = caps.level(Cap.STEER), caps.level(Cap.INTERRUPT)
        if not caps.supports(Cap.STEER):
            why["steer"] = f"{runtime} cannot take a message mid-turn. {STEER_HINT}"
        elif not busy:
            why["steer"] = "No turn is running: a message goes at once."
        if not caps.supports(Cap.INTERRUPT):
            why["interrupt"] = f"{runtime} cannot stop a turn and go on."
        elif not busy:
            why["interrupt"] = "No turn is running."
        if not caps.supports(Cap.FORK):
            why["fork"] = (f"{runtime} cannot copy its conversation: a fork starts from "
                           "Relay's brief.")
        if not can_send:
            why["send"] = ("This Relay does not run the session." if not row.finished else
                           "The session never got a folder to work in.")
        return TalkAbilities(session_id=row.id, runtime=runtime, busy=busy, can_send=can_send,
                             steer=steer.value, interrupt=interrupt.value,
                             fork=caps.level(Cap.FORK).value, why_not=why)

