"""``/api/v1/knowledge``: search what Relay knows about a project, scan a repository,
index the session activity stored since the last ingest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query

from relay.api.context import EngineDep
from relay.api.schemas import ERRORS, RepoBody
from relay.knowledge.model import Hit, Stats
from relay.knowledge.scanner import ScanReport
from relay.knowledge.service import IngestReport

router = APIRouter(prefix="/api/v1/knowledge", tags=["knowledge"], responses=ERRORS)


@router.get("/search", response_model=list[Hit])
async def retrieve(eng: EngineDep, q: Annotated[str, Query(max_length=2000)],
                   limit: Annotated[int, Query(ge=1, le=1000)] = 20,
                   repo: Path | None = None) -> list[Hit]:
    """Code symbols and session activity matching ``q`` (in ``repo`` only, when given)."""
    return await eng.knowledge.retrieve(q, limit=limit, repo=repo)


@router.post("/scan", response_model=ScanReport)
async def scan(body: RepoBody, eng: EngineDep) -> ScanReport:
    """Index a repository's source files (only what changed since its last scan)."""
    return await eng.knowledge.scan(body.repo)


@router.post("/ingest", response_model=IngestReport)
async def ingest(eng: EngineDep) -> IngestReport:
    """Index the session activity stored since the last ingest."""
    return await eng.knowledge.ingest(eng.store)


@router.get("/stats", response_model=Stats)
async def stats(eng: EngineDep) -> Stats:
    """How much the index holds."""
    return await eng.knowledge.stats()
