"""Where the window's sessions come from: the engine it hosts, or the host it is a client of.

The sessions list, the stream, the Handoff panel, the question panel and the composer need a
few of the engine's methods; :class:`SessionsSource` names them (the composer's are
:class:`TalkCalls`, ``engine.talk`` here and ``client.talk`` over the API: the same names;
the list's archiving is :class:`SessionListCalls`, ``engine.sessions`` / ``client.sessions``).
The :class:`~relay.engine.engine.Engine` has them as they are (the window hosts);
:class:`ClientSource` gives them over a :class:`~relay.api.client.RelayClient` (the window is
a client of a host that runs elsewhere: another window, ``relay-cli serve``, ``--connect URL``)
and adds the live feed, the host's whole event stream from now on. No Qt here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Protocol

from relay.api.client import RelayClient
from relay.core.events import EventRecord, MessageMode, NeedsInput
from relay.core.models import ForkResult, SessionMessage, SessionRow, SessionSpec, TalkAbilities
from relay.sessions.handoff import HandoffRecord

#: how many events one page of a session's history asks for
PAGE = 5000


class TalkCalls(Protocol):
    """What the composer says to a session's agent (:class:`relay.engine.talk.Talk`)."""

    async def say(self, session_id: str, text: str, *, mode: MessageMode = "queue",
                  source: str = "api", attachments: Sequence[str] = ()) -> SessionMessage: ...
    async def messages(self, session_id: str, *, pending: bool = False
                       ) -> list[SessionMessage]: ...
    async def edit(self, session_id: str, message_id: str, text: str) -> SessionMessage: ...
    async def cancel(self, session_id: str, message_id: str) -> SessionMessage: ...
    async def interrupt(self, session_id: str) -> str: ...
    async def fork(self, session_id: str, *, at_event: int | None = None,
                   at_commit: str | None = None, prompt: str | None = None) -> ForkResult: ...
    async def abilities(self, session_id: str) -> TalkAbilities: ...


class SessionListCalls(Protocol):
    """The session list and archiving (``engine.sessions``; ``client.sessions`` over the
    API: the same names)."""

    async def recent(self, limit: int = 200, archived: bool = False) -> list[SessionRow]: ...
    async def archive(self, session_id: str) -> SessionRow: ...
    async def unarchive(self, session_id: str) -> SessionRow: ...


class SessionsSource(Protocol):
    """The engine's methods the window's session panels use (the Engine has them all)."""

    async def list_sessions(self, limit: int = 200, archived: bool = False
                            ) -> list[SessionRow]: ...
    async def get_session(self, session_id: str) -> SessionRow: ...
    async def session_events(self, session_id: str) -> list[EventRecord]: ...
    async def session_spec(self, session_id: str) -> SessionSpec: ...
    async def handoffs(self, session_id: str) -> list[HandoffRecord]: ...
    async def open_questions(self, session_id: str) -> list[NeedsInput]: ...
    async def answer_input(self, session_id: str, request_id: str,
                           option_id: str | None = None, text: str | None = None) -> str: ...
    async def start_session(self, spec: SessionSpec) -> str: ...
    async def cancel_session(self, session_id: str) -> None: ...
    async def request_handoff(self, session_id: str, to_entry: str | None = None) -> str: ...
    def is_running_here(self, session_id: str) -> bool: ...

    @property
    def talk(self) -> TalkCalls:
        """Follow-ups, the queue, steer, interrupt and forks (``engine.talk``)."""
        ...

    @property
    def sessions(self) -> SessionListCalls:
        """The session list, archive and unarchive (``engine.sessions``)."""
        ...


class ClientSource:
    """:class:`SessionsSource` over a host's API; :attr:`client` does the calls."""

    def __init__(self, client: RelayClient) -> None:
        self.client = client

    @property
    def url(self) -> str:
        return self.client.url

    async def list_sessions(self, limit: int = 200, archived: bool = False
                            ) -> list[SessionRow]:
        return await self.client.list_sessions(limit, archived)

    async def get_session(self, session_id: str) -> SessionRow:
        return await self.client.get_session(session_id)

    async def session_events(self, session_id: str) -> list[EventRecord]:
        """The session's stored events, every page of them."""
        events: list[EventRecord] = []
        while True:
            page = await self.client.events_after(events[-1].id if events else 0,
                                                  session_id, limit=PAGE)
            events.extend(page)
            if len(page) < PAGE:
                return events

    async def session_spec(self, session_id: str) -> SessionSpec:
        return await self.client.session_spec(session_id)

    async def handoffs(self, session_id: str) -> list[HandoffRecord]:
        return await self.client.handoffs(session_id)

    async def open_questions(self, session_id: str) -> list[NeedsInput]:
        return await self.client.open_questions(session_id)

    async def answer_input(self, session_id: str, request_id: str,
                           option_id: str | None = None, text: str | None = None) -> str:
        return await self.client.answer_input(session_id, request_id, option_id, text)

    async def start_session(self, spec: SessionSpec) -> str:
        return await self.client.start_session(spec)

    async def cancel_session(self, session_id: str) -> None:
        await self.client.cancel_session(session_id)

    async def request_handoff(self, session_id: str, to_entry: str | None = None) -> str:
        return await self.client.request_handoff(session_id, to_entry)

    @property
    def talk(self) -> TalkCalls:
        """The host's ``engine.talk`` over its API (``client.talk``, the same names)."""
        return self.client.talk

    @property
    def sessions(self) -> SessionListCalls:
        """The host's ``engine.sessions`` over its API (``client.sessions``)."""
        return self.client.sessions

    def is_running_here(self, session_id: str) -> bool:
        """The host runs every active session (a stop it cannot do, it refuses)."""
        return True

    async def live(self, after: int, on_link: Callable[[bool], None] | None = None
                   ) -> AsyncGenerator[EventRecord, None]:
        """Every session's events after ``after`` as the host stores them (never ends; it
        resumes from the last one seen when the connection drops, saying so to
        ``on_link``)."""
        async with contextlib.aclosing(self.client.follow(None, after=after,
                                                          on_link=on_link)) as records:
            async for record in records:
                yield record
