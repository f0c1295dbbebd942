"""``/api/v1/audit``: verify the data folder's hash-chained audit log; its latest entries."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, AuditLine, AuditVerify
from relay.core.audit import iter_entries

router = APIRouter(prefix="/api/v1/audit", tags=["audit"], responses=ERRORS)


@router.get("/verify", response_model=AuditVerify)
async def verify_log(eng: EngineDep) -> AuditVerify:
    """Walk the chain and name the first broken line; check it ends where the database's
    anchor says (in a worker thread)."""
    log = eng.audit.log

    def check() -> AuditVerify:
        return AuditVerify.of(log.path, log.anchor.read() if log.anchor else None)
    return await asyncio.to_thread(check)


@router.get("/entries", response_model=list[AuditLine])
async def entries(eng: EngineDep,
                  limit: Annotated[int, Query(ge=1, le=10_000)] = 20) -> list[AuditLine]:
    """The latest ``limit`` entries with their line numbers, oldest first (parsed, not
    verified: use ``/audit/verify`` for that)."""
    path = eng.audit.log.path

    def latest() -> list[AuditLine]:
        found = deque(enumerate(iter_entries(path), start=1), maxlen=limit)
        return [AuditLine(line=number, entry=entry) for number, entry in found]
    return await asyncio.to_thread(latest)
