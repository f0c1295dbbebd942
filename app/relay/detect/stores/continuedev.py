"""Continue's sessions: ``~/.continue/sessions/<sessionId>.json`` (``CONTINUE_GLOBAL_DIR``).

One file is Continue's ``Session``: ``{sessionId, title, workspaceDirectory, history: [...],
mode, chatModelTitle, usage}``; ``sessions.json`` beside them lists ``{sessionId, title,
dateCreated, workspaceDirectory}`` (its ``dateCreated`` is the session's start). A history
item is ``{message, contextItems, promptLogs, toolCallStates}``; ``message.role`` is
``user`` | ``assistant`` | ``thinking`` | ``tool`` | ``system``, ``content`` a string or a list
of ``{type: "text", text}`` parts; an assistant message may carry ``toolCalls``
(``{id, function: {name, arguments}}``) and ``usage`` (``promptTokens``,
``completionTokens``); a ``tool`` message is a result (``toolCallId``). A tool call's state
(``generating`` → ``generated``, waiting for approval → ``calling`` → ``done`` | ``errored`` |
``canceled``) is in the item's ``toolCallStates``.

Continue records no per-message time (the file's mtime is the last activity) and no API
failure (it shows them as notifications only), so a Continue session never ends on a limit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.events import (
    AgentEvent,
    AssistantText,
    NeedsInput,
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
    iso_to_ms,
    ms_to_dt,
    read_json_file,
    shared_call,
    text_of,
    uri_to_path,
)

RUNTIME = "continue"
INDEX = "sessions.json"
Problems = list[str]
_DONE_TOOL = frozenset({"done", "errored", "canceled", "cancelled"})


class ContinueStore:
    """Continue's sessions under its global folder (``~/.continue``)."""

    runtime = RUNTIME

    def __init__(self) -> None:
        # sessions.json per folder: (size, mtime) → session id → dateCreated (ms)
        self._index: dict[Path, tuple[tuple[int, int], dict[str, int]]] = {}

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        folder = root / "sessions"
        try:
            files = sorted(folder.glob("*.json"))
        except OSError as exc:
            listing.problems.append(f"{folder}: could not be listed ({exc.strerror or exc})")
            return listing
        for path in files:
            if path.name == INDEX:
                continue
            try:
                stat = path.stat()
            except OSError as exc:
                listing.problems.append(f"{path}: {exc.strerror or exc}")
                continue
            listing.items.append(StoreItem(
                runtime=RUNTIME, agent_session_id=path.stem, entry=entry or RUNTIME, path=path,
                size=stat.st_size, mtime_ns=stat.st_mtime_ns))
        return listing

    def read(self, item: StoreItem) -> EditorRead:
        read = EditorRead(item=item)
        session = read_json_file(item.path, read.problems, "Continue session")
        if session is None:
            return read
        if not isinstance(session, dict):
            read.problems.append(f"Continue session: {item.path.name} is not an object")
            return read
        read.started_ms = self._created(item.path.parent, item.agent_session_id, read.problems)
        read.last_activity_ms = item.mtime_ns // 1_000_000
        directory = as_str(session.get("workspaceDirectory")) or ""
        read.cwd = uri_to_path(directory) if directory else None
        model = as_str(session.get("chatModelTitle"))
        if model:
            read.models.append(model)
        _History(read).run(as_list(session.get("history")))
        return read

    def _created(self, folder: Path, session_id: str, problems: Problems) -> int | None:
        path = folder / INDEX
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (stat.st_size, stat.st_mtime_ns)
        cached = self._index.get(path)
        if cached is None or cached[0] != stamp:
            created: dict[str, int] = {}
            for raw in as_list(read_json_file(path, problems, "Continue session list")):
                entry = as_dict(raw)
                sid, ms = as_str(entry.get("sessionId")), iso_to_ms(entry.get("dateCreated"))
                if sid and ms:
                    created[sid] = ms
            cached = (stamp, created)
            self._index[path] = cached
        return cached[1].get(session_id)


STORE = ContinueStore()


class _History:
    """History items → events; a turn ends where the user speaks again."""

    def __init__(self, read: EditorRead) -> None:
        self.read = read
        self.events: list[AgentEvent] = read.events
        self.ts = ms_to_dt(read.item.mtime_ns // 1_000_000) or datetime.fromtimestamp(0, UTC)
        self.usage = Usage()
        self.answered = False
        self.last_role: str | None = None
        self.calls: dict[str, str] = {}   # call id → state (open until a result)
        self.awaiting: str | None = None   # a call generated and waiting for approval

    def run(self, history: list[Any]) -> None:
        for index, raw in enumerate(history):
            item = as_dict(raw)
            message = as_dict(item.get("message"))
            if not message:
                self.read.problems.append(f"Continue history item {index}: no message; skipped")
                continue
            self._message(message, index)
            self._states(as_list(item.get("toolCallStates")), index == len(history) - 1)
            for log in as_list(item.get("promptLogs")):
                model = as_str(as_dict(log).get("modelTitle"))
                if model and model not in self.read.models:
                    self.read.models.append(model)
        self._finish()

    def _add(self, event: AgentEvent) -> None:
        self.events.append(event)

    def _message(self, message: dict[str, Any], index: int) -> None:
        role = as_str(message.get("role"))
        text = text_of(message.get("content"))
        if role == "user":
            if self.answered:
                self._end_turn()
            self.read.prompt(text)
            self.last_role, self.answered = role, False
        elif role in ("assistant", "thinking"):
            if text.strip():
                self._add(AssistantText(runtime=RUNTIME, ts=self.ts, replay=True, text=text,
                                        reasoning=role == "thinking"))
            for number, raw in enumerate(as_list(message.get("toolCalls"))):
                self._call(as_dict(raw), f"{RUNTIME}-{index}-{number}")
            usage = as_dict(message.get("usage"))
            self.usage += Usage(input_tokens=as_int(usage.get("promptTokens")),
                                output_tokens=as_int(usage.get("completionTokens")))
            self.last_role, self.answered = "assistant", True
        elif role == "tool":
            call_id = as_str(message.get("toolCallId")) or ""
            self._result(call_id, text, error=None)
            self.last_role = "tool"

    def _call(self, call: dict[str, Any], fallback: str) -> None:
        function = as_dict(call.get("function"))
        call_id = as_str(call.get("id")) or fallback
        arguments = as_str(function.get("arguments")) or ""
        parsed: Any = None
        if arguments.strip().startswith("{"):
            try:
                parsed = jsonvalue.loads(arguments)
            except ValueError:
                parsed = {"arguments": arguments}
        self.calls[call_id] = "open"
        name, given = shared_call(as_str(function.get("name")) or "tool", as_dict(parsed) or (
            {"arguments": arguments} if arguments else {}))
        self._add(ToolCall(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id, name=name,
                           input=clip_input(given)))

    def _result(self, call_id: str, output: str, error: bool | None) -> None:
        if self.calls.get(call_id) == "closed":
            return
        self.calls[call_id] = "closed"
        self._add(ToolResult(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id,
                             output=clip(output), is_error=error))

    def _states(self, states: list[Any], last_item: bool) -> None:
        for raw in states:
            state = as_dict(raw)
            call_id = as_str(state.get("toolCallId")) or ""
            status = as_str(state.get("status")) or ""
            if call_id not in self.calls:
                continue
            if status in _DONE_TOOL:
                output = "\n".join(text_of(as_dict(o).get("content"))
                                   for o in as_list(state.get("output")))
                self._result(call_id, output, error=True if status == "errored" else None)
            elif status == "generated" and last_item:
                name = as_str(as_dict(as_dict(state.get("toolCall")).get("function")).get("name"))
                self.awaiting = f"Approve {name or 'the tool call'}"

    def _end_turn(self) -> None:
        self._add(TurnCompleted(runtime=RUNTIME, ts=self.ts, replay=True, usage=self.usage,
                                model=self.read.models[-1] if self.read.models else None))
        self.usage, self.answered = Usage(), False

    def _finish(self) -> None:
        if self.awaiting is not None:
            self._add(NeedsInput(runtime=RUNTIME, ts=self.ts, replay=True,
                                 request_id=f"{self.read.item.agent_session_id}-approval",
                                 prompt=self.awaiting))
            return
        pending = [c for c, s in self.calls.items() if s == "open"]
        if self.last_role in ("user", "tool") or pending:
            self.read.open_turn = True  # unanswered, or the model must still read a result
        elif self.answered:
            self._end_turn()

