"""What the Knowledge panel asks of the host (Qt-free): a search, a scan, a preview — the
engine's ``knowledge`` or the host's API's (:mod:`relay.gui.host_calls`).

The preview shows the hit's own lines from the file in the repository as it is now (the
index keeps pointers: path and line range), with a few lines around them; when the file
is gone or changed past the range, the indexed snippet stands in and says so.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from relay.core.redact import scrub

if TYPE_CHECKING:
    from relay.gui.host_calls import Services
    from relay.knowledge.model import Hit

#: lines shown around a hit in the preview
CONTEXT_LINES = 3
#: at most this many lines of a long symbol are shown
MAX_PREVIEW_LINES = 200


@dataclass(frozen=True)
class SearchAnswer:
    query: str
    hits: list[Hit]
    took_ms: float


@dataclass(frozen=True)
class Preview:
    title: str
    text: str
    #: the first line number shown (None: the snippet, not the file)
    first_line: int | None
    note: str = ""


class KnowledgeBackend:
    def __init__(self, services: Services) -> None:
        self.rebind(services)

    def rebind(self, services: Services) -> None:
        """Go on over ``services`` (the window's host stopped and the window hosts now)."""
        self.services = services

    async def search(self, query: str, limit: int = 50, repo: Path | None = None) -> SearchAnswer:
        started = time.perf_counter()
        hits = await self.services.knowledge.retrieve(query, limit=limit, repo=repo)
        return SearchAnswer(query, hits, (time.perf_counter() - started) * 1000)

    async def scan(self, repo: Path) -> str:
        r = await self.services.knowledge.scan(repo)
        return (f"Scanned {r.repo}: {r.files} source files ({r.scanned} read, {r.unchanged} "
                f"unchanged, {r.removed} removed), {r.symbols} symbols in {r.seconds:.1f} s")

    async def preview(self, hit: Hit) -> Preview:
        return await asyncio.to_thread(read_preview, hit)


def read_preview(hit: Hit) -> Preview:
    """The hit's lines from its file (scrubbed like everything the index holds)."""
    title = f"{hit.path}:{hit.start}-{hit.end}" if hit.start else hit.path
    path = Path(hit.repo) / hit.path if hit.repo else None
    if path is None or hit.start is None or not path.is_file():
        return Preview(title, hit.snippet, None, "the indexed text (no file to read)")
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return Preview(title, hit.snippet, None, f"the indexed text ({exc.strerror})")
    end = hit.end or hit.start
    if hit.start > len(lines):
        return Preview(title, hit.snippet, None, "the indexed text (the file has changed)")
    first = max(1, hit.start - CONTEXT_LINES)
    last = min(len(lines), end + CONTEXT_LINES, first + MAX_PREVIEW_LINES - 1)
    width = len(str(last))
    text = "\n".join(f"{n:>{width}}  {lines[n - 1]}" for n in range(first, last + 1))
    return Preview(title, scrub(text), first)
