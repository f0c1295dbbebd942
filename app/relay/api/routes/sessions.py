"""``/api/v1/sessions``: list, show, start, stop, hand off now, continue, questions, answers,
archive and unarchive."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, AnswerBody, ContinueBody, Done, HandoffBody, Started
from relay.api.vault import require_unlocked, spec_need, stored_need
from relay.core.events import NeedsInput
from relay.core.models import RunRow, SessionRow, SessionSpec
from relay.sessions.handoff import HandoffRecord

router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], responses=ERRORS)


@router.get("", response_model=list[SessionRow])
async def list_sessions(eng: EngineDep,
                        limit: Annotated[int, Query(ge=1, le=10_000)] = 200,
                        archived: bool = False) -> list[SessionRow]:
    """The most recent sessions, newest first; archived ones too with ``archived=true``."""
    return await eng.sessions.recent(limit, archived)


@router.post("", status_code=201, response_model=Started)
async def start_session(spec: SessionSpec, eng: EngineDep) -> Started:
    """Start a session in the host; it runs there whatever happens to the client.
    Refused (``vault_locked``) before anything exists when it needs the locked vault."""
    await require_unlocked(eng, await spec_need(eng, spec))
    return Started(id=await eng.start_session(spec))


@router.get("/{session_id}", response_model=SessionRow)
async def get_session(session_id: str, eng: EngineDep) -> SessionRow:
    """A session by id or unique id prefix."""
    return await eng.get_session(session_id)


@router.get("/{session_id}/spec", response_model=SessionSpec)
async def session_spec(session_id: str, eng: EngineDep) -> SessionSpec:
    return await eng.session_spec(session_id)


@router.get("/{session_id}/runs", response_model=list[RunRow])
async def runs(session_id: str, eng: EngineDep) -> list[RunRow]:
    return await eng.runs(session_id)


@router.get("/{session_id}/handoffs", response_model=list[HandoffRecord])
async def handoffs(session_id: str, eng: EngineDep) -> list[HandoffRecord]:
    return await eng.handoffs(session_id)


@router.get("/{session_id}/cost", response_model=float | None)
async def cost(session_id: str, eng: EngineDep) -> float | None:
    """What the session cost so far in USD (None: no price known)."""
    return await eng.session_cost(session_id)


@router.post("/{session_id}/stop", response_model=Done)
async def stop(session_id: str, eng: EngineDep) -> Done:
    """Stop a running session (it ends cancelled)."""
    await eng.cancel_session(session_id)
    return Done()


@router.post("/{session_id}/archive", response_model=SessionRow)
async def archive(session_id: str, eng: EngineDep) -> SessionRow:
    """Archive a finished session: the lists leave it out unless asked for."""
    return await eng.sessions.archive(session_id)


@router.post("/{session_id}/unarchive", response_model=SessionRow)
async def unarchive(session_id: str, eng: EngineDep) -> SessionRow:
    """Bring an archived session back into the lists."""
    return await eng.sessions.unarchive(session_id)


@router.post("/{session_id}/handoff", response_model=Done)
async def hand_off(session_id: str, body: HandoffBody, eng: EngineDep) -> Done:
    """Hand a running session to another chain entry now, at its next safe point."""
    return Done(message=await eng.request_handoff(session_id, body.to))


@router.post("/{session_id}/continue", response_model=Started)
async def continue_session(session_id: str, body: ContinueBody, eng: EngineDep) -> Started:
    """Resume a finished session's agent conversation with a new prompt."""
    await require_unlocked(eng, await stored_need(eng, session_id, resumed=True))
    return Started(id=await eng.continue_session(session_id, body.prompt))


@router.get("/{session_id}/questions", response_model=list[NeedsInput])
async def questions(session_id: str, eng: EngineDep) -> list[NeedsInput]:
    """The agent's questions nobody has answered yet."""
    return await eng.open_questions(session_id)


@router.post("/{session_id}/answers", response_model=Done)
async def answer(session_id: str, body: AnswerBody, eng: EngineDep) -> Done:
    """Answer one of the agent's questions (an option id or free text)."""
    return Done(message=await eng.answer_input(session_id, body.request_id, body.option_id,
                                               body.text))
