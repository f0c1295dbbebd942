"""``/api/v1/sessions/{id}/…``: talking to a session's agent — follow-ups, the queue, steer,
interrupt and forks.

Every route is a thin call of ``engine.talk`` (:class:`relay.engine.talk.Talk`) answering
its own pydantic models; the client's ``client.talk`` carries the same method names
(relay.api.client_talk). A steer the runtime cannot take is ``unsupported_capability``
(relay.api.errors), which the client raises as the same class.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, Done, Strict
from relay.core.events import MessageMode
from relay.core.models import MAX_TASK_BYTES, ForkResult, SessionMessage, TalkAbilities

router = APIRouter(prefix="/api/v1/sessions", tags=["talk"], responses=ERRORS)

#: who may be named as a message's source (a front end's name)
SOURCE = Field("api", min_length=1, max_length=40, pattern=r"^[a-z][a-z0-9_-]*$")


class SayBody(Strict):
    text: str = Field(min_length=1, max_length=MAX_TASK_BYTES)
    #: queue (default: at the next turn boundary), now (steer the running turn), interrupt
    #: (stop the turn; it goes next). A finished session: a follow-up whatever the mode.
    mode: MessageMode = "queue"
    #: file or image paths the agent should read (inside the worktree, or absolute)
    attachments: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(
        default_factory=list, max_length=50)
    source: str = SOURCE


class EditBody(Strict):
    text: str = Field(min_length=1, max_length=MAX_TASK_BYTES)


class ForkBody(Strict):
    #: the parent's stream row (an event id) to fork at
    at_event: int | None = Field(None, ge=0)
    #: or a commit (a snapshot sha, or a unique prefix of one)
    at_commit: str | None = Field(None, min_length=4, max_length=64)
    #: the fork's first prompt (default: the parent's task)
    prompt: str | None = Field(None, min_length=1, max_length=MAX_TASK_BYTES)


@router.get("/{session_id}/messages", response_model=list[SessionMessage])
async def messages(session_id: str, eng: EngineDep,
                   pending: Annotated[bool, Query()] = False) -> list[SessionMessage]:
    """The session's messages, oldest first (``pending``: only those not delivered yet)."""
    return await eng.talk.messages(session_id, pending=pending)


@router.post("/{session_id}/messages", status_code=201, response_model=SessionMessage)
async def say(session_id: str, body: SayBody, eng: EngineDep) -> SessionMessage:
    """Send a message to the session's agent: a follow-up on a finished session; on a
    running one queued for the next turn boundary, steered into the turn (``now``), or sent
    after interrupting the turn (``interrupt``)."""
    return await eng.talk.say(session_id, body.text, mode=body.mode, source=body.source,
                              attachments=body.attachments)


@router.patch("/{session_id}/messages/{message_id}", response_model=SessionMessage)
async def edit(session_id: str, message_id: str, body: EditBody,
               eng: EngineDep) -> SessionMessage:
    """Change a queued message's text (refused once it is being delivered)."""
    return await eng.talk.edit(session_id, message_id, body.text)


@router.delete("/{session_id}/messages/{message_id}", response_model=SessionMessage)
async def cancel(session_id: str, message_id: str, eng: EngineDep) -> SessionMessage:
    """Cancel a queued message (refused once it is being delivered)."""
    return await eng.talk.cancel(session_id, message_id)


@router.post("/{session_id}/interrupt", response_model=Done)
async def interrupt(session_id: str, eng: EngineDep) -> Done:
    """Stop the current turn, keep the conversation: queued messages go next; with none the
    session waits (``interrupted``) for the next message."""
    return Done(message=await eng.talk.interrupt(session_id))


@router.post("/{session_id}/fork", status_code=201, response_model=ForkResult)
async def fork(session_id: str, body: ForkBody, eng: EngineDep) -> ForkResult:
    """A new session in a new worktree at a stream row's (or a commit's) snapshot, carrying
    the conversation up to there where the runtime can, else Relay's signed brief."""
    return await eng.talk.fork(session_id, at_event=body.at_event, at_commit=body.at_commit,
                               prompt=body.prompt)


@router.get("/{session_id}/talk", response_model=TalkAbilities)
async def abilities(session_id: str, eng: EngineDep) -> TalkAbilities:
    """What a composer offers for the session now: busy, send, steer, interrupt, fork."""
    return await eng.talk.abilities(session_id)
