"""The knowledge tool: retrieval from the knowledge graph (``engine.knowledge``).

Relay indexes a repository's code (modules, top-level symbols) when a session starts in it,
and each session's activity (files touched, decisions, constraints, things not to redo)
when it ends; the vault and anything the scrubber flags never reach the index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from relay.core.errors import RelayError
from relay.core.present import clip
from relay.engine.engine import Engine
from relay.knowledge.model import Hit
from relay.mcp.approval import READS
from relay.mcp.results import guarded, ok


class RetrieveResult(BaseModel):
    query: str
    hits: list[Hit]


def hit_text(hit: Hit) -> str:
    session = f" · session {hit.session_id}" if hit.session_id else ""
    return (f"{hit.where} · {hit.kind} {hit.title} · score {hit.score:.2f}{session}\n"
            f"    {clip(' '.join(hit.snippet.split()), 300)}")


class KnowledgeTools:
    """Retrieval over one engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, server: MCPServer) -> None:
        server.add_tool(self.retrieve, name="relay_retrieve", title="Search the project knowledge",
                        annotations=READS)

    @guarded
    async def retrieve(
        self,
        query: Annotated[str, Field(min_length=1, description=(
            "Words to search for: symbols, file names, decisions, errors."))],
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many hits.")] = 20,
        repo: Annotated[str | None, Field(description=(
            "Only this repository (an absolute path it has scanned); default: every one."))] = None,
    ) -> Annotated[CallToolResult, RetrieveResult]:
        """Search the project knowledge graph Relay builds from the code (modules and
        top-level symbols) and from agents' sessions (files touched, decisions, constraints,
        things not to redo), best matches first, each with its path and line range."""
        where = Path(repo).expanduser() if repo else None
        if where is not None and not where.is_absolute():
            raise RelayError(f"{repo!r} is not an absolute path.",
                             "Give the repository's full path, e.g. /home/me/src/app.")
        # answer from an index that caught up: this process's background scans and ingests,
        # then activity other Relay processes recorded and did not index (one that died)
        await self.engine.knowledge.wait_idle()
        await self.engine.ingest_activity()
        hits = await self.engine.knowledge.retrieve(query, limit, where)
        text = "\n".join(hit_text(h) for h in hits) if hits else f"Nothing matches {query!r}."
        return ok(RetrieveResult(query=query, hits=hits), text)
