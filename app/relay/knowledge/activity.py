"""A session's activity as a graph, from its stored events.

For one session (all its runs, every agent that worked on it):

- a ``task`` node ``task:<session>`` (the task, runtime, state, branch, repository);
- a ``tool_use`` node per tool call (name, a one-line summary of its arguments, whether it
  succeeded, the event id) with an ``emitted`` edge from the task; at most
  :data:`MAX_TOOL_USES`, the latest;
- a ``file`` node per file written or read (paths relative to the worktree, which mirrors
  the repository) — ``touches`` edges from the task (weight: how many writes) and from the
  writing tool call for writes (:data:`relay.sessions.intent.WRITE_TOOLS`, paths from
  :func:`relay.sessions.intent.written`), ``mentions`` edges from the task for reads;
- ``decision`` and ``constraint`` nodes from the agent's text and, for constraints, the
  user's task (:mod:`relay.sessions.facts`), each once per session, with a ``has_fact``
  edge from the task, ``mentions`` edges to the files it names (:meth:`_Builder._mentioned`),
  and a chunk (lang and kind
  ``decision``/``constraint``; path: the first file it names, else the session id) so
  retrieval finds it;
- ``do_not_redo`` nodes: the work the handoff contract lists as done
  (:func:`relay.sessions.briefing.done_items`), with ``has_fact`` edges;
- one ``activity`` chunk (node ``activity:<session>``) so retrieval finds a session by
  what its agents did: what the continuation contract reads — the work done (files
  written, commands run), the plan and what remains (:func:`relay.sessions.intent.plan_lists`),
  the agents' last messages (their summary) — and every tool call (name and arguments,
  once each, the latest :data:`MAX_ACTIVITY_CALLS`), under the task's first line. It is
  rebuilt with the rest whenever the session is indexed: when a run ends, and when a
  handoff builds its contract.

The text is stored scrubbed (the store runs every payload and chunk through the
scrubber; the events were scrubbed before they were stored, too).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from relay.core.events import AgentEvent, EventRecord, ToolCall, ToolResult
from relay.core.present import args_summary, clip
from relay.knowledge.model import Chunk, Edge, Graph, Node, short_hash
from relay.sessions import facts
from relay.sessions.briefing import done_items, last_messages
from relay.sessions.intent import WRITE_TOOLS, plan_lists, written

READ_TOOLS = frozenset({"Read", "read_file", "NotebookRead", "view", "view_file"})
MAX_TOOL_USES = 2000
MAX_FACTS = 100
#: an activity chunk's tool calls (the latest, each once) and its size in characters
MAX_ACTIVITY_CALLS = 300
MAX_ACTIVITY_CHARS = 60_000
_BACKTICKED = re.compile(r"`([^`\s]+)`")
#: a word ending in one of these names a file even outside backticks
FILE_SUFFIXES = frozenset({
    ".py", ".pyi", ".go", ".rs", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".java", ".rb",
    ".kt", ".swift", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".php", ".md", ".rst", ".txt",
    ".json", ".toml", ".yaml", ".yml", ".ini", ".cfg", ".sh", ".sql", ".html", ".css", ".lock"})
_PATHLIKE = re.compile(r"^[\w.-]+(?:/[\w.-]+)*$")


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What the store says about a session, with its repository resolved."""

    session_id: str
    repo: str
    repo_key: str
    workdir: str | None
    task: str
    runtime: str
    state: str
    branch: str | None


def session_graph(info: SessionInfo, records: Sequence[EventRecord]) -> Graph:
    """The session's nodes, edges and chunks (see the module docstring)."""
    return _Builder(info).build(records)


def _ms(event: AgentEvent) -> int:
    return int(event.ts.timestamp() * 1000)


class _Builder:
    def __init__(self, info: SessionInfo) -> None:
        self.info = info
        self.task_id = f"task:{info.session_id}"
        self.worktree = Path(info.workdir or info.repo)
        self.graph = Graph()
        self.files: dict[str, str] = {}  # path -> node id
        self.facts: dict[str, tuple[str, str]] = {}  # normalised -> (kind, node id)

    def build(self, records: Sequence[EventRecord]) -> Graph:
        info, events = self.info, [r.event for r in records]
        first = _ms(events[0]) if events else None
        self.graph.nodes.append(Node(self.task_id, "task", {
            "task": clip(info.task, 2000), "runtime": info.runtime, "state": info.state,
            "branch": info.branch, "repo": info.repo}, session_id=info.session_id,
            repo=info.repo, created_at=first))
        self._tools(records)
        for kind, text in facts.extract(info.task, decisions=False):
            self._fact(kind, text, "task", None, first)
        for record in records:
            event = record.event
            if event.kind == "assistant_text" and not event.reasoning:
                for kind, text in facts.extract(event.text):
                    self._fact(kind, text, "agent", record.id, _ms(event))
        last = _ms(events[-1]) if events else None
        done = done_items(events, self.worktree)
        for item in done:
            self._node("do_not_redo", {"text": item}, last)
        self._cap()
        self._activity(events, done, last)
        return self.graph

    def _activity(self, events: Sequence[AgentEvent], done: list[str], ms: int | None) -> None:
        """The session's one activity chunk (see the module docstring)."""
        info = self.info
        plan, remaining = plan_lists(events)
        calls = [f"{e.name} {args_summary(e.input, 200)}".strip()
                 for e in events if isinstance(e, ToolCall)]
        sections = [("Done", done), ("Plan", plan), ("Remaining", remaining),
                    ("The agents said", last_messages(events)),
                    ("Tool calls", list(dict.fromkeys(calls))[-MAX_ACTIVITY_CALLS:])]
        lines = [line for title, items in sections if items
                 for line in (f"{title}:", *(f"- {item}" for item in items))]
        if not lines:
            return
        goal = (info.task.strip().splitlines() or [""])[0]
        body = clip("\n".join([goal, *lines]), MAX_ACTIVITY_CHARS)
        node_id = self._node("activity", {"text": goal, "runtime": info.runtime,
                                          "state": info.state}, ms, key="all")
        self.graph.chunks.append(Chunk(
            id=node_id, path=info.session_id, lang="activity", start=None, end=None, body=body,
            sha=short_hash(body, 40), kind="activity", title=clip(goal, 120) or info.session_id,
            node_id=node_id, repo=info.repo, session_id=info.session_id))

    def _node(self, kind: str, payload: dict[str, Any], ms: int | None,
              key: str | None = None) -> str:
        node_id = f"{kind}:{self.info.session_id}:{key or short_hash(str(payload.get('text')))}"
        self.graph.nodes.append(Node(node_id, kind, payload, session_id=self.info.session_id,
                                     repo=self.info.repo, created_at=ms))
        edge = "emitted" if kind == "tool_use" else "has_fact"
        self.graph.edges.append(Edge(self.task_id, node_id, edge))
        return node_id

    def _file(self, path: str) -> str:
        if path not in self.files:
            node_id = f"file:{self.info.repo_key}:{path}"
            self.files[path] = node_id
            self.graph.nodes.append(Node(node_id, "file", {"path": path}, repo=self.info.repo,
                                         path=path))
        return self.files[path]

    def _tools(self, records: Sequence[EventRecord]) -> None:
        results = {r.event.call_id: r.event for r in records if r.event.kind == "tool_result"}
        calls = [r for r in records if r.event.kind == "tool_call"][-MAX_TOOL_USES:]
        writes: Counter[str] = Counter()
        reads: set[str] = set()
        for record in calls:
            call = record.event
            assert isinstance(call, ToolCall)
            result = results.get(call.call_id)
            node_id = self._node("tool_use", {
                "name": call.name, "summary": args_summary(call.input, 200),
                "ok": _succeeded(result), "eventId": record.id}, _ms(call), key=call.call_id)
            if call.name in WRITE_TOOLS:
                for path, _ in written(call, self.worktree):
                    writes[path] += 1
                    self.graph.edges.append(Edge(node_id, self._file(path), "touches"))
            elif call.name in READ_TOOLS and (path := _read_path(call, self.worktree)):
                reads.add(path)
        for path, count in writes.items():
            self.graph.edges.append(Edge(self.task_id, self._file(path), "touches", float(count)))
        for path in sorted(reads - set(writes)):
            self.graph.edges.append(Edge(self.task_id, self._file(path), "mentions"))

    def _fact(self, kind: str, text: str, source: str, event_id: int | None,
              ms: int | None) -> None:
        key = facts.normalised(text)
        if key in self.facts:
            return
        mentioned = self._mentioned(text)
        node_id = self._node(kind, {"text": text, "source": source, "eventId": event_id,
                                    "files": mentioned}, ms, key=short_hash(key))
        self.facts[key] = (kind, node_id)
        for path in mentioned:
            self.graph.edges.append(Edge(node_id, self._file(path), "mentions"))
        self.graph.chunks.append(Chunk(
            id=node_id, path=mentioned[0] if mentioned else self.info.session_id, lang=kind,
            start=None, end=None, body=text, sha=short_hash(text, 40), kind=kind, title=kind,
            node_id=node_id, repo=self.info.repo, session_id=self.info.session_id))

    def _mentioned(self, text: str) -> list[str]:
        """Files a sentence names: files the session touched (by path or name), backticked
        paths, and words that look like paths (a ``/`` or a :data:`FILE_SUFFIXES` ending)."""
        words = [w.strip("`'\"()[],:;!?").rstrip(".") for w in text.split()]
        found = [p for p in self.files if p in text or PurePosixPath(p).name in words]
        candidates = [t.strip("'\"`,:;()").rstrip(".") for t in _BACKTICKED.findall(text)]
        candidates += [w for w in words if _PATHLIKE.match(w) and (
            "/" in w.strip("/") or PurePosixPath(w).suffix.lower() in FILE_SUFFIXES)]
        for token in candidates:
            path = _relative(token, self.worktree)
            if ("/" in path or PurePosixPath(path).suffix) and path not in found:
                found.append(path)
        return found[:5]

    def _cap(self) -> None:
        """At most :data:`MAX_FACTS` decisions and constraints each (the latest)."""
        per_kind: dict[str, list[str]] = {}
        for kind, node_id in self.facts.values():
            per_kind.setdefault(kind, []).append(node_id)
        dropped = {i for ids in per_kind.values() for i in ids[:-MAX_FACTS]}
        if not dropped:
            return
        g = self.graph
        g.nodes = [n for n in g.nodes if n.id not in dropped]
        g.edges = [e for e in g.edges if e.from_id not in dropped and e.to_id not in dropped]
        g.chunks = [c for c in g.chunks if c.node_id not in dropped]


def _succeeded(result: ToolResult | None) -> bool | None:
    if result is None:
        return None
    return result.is_error is not True and result.exit_code in (None, 0)


def _read_path(call: ToolCall, worktree: Path) -> str:
    value = next((call.input[k] for k in ("file_path", "path", "notebook_path")
                  if isinstance(call.input.get(k), str)), "")
    return _relative(value.strip(), worktree) if value.strip() else ""


def _relative(path: str, worktree: Path) -> str:
    candidate = PurePosixPath(path)
    if candidate.is_absolute():
        for root in (worktree, worktree.resolve()):
            if candidate.is_relative_to(root.as_posix()):
                return candidate.relative_to(root.as_posix()).as_posix() or path
    return path
