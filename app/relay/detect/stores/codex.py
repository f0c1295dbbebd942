"""Codex rollouts: ``<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``.

Also ``archived_sessions/``. ``exec resume`` appends to the same file. Each line is
``{"timestamp", "type", "payload"}`` (0.171.0, ``tests/fixtures/codex/NOTES.md``, "On-disk
session files"). What is read:

* ``session_meta``: the thread id, ``cwd``, ``cli_version``, ``git.branch``;
* ``turn_context`` (per turn): ``model``, ``approval_policy`` (reported as the permission mode:
  ``never`` asks nothing, ``on-request`` / ``untrusted`` / ``on-failure`` may stop for approval);
* ``world_state``: ``host_skills.body`` lists the skills available to the session; MCP servers
  where a ``*mcp*`` table names them (not in the recorded version: unverified);
* ``response_item``: assistant messages, reasoning summaries, ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` and their outputs (the only place sandbox and
  approval refusals show), ``update_plan`` calls (the plan, through
  :mod:`relay.sessions.intent`), ``apply_patch`` (files touched);
* ``event_msg``: ``task_started`` opens a turn; ``task_complete`` closes it — with
  ``error.codex_error_info`` (``usage_limit_exceeded`` …) a failure classified with the turn's
  ``token_count.rate_limits`` (reset times); ``turn_aborted`` (SIGINT, Esc) ends it as
  interrupted; the first ``UserMessage`` / ``user_message`` is the initial prompt.
  Approval requests (``exec_approval_request``, ``apply_patch_approval_request``,
  ``request_user_input``) become :class:`~relay.core.events.NeedsInput` if a version writes them
  (the recorded one does not: unverified).

Not recorded: ``Reconnecting…`` retries; usage is the wallet index's (``token_count``), never
read here. The ``response_item`` / ``item_completed`` pairs repeat each other; only the former
is turned into events.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from relay.core import jsonvalue
from relay.core.agent_homes import CodexHome
from relay.core.events import (
    AgentEvent,
    AssistantText,
    NeedsInput,
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
    skill_names,
)
from relay.wallet.transcripts import iso_ms

RUNTIME = "codex"
_THREAD_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
_REFUSED = re.compile(r"rejected by user|approval policy is Never|reject command|"
                      r"blocked by .*sandbox", re.IGNORECASE)
#: user messages Codex writes itself (environment, AGENTS.md, the abort notice…)
_CONTEXT_TAG = re.compile(r"\A\s*(?:<[a-z_]+>|# AGENTS\.md instructions)")
_APPROVALS = ("exec_approval_request", "apply_patch_approval_request", "request_user_input",
              "elicitation_request")


class CodexStore:
    """Codex's sessions under one ``CODEX_HOME``."""

    runtime = RUNTIME

    def __init__(self, *, line_limit: int = LINE_LIMIT) -> None:
        self._limit = line_limit

    def list(self, root: Path, entry: str) -> StoreListing:
        listing = StoreListing()
        for folder in CodexHome(root).rollout_dirs:
            self._walk(folder, entry, listing, depth=0)
        return listing

    def _walk(self, folder: Path, entry: str, listing: StoreListing, depth: int) -> None:
        for item in scan(folder, listing):
            if is_dir(item):
                if depth < 4:
                    self._walk(Path(item.path), entry, listing, depth + 1)
            elif item.name.startswith("rollout-") and item.name.endswith(".jsonl"):
                stem = item.name.removesuffix(".jsonl")
                match = _THREAD_ID.search(stem)
                add_item(listing, RUNTIME, match.group(1) if match else stem, entry,
                         Path(item.path))

    def read(self, item: StoreItem) -> TranscriptRead:
        reading = _Reading(item)
        for obj in records(item.path, reading.read.problems, self._limit):
            reading.line(obj)
        return reading.finish()


class _Reading:
    """The state of reading one rollout."""

    def __init__(self, item: StoreItem) -> None:
        self.read = TranscriptRead(item=item)
        self._at = mtime_of(item)
        self._open = False
        self._meta: dict[str, str] = {}
        self._started: datetime | None = None
        self._model: str | None = None
        self._last_text: str | None = None
        #: the rate-limit snapshot of the current turn (a reset time for its failure)
        self._rate_limits: dict[str, Any] | None = None

    def line(self, obj: dict[str, Any]) -> None:
        ms = iso_ms(obj.get("timestamp"))
        if ms is not None:
            self._at = at_ms(ms)
            self._started = self._started or self._at
            self.read.started_ms = self.read.started_ms or ms
            self.read.last_activity_ms = ms
        kind, payload = obj.get("type"), as_dict(obj.get("payload"))
        if kind == "session_meta":
            self._session_meta(payload)
        elif kind == "turn_context":
            self._turn_context(payload)
        elif kind == "world_state":
            self._world_state(as_dict(payload.get("state")))
        elif kind == "response_item":
            self._response_item(payload)
        elif kind == "event_msg":
            self._event(payload)

    def _emit(self, *events: AgentEvent) -> None:
        self.read.events.extend(events)

    # -- metadata ------------------------------------------------------------------------------

    def _session_meta(self, meta: dict[str, Any]) -> None:
        for key, field in (("cwd", "cwd"), ("cli_version", "version"), ("id", "id")):
            if (value := as_text(meta.get(key))) and field not in self._meta:
                self._meta[field] = value
        branch = as_text(as_dict(meta.get("git")).get("branch"))
        if branch:
            self._meta.setdefault("branch", branch)

    def _turn_context(self, context: dict[str, Any]) -> None:
        self._model = as_text(context.get("model")) or self._model
        add_unique(self.read.models, self._model)
        policy = as_text(context.get("approval_policy"))
        if policy:
            self._meta["mode"] = policy
        if (cwd := as_text(context.get("cwd"))) and "cwd" not in self._meta:
            self._meta["cwd"] = cwd

    def _world_state(self, state: dict[str, Any]) -> None:
        body = as_text(as_dict(state.get("host_skills")).get("body")) or ""
        section = body.partition("### Available skills")[2].partition("\n###")[0]
        for name in skill_names(section):
            add_unique(self.read.skills, name)
        for key, value in state.items():
            if "mcp" in key.lower() and isinstance(value, dict):
                for server in value:
                    add_unique(self.read.mcp_servers, str(server))

    # -- response items ------------------------------------------------------------------------

    def _response_item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item)
        elif kind == "reasoning":
            texts = [as_text(p.get("text")) for p in as_list(item.get("summary")) if isinstance(p, dict)]
            text = "\n".join(t for t in texts if t)
            if text:
                self._emit(AssistantText(runtime=RUNTIME, ts=self._at, replay=True,
                                         text=clip(text, MAX_TEXT), reasoning=True))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(item)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            self._output(item)

    def _message(self, item: dict[str, Any]) -> None:
        texts = [as_text(p.get("text")) for p in as_list(item.get("content")) if isinstance(p, dict)]
        text = "\n".join(t for t in texts if t).strip()
        role = item.get("role")
        if role == "assistant" and text:
            self._last_text = text
            self._emit(AssistantText(runtime=RUNTIME, ts=self._at, replay=True,
                                     text=clip(text, MAX_TEXT), message_id=as_text(item.get("id"))))
        elif role == "user":
            meta = as_dict(item.get("internal_chat_message_metadata_passthrough"))
            item_kinds = as_list(meta.get("content_item_kinds"))
            if "user.text" in item_kinds or (not item_kinds and not _CONTEXT_TAG.match(text)):
                self._prompt(text)

    def _prompt(self, text: str | None) -> None:
        """The first real user message (UserMessage items and user_message events are)."""
        if text and text.strip() and not self.read.initial_prompt:
            self.read.initial_prompt = clip(text.strip(), MAX_PROMPT)

    def _call(self, item: dict[str, Any]) -> None:
        call_id = as_text(item.get("call_id")) or as_text(item.get("id"))
        if call_id is None:
            return
        name, arguments = _call_parts(item)
        self._emit(ToolCall(runtime=RUNTIME, ts=self._at, replay=True, call_id=call_id,
                            name=name, input=clip_value(arguments)))

    def _output(self, item: dict[str, Any]) -> None:
        call_id = as_text(item.get("call_id"))
        if call_id is None:
            return
        output, exit_code = _output_parts(item.get("output"))
        failed = exit_code != 0 if exit_code is not None else (True if _REFUSED.search(output)
                                                               else None)
        self._emit(ToolResult(runtime=RUNTIME, ts=self._at, replay=True, call_id=call_id,
                              output=clip(output, MAX_OUTPUT), is_error=failed,
                              exit_code=exit_code))

    # -- event messages ------------------------------------------------------------------------

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "task_started":
            self._open, self._rate_limits = True, None
        elif kind == "task_complete":
            self._task_complete(event)
        elif kind == "turn_aborted":
            reason = as_text(event.get("reason")) or "aborted"
            self._emit(SessionEnded(runtime=RUNTIME, ts=self._at, replay=True,
                                    outcome="interrupted", reason=f"turn aborted ({reason})"))
            self._open = False
        elif kind == "token_count" and isinstance(event.get("rate_limits"), dict):
            self._rate_limits = event["rate_limits"]
        elif kind == "user_message":
            self._prompt(as_text(event.get("message")))
        elif kind == "item_completed":
            self._item_completed(as_dict(event.get("item")))
        elif kind in _APPROVALS:
            self._approval(event)

    def _task_complete(self, event: dict[str, Any]) -> None:
        self._open = False
        error = as_dict(event.get("error"))
        if error:
            message = as_text(error.get("message")) or "The turn failed."
            structured = {"codex_error_info": error.get("codex_error_info"),
                          "rate_limits": self._rate_limits}
            self._emit(*failure_events(RUNTIME, message, at=self._at, structured=structured))
            return
        text = as_text(event.get("last_agent_message")) or self._last_text
        self._emit(TurnCompleted(runtime=RUNTIME, ts=self._at, replay=True, model=self._model,
                                 result_text=text))

    def _item_completed(self, item: dict[str, Any]) -> None:
        if item.get("type") == "UserMessage":
            texts = [as_text(p.get("text")) for p in as_list(item.get("content")) if isinstance(p, dict)]
            self._prompt("\n".join(t for t in texts if t))

    def _approval(self, event: dict[str, Any]) -> None:
        request = as_text(event.get("call_id")) or as_text(event.get("id")) or "approval"
        command = event.get("command")
        what = " ".join(str(c) for c in command) if isinstance(command, list) else ""
        prompt = as_text(event.get("reason")) or what or "Codex asks for approval."
        self._emit(NeedsInput(runtime=RUNTIME, ts=self._at, replay=True, request_id=request,
                              prompt=clip(prompt, MAX_OUTPUT)))

    # -- the end -------------------------------------------------------------------------------

    def finish(self) -> TranscriptRead:
        read = self.read
        read.cwd = self._meta.get("cwd")
        read.git_branch = self._meta.get("branch")
        read.open_turn = self._open
        if read.events or read.initial_prompt or self._meta:
            read.events.insert(0, SessionStarted(
                runtime=RUNTIME, ts=self._started or self._at, replay=True,
                agent_session_id=self._meta.get("id", read.item.agent_session_id),
                model=read.models[0] if read.models else None, cwd=read.cwd,
                permission_mode=self._meta.get("mode"), version=self._meta.get("version")))
        return read


def _call_parts(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of a function / custom / local shell call."""
    kind = item.get("type")
    if kind == "local_shell_call":
        return "local_shell", {"command": as_dict(item.get("action")).get("command")}
    name = as_text(item.get("name")) or "unknown"
    if kind == "custom_tool_call":
        return name, {"input": as_text(item.get("input")) or ""}
    raw = item.get("arguments")
    if isinstance(raw, str):
        try:
            parsed = jsonvalue.loads(raw, fast=True)
        except ValueError:
            return name, {"arguments": raw}
        return name, parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return name, as_dict(raw)


def _output_parts(raw: Any) -> tuple[str, int | None]:
    """(output text, exit code) of a call output: plain text, or older ``{output, metadata}``."""
    if isinstance(raw, dict):
        text = as_text(raw.get("output")) or as_text(raw.get("content")) or ""
        code = as_dict(raw.get("metadata")).get("exit_code")
        return text, code if isinstance(code, int) and not isinstance(code, bool) else None
    text = raw if isinstance(raw, str) else ""
    if text.startswith("{"):
        try:
            parsed = jsonvalue.loads(text, fast=True)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            return _output_parts(parsed)
    match = _EXIT.search(text[:500])
    return text, int(match.group(1)) if match else None


STORE = CodexStore()
