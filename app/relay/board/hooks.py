"""Claude Code's hook events: the live state of each session, the owner's comments delivered
to it, and the guard's answer before a tool runs (seed 004 "Hooks transport").

The host's ``POST /api/v1/hooks/claude`` hands each event to :meth:`HookHandler.handle`,
which keeps only what it needs (:func:`kept`: ids, event, cwd, source, tool name and a
summary of its input, the notification, the error — never the prompt), folds it into the
session's :class:`~relay.core.live.HookedSession` (:func:`transition`), persists it in
``hooked_sessions`` and answers:

* SessionStart: the session's id and how to link it to a task (``additionalContext``);
* UserPromptSubmit / PreToolUse / PostToolUse: the owner's undelivered comments on the tasks
  this session is *exactly* linked to (its Claude id, or the Relay session running it), as
  ``additionalContext``; they are marked delivered;
* PreToolUse: the guard's verdict — ``permissionDecision`` deny / ask with the reason, or a
  warning (``systemMessage``); never "allow";
* Stop: while comments are unacknowledged, ``decision: block`` with them — at most
  :data:`MAX_BLOCKS` times per session and set of comments (the count lives in memory: a
  restarted host only means one more reminder; an acknowledged comment is never sent again).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from relay.core import guard as guard_rules
from relay.core.events import (
    BOARD_SESSION,
    AgentEvent,
    GuardDecision,
    LiveStateChanged,
    ToolCall,
    ToolResult,
)
from relay.core.guard import call_summary
from relay.core.live import HookedSession, LiveState, Needs
from relay.core.present import clip
from relay.core.store.sql import Statement, now_ms
from relay.core.store.writer import WriteOp
from relay.sessions.intent import latest_plan

if TYPE_CHECKING:
    from relay.board.model import Comment
    from relay.board.service import BoardService
    from relay.core.guard import Verdict

#: how often Stop holds a session for the same unacknowledged comments
MAX_BLOCKS = 3
#: the most of a tool call's input kept (its command, path, URL or pattern)
SUMMARY_LIMIT = 2048
#: the most of the comments one answer carries
ANSWER_LIMIT = 16 * 1024
#: the tools whose calls make the agent's plan (relay.sessions.intent reads them)
TODO_TOOLS = frozenset({"TodoWrite", "TaskCreate", "TaskUpdate", "TaskList"})
_QUOTA = re.compile(r"rate[ _-]?limit|usage[ _-]?limit|quota|limit reached|\b429\b|overloaded",
                    re.IGNORECASE)
_TOOL_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure")


class LiveTable:
    """The hooked sessions in memory (:class:`~relay.core.live.LiveStates`)."""

    def __init__(self) -> None:
        self._by_id: dict[str, HookedSession] = {}

    def load(self, sessions: Iterable[HookedSession]) -> None:
        self._by_id = {s.agent_session_id: s for s in sessions}

    def get(self, agent_session_id: str) -> HookedSession | None:
        return self._by_id.get(agent_session_id)

    def all(self) -> list[HookedSession]:
        return sorted(self._by_id.values(), key=lambda s: s.updated_ms, reverse=True)

    def for_relay(self, relay_session_id: str) -> HookedSession | None:
        """The latest hooked session a Relay session runs."""
        return next((s for s in self.all() if s.relay_session_id == relay_session_id), None)

    def put(self, session: HookedSession) -> None:
        self._by_id[session.agent_session_id] = session


def _str(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def kept(event: Mapping[str, Any]) -> dict[str, Any]:
    """What Relay keeps of a hook event (bounded; the prompt and tool outputs are dropped)."""
    error = event.get("error")
    if not isinstance(error, str):
        error = json.dumps(error, default=str) if error is not None else ""
    details = event.get("error_details")
    if details is not None:
        error = f"{error} {details if isinstance(details, str) else json.dumps(details, default=str)}"
    tool_input = event.get("tool_input")
    return {
        "session_id": _str(event.get("session_id"), 128),
        "event": _str(event.get("hook_event_name"), 64),
        "cwd": _str(event.get("cwd"), 4096),
        "source": _str(event.get("source"), 32),
        "transcript_path": _str(event.get("transcript_path"), 4096),
        "tool_name": _str(event.get("tool_name"), 128),
        "tool_use_id": _str(event.get("tool_use_id"), 128),
        "tool_input": tool_input if isinstance(tool_input, Mapping) else {},
        "summary": call_summary(_str(event.get("tool_name"), 128), tool_input,
                                SUMMARY_LIMIT) if isinstance(tool_input, Mapping) else "",
        "notification_type": _str(event.get("notification_type"), 64),
        "message": _str(event.get("message"), 1000),
        "stop_hook_active": event.get("stop_hook_active") is True,
        "error": clip(error.strip(), 1000),
        "reason": _str(event.get("reason"), 200),
    }


def _question(tool_input: Mapping[str, Any]) -> str:
    questions = tool_input.get("questions")
    if isinstance(questions, list) and questions and isinstance(questions[0], Mapping):
        return _str(questions[0].get("question"), 500)
    return _str(tool_input.get("question"), 500)


def transition(before: HookedSession | None,
               k: Mapping[str, Any]) -> tuple[LiveState, Needs | None, str] | None:
    """The state, what it needs and the detail a hook event leads to; None: no change."""
    name, tool = k["event"], k["tool_name"]
    if name == "SessionStart":
        return ("working", None, "compacting") if k["source"] == "compact" else ("idle", None, "")
    if name == "PreToolUse" and tool == "AskUserQuestion":
        return "needs_input", "question", _question(k["tool_input"]) or tool
    if name in _TOOL_EVENTS:
        return "working", None, (tool if name != "UserPromptSubmit" else "")
    if name == "PermissionRequest":
        return "needs_input", "permission", tool or k["message"]
    if name == "Notification":
        kind = k["notification_type"]
        if kind == "permission_prompt":
            return "needs_input", "permission", k["message"]
        if kind == "elicitation_dialog":
            return "needs_input", "question", k["message"]
        if kind == "idle_prompt":
            return "idle", None, k["message"]
        return None
    if name == "Stop":
        return "idle", None, ""
    if name == "StopFailure":
        error = k["error"] or "the turn failed"
        return ("quota_blocked" if _QUOTA.search(error) else "idle"), None, error
    if name == "SessionEnd":
        return "ended", None, k["reason"]
    return None


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value[:8192]
    return json.dumps(value, default=str)[:8192] if value is not None else ""


def _comments_text(session_id: str, comments: list[Comment], stop: bool) -> str:
    keys = sorted({c.task for c in comments})
    lines = [f"Relay board — the owner's comment{'s' if len(comments) != 1 else ''} on your "
             f"task{'s' if len(keys) != 1 else ''} {', '.join(keys)}:"]
    used = len(lines[0])
    for c in comments:
        line = f"- [{c.task} comment {c.id}] {c.body}"
        if used + len(line) > ANSWER_LIMIT:
            lines.append("- … (more: read them with board_comments)")
            break
        lines.append(line)
        used += len(line)
    ids = {key: ", ".join(str(c.id) for c in comments if c.task == key) for key in keys}
    ack = ", ".join(f'board_ack_comments(key="{key}", ids=[{ids[key]}], '
                    f'session_id="{session_id}")' for key in keys)
    lines.append(("Before you stop: take them into account and acknowledge them with "
                  if stop else "Take them into account and acknowledge them with ") + ack + ".")
    return "\n".join(lines)


class HookHandler:
    """Folds hook events into live states and answers them (owned by the BoardService)."""

    def __init__(self, board: BoardService) -> None:
        self.board = board
        #: Stop blocks per (session, set of comment ids): in memory on purpose
        self._blocks: dict[tuple[str, frozenset[int]], int] = {}
        #: each session's to-do tool calls since this host started (for its plan)
        self._todo_calls: dict[str, deque[AgentEvent]] = {}

    async def handle(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        k = kept(raw)
        if not k["session_id"] or not k["event"]:
            return {}
        async with self.board.lock:
            session = await self._fold(k, raw)
            return await self._answer(session, k)

    # -- the live state ---------------------------------------------------------------

    async def _fold(self, k: dict[str, Any], raw: Mapping[str, Any]) -> HookedSession:
        live, db = self.board.live, self.board.db
        sid, now = k["session_id"], now_ms()
        before = live.get(sid)
        current = before or HookedSession(agent_session_id=sid, runtime="claude", cwd=k["cwd"],
                                          state="idle", started_ms=now, updated_ms=now)
        changes: dict[str, Any] = {"updated_ms": now}
        for name in ("cwd", "source", "transcript_path"):
            if k[name] and k[name] != getattr(current, name):
                changes[name] = k[name]
        if current.relay_session_id is None:
            relay = await db.relay_session_of(sid)
            if relay is not None:
                changes["relay_session_id"] = relay
        moved = transition(before, k)
        if moved is not None:
            changes.update(state=moved[0], needs=moved[1], detail=moved[2])
        todos = self._todos(sid, k, raw)
        if todos is not None and todos != current.todos:
            changes["todos"] = todos
        if k["event"] == "SessionEnd":
            self._todo_calls.pop(sid, None)
        after = replace(current, **changes)
        live.put(after)
        state_moved = before is None or (after.state, after.needs) != (before.state, before.needs)
        persist = state_moved or any(n not in ("updated_ms", "detail") for n in changes)
        if persist:
            statements: list[Statement] = [db.put_hooked(after)]
            event = LiveStateChanged(
                agent_session_id=sid, state=after.state,
                previous=before.state if before else None, detail=after.detail,
                needs=after.needs, cwd=after.cwd,
                relay_session_id=after.relay_session_id,
            ) if state_moved or "todos" in changes else None  # a new plan shows on its card
            await self.board.writer.write(WriteOp(session_id=BOARD_SESSION,
                                                  statements=statements, event=event))
        return after

    def _todos(self, sid: str, k: Mapping[str, Any],
               raw: Mapping[str, Any]) -> tuple[dict[str, Any], ...] | None:
        """The session's plan after a to-do tool finished (None: not such an event)."""
        if k["event"] != "PostToolUse" or k["tool_name"] not in TODO_TOOLS:
            return None
        calls = self._todo_calls.setdefault(sid, deque(maxlen=400))
        call_id = k["tool_use_id"] or f"hook-{len(calls)}"
        calls.append(ToolCall(call_id=call_id, name=k["tool_name"], input=dict(k["tool_input"])))
        calls.append(ToolResult(call_id=call_id, output=_result_text(raw.get("tool_response"))))
        items = latest_plan(list(calls))
        if items is None:
            return None
        return tuple({"content": clip(i.text, 300), "status": i.status} for i in items[:100])

    # -- the answer -------------------------------------------------------------------

    async def _answer(self, session: HookedSession, k: dict[str, Any]) -> dict[str, Any]:
        name, sid = k["event"], session.agent_session_id
        if name == "SessionStart":
            return {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                           "additionalContext": _start_text(sid)}}
        if name == "Stop":
            return await self._stop(session)
        if name not in _TOOL_EVENTS:
            return {}
        context: list[str] = []
        comments = [c for c in await self._open_comments(session) if c.delivered_ms is None]
        if comments:
            context.append(_comments_text(sid, comments, stop=False))
            await self.board.deliver(comments, sid, name)
        out: dict[str, Any] = {}
        if name == "PreToolUse":
            verdict = await self._guard(session, k)
            if verdict is not None:
                out = _verdict_answer(verdict, context)
        if context:
            spec = out.setdefault("hookSpecificOutput", {"hookEventName": name})
            spec["additionalContext"] = "\n\n".join(context)
        return out

    async def _open_comments(self, session: HookedSession) -> list[Comment]:
        refs = [session.agent_session_id, session.relay_session_id or ""]
        tasks = await self.board.db.linked_tasks(refs)
        found = await self.board.db.comments(tasks, unacked=True) if tasks else []
        # what went to a Relay-run session's inbox reaches its agent there, not here
        relay = session.relay_session_id
        return [c for c in found if not relay or c.delivered_to != relay]

    async def _stop(self, session: HookedSession) -> dict[str, Any]:
        comments = await self._open_comments(session)
        if not comments:
            return {}
        key = (session.agent_session_id, frozenset(c.id for c in comments))
        if self._blocks.get(key, 0) >= MAX_BLOCKS:
            return {}
        self._blocks[key] = self._blocks.get(key, 0) + 1
        await self.board.deliver(comments, session.agent_session_id, "Stop")
        return {"decision": "block",
                "reason": _comments_text(session.agent_session_id, comments, stop=True)}

    async def _guard(self, session: HookedSession, k: dict[str, Any]) -> Verdict | None:
        cwd = session.cwd or k["cwd"]
        policy = await self.board.guard_policy(cwd) if cwd else guard_rules.GuardPolicy()
        verdict = guard_rules.decide(policy, k["tool_name"], k["tool_input"], cwd or None)
        if verdict is None:
            return None
        await self.board.writer.write(WriteOp(session_id=BOARD_SESSION, event=GuardDecision(
            decision=verdict.decision, reason=verdict.reason, rule=verdict.rule,
            environment=verdict.environment, tool=k["tool_name"],
            summary=clip(k["summary"], 300), where="hook",
            agent_session_id=session.agent_session_id)))
        return verdict


def _start_text(sid: str) -> str:
    return (f"Relay board: your session id is {sid}. Link the task you work on with "
            f'board_link(key, session_id="{sid}") — or create it with board_task_create(..., '
            f'session_id="{sid}") — then keep it current with board_set_stage and '
            "board_report; the owner's comments reach you here; acknowledge them with "
            "board_ack_comments.")


def _verdict_answer(verdict: Verdict, context: list[str]) -> dict[str, Any]:
    where = f" ({verdict.environment})" if verdict.environment else ""
    reason = f"Relay guard{where}: {verdict.reason}"
    if verdict.decision in ("deny", "ask"):
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": verdict.decision,
                                       "permissionDecisionReason": reason}}
    context.insert(0, f"Warning — {reason}")
    return {"systemMessage": reason}
