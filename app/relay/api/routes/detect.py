"""``/api/v1/detect``: the agent sessions on this machine — scan, find one, adopt it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, AdoptBody
from relay.detect.adopt import Adopted
from relay.detect.model import DetectedSession
from relay.detect.service import DetectReport
from relay.detect.stores.base import StoreRead

router = APIRouter(prefix="/api/v1/detect", tags=["detect"], responses=ERRORS)


@router.get("", response_model=DetectReport)
async def scan(eng: EngineDep, all_sessions: Annotated[bool, Query(alias="all")] = False,
               usage: bool = True, whole: bool = False) -> DetectReport:
    """The sessions live or active in the last 24 hours (``all``: every one; the older
    ones summaries, their whole intent lifted by ``GET /{key}`` — or all at once with
    ``whole``)."""
    return await eng.detector.scan(all_sessions=all_sessions, usage=usage, whole=whole)


@router.get("/{key}", response_model=tuple[DetectedSession, StoreRead])
async def find(key: str, eng: EngineDep) -> tuple[DetectedSession, StoreRead]:
    """The session named by its id (``runtime:session``) or a unique prefix, read in full
    and its whole intent lifted."""
    return await eng.detector.find(key)


@router.post("/{key}/adopt", status_code=201, response_model=Adopted)
async def adopt(key: str, body: AdoptBody, eng: EngineDep) -> Adopted:
    """Continue a detected session on ``to`` from a signed brief; the new session runs in
    the host."""
    from relay.detect.adopt import adopt as adopt_session  # its machinery, when used

    detected, read = await eng.detector.find(key)
    return await adopt_session(eng, detected, read, body.to, in_place=body.in_place)
