"""VS Code's chat sessions (Copilot Chat and every chat participant) read into events.

One session is VS Code's ``ISerializableChatData``: ``{version, sessionId, creationDate,
lastMessageDate, customTitle, requests: [...], inputState}``. It is kept

- as ``workspaceStorage/<hash>/chatSessions/<sessionId>.json`` (VS Code 1.9x: one JSON file),
- as ``…/chatSessions/<sessionId>.jsonl``: an append-only mutation log (current VS Code): line 1
  ``{"kind": 0, "v": <the whole session>}``, then ``{"kind": 1, "k": [path], "v": value}`` (set),
  ``{"kind": 2, "k": [path], "v": [items], "i": start}`` (push, truncating at ``i``) and
  ``{"kind": 3, "k": [path]}`` (delete),
- in ``state.vscdb`` under the key ``interactive.sessions`` (older VS Code: a JSON list of
  sessions; VS Code migrates it to the files above).

A request is one turn: ``message`` (the prompt: ``{text, parts}`` or a string), ``response``
(parts: markdown strings ``{value}``, ``{kind: "markdownContent", content}``, ``thinking``,
``toolInvocationSerialized``, ``textEditGroup`` …), ``result`` (``errorDetails``, ``timings``,
``usage``), ``modelState`` (``{value: 0 pending, 1 complete, 2 cancelled, 3 failed, 4 needs
input}``; older builds: ``isCanceled``), ``modelId``, ``timestamp``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from relay.core import jsonvalue
from relay.core.events import (
    AgentEvent,
    AssistantText,
    NeedsInput,
    Notice,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
)
from relay.core.jsonvalue import as_dict, as_int, as_list, as_str
from relay.detect.stores.editor_common import (
    EditorRead,
    clip,
    clip_input,
    failure_events,
    interrupted,
    ms_to_dt,
    shared_call,
    text_of,
    todo_entries,
    uri_to_path,
)

_STATES = {0: "pending", 1: "complete", 2: "cancelled", 3: "failed", 4: "needs_input",
           "pending": "pending", "complete": "complete", "cancelled": "cancelled",
           "canceled": "cancelled", "failed": "failed", "needsInput": "needs_input"}


def replay_log(raw: bytes, problems: list[str], where: str) -> Any | None:
    """The session a ``.jsonl`` mutation log describes (None when it has no initial entry)."""
    state: Any = None
    lines = raw.split(b"\n")
    skipped = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = jsonvalue.loads(line)
        except (ValueError, RecursionError):
            if number == len(lines):  # no newline after it: still being written
                problems.append(f"{where}: last line cut short (still being written?); ignored")
            else:
                problems.append(f"{where}: line {number} is not JSON; skipped")
            continue
        entry = as_dict(entry)
        kind = entry.get("kind")
        if kind == 0:
            state = entry.get("v")
        elif state is None or not _apply(state, entry):
            skipped += 1
    if skipped:
        problems.append(f"{where}: {skipped} change(s) that did not fit the session; skipped")
    if state is None and lines != [b""]:
        problems.append(f"{where}: no initial entry")
    return state


def _apply(state: Any, entry: dict[str, Any]) -> bool:
    """One set / push / delete applied to ``state``; False when its path does not exist."""
    path = entry.get("k")
    if not isinstance(path, list) or not path:
        return False
    parent = state
    for step in path[:-1]:
        parent = _child(parent, step)
        if parent is None:
            return False
    last = path[-1]
    kind = entry.get("kind")
    if kind == 1:
        return _assign(parent, last, entry.get("v"))
    if kind == 3:
        return _assign(parent, last, None, delete=True)
    if kind == 2:
        target = _child(parent, last)
        if target is None:
            target = []
            if not _assign(parent, last, target):
                return False
        if not isinstance(target, list):
            return False
        start = as_int(entry.get("i"))
        if start is not None:
            del target[start:]
        target.extend(as_list(entry.get("v")))
        return True
    return False


def _child(node: Any, step: Any) -> Any:
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def _assign(node: Any, step: Any, value: Any, delete: bool = False) -> bool:
    if isinstance(node, dict) and isinstance(step, str):
        if delete:
            node.pop(step, None)
        else:
            node[step] = value
        return True
    if isinstance(node, list) and isinstance(step, int) and 0 <= step <= len(node):
        if step == len(node):
            node.append(value)
        elif not delete:
            node[step] = value
        return True
    return False


def sessions_in_value(value: Any) -> list[dict[str, Any]]:
    """The sessions of an ``interactive.sessions`` value (a list, or an object keyed by id)."""
    if isinstance(value, dict):
        value = list(value.values())
    return [s for s in as_list(value) if isinstance(s, dict) and as_str(s.get("sessionId"))]


def read_session(read: EditorRead, data: Any, runtime: str, fallback_ms: int) -> None:
    """``data`` (one ISerializableChatData) → events and times on ``read``."""
    session = as_dict(data)
    if not session:
        read.problems.append("the chat session is not an object")
        return
    created = as_int(session.get("creationDate"))
    read.started_ms = created
    times = [t for t in (created, as_int(session.get("lastMessageDate"))) if t]
    selected = as_str(as_dict(as_dict(session.get("inputState")).get("selectedModel"))
                      .get("identifier"))
    requests = as_list(session.get("requests"))
    for index, raw in enumerate(requests):
        request = as_dict(raw)
        if not request:
            read.problems.append(f"chat request {index}: not an object; skipped")
            continue
        when = as_int(request.get("timestamp")) or (times[-1] if times else fallback_ms)
        times.append(when)
        _Request(read, runtime, request, when).emit(last=index == len(requests) - 1)
        done = as_int(as_dict(request.get("modelState")).get("completedAt"))
        if done:
            times.append(done)
    if selected and selected not in read.models:
        read.models.append(selected)
    read.last_activity_ms = max(times) if times else fallback_ms


class _Request:
    """One request (a user turn and the response to it)."""

    def __init__(self, read: EditorRead, runtime: str, request: dict[str, Any], ms: int) -> None:
        self.read, self.runtime, self.request = read, runtime, request
        self.ts: datetime = ms_to_dt(ms) or datetime.fromtimestamp(0, UTC)
        self.text: list[str] = []
        self.last_text = ""
        self.pending: list[str] = []   # what a part still waits for (a confirmation, a tool)
        self.request_id = as_str(request.get("requestId")) or str(ms)

    def emit(self, last: bool) -> None:
        request = self.request
        message = request.get("message")
        prompt = text_of(message if isinstance(message, str) else as_dict(message).get("text"))
        self.read.prompt(prompt)
        model = as_str(request.get("modelId"))
        if model and model not in self.read.models:
            self.read.models.append(model)
        parts = as_list(request.get("response"))
        for number, part in enumerate(parts):
            self._part(as_dict(part) if not isinstance(part, str) else {"value": part}, number)
        self._flush()
        self._end(last, bool(parts), model)

    def _add(self, event: AgentEvent) -> None:
        self.read.events.append(event)

    def _flush(self) -> None:
        text = "".join(self.text).strip()
        self.text = []
        if text:
            self.last_text = text
            self._add(AssistantText(runtime=self.runtime, ts=self.ts, replay=True, text=text))

    def _part(self, part: dict[str, Any], number: int) -> None:
        kind = part.get("kind")
        if kind is None or kind in ("markdownContent", "markdownVuln"):
            body = part.get("content") if kind else part
            self.text.append(text_of(body))
        elif kind == "thinking":
            self._flush()
            text = text_of(part.get("value")).strip()
            if text:
                self._add(AssistantText(runtime=self.runtime, ts=self.ts, replay=True, text=text,
                                        reasoning=True))
        elif kind in ("toolInvocationSerialized", "toolInvocation"):
            self._flush()
            self._tool(part, number)
        elif kind == "textEditGroup":
            self._flush()
            self._edit(part, number)
        elif kind in ("confirmation", "elicitationSerialized", "elicitation"):
            self._flush()
            title = text_of(part.get("title")) or text_of(part.get("message"))
            if part.get("isUsed") is not True and as_str(part.get("state")) in (None, "pending"):
                self.pending.append(title or "a confirmation")
        elif kind == "warning":
            self._add(Notice(runtime=self.runtime, ts=self.ts, replay=True, category="warning",
                             message=clip(text_of(part.get("content")), 2000)))

    def _tool(self, part: dict[str, Any], number: int) -> None:
        call_id = as_str(part.get("toolCallId")) or f"{self.request_id}-{number}"
        name = as_str(part.get("toolId")) or "tool"
        data = as_dict(part.get("toolSpecificData"))
        details = as_dict(part.get("resultDetails"))
        source = as_dict(part.get("source"))
        if source.get("type") == "mcp":
            server = as_str(source.get("serverLabel")) or as_str(source.get("label"))
            if server and server not in self.read.mcp_servers:
                self.read.mcp_servers.append(server)
        arguments = _tool_input(part, data, details)
        shared = {"terminal": "run_in_terminal", "todoList": "manage_todo_list"}
        tool, arguments = shared_call(shared.get(as_str(data.get("kind")) or "", name), arguments)
        self._add(ToolCall(runtime=self.runtime, ts=self.ts, replay=True, call_id=call_id,
                           name=tool, input=clip_input(arguments)))
        if part.get("isComplete") is not True and part.get("kind") == "toolInvocation":
            self.pending.append(text_of(part.get("invocationMessage")) or name)
            return
        outputs = [text_of(o) for o in as_list(details.get("output"))]
        output = "\n".join(o for o in outputs if o) \
            or text_of(as_dict(data.get("terminalCommandOutput")).get("text")) \
            or text_of(part.get("pastTenseMessage"))
        error = details.get("isError")
        self._add(ToolResult(
            runtime=self.runtime, ts=self.ts, replay=True, call_id=call_id, output=clip(output),
            is_error=error if isinstance(error, bool) else None,
            exit_code=as_int(as_dict(data.get("terminalCommandState")).get("exitCode"))))

    def _edit(self, part: dict[str, Any], number: int) -> None:
        uri = as_dict(part.get("uri"))
        path = as_str(uri.get("fsPath")) or uri_to_path(as_str(uri.get("external")) or "") \
            or as_str(uri.get("path"))
        if not path:
            return
        call_id = f"{self.request_id}-edit-{number}"
        self._add(ToolCall(runtime=self.runtime, ts=self.ts, replay=True, call_id=call_id,
                           name="edit_file", input={"path": path}))
        self._add(ToolResult(runtime=self.runtime, ts=self.ts, replay=True, call_id=call_id))

    def _end(self, last: bool, answered: bool, model: str | None) -> None:
        request = self.request
        result = as_dict(request.get("result"))
        error = as_dict(result.get("errorDetails")) or as_dict(request.get("responseErrorDetails"))
        state = _STATES.get(as_dict(request.get("modelState")).get("value"))
        if state is None and request.get("isCanceled") is True:
            state = "cancelled"
        message = as_str(error.get("message"))
        if message:
            forced = "quota" if error.get("isQuotaExceeded") is True else \
                "rate_limit" if error.get("isRateLimited") is True else None
            structured = {"error": {"code": error.get("code")}} if error.get("code") else None
            self.read.events.extend(failure_events(
                clip(message, 2000), runtime=self.runtime, ts=self.ts, structured=structured,
                forced=forced))
            return
        if state == "cancelled":
            self._add(interrupted(self.runtime, self.ts))
            return
        if state == "failed":
            self.read.events.extend(failure_events("The request failed.", runtime=self.runtime,
                                                   ts=self.ts))
            return
        elif state == "needs_input" or (state == "pending" and self.pending):
            if last:
                self._add(NeedsInput(runtime=self.runtime, ts=self.ts, replay=True,
                                     request_id=self.request_id,
                                     prompt=self.pending[-1] if self.pending else "Confirm"))
            return
        elif state == "pending" or (state is None and not answered):
            self.read.open_turn = self.read.open_turn or last
            return
        usage = as_dict(request.get("usage")) or as_dict(result.get("usage"))
        self._add(TurnCompleted(
            runtime=self.runtime, ts=self.ts, replay=True, model=model,
            usage=Usage(input_tokens=as_int(usage.get("promptTokens")),
                        output_tokens=as_int(usage.get("completionTokens"))),
            result_text=self.last_text or None))


def _tool_input(part: dict[str, Any], data: dict[str, Any],
                details: dict[str, Any]) -> dict[str, Any]:
    """What a tool was called with, from whichever of its records says it."""
    given = details.get("input")
    if isinstance(given, str) and given.lstrip().startswith("{"):
        try:
            parsed = jsonvalue.loads(given)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    kind = data.get("kind")
    if kind == "terminal":
        line = as_dict(data.get("commandLine"))
        command = as_str(line.get("userEdited")) or as_str(line.get("toolEdited")) \
            or as_str(line.get("original")) or as_str(data.get("command"))
        return {"command": command or ""}
    if kind == "input":
        return as_dict(data.get("rawInput"))
    if kind == "todoList":
        return {"todos": todo_entries(as_list(data.get("todoList")))}
    if kind == "subagent":
        return {k: data[k] for k in ("agentName", "description", "prompt") if k in data}
    found: dict[str, Any] = {"description": text_of(part.get("invocationMessage"))}
    for raw in as_dict(as_dict(part.get("invocationMessage")).get("uris")).values():
        uri = as_dict(raw)
        path = as_str(uri.get("fsPath")) or as_str(uri.get("path"))
        if path:
            found["path"] = path
            break
    return found
