"""Cursor's chats: the composer (agent) in ``cursorDiskKV``, the old chat panel, VS Code chat.

Under Cursor's ``User`` folder (``docs/detect-formats.md`` has the sources and what was
verified):

- ``globalStorage/state.vscdb``, table ``cursorDiskKV``: ``composerData:<composerId>`` (one
  conversation: ``name``, ``createdAt`` / ``lastUpdatedAt`` in ms, ``status`` none | generating
  | completed | aborted | error, ``modelConfig.modelName``, ``fullConversationHeadersOnly`` —
  the ordered ``{bubbleId, type}`` of its messages —, older builds an inline ``conversation``)
  and ``bubbleId:<composerId>:<bubbleId>`` (one message: ``type`` 1 user / 2 assistant,
  ``text``, ``thinking.text``, ``toolFormerData`` {``name``, ``toolCallId``, ``rawArgs`` /
  ``params`` JSON, ``result``, ``status``}, ``tokenCount`` {``inputTokens``,
  ``outputTokens``}, ``createdAt``);
- each ``workspaceStorage/<hash>/state.vscdb``, table ``ItemTable``: ``composer.composerData``
  (``allComposers``: the composers opened in that workspace — how a composer finds its cwd
  when it does not carry ``workspaceIdentifier``) and the old chat panel
  ``workbench.panel.aichat.view.aichat.chatdata`` (``tabs``: ``{tabId, chatTitle, bubbles:
  [{type: "user" | "ai", text}], lastSendTime}``);
- VS Code's own chat files and ``interactive.sessions``, read as Copilot's are
  (:class:`~relay.detect.stores.vscdb.VSCodeChatStore`) but under the runtime ``cursor``.

A composer's listing stamp is the length of its ``composerData`` value and its
``lastUpdatedAt``: Cursor rewrites that value as the conversation moves on.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.events import (
    AgentEvent,
    AssistantText,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
)
from relay.core.jsonvalue import as_dict, as_int, as_list, as_str
from relay.detect.stores.base import StoreItem, StoreListing
from relay.detect.stores.editor_common import (
    EditorRead,
    clip,
    clip_input,
    failure_events,
    interrupted,
    iso_to_ms,
    ms_to_dt,
    shared_call,
    text_of,
    todo_entries,
)
from relay.detect.stores.vscdb import (
    BUSY_TIMEOUT_S,
    LEGACY_CHAT_KEY,
    Stamp,
    VSCodeChatStore,
    connect,
    db_stamp,
    decode,
    keyed_source,
    query,
    read_items,
    split_source,
    sqlite_problem,
    workspace_folder,
)

RUNTIME = "cursor"
COMPOSER = "composerData"
AICHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
WORKSPACE_COMPOSERS = "composer.composerData"
_DONE_TOOL = frozenset({"completed", "error", "cancelled", "canceled", "rejected", "aborted"})

# length, lastUpdatedAt, createdAt and message count of every composer, without loading them
_LIST_COMPOSERS = """
SELECT key, length(value),
       CASE WHEN json_valid(CAST(value AS TEXT))
            THEN json_extract(CAST(value AS TEXT), '$.lastUpdatedAt') END,
       CASE WHEN json_valid(CAST(value AS TEXT))
            THEN json_extract(CAST(value AS TEXT), '$.createdAt') END,
       CASE WHEN json_valid(CAST(value AS TEXT))
            THEN coalesce(json_array_length(CAST(value AS TEXT), '$.fullConversationHeadersOnly'), 0)
               + coalesce(json_array_length(CAST(value AS TEXT), '$.conversation'), 0) END
FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;'
"""


class _Workspace:
    """What one workspace database says: its folder, its composers, its old chat tabs."""

    def __init__(self, folder: str | None, composers: list[str],
                 tabs: list[tuple[str, int, int]]) -> None:
        self.folder, self.composers, self.tabs = folder, composers, tabs


Problems = list[str]
_Scanned = list[tuple[Path, _Workspace]]
_Items = list[StoreItem]


class CursorStore:
    """Cursor's chats under its ``User`` folder."""

    runtime = RUNTIME

    def __init__(self, timeout: float = BUSY_TIMEOUT_S) -> None:
        self.timeout = timeout
        self._chat = VSCodeChatStore(RUNTIME, timeout)
        self._workspaces: dict[Path, tuple[Stamp, _Workspace]] = {}

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = self._chat.list(root, entry)
        entry = entry or RUNTIME
        for db, workspace in self._scan_workspaces(root, listing.problems):
            for tab, size, last_ms in workspace.tabs:
                listing.items.append(StoreItem(
                    runtime=RUNTIME, agent_session_id=tab, entry=entry,
                    path=keyed_source(db, AICHAT_KEY, tab), size=size,
                    mtime_ns=last_ms * 1_000_000))
        global_db = root / "globalStorage" / "state.vscdb"
        if global_db.is_file():
            listing.items += self._composers(global_db, entry, listing.problems)
        return listing

    def read(self, item: StoreItem) -> EditorRead:
        keyed = split_source(item.path)
        if keyed is None or keyed[1] == LEGACY_CHAT_KEY:
            return self._chat.read(item)
        db, key, session = keyed
        read = EditorRead(item=item)
        if key == COMPOSER:
            self._read_composer(read, db, session)
        elif key == AICHAT_KEY:
            _read_tab(read, db, session, self.timeout)
            read.cwd = workspace_folder(db.parent, read.problems)
        else:
            read.problems.append(f"{item.path}: not a Cursor source Relay knows")
        return read

    # -- listing -----------------------------------------------------------------------

    def _scan_workspaces(self, root: Path, problems: Problems) -> _Scanned:
        found: _Scanned = []
        try:
            hashes = sorted(p for p in (root / "workspaceStorage").iterdir() if p.is_dir())
        except OSError:
            return found
        for hash_dir in hashes:
            db = hash_dir / "state.vscdb"
            stamp = db_stamp(db)
            if stamp is None:
                continue
            cached = self._workspaces.get(db)
            if cached is None or cached[0] != stamp:
                sink: list[str] = []
                values = read_items(db, [WORKSPACE_COMPOSERS, AICHAT_KEY], sink,
                                    timeout=self.timeout)
                problems.extend(sink)
                if any("locked" in p or "could not" in p for p in sink):
                    continue  # tried again on the next scan
                cached = (stamp, _workspace(hash_dir, values, stamp))
                self._workspaces[db] = cached
            found.append((db, cached[1]))
        return found

    def _composers(self, db: Path, entry: str, problems: Problems) -> _Items:
        try:
            with _Conn(db, self.timeout) as conn:
                rows = list(conn.execute(_LIST_COMPOSERS))
        except sqlite3.OperationalError as exc:
            if "no such function" not in str(exc):
                problems.append(sqlite_problem(db, exc))
                return []
            rows = _composer_rows_in_python(db, problems, self.timeout)
        except sqlite3.Error as exc:
            problems.append(sqlite_problem(db, exc))
            return []
        items: _Items = []
        fallback = (db_stamp(db) or (0, 0, 0, 0))[1]
        for key, size, updated, created, count in rows:
            composer = str(key).partition(":")[2]
            if not composer or count == 0:
                continue  # an empty composer: opened, never sent
            ms = as_int(updated) or as_int(created)
            items.append(StoreItem(
                runtime=RUNTIME, agent_session_id=composer, entry=entry,
                path=keyed_source(db, COMPOSER, composer), size=as_int(size) or 0,
                mtime_ns=ms * 1_000_000 if ms else fallback))
        return items

    # -- one composer ------------------------------------------------------------------

    def _read_composer(self, read: EditorRead, db: Path, composer_id: str) -> None:
        key = f"{COMPOSER}:{composer_id}"
        composer = as_dict(read_items(db, [key], read.problems, table="cursorDiskKV",
                                      timeout=self.timeout).get(key))
        if not composer:
            if not read.problems:
                read.problems.append(f"{db} [{key}]: gone or not an object")
            return
        rows = query(db, "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ? "
                     "ORDER BY rowid", (f"bubbleId:{composer_id}:", f"bubbleId:{composer_id};"),
                     read.problems, self.timeout) or []
        bubbles: dict[str, Any] = {}
        for bubble_key, raw in rows:
            value = decode(raw, read.problems, f"{db} [{bubble_key}]")
            if value is not None:
                bubbles[str(bubble_key).rpartition(":")[2]] = value
        _ComposerTimeline(read, composer).run(_ordered(composer, bubbles, read.problems))
        identifier = as_dict(as_dict(composer.get("workspaceIdentifier")).get("uri"))
        read.cwd = as_str(identifier.get("fsPath")) or as_str(identifier.get("path")) \
            or self._composer_folder(db.parent.parent, composer_id)

    def _composer_folder(self, root: Path, composer_id: str) -> str | None:
        for _db, workspace in self._scan_workspaces(root, []):
            if composer_id in workspace.composers:
                return workspace.folder
        return None


class _Conn:
    def __init__(self, db: Path, timeout: float) -> None:
        self.conn = connect(db, timeout)

    def __enter__(self) -> sqlite3.Connection:
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def _composer_rows_in_python(db: Path, problems: list[str],
                             timeout: float) -> list[tuple[Any, ...]]:
    """The listing query's rows without SQLite's JSON functions (an old SQLite)."""
    rows = query(db, "SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' "
                 "AND key < 'composerData;'", (), problems, timeout) or []
    out: list[tuple[Any, ...]] = []
    for key, raw in rows:
        value = as_dict(decode(raw, [], str(key)))
        count = len(as_list(value.get("fullConversationHeadersOnly"))) \
            + len(as_list(value.get("conversation")))
        out.append((key, len(raw or b""), value.get("lastUpdatedAt"), value.get("createdAt"),
                    count if value else None))
    return out


def _workspace(hash_dir: Path, values: dict[str, Any], stamp: Stamp) -> _Workspace:
    composers = [c for c in (as_str(as_dict(raw).get("composerId"))
                             for raw in as_list(as_dict(values.get(WORKSPACE_COMPOSERS))
                                                .get("allComposers"))) if c]
    tabs: list[tuple[str, int, int]] = []
    for raw in as_list(as_dict(values.get(AICHAT_KEY)).get("tabs")):
        tab = as_dict(raw)
        tab_id = as_str(tab.get("tabId"))
        if tab_id and as_list(tab.get("bubbles")):
            last = as_int(tab.get("lastSendTime")) or stamp[1] // 1_000_000
            tabs.append((tab_id, len(json.dumps(tab, default=str)), last))
    return _Workspace(workspace_folder(hash_dir), composers, tabs)


def _ordered(composer: dict[str, Any], bubbles: dict[str, Any],
             problems: list[str]) -> list[dict[str, Any]]:
    """The composer's messages in conversation order, from whichever layout it uses."""
    headers = as_list(composer.get("fullConversationHeadersOnly"))
    inline = as_dict(composer.get("conversationMap"))
    if headers:
        ordered, missing = [], 0
        for raw in headers:
            bubble_id = as_str(as_dict(raw).get("bubbleId")) or ""
            bubble = as_dict(bubbles.get(bubble_id)) or as_dict(inline.get(bubble_id))
            if bubble:
                ordered.append(bubble)
            else:
                missing += 1
        if missing:
            problems.append(f"{missing} message(s) of the conversation missing or unreadable")
        return ordered
    conversation = [as_dict(b) for b in as_list(composer.get("conversation")) if as_dict(b)]
    return conversation or [as_dict(b) for b in bubbles.values() if as_dict(b)]


class _ComposerTimeline:
    """A composer's bubbles → events; a turn ends where the user speaks again."""

    def __init__(self, read: EditorRead, composer: dict[str, Any]) -> None:
        self.read, self.composer = read, composer
        self.events: list[AgentEvent] = read.events
        self.usage = Usage()
        self.answered = False          # the current turn has an assistant message
        self.last_role: str | None = None
        self.open_tools = 0
        self.turn_start = 0            # where the current turn's events begin
        created = as_int(composer.get("createdAt"))
        self.updated = as_int(composer.get("lastUpdatedAt")) or created
        self.ts = ms_to_dt(created) or datetime.fromtimestamp(0, UTC)
        read.started_ms, read.last_activity_ms = created, self.updated
        self.model = as_str(as_dict(composer.get("modelConfig")).get("modelName"))
        self._model(self.model)

    def run(self, bubbles: list[dict[str, Any]]) -> None:
        for index, bubble in enumerate(bubbles):
            when = iso_to_ms(bubble.get("createdAt"))
            self.ts = ms_to_dt(when) or self.ts
            if when and (self.read.last_activity_ms or 0) < when:
                self.read.last_activity_ms = when
            kind = bubble.get("type")
            if kind in (1, "user"):
                self._user(bubble)
            elif kind in (2, "ai", "assistant"):
                self._assistant(bubble, index)
        self._todos()
        self._finish()

    def _model(self, model: str | None) -> None:
        if model and model != "default" and model not in self.read.models:
            self.read.models.append(model)

    def _user(self, bubble: dict[str, Any]) -> None:
        if self.answered:
            self._end_turn()
        self.read.prompt(as_str(bubble.get("text")) or "")
        self.turn_start = len(self.events)
        self._model(as_str(as_dict(bubble.get("modelInfo")).get("modelName")))
        self.last_role, self.answered = "user", False

    def _assistant(self, bubble: dict[str, Any], index: int) -> None:
        thinking = text_of(as_dict(bubble.get("thinking")).get("text"))
        if thinking.strip():
            self._add(AssistantText(runtime=RUNTIME, ts=self.ts, replay=True, text=thinking,
                                    reasoning=True))
        text = as_str(bubble.get("text")) or ""
        if text.strip():
            self._add(AssistantText(runtime=RUNTIME, ts=self.ts, replay=True, text=text))
        tool = as_dict(bubble.get("toolFormerData"))
        if tool:
            self._tool(tool, as_str(bubble.get("bubbleId")) or f"bubble-{index}")
        tokens = as_dict(bubble.get("tokenCount"))
        self.usage += Usage(input_tokens=as_int(tokens.get("inputTokens")),
                            output_tokens=as_int(tokens.get("outputTokens")))
        error = as_dict(bubble.get("errorDetails")) or as_dict(bubble.get("error"))
        message = as_str(error.get("message"))
        if message:
            self.events.extend(failure_events(clip(message, 2000), runtime=RUNTIME, ts=self.ts,
                                              structured={"error": error}))
        self.last_role, self.answered = "assistant", True

    def _add(self, event: AgentEvent) -> None:
        self.events.append(event)

    def _tool(self, tool: dict[str, Any], bubble_id: str) -> None:
        call_id = as_str(tool.get("toolCallId")) or bubble_id
        name = as_str(tool.get("name")) or f"tool_{tool.get('tool')}"
        arguments = _json_dict(tool.get("rawArgs")) or _json_dict(tool.get("params"))
        name, arguments = shared_call(name, arguments)
        self._add(ToolCall(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id, name=name,
                           input=clip_input(arguments)))
        status = (as_str(tool.get("status")) or "").lower()
        extra = (as_str(as_dict(tool.get("additionalData")).get("status")) or "").lower()
        if status not in _DONE_TOOL and tool.get("result") is None:
            self.open_tools += 1
            return
        result = tool.get("result")
        output = result if isinstance(result, str) else json.dumps(result, default=str) \
            if result is not None else ""
        self._add(ToolResult(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id,
                             output=clip(output),
                             is_error=True if "error" in (status, extra) else None))

    def _todos(self) -> None:
        listed = todo_entries(as_list(self.composer.get("todos")))
        if not listed:
            return
        call_id = f"{RUNTIME}-todos"
        # the composer keeps only the current list: it belongs to the current turn
        self.events[self.turn_start:self.turn_start] = [
            ToolCall(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id,
                     name="TodoWrite", input={"todos": listed}),
            ToolResult(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id)]

    def _end_turn(self) -> None:
        self._add(TurnCompleted(runtime=RUNTIME, ts=self.ts, replay=True, usage=self.usage,
                                model=self.model))
        self.usage, self.answered = Usage(), False

    def _finish(self) -> None:
        status = (as_str(self.composer.get("status")) or "").lower()
        generating = bool(as_list(self.composer.get("generatingBubbleIds")))
        if status == "generating" or generating or (self.open_tools and status != "completed"):
            self.read.open_turn = True
        elif status == "error":
            if not any(e.kind == "error" for e in self.events[-3:]):
                self.events.extend(failure_events("The request failed.", runtime=RUNTIME,
                                                  ts=self.ts))
        elif status == "aborted":
            self._add(interrupted(RUNTIME, self.ts))
            self.usage, self.answered = Usage(), False
        elif self.last_role == "user":
            self.read.open_turn = True  # a prompt nothing answered
        elif self.answered:
            self._end_turn()


def _read_tab(read: EditorRead, db: Path, tab_id: str, timeout: float) -> None:
    """One tab of Cursor's old chat panel."""
    value = as_dict(read_items(db, [AICHAT_KEY], read.problems, timeout=timeout).get(AICHAT_KEY))
    tabs = [as_dict(t) for t in as_list(value.get("tabs")) if as_dict(t).get("tabId") == tab_id]
    if not tabs:
        if not read.problems:
            read.problems.append(f"{db} [{AICHAT_KEY}]: tab {tab_id} is gone")
        return
    last_ms = as_int(tabs[0].get("lastSendTime")) or read.item.mtime_ns // 1_000_000
    ts = ms_to_dt(last_ms) or datetime.fromtimestamp(0, UTC)
    read.last_activity_ms = last_ms
    role = None
    for raw in as_list(tabs[0].get("bubbles")):
        bubble = as_dict(raw)
        text = as_str(bubble.get("text")) or as_str(bubble.get("rawText")) or ""
        if bubble.get("type") in ("user", 1):
            if role == "ai":
                read.events.append(TurnCompleted(runtime=RUNTIME, ts=ts, replay=True))
            read.prompt(text)
            role = "user"
        elif bubble.get("type") in ("ai", 2):
            if text.strip():
                read.events.append(AssistantText(runtime=RUNTIME, ts=ts, replay=True, text=text))
            role = "ai"
    if role == "ai":
        read.events.append(TurnCompleted(runtime=RUNTIME, ts=ts, replay=True))
    read.open_turn = role == "user"


def _json_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            parsed = jsonvalue.loads(value)
        except ValueError:
            return {"raw": value}
        return parsed if isinstance(parsed, dict) else {}
    return {}


STORE = CursorStore()
