"""Pi sessions: ``<agent dir>/sessions/--<cwd>--/<time>_<session id>.jsonl`` (appended).

What a session file records (0.73.1, ``tests/fixtures/pi/NOTES.md``, "Session files"):

* line 1 (repeated on resume): ``{"type":"session", "id", "timestamp", "cwd"}``;
* a tree of entries (``id`` / ``parentId``): ``model_change`` (``provider``, ``modelId``),
  ``thinking_level_change``, and ``message`` entries whose ``message.role`` is ``user`` (the
  prompt), ``assistant`` (text, thinking and ``toolCall`` blocks, ``model``, ``stopReason``
  ``stop`` / ``length`` / ``toolUse`` / ``error`` / ``aborted``) or ``toolResult``
  (``toolCallId``, ``content``, ``isError``).

**Failures are only in the records**: Pi exits 0 after failed retries. Each failed attempt is an
assistant message with ``stopReason:"error"`` and ``errorMessage`` ("429 The usage limit has been
reached"); one followed by another reply was retried (a notice), the last one of a turn is its
failure, classified by :mod:`relay.core.signals` (Pi never gives a reset time).

Only the active branch is read: the path from the last entry back to the root (a session
navigated with ``/tree`` keeps the abandoned branches in the file). A broken chain (a corrupt
line in the middle) falls back to file order.

Not recorded: skills, MCP servers (Pi has none), approvals (Pi never asks), costs beyond usage
(the wallet's index reads those).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from relay.core.agent_homes import PiHome
from relay.core.events import (
    AgentEvent,
    AssistantText,
    Notice,
    SessionEnded,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnCompleted,
)
from relay.core.jsonvalue import as_dict, as_list, as_text
from relay.detect.stores.base import StoreItem, StoreListing
from relay.detect.stores.transcript import (
    LINE_LIMIT,
    MAX_OUTPUT,
    MAX_PROMPT,
    MAX_TEXT,
    TranscriptRead,
    add_item,
    add_unique,
    at_ms,
    clip,
    clip_value,
    failure_events,
    is_dir,
    mtime_of,
    records,
    scan,
)
from relay.wallet.transcripts import iso_ms

RUNTIME = "pi"


class PiStore:
    """Pi's sessions under one agent folder (``$PI_CODING_AGENT_DIR``, ``~/.pi/agent``)."""

    runtime = RUNTIME

    def __init__(self, *, line_limit: int = LINE_LIMIT) -> None:
        self._limit = line_limit

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        for folder in PiHome(root).session_dirs:
            for project in scan(folder, listing):
                if not is_dir(project):
                    continue
                for item in scan(Path(project.path), listing):
                    if item.name.endswith(".jsonl") and not is_dir(item):
                        stem = item.name.removesuffix(".jsonl")
                        add_item(listing, RUNTIME, stem.partition("_")[2] or stem, entry,
                                 Path(item.path))
        return listing

    def read(self, item: StoreItem) -> TranscriptRead:
        reading = _Reading(item)
        for obj in records(item.path, reading.read.problems, self._limit):
            reading.record(obj)
        return reading.finish()


@dataclass(slots=True)
class _Entry:
    """One tree entry, already turned into what it means."""

    id: str | None
    parent: str | None
    at: datetime
    role: str
    events: list[AgentEvent] = field(default_factory=list)
    stop: str | None = None
    text: str | None = None
    model: str | None = None


class _Reading:
    def __init__(self, item: StoreItem) -> None:
        self.read = TranscriptRead(item=item)
        self._at = mtime_of(item)
        self._entries: list[_Entry] = []
        self._header: dict[str, Any] = {}

    # -- pass 1: entries -----------------------------------------------------------------------

    def record(self, obj: dict[str, Any]) -> None:
        ms = iso_ms(obj.get("timestamp"))
        if ms is not None:
            self._at = at_ms(ms)
            self.read.started_ms = self.read.started_ms or ms
            self.read.last_activity_ms = max(ms, self.read.last_activity_ms or ms)
        kind = obj.get("type")
        if kind == "session":
            self._header = {**obj, **self._header}  # a resume repeats it: the first one wins
            return
        entry = _Entry(as_text(obj.get("id")), as_text(obj.get("parentId")), self._at, "other")
        if kind == "model_change":
            entry.role, entry.model = "model", as_text(obj.get("modelId"))
        elif kind == "message":
            self._message(entry, as_dict(obj.get("message")))
        self._entries.append(entry)

    def _message(self, entry: _Entry, message: dict[str, Any]) -> None:
        role = as_text(message.get("role")) or "other"
        entry.role = role
        if role == "user":
            entry.text = _text_of(message.get("content"))
        elif role == "assistant":
            entry.model, entry.stop = as_text(message.get("model")), as_text(message.get("stopReason"))
            if entry.stop == "error":
                entry.role, entry.text = "error", as_text(message.get("errorMessage")) or "Pi failed."
            else:
                entry.events = self._reply(message, entry.at)
                entry.text = _text_of(message.get("content"))
        elif role == "toolResult":
            call_id = as_text(message.get("toolCallId"))
            if call_id is not None:
                failed = message.get("isError")
                entry.events = [ToolResult(
                    runtime=RUNTIME, ts=entry.at, replay=True, call_id=call_id,
                    output=clip(_text_of(message.get("content")) or "", MAX_OUTPUT),
                    is_error=failed if isinstance(failed, bool) else None)]

    def _reply(self, message: dict[str, Any], at: datetime) -> list[AgentEvent]:
        events: list[AgentEvent] = []
        for block in as_list(message.get("content")):
            block = as_dict(block)
            kind = block.get("type")
            if kind in ("text", "thinking") and (text := as_text(block.get(kind))):
                events.append(AssistantText(runtime=RUNTIME, ts=at, replay=True,
                                            text=clip(text, MAX_TEXT), reasoning=kind == "thinking"))
            elif kind == "toolCall" and (call_id := as_text(block.get("id"))):
                events.append(ToolCall(runtime=RUNTIME, ts=at, replay=True, call_id=call_id,
                                       name=as_text(block.get("name")) or "unknown",
                                       input=clip_value(as_dict(block.get("arguments")))))
        return events

    # -- pass 2: the active branch -------------------------------------------------------------

    def _branch(self) -> list[_Entry]:
        by_id = {e.id: e for e in self._entries if e.id is not None}
        path: list[_Entry] = []
        current = next((e for e in reversed(self._entries) if e.id is not None), None)
        while current is not None:
            path.append(current)
            if current.parent is None:
                return path[::-1]
            current = by_id.get(current.parent)
            if current is None or len(path) > len(by_id):
                break
        if self._entries:
            self.read.problems.append("the session tree is broken; entries read in file order")
        return self._entries

    def finish(self) -> TranscriptRead:
        read = self.read
        pending: _Entry | None = None  # the last failed attempt, not yet retried
        is_open = False
        for entry in self._branch():
            if entry.role == "model":
                add_unique(read.models, entry.model)
                continue
            if entry.role in ("user", "assistant") and pending is not None:
                self._settle(pending, retried=entry.role == "assistant")
                pending = None
            if entry.role == "error":
                if pending is not None:
                    self._settle(pending, retried=True)
                pending, is_open = entry, True
            elif entry.role == "user" and entry.text:
                is_open = True
                read.initial_prompt = read.initial_prompt or clip(entry.text, MAX_PROMPT)
            elif entry.role == "assistant":
                is_open = self._replied(entry)
            elif entry.role == "toolResult":
                read.events.extend(entry.events)
                is_open = True
        if pending is not None:
            self._settle(pending, retried=False)
            is_open = False
        read.open_turn = is_open
        return self._started()

    def _replied(self, entry: _Entry) -> bool:
        """Add a reply's events; whether the turn goes on after it."""
        self.read.events.extend(entry.events)
        add_unique(self.read.models, entry.model)
        if entry.stop in ("stop", "length"):
            self.read.events.append(TurnCompleted(runtime=RUNTIME, ts=entry.at, replay=True,
                                                  model=entry.model, result_text=entry.text))
            return False
        if entry.stop == "aborted":
            self.read.events.append(SessionEnded(runtime=RUNTIME, ts=entry.at, replay=True,
                                                 outcome="interrupted", reason="aborted"))
            return False
        return True

    def _settle(self, failed: _Entry, *, retried: bool) -> None:
        message = failed.text or "Pi failed."
        if retried:
            self.read.events.append(Notice(runtime=RUNTIME, ts=failed.at, replay=True,
                                           category="retry", message=f"{message} (retried)"))
        else:
            self.read.events.extend(failure_events(RUNTIME, message, at=failed.at))

    def _started(self) -> TranscriptRead:
        read = self.read
        read.cwd = as_text(self._header.get("cwd"))
        if read.events or read.initial_prompt or self._header:
            started_ms = iso_ms(self._header.get("timestamp")) or read.started_ms
            read.events.insert(0, SessionStarted(
                runtime=RUNTIME, ts=at_ms(started_ms) if started_ms else self._at, replay=True,
                agent_session_id=as_text(self._header.get("id")) or read.item.agent_session_id,
                model=read.models[0] if read.models else None, cwd=read.cwd))
        return read


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content.strip() or None
    parts = [as_text(as_dict(p).get("text")) for p in as_list(content)
             if as_dict(p).get("type") == "text"]
    text = "\n".join(p for p in parts if p).strip()
    return text or None


STORE = PiStore()
