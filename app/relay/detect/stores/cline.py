"""Cline's task folders (the VS Code extension ``saoudrizwan.claude-dev``, and Cline's CLI).

Layout (``docs/detect-formats.md`` has the sources and what was verified)::

    <editor User dir>/globalStorage/saoudrizwan.claude-dev/   (or ~/.cline/data for the CLI)
        tasks/<task id>/ui_messages.json              Cline's UI timeline: the main source
        tasks/<task id>/api_conversation_history.json Anthropic-style messages: the fallback
        tasks/<task id>/task_metadata.json            files in context, models used
        state/taskHistory.json                        one entry per task: its cwd

``ui_messages.json`` is a list of ``{ts, type: "say"|"ask", say|ask, text, partial, …}``. It is
the record this store reads into events: the model's text and reasoning, tool and command use
(``text`` holds JSON for tools), each API request (``api_req_started``: tokens and cost once
finished; they add up into the turn's :class:`TurnCompleted`), failures (``api_req_failed``:
a limit and the error), and the asks that wait for the user. The task (``say: "task"``) is the
initial prompt; the user's later feedback starts a new stretch of work. A command's output,
a tool's use and an MCP answer are closed by the next API request (which carried their
results to the model). When ``ui_messages.json`` is missing or unreadable the conversation
history is read instead (text, tool use and results only), and that is said in ``problems``.

The session is the task; its id is the folder name. A task whose last message is an ask that
waits for the user (a question, a command or tool to approve) ends on :class:`NeedsInput`; a
task still streaming (a partial message, an API request without cost, a command still
printing) is an open turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.core.events import (
    AgentEvent,
    AssistantText,
    InputOption,
    NeedsInput,
    Notice,
    ToolCall,
    ToolResult,
    TurnCompleted,
    Usage,
)
from relay.core.fsutil import open_regular
from relay.core.jsonvalue import as_dict, as_float, as_int, as_list, as_str
from relay.detect.stores.base import StoreItem, StoreListing
from relay.detect.stores.editor_common import (
    CREATE_TOOLS,
    EDIT_TOOLS,
    EditorRead,
    clip,
    clip_input,
    failure_events,
    interrupted,
    ms_to_dt,
    parse_json,
    read_json_file,
    shared_call,
    text_of,
    todos_from_checklist,
)
from relay.detect.stores.vscdb import read_items

RUNTIME = "cline"
EXTENSION_ID = "saoudrizwan.claude-dev"
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
METADATA = "task_metadata.json"

#: Cline's UI tool names (ClineSayTool.tool) → the tool names of its system prompt
TOOL_NAMES = {
    "fileDeleted": "delete_file", "readFile": "read_file", "listFilesTopLevel": "list_files",
    "listFilesRecursive": "list_files", "listCodeDefinitionNames": "list_code_definition_names",
    "searchFiles": "search_files", "webFetch": "web_fetch", "webSearch": "web_search",
    "summarizeTask": "summarize_task", "useSkill": "use_skill",
}
#: the UI's tools that are the shared "write a file" / "edit a file" (see editor_common)
_SHARED = CREATE_TOOLS | EDIT_TOOLS
#: asks that do not wait for an answer from the user (everything else does)
_NOT_INPUT_ASKS = frozenset({"completion_result", "resume_task", "resume_completed_task",
                             "command_output", "api_req_failed"})
_REQ_APP = "REQ_APP"          # appended to a command Cline wants approved
_HAS_CHANGES = "HAS_CHANGES"  # appended to a completion result with file changes
Problems = list[str]
_CWD = re.compile(r"# Current Working Directory \(([^)\n]+)\) Files")


class ClineStore:
    """Cline's tasks under one storage folder (the extension's globalStorage folder)."""

    runtime = RUNTIME

    def __init__(self) -> None:
        # taskHistory.json per storage folder: (size, mtime) → task id → cwd
        self._histories: dict[Path, tuple[tuple[int, int], dict[str, str]]] = {}

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        tasks = root / "tasks"
        try:
            children = sorted(tasks.iterdir())
        except FileNotFoundError:
            return listing
        except OSError as exc:
            listing.problems.append(f"Cline tasks: {tasks} could not be listed ({exc.strerror or exc})")
            return listing
        for child in children:
            item = _item(child, entry or RUNTIME, listing.problems)
            if item is not None:
                listing.items.append(item)
        return listing

    def read(self, item: StoreItem) -> EditorRead:
        read = EditorRead(item=item)
        task_dir = item.path
        messages = read_json_file(task_dir / UI_MESSAGES, read.problems, "Cline UI messages")
        if messages is not None and not isinstance(messages, list):
            read.problems.append(f"Cline UI messages: {UI_MESSAGES} is not a list; ignored")
            messages = None
        if isinstance(messages, list):
            _UiTimeline(read).run(messages)
        else:
            history = read_json_file(task_dir / API_HISTORY, read.problems, "Cline conversation")
            if isinstance(history, list):
                read.problems.append("events read from the conversation history only (no "
                                     "usage, asks or API failures)")
                _read_api_history(read, history, item.mtime_ns)
        _read_metadata(read, task_dir / METADATA)
        read.cwd = self._history_cwd(task_dir.parent.parent, item.agent_session_id, read.problems) \
            or read.cwd or _cwd_from_file(task_dir / API_HISTORY)
        return read

    def _history_cwd(self, root: Path, task_id: str, problems: Problems) -> str | None:
        path = root / "state" / "taskHistory.json"
        try:
            stat = path.stat()
        except OSError:
            return _legacy_history_cwd(root, task_id, problems)
        stamp = (stat.st_size, stat.st_mtime_ns)
        cached = self._histories.get(path)
        if cached is None or cached[0] != stamp:
            value = read_json_file(path, problems, "Cline task history")
            cached = (stamp, _history_map(value))
            self._histories[path] = cached
        return cached[1].get(task_id)


STORE = ClineStore()


def _item(child: Path, entry: str, problems: list[str]) -> StoreItem | None:
    """A task folder as an item: sized and dated by its two conversation files."""
    if not child.is_dir():
        return None
    size, mtime, found = 0, 0, False
    for name in (UI_MESSAGES, API_HISTORY):
        try:
            stat = (child / name).stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"Cline task {child.name}: {name} ({exc.strerror or exc})")
            continue
        size, mtime, found = size + stat.st_size, max(mtime, stat.st_mtime_ns), True
    if not found:
        return None  # a task folder being created (or emptied): nothing to read yet
    return StoreItem(runtime=RUNTIME, agent_session_id=child.name, entry=entry, path=child,
                     size=size, mtime_ns=mtime)


class _UiTimeline:
    """``ui_messages.json`` → events, in order, with the state needed to close turns."""

    def __init__(self, read: EditorRead) -> None:
        self.read = read
        self.events: list[AgentEvent] = read.events
        self.usage = Usage()
        self.turn_open = False
        self.open_calls: dict[str, list[str]] = {}   # call id → output chunks
        self.last_command: str | None = None
        self.last_mcp: str | None = None
        self.ts = datetime.fromtimestamp(0, UTC)
        self.seen_prompt = False

    def run(self, messages: list[Any]) -> None:
        last: dict[str, Any] | None = None
        for index, raw in enumerate(messages):
            message = as_dict(raw)
            if not message:
                self.read.problems.append(f"Cline UI message {index}: not an object; skipped")
                continue
            ms = as_int(message.get("ts"))
            self.ts = ms_to_dt(ms) or self.ts
            if ms is not None:
                self.read.started_ms = self.read.started_ms or ms
                self.read.last_activity_ms = ms
            self._models(message)
            try:
                self._one(message, index)
            except (TypeError, ValueError, AttributeError) as exc:  # a value of an unseen shape
                self.read.problems.append(f"Cline UI message {index}: {exc}; skipped")
            if message.get("ask") not in ("resume_task", "resume_completed_task"):
                last = message
        self._finish(last)

    # -- dispatch ----------------------------------------------------------------------

    def _one(self, message: dict[str, Any], index: int) -> None:
        text = as_str(message.get("text")) or ""
        if message.get("type") == "ask":
            kind = as_str(message.get("ask")) or ""
            handler = _ASKS.get(kind)
            if handler is not None:
                handler(self, text, message)
            elif text:
                self._text(text)
            return
        kind = as_str(message.get("say")) or ""
        if kind == "text" and index == 0 and not self.seen_prompt:
            kind = "task"  # early builds said the task as text
        handler = _SAYS.get(kind)
        if handler is not None:
            handler(self, text, message)

    def _emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    def _text(self, text: str, reasoning: bool = False) -> None:
        if text.strip():
            self._emit(AssistantText(runtime=RUNTIME, ts=self.ts, replay=True, text=text,
                                     reasoning=reasoning))

    def _models(self, message: dict[str, Any]) -> None:
        model = as_str(as_dict(message.get("modelInfo")).get("modelId"))
        if model and model not in self.read.models:
            self.read.models.append(model)

    # -- user and model ----------------------------------------------------------------

    def on_prompt(self, text: str, message: dict[str, Any]) -> None:
        self._close_calls()
        self.read.prompt(text)
        self.seen_prompt = True
        self.turn_open = True

    def on_text(self, text: str, message: dict[str, Any]) -> None:
        self._text(text)

    def on_reasoning(self, text: str, message: dict[str, Any]) -> None:
        self._text(text, reasoning=True)

    def on_completion(self, text: str, message: dict[str, Any]) -> None:
        result = text.removesuffix(_HAS_CHANGES).rstrip()
        self._text(result)
        self._end_turn(result or None)

    def on_completion_ask(self, text: str, message: dict[str, Any]) -> None:
        if self.turn_open:
            self._end_turn(None)

    def on_question(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text)
        question = as_str(body.get("question")) or as_str(body.get("response")) or text
        self._text(question)

    # -- API requests ------------------------------------------------------------------

    def on_api_request(self, text: str, message: dict[str, Any]) -> None:
        self._close_calls()
        info = _json_object(text, self.read.problems, "api_req_started")
        self.read.cwd = self.read.cwd or _cwd_in(as_str(info.get("request")) or "")
        self.usage += _usage(info)
        cancel = as_str(info.get("cancelReason"))
        failed = as_str(info.get("streamingFailedMessage"))
        if cancel == "user_cancelled":
            self._emit(interrupted(RUNTIME, self.ts))
            self.usage, self.turn_open = Usage(), False
        elif cancel is not None and failed:
            self._emit(Notice(runtime=RUNTIME, ts=self.ts, replay=True, category="retry",
                              message=f"API request failed: {_error_message(failed)}"))

    def on_retry(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text)
        if body.get("failed"):
            return  # the api_req_failed ask that follows says it
        attempt, most = as_int(body.get("attempt")), as_int(body.get("maxAttempts"))
        error = _error_message(as_str(body.get("errorMessage")) or "")
        self._emit(Notice(runtime=RUNTIME, ts=self.ts, replay=True, category="retry",
                          message=f"Retrying the API request ({attempt}/{most}): {error}"))

    def on_retried(self, text: str, message: dict[str, Any]) -> None:
        self._emit(Notice(runtime=RUNTIME, ts=self.ts, replay=True, category="retry",
                          message="The failed API request was retried."))

    def on_api_failed(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text)
        status = as_int(body.get("status"))
        structured = {"error": {"code": body.get("code"), "type": body.get("code")}}
        self.events.extend(failure_events(_error_message(text), runtime=RUNTIME, ts=self.ts,
                                          http_status=status, structured=structured))

    def on_warning(self, text: str, message: dict[str, Any]) -> None:
        if text.strip():
            self._emit(Notice(runtime=RUNTIME, ts=self.ts, replay=True, category="warning",
                              message=clip(text, 2000)))

    # -- tools -------------------------------------------------------------------------

    def on_command(self, text: str, message: dict[str, Any]) -> None:
        command = text.removesuffix(_REQ_APP).rstrip()
        self.last_command = self._call("execute_command", {"command": command}, message)

    def on_command_output(self, text: str, message: dict[str, Any]) -> None:
        if self.last_command in self.open_calls and text:
            self.open_calls[self.last_command].append(text)

    def on_tool(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text, self.read.problems, "tool")
        tool = as_str(body.get("tool")) or "tool"
        wanted: dict[str, Any] = {k: body[k] for k in ("path", "regex", "filePattern", "content")
                                  if k in body}
        if tool != "newFileCreated":
            wanted.pop("content", None)  # a file read's content: not an input
        self._call(tool if tool in _SHARED else TOOL_NAMES.get(tool, tool), wanted, message)

    def on_mcp(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text, self.read.problems, "use_mcp_server")
        server = as_str(body.get("serverName")) or "mcp"
        if server not in self.read.mcp_servers:
            self.read.mcp_servers.append(server)
        name = as_str(body.get("toolName")) or as_str(body.get("uri")) or "resource"
        arguments = _json_object(as_str(body.get("arguments")) or "")
        self.last_mcp = self._call(f"mcp__{server}__{name}", arguments or {
            "arguments": body.get("arguments")}, message)

    def on_mcp_response(self, text: str, message: dict[str, Any]) -> None:
        if self.last_mcp in self.open_calls:
            self.open_calls[self.last_mcp].append(text)
            self._close(self.last_mcp)

    def on_browser(self, text: str, message: dict[str, Any]) -> None:
        body = _json_object(text)
        self._call("browser_action", body or {"action": "launch", "url": text}, message)

    def on_progress(self, text: str, message: dict[str, Any]) -> None:
        todos = todos_from_checklist(text)
        if todos:
            call = self._call("TodoWrite", {"todos": todos}, message)
            self._close(call)

    def _call(self, name: str, arguments: dict[str, Any], message: dict[str, Any]) -> str:
        call_id = f"{RUNTIME}-{message.get('ts')}"
        if call_id in self.open_calls:  # the same ask said again (partial then whole)
            return call_id
        self.open_calls[call_id] = []
        name, arguments = shared_call(name, arguments)
        self._emit(ToolCall(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id, name=name,
                            input=clip_input(arguments)))
        return call_id

    def _close(self, call_id: str | None) -> None:
        if call_id is None or call_id not in self.open_calls:
            return
        output = "".join(self.open_calls.pop(call_id))
        self._emit(ToolResult(runtime=RUNTIME, ts=self.ts, replay=True, call_id=call_id,
                              output=clip(output)))

    def _close_calls(self) -> None:
        """The calls before a new API request (or prompt) ran: their results went with it."""
        for call_id in list(self.open_calls):
            self._close(call_id)

    # -- the end -----------------------------------------------------------------------

    def _end_turn(self, result: str | None) -> None:
        self._close_calls()
        self._emit(TurnCompleted(runtime=RUNTIME, ts=self.ts, replay=True, usage=self.usage,
                                 model=self.read.models[-1] if self.read.models else None,
                                 result_text=result))
        self.usage = Usage()
        self.turn_open = False

    def _finish(self, last: dict[str, Any] | None) -> None:
        """An unanswered ask waits for the user; anything else unfinished is an open turn."""
        if last is None:
            return
        kind = as_str(last.get("ask"))
        if last.get("type") == "ask" and kind not in _NOT_INPUT_ASKS and not last.get("partial"):
            body = _json_object(as_str(last.get("text")) or "")
            options = [InputOption(id=str(i), label=o, kind="answer")
                       for i, o in enumerate(as_list(body.get("options"))) if isinstance(o, str)]
            self._emit(NeedsInput(runtime=RUNTIME, ts=self.ts, replay=True,
                                  request_id=str(last.get("ts")),
                                  prompt=_ask_prompt(kind or "", last.get("text"), body),
                                  options=options, about="question"))
            return
        if kind in ("completion_result", "api_req_failed"):
            return
        streaming = bool(last.get("partial")) or kind == "command_output" \
            or (last.get("say") == "api_req_started"
                and not {"cost", "cancelReason"} & set(_json_object(last.get("text") or "")))
        self.read.open_turn = streaming or self.turn_open


_Handler = Callable[[_UiTimeline, str, dict[str, Any]], None]
_SAYS: dict[str, _Handler] = {
    "task": _UiTimeline.on_prompt, "user_feedback": _UiTimeline.on_prompt,
    "text": _UiTimeline.on_text, "reasoning": _UiTimeline.on_reasoning,
    "completion_result": _UiTimeline.on_completion,
    "plan_completion_result": _UiTimeline.on_completion,
    "api_req_started": _UiTimeline.on_api_request, "api_req_finished": _UiTimeline.on_api_request,
    "api_req_retried": _UiTimeline.on_retried,
    "error_retry": _UiTimeline.on_retry, "error": _UiTimeline.on_warning,
    "diff_error": _UiTimeline.on_warning, "clineignore_error": _UiTimeline.on_warning,
    "command_permission_denied": _UiTimeline.on_warning,
    "command": _UiTimeline.on_command, "command_output": _UiTimeline.on_command_output,
    "tool": _UiTimeline.on_tool, "use_mcp_server": _UiTimeline.on_mcp,
    "mcp_server_response": _UiTimeline.on_mcp_response,
    "browser_action_launch": _UiTimeline.on_browser, "browser_action": _UiTimeline.on_browser,
    "task_progress": _UiTimeline.on_progress,
}
_ASKS: dict[str, _Handler] = {
    "followup": _UiTimeline.on_question, "plan_mode_respond": _UiTimeline.on_question,
    "act_mode_respond": _UiTimeline.on_question,
    "completion_result": _UiTimeline.on_completion_ask,
    "command": _UiTimeline.on_command, "command_output": _UiTimeline.on_command_output,
    "tool": _UiTimeline.on_tool, "use_mcp_server": _UiTimeline.on_mcp,
    "browser_action_launch": _UiTimeline.on_browser,
    "api_req_failed": _UiTimeline.on_api_failed,
    "resume_task": lambda t, text, m: None, "resume_completed_task": lambda t, text, m: None,
}


def _ask_prompt(kind: str, text: Any, body: dict[str, Any]) -> str:
    """What an unanswered ask waits for, in words."""
    plain = (as_str(text) or "").removesuffix(_REQ_APP).strip()
    if kind in ("followup", "plan_mode_respond", "act_mode_respond"):
        return as_str(body.get("question")) or as_str(body.get("response")) or plain
    if kind == "command":
        return f"Approve the command: {plain}"
    if kind == "tool":
        tool = as_str(body.get("tool")) or "tool"
        name = shared_call(tool, {})[0] if tool in _SHARED else TOOL_NAMES.get(tool, tool)
        return f"Approve {name} {as_str(body.get('path')) or ''}".rstrip()
    if kind == "use_mcp_server":
        return f"Approve the MCP call {body.get('serverName')}/{body.get('toolName')}"
    return f"{kind}: {plain}" if plain else kind


def _usage(info: dict[str, Any]) -> Usage:
    return Usage(input_tokens=as_int(info.get("tokensIn")),
                 output_tokens=as_int(info.get("tokensOut")),
                 cache_read_tokens=as_int(info.get("cacheReads")),
                 cache_write_tokens=as_int(info.get("cacheWrites")),
                 cost_usd=as_float(info.get("cost")))


def _json_object(text: Any, problems: list[str] | None = None, what: str = "") -> dict[str, Any]:
    """The JSON object a message's ``text`` holds ({} when it holds none)."""
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return {}
    sink: list[str] = []
    value = as_dict(parse_json(text, sink, f"Cline {what} message"))
    if problems is not None and what:
        problems.extend(sink)
    return value


def _error_message(text: str) -> str:
    """A serialized ClineError's message (older builds store the plain text)."""
    body = _json_object(text)
    message = as_str(body.get("message"))
    return clip(message or text.strip() or "API request failed", 2000)


def _cwd_in(text: str) -> str | None:
    """The working folder named in Cline's environment details (absolute paths only)."""
    match = _CWD.search(text)
    if match is None:
        return None
    found = match.group(1).strip()
    return found if found.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", found) else None


def _cwd_from_file(path: Path, head: int = 2 * 1024 * 1024) -> str | None:
    """The working folder from the start of the conversation history (its first prompt)."""
    try:
        with open_regular(path) as handle:
            chunk = handle.read(head).decode("utf-8", "replace")
    except OSError:
        return None
    # the text sits inside a JSON string: undo the escaping of its backslashes
    found = _cwd_in(chunk)
    return found.replace("\\\\", "\\") if found else None


def _history_map(value: Any) -> dict[str, str]:
    """task id → cwd from a task history (a list of HistoryItem)."""
    found: dict[str, str] = {}
    for raw in as_list(value):
        entry = as_dict(raw)
        task_id, cwd = as_str(entry.get("id")), as_str(entry.get("cwdOnTaskInitialization"))
        if task_id and cwd:
            found[task_id] = cwd
    return found


def _legacy_history_cwd(root: Path, task_id: str, problems: list[str]) -> str | None:
    """Older builds kept the task history in VS Code's state.vscdb, under the extension's id."""
    if root.parent.name != "globalStorage":
        return None
    values = read_items(root.parent / "state.vscdb", [EXTENSION_ID], problems)
    state = as_dict(values.get(EXTENSION_ID))
    return _history_map(state.get("taskHistory")).get(task_id)


def _read_metadata(read: EditorRead, path: Path) -> None:
    if not path.exists():
        return
    sink: list[str] = []
    metadata = as_dict(read_json_file(path, sink, "Cline task metadata"))
    read.problems.extend(sink)
    for raw in as_list(metadata.get("model_usage")):
        model = as_str(as_dict(raw).get("model_id"))
        if model and model not in read.models:
            read.models.append(model)


def _read_api_history(read: EditorRead, history: list[Any], mtime_ns: int) -> None:
    """The fallback: Anthropic-style messages (text, tool_use, tool_result blocks)."""
    ts = ms_to_dt(mtime_ns // 1_000_000) or datetime.now(UTC)
    pending: set[str] = set()
    last_role = None
    for index, raw in enumerate(history):
        message = as_dict(raw)
        role = as_str(message.get("role"))
        when = ms_to_dt(as_int(message.get("ts"))) or ts
        model = as_str(as_dict(message.get("modelInfo")).get("modelId"))
        if model and model not in read.models:
            read.models.append(model)
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for block in as_list(blocks):
            _history_block(read, as_dict(block), role, when, pending, first=index == 0)
        if role in ("user", "assistant"):
            last_role = role
    read.open_turn = last_role == "user" or bool(pending)


def _history_block(read: EditorRead, block: dict[str, Any], role: str | None, ts: datetime,
                   pending: set[str], first: bool) -> None:
    kind = block.get("type")
    if kind == "text" and role == "user":
        text = as_str(block.get("text")) or ""
        task = re.search(r"<task>\s*(.*?)\s*</task>", text, re.S)
        feedback = re.search(r"<feedback>\s*(.*?)\s*</feedback>", text, re.S)
        found = task or feedback
        if found is not None or (first and not text.lstrip().startswith(("[", "<"))):
            read.prompt(found.group(1) if found else text)
        read.cwd = read.cwd or _cwd_in(text)
    elif kind in ("text", "thinking") and role == "assistant":
        text = as_str(block.get("text")) or as_str(block.get("thinking")) or ""
        if text.strip():
            read.events.append(AssistantText(runtime=RUNTIME, ts=ts, replay=True, text=text,
                                             reasoning=kind == "thinking"))
    elif kind == "tool_use":
        call_id = as_str(block.get("id")) or f"{RUNTIME}-call-{len(read.events)}"
        pending.add(call_id)
        name, arguments = shared_call(as_str(block.get("name")) or "tool",
                                      as_dict(block.get("input")))
        read.events.append(ToolCall(runtime=RUNTIME, ts=ts, replay=True, call_id=call_id,
                                    name=name, input=clip_input(arguments)))
    elif kind == "tool_result":
        call_id = as_str(block.get("tool_use_id")) or ""
        pending.discard(call_id)
        error = block.get("is_error")
        read.events.append(ToolResult(runtime=RUNTIME, ts=ts, replay=True, call_id=call_id,
                                      output=clip(text_of(block.get("content"))),
                                      is_error=error if isinstance(error, bool) else None))

