"""A stand-in for ``engine.talk`` (:class:`relay.gui.sessions_source.TalkCalls`) for window
tests that need a given runtime's abilities (a runtime without steer) or a message state the
demo does not reach on its own. It records every call and writes each message change as the
real inbox does — one MessageChanged through the engine's writer — so the window sees it
through the bus like any other record (another client's message included)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from relay.core.events import DeliveredHow, MessageChanged, MessageMode, MessageState, utcnow
from relay.core.models import ForkResult, SessionMessage, TalkAbilities
from relay.core.store.writer import WriteOp
from relay.engine.engine import Engine


def abilities(session_id: str, *, busy: bool = True, steer: str = "yes",
              interrupt: str = "yes", why_not: dict[str, str] | None = None) -> TalkAbilities:
    return TalkAbilities(session_id=session_id, runtime="demo", busy=busy, can_send=True,
                         steer=steer, interrupt=interrupt, fork="yes", why_not=why_not or {})


class FakeTalk:
    """Records calls; ``able`` is what :meth:`abilities` answers. What the engine itself asks
    of its talk (delivering at a run's end …) goes to the real one."""

    def __init__(self, engine: Engine, able: TalkAbilities | None = None,
                 fork_to: str = "fork-1") -> None:
        self.engine = engine
        self.real = engine.talk
        self.able = able
        self.fork_to = fork_to
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.store: dict[str, SessionMessage] = {}
        self._ids = itertools.count(1)

    async def _change(self, message: SessionMessage, state: MessageState,
                      how: DeliveredHow | None = None, text: str | None = None) -> SessionMessage:
        changed = message.model_copy(update={"state": state, "how": how,
                                             "text": message.text if text is None else text})
        self.store[message.id] = changed
        await self.engine.writer.write(WriteOp(message.session_id, None, MessageChanged(
            message_id=message.id, state=state, mode=message.mode, how=how,
            text=changed.text, source=message.source)))
        return changed

    async def say(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  source: str = "api", attachments: Sequence[str] = ()) -> SessionMessage:
        self.calls.append(("say", {"session_id": session_id, "text": text, "mode": mode,
                                   "source": source, "attachments": list(attachments)}))
        message = SessionMessage(id=f"m{next(self._ids)}", session_id=session_id, text=text,
                                 mode=mode, source=source, attachments=list(attachments),
                                 created_at=utcnow())
        if mode == "now":
            return await self._change(message, "delivered", "steer")
        return await self._change(message, "queued")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    async def deliver_message(self, message_id: str) -> SessionMessage:
        return await self._change(self.store[message_id], "delivered", "turn")

    async def messages(self, session_id: str, *, pending: bool = False) -> list[SessionMessage]:
        self.calls.append(("messages", {"session_id": session_id, "pending": pending}))
        return [m for m in self.store.values() if m.session_id == session_id
                and (not pending or m.state in ("queued", "sending"))]

    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage:
        self.calls.append(("edit", {"message_id": message_id, "text": text}))
        return await self._change(self.store[message_id], "queued", text=text)

    async def cancel(self, session_id: str, message_id: str) -> SessionMessage:
        self.calls.append(("cancel", {"message_id": message_id}))
        return await self._change(self.store[message_id], "cancelled")

    async def interrupt(self, session_id: str) -> str:
        self.calls.append(("interrupt", {"session_id": session_id}))
        return "Interrupted the turn; the session waits for your next message."

    async def fork(self, session_id: str, *, at_event: int | None = None,
                   at_commit: str | None = None, prompt: str | None = None) -> ForkResult:
        self.calls.append(("fork", {"session_id": session_id, "at_event": at_event,
                                    "at_commit": at_commit, "prompt": prompt}))
        return ForkResult(session_id=self.fork_to, parent_id=session_id, sha="abc1234def",
                          how="conversation", turns=1)

    async def abilities(self, session_id: str) -> TalkAbilities:
        self.calls.append(("abilities", {"session_id": session_id}))
        return self.able or abilities(session_id)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [args for called, args in self.calls if called == name]
