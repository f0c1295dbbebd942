"""The rows the knowledge graph holds, and what reading it returns."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

#: the node types agent activity produces
FACT_KINDS = ("decision", "constraint", "do_not_redo")


@dataclass(frozen=True, slots=True)
class Node:
    """A ``nodes`` row. ``payload`` is JSON-able and is scrubbed when stored."""

    id: str
    node_type: str
    payload: dict[str, Any]
    session_id: str | None = None
    weight: float = 1.0
    repo: str | None = None
    path: str | None = None
    #: milliseconds; None = when it is stored (kept when the node is stored again)
    created_at: int | None = None


@dataclass(frozen=True, slots=True)
class Edge:
    from_id: str
    to_id: str
    edge_type: str
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Chunk:
    """A ``chunks`` row: a piece of text retrieval can find. ``body`` is scrubbed when stored."""

    id: str
    path: str
    lang: str
    start: int | None
    end: int | None
    body: str
    sha: str
    kind: str
    title: str
    node_id: str
    repo: str | None = None
    session_id: str | None = None


@dataclass
class Graph:
    """Nodes, edges and chunks to store together (one file, or one session)."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieval result. ``score`` is ``-bm25``: higher is better."""

    path: str
    start: int | None
    end: int | None
    lang: str
    kind: str
    title: str
    score: float
    snippet: str
    repo: str | None
    session_id: str | None
    node_id: str

    @property
    def where(self) -> str:
        """``path:start-end`` (just the path for facts without lines)."""
        if self.start is None:
            return self.path
        return f"{self.path}:{self.start}" + (f"-{self.end}" if self.end != self.start else "")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "startLine": self.start, "endLine": self.end,
                "lang": self.lang, "kind": self.kind, "title": self.title,
                "score": round(self.score, 4), "snippet": self.snippet, "repo": self.repo,
                "sessionId": self.session_id, "nodeId": self.node_id}


@dataclass(frozen=True, slots=True)
class Fact:
    """A decision, constraint or do-not-redo item of a session, oldest first."""

    kind: str
    text: str
    session_id: str
    node_id: str
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RepoStats:
    repo: str
    files: int
    symbols: int
    scanned_at: int | None


@dataclass(frozen=True, slots=True)
class Stats:
    path: str
    nodes: dict[str, int]
    edges: dict[str, int]
    chunks: dict[str, int]
    repos: list[RepoStats]
    cursor: int
    sessions: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "nodes": self.nodes, "edges": self.edges,
                "chunks": self.chunks, "cursor": self.cursor, "sessions": self.sessions,
                "repos": [{"repo": r.repo, "files": r.files, "symbols": r.symbols,
                           "scannedAt": r.scanned_at} for r in self.repos]}


def short_hash(text: str, length: int = 12) -> str:
    """A stable short id part for ``text``."""
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()[:length]
