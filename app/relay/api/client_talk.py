"""The client's ``client.talk``: ``engine.talk`` (:class:`relay.engine.talk.Talk`) over the
host's API — follow-ups, the queue, steer, interrupt and forks, with the same method names,
arguments and models (:mod:`relay.api.client_features` says how parts work). A steer the
runtime cannot take comes back as the same :class:`~relay.core.errors.
UnsupportedCapabilityError`."""

from __future__ import annotations

from collections.abc import Sequence

from relay.api.client_features import Part, seg
from relay.api.schemas import Done
from relay.core.events import MessageMode
from relay.core.models import ForkResult, SessionMessage, TalkAbilities


class TalkClient(Part):
    """``engine.talk``: what a user says to a session, and what they can do with it."""

    async def say(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  source: str = "api", attachments: Sequence[str] = ()) -> SessionMessage:
        return await self._ask(SessionMessage, "POST", f"/sessions/{seg(session_id)}/messages",
                               body={"text": text, "mode": mode, "source": source,
                                     "attachments": list(attachments)})

    async def messages(self, session_id: str, *, pending: bool = False) -> list[SessionMessage]:
        return await self._ask(list[SessionMessage], "GET",
                               f"/sessions/{seg(session_id)}/messages", pending=pending)

    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage:
        return await self._ask(SessionMessage, "PATCH",
                               f"/sessions/{seg(session_id)}/messages/{seg(message_id)}",
                               body={"text": text})

    async def cancel(self, session_id: str, message_id: str) -> SessionMessage:
        return await self._ask(SessionMessage, "DELETE",
                               f"/sessions/{seg(session_id)}/messages/{seg(message_id)}")

    async def interrupt(self, session_id: str) -> str:
        done = await self._ask(Done, "POST", f"/sessions/{seg(session_id)}/interrupt")
        return done.message

    async def fork(self, session_id: str, *, at_event: int | None = None,
                   at_commit: str | None = None, prompt: str | None = None) -> ForkResult:
        return await self._ask(ForkResult, "POST", f"/sessions/{seg(session_id)}/fork",
                               body={"at_event": at_event, "at_commit": at_commit,
                                     "prompt": prompt})

    async def abilities(self, session_id: str) -> TalkAbilities:
        return await self._ask(TalkAbilities, "GET", f"/sessions/{seg(session_id)}/talk")
