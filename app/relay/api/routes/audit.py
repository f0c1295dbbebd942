"""``/api/v1/audit``: verify the data folder's hash-chained audit log."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends

from relay.api.context import engine
from relay.api.schemas import ERRORS, AuditVerify
from relay.core.audit import verify

if TYPE_CHECKING:
    from relay.engine.engine import Engine

router = APIRouter(prefix="/api/v1/audit", tags=["audit"], responses=ERRORS)
EngineDep = Annotated["Engine", Depends(engine)]


@router.get("/verify", response_model=AuditVerify)
async def verify_log(eng: EngineDep) -> AuditVerify:
    """Walk the chain and name the first broken line; check it ends where the database's
    anchor says (in a worker thread)."""
    log = eng.audit.log

    def check() -> AuditVerify:
        anchor = log.anchor.read() if log.anchor else None
        return AuditVerify(report=verify(log.path, anchor), anchored=anchor is not None,
                           anchored_since_ms=anchor.since_ms if anchor else None,
                           anchor_note=anchor.reset_note if anchor else None)
    return await asyncio.to_thread(check)
