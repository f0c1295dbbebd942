"""ACP's ``session/update`` notifications and permission requests as Relay events (pure).

Mapping (schema of zed-industries/agent-client-protocol, protocol version 1):

* ``agent_message_chunk`` → :class:`AssistantText`, ``agent_thought_chunk`` → the same
  with ``reasoning=True``. Consecutive chunks of one kind are joined into one event,
  emitted when something else arrives, when it grows past :data:`FLUSH_CHARS`, or at
  the end of the turn: a view shows messages, not a row per token;
* ``tool_call`` → :class:`ToolCall` (``name`` is the ACP tool kind — ``edit``,
  ``execute``, ``read`` … — and ``input`` holds the title, the raw input and the
  locations; an edit's first location is also ``file_path``); a ``tool_call`` or
  ``tool_call_update`` with status ``completed``/``failed`` → :class:`ToolResult`;
* ``plan`` → a ``TodoWrite`` :class:`ToolCall` with ``todos`` (content, status,
  priority) and its result, so a plan reaches the handoff contract the way Claude
  Code's to-do list does (:mod:`relay.sessions.intent`);
* ``user_message_chunk`` in a ``session/load`` replay → a :class:`Notice` quoting the
  earlier prompt (outside a replay it only echoes Relay's own prompt: dropped);
* ``available_commands_update``, ``current_mode_update`` and unknown kinds: logged.

While :attr:`AcpEventMapper.replay` is set every event carries ``replay=True``.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from relay.core.events import (
    AgentEvent,
    AssistantText,
    InputOption,
    InputOptionKind,
    NeedsInput,
    Notice,
    ToolCall,
    ToolResult,
)
from relay.core.jsonvalue import as_dict, as_str

log = logging.getLogger(__name__)

FLUSH_CHARS = 4000
OUTPUT_CHARS = 20_000
READ_ONLY_KINDS = frozenset({"read", "search", "fetch", "think"})
_OPTION_KINDS: dict[str, InputOptionKind] = {
    "allow_once": "allow_once", "allow_always": "allow_always",
    "reject_once": "reject_once", "reject_always": "reject_always"}
_FILE_KINDS = frozenset({"edit", "delete", "move"})
_IGNORED = frozenset({"available_commands_update", "current_mode_update"})


def content_text(block: Any) -> str:
    """The readable text of an ACP ContentBlock ("" for none)."""
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "resource_link":
        return f"[{block.get('name') or block.get('uri') or 'resource'}]"
    if kind == "resource":
        res = block.get("resource")
        if isinstance(res, dict):
            return str(res.get("text") or f"[{res.get('uri') or 'resource'}]")
    if kind in ("image", "audio"):
        return f"[{kind}]"
    return ""


def tool_output(update: dict[str, Any]) -> str:
    """A tool call's result as text: its content entries, else its raw output."""
    parts: list[str] = []
    for entry in update.get("content") or []:
        if not isinstance(entry, dict):
            continue
        if entry.get("type") == "content":
            parts.append(content_text(entry.get("content")))
        elif entry.get("type") == "diff":
            parts.append(f"edited {entry.get('path')}")
        elif entry.get("type") == "terminal":
            parts.append(f"[terminal {entry.get('terminalId')}]")
    text = "\n".join(p for p in parts if p)
    if not text and update.get("rawOutput") is not None:
        raw = update["rawOutput"]
        text = raw if isinstance(raw, str) else orjson.dumps(raw).decode()
    return text[:OUTPUT_CHARS]


class AcpEventMapper:
    """Turns one ACP session's updates into events; remembers its tool calls."""

    def __init__(self, runtime: str) -> None:
        self.runtime = runtime
        self.replay = False
        self._tools: dict[str, dict[str, Any]] = {}
        self._finished: set[str] = set()
        self._buffer: list[str] = []
        self._buffered = 0  # characters in _buffer
        self._buffer_reasoning = False
        self._plans = 0
        #: the agent's message text of the live turn (the run's result text)
        self.turn_text: list[str] = []

    # -- session/update --------------------------------------------------------

    def update(self, params: dict[str, Any]) -> list[AgentEvent]:
        """Events for one ``session/update`` notification's params."""
        update = params.get("update")
        if not isinstance(update, dict):
            log.warning("%s: session/update without an update object", self.runtime)
            return []
        kind = as_str(update.get("sessionUpdate"))  # a list or an object is no kind
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            return self._chunk(content_text(update.get("content")),
                               reasoning=kind == "agent_thought_chunk")
        events = self.flush()
        if kind == "tool_call":
            events += self._tool_call(update)
        elif kind == "tool_call_update":
            events += self._tool_update(update)
        elif kind == "plan":
            events += self._plan(update.get("entries"))
        elif kind == "user_message_chunk":
            text = content_text(update.get("content"))
            if self.replay and text:
                events.append(Notice(runtime=self.runtime, replay=True,
                                     message=f"Earlier prompt: {text}"))
        elif kind in _IGNORED:
            log.debug("%s: %s", self.runtime, kind)
        else:
            log.info("%s: unknown session/update kind %r", self.runtime, kind)
        return events

    def flush(self) -> list[AgentEvent]:
        """The joined text chunks not emitted yet."""
        if not self._buffer:
            return []
        text = "".join(self._buffer)
        self._buffer, self._buffered = [], 0
        if not self._buffer_reasoning and not self.replay:
            self.turn_text.append(text)
        return [AssistantText(runtime=self.runtime, replay=self.replay, text=text,
                              reasoning=self._buffer_reasoning)]

    def _chunk(self, text: str, *, reasoning: bool) -> list[AgentEvent]:
        events = self.flush() if self._buffer and reasoning != self._buffer_reasoning else []
        if text:
            self._buffer.append(text)
            self._buffered += len(text)
            self._buffer_reasoning = reasoning
        if self._buffered >= FLUSH_CHARS:
            events += self.flush()
        return events

    def _tool_call(self, update: dict[str, Any]) -> list[AgentEvent]:
        call_id = str(update.get("toolCallId") or "")
        if not call_id:
            log.warning("%s: tool_call without a toolCallId", self.runtime)
            return []
        self._tools[call_id] = dict(update)
        events: list[AgentEvent] = [self._call_event(call_id)]
        return events + self._maybe_result(call_id, update)

    def _tool_update(self, update: dict[str, Any]) -> list[AgentEvent]:
        call_id = str(update.get("toolCallId") or "")
        if not call_id:
            return []
        events: list[AgentEvent] = []
        known = self._tools.get(call_id)
        if known is None:  # an update for a call we never saw start: start it now
            self._tools[call_id] = {k: v for k, v in update.items() if v is not None}
            events.append(self._call_event(call_id))
        else:
            known.update({k: v for k, v in update.items() if v is not None})
        return events + self._maybe_result(call_id, update)

    def _call_event(self, call_id: str) -> ToolCall:
        tool = self._tools[call_id]
        kind = str(tool.get("kind") or "other")
        data: dict[str, Any] = {"title": str(tool.get("title") or ""), "kind": kind}
        if tool.get("rawInput") is not None:
            data["rawInput"] = tool["rawInput"]
        paths = [loc.get("path") for loc in tool.get("locations") or []
                 if isinstance(loc, dict) and loc.get("path")]
        if paths:
            data["locations"] = paths
            if kind in _FILE_KINDS:
                data["file_path"] = paths[0]
        return ToolCall(runtime=self.runtime, replay=self.replay, call_id=call_id,
                        name=kind, input=data)

    def _maybe_result(self, call_id: str, update: dict[str, Any]) -> list[AgentEvent]:
        status = update.get("status")
        if status not in ("completed", "failed") or call_id in self._finished:
            return []
        self._finished.add(call_id)
        return [ToolResult(runtime=self.runtime, replay=self.replay, call_id=call_id,
                           output=tool_output(self._tools[call_id]),
                           is_error=status == "failed")]

    def _plan(self, entries: Any) -> list[AgentEvent]:
        todos = [{"content": str(e.get("content") or ""), "status": str(e.get("status") or ""),
                  "priority": str(e.get("priority") or "")}
                 for e in entries or [] if isinstance(e, dict)]
        self._plans += 1
        call_id = f"acp-plan-{self._plans}"
        return [ToolCall(runtime=self.runtime, replay=self.replay, call_id=call_id,
                         name="TodoWrite", input={"todos": todos}),
                ToolResult(runtime=self.runtime, replay=self.replay, call_id=call_id,
                           output=f"plan: {len(todos)} entries", is_error=False)]

    # -- session/request_permission ---------------------------------------------

    def asked_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        """The tool call a ``session/request_permission`` asks about: what its updates said
        so far, and what the request adds (kind, title, rawInput, locations…)."""
        asked = as_dict(params.get("toolCall"))
        call_id = str(asked.get("toolCallId") or "")
        return {**self._tools.get(call_id, {}),
                **{k: v for k, v in asked.items() if v is not None}}

    def permission(self, request_id: str, params: dict[str, Any]) -> NeedsInput:
        """The NeedsInput for a ``session/request_permission`` request's params."""
        tool = self.asked_tool(params)
        kind = tool.get("kind")
        title = str(tool.get("title") or kind or "a tool call")
        options = [InputOption(id=str(o.get("optionId")), label=str(o.get("name") or o.get("optionId")),
                               kind=_OPTION_KINDS.get(str(o.get("kind")), "other"))
                   for o in params.get("options") or []
                   if isinstance(o, dict) and o.get("optionId") is not None]
        return NeedsInput(runtime=self.runtime, replay=self.replay, request_id=request_id,
                          prompt=f"Allow {title}?", options=options, about="permission",
                          tool=title, read_only=(kind in READ_ONLY_KINDS) if kind else None)
