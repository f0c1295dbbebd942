"""The intent and the state of one detected session, lifted from what its store read.

:func:`lift` is pure: a :class:`~relay.detect.stores.base.StoreRead` (events in Relay's closed
model, plus the store's metadata), the live process if one is linked to the session, and the
current time in; a :class:`Lifted` out. Token usage is not lifted here: it comes from the
wallet's usage index.

**Intent.** The initial prompt (the store's), the plan and the tasks remaining (the agent's own
to-do tools through :mod:`relay.sessions.intent` — Claude ``TodoWrite`` / ``Task*``, Codex
``update_plan``, and Gemini ``write_todos`` mapped onto ``TodoWrite``), the files its write and
edit tools touched (not those whose call failed), the commands it ran, the skills (invoked
first, then those the session had loaded), MCP servers (``mcp__<server>__<tool>`` calls and the
store's), the models, and its last words.

**What the stores must say** (see ``relay.detect.stores``): a turn that finished ends with
:class:`~relay.core.events.TurnCompleted`; a failed one with a blocking
:class:`~relay.core.events.LimitHit` (usage limit, quota, rate limit) and/or a fatal
:class:`~relay.core.events.AgentError`; an interrupted one with
:class:`~relay.core.events.SessionEnded` (``interrupted``). ``StoreRead.open_turn`` says the
last turn did not finish (a prompt without an answer, a call without a result).

**State** — the rules of :func:`decide`, first match wins ("quiet": nothing written for
:data:`QUIET_MS`):

===  ==============================================================  ==============
 #   when                                                            state
===  ==============================================================  ==============
 1   nothing readable (no prompt, no event)                          ``unknown``
 2   the last turn ended on a usage limit, quota or rate limit       ``blocked``
 3   process alive, a question to the user open (AskUserQuestion,    ``needs_input``
     ExitPlanMode, an approval request)
 4   process alive, wrote within the last minute                     ``working``
 5   process alive, quiet, a call that may need approval open        ``needs_input``
 6   process alive, quiet, mid-turn (a long tool call, API retries)  ``working``
 7   process alive, turn finished, its last words ask a question     ``needs_input``
 8   process alive, turn finished                                    ``idle``
 9   no process, a question to the user open                         ``ended``
 10  no process, mid-turn                                            ``crashed``
 11  no process, turn finished                                       ``ended``
===  ==============================================================  ==============

A limit's reset time that has already passed is not reported (``resets_at_ms`` None: it says
nothing about the window now); the ``why`` says it has passed. "May need approval" depends on
the session's permission mode: Claude ``default`` / ``plan`` (writes, Bash, web, MCP;
``acceptEdits`` only Bash, web, MCP), Codex ``untrusted`` / ``on-failure`` (shell, patches)
and ``on-request`` (calls that ask for escalation), Gemini's write and shell tools; never under
``bypassPermissions`` / ``never`` / ``yolo``, never for Pi. A command that runs for more than
a minute under such a mode looks the same as one waiting for approval: the transcript cannot
tell them apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from relay.core.events import AgentEvent, LimitHit, ToolCall
from relay.core.present import clip
from relay.detect.model import DetectState, Intent, LiveProcess, PlanEntry
from relay.detect.stores.base import StoreRead
from relay.sessions.briefing import command_text
from relay.sessions.intent import MAX_PLAN, WRITE_TOOLS, PlanItem, latest_plan, plan_lists, written

#: a live process that wrote within this long is working
QUIET_MS = 60_000
MAX_FILES = 100
MAX_COMMANDS = 50
MAX_MESSAGE = 2000

_WRITES = WRITE_TOOLS | {"write", "edit", "replace", "multi_edit"}
_SHELLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "container.exec",
                     "run_shell_command", "bash"})
_QUESTIONS = frozenset({"AskUserQuestion", "ExitPlanMode", "request_user_input", "ask_user"})
_NEVER_ASKS = frozenset({"bypassPermissions", "dontAsk", "never", "yolo"})
_CLAUDE_EDITS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_CLAUDE_ASKS = _CLAUDE_EDITS | {"Bash", "WebFetch", "WebSearch"}
_CODEX_ASKS = frozenset({"shell", "exec_command", "local_shell", "container.exec", "apply_patch"})
_GEMINI_ASKS = frozenset({"run_shell_command", "write_file", "replace", "web_fetch"})
_TURN_ENDS = frozenset({"turn_completed", "session_ended", "limit_hit", "error"})


@dataclass(frozen=True, slots=True)
class Lifted:
    intent: Intent
    state: DetectState
    #: why that state, in words
    why: str
    #: when the limit that blocks the session resets (None: unknown, or not blocked)
    resets_at_ms: int | None


@dataclass(frozen=True, slots=True)
class Facts:
    """What the state rules look at (see :func:`decide`)."""

    readable: bool
    alive: bool
    #: how long nothing was written (None: unknown)
    quiet_ms: int | None
    mid_turn: bool
    #: the limit that ended the last turn
    limit: LimitHit | None
    #: an open question to the user
    question: str | None
    #: the tool of an open call that may wait for approval
    approval: str | None
    #: the finished turn's last words end with a question mark
    asks: bool
    #: what ended the last turn, when it did not simply finish ("failed: …", "interrupted")
    ending: str | None
    #: the names of the calls of the last turn still without a result
    pending: tuple[str, ...]


def lift(read: StoreRead, process: LiveProcess | None, now_ms: int,
         intent: Intent | None = None) -> Lifted:
    """Intent, state, why and reset time of one session.

    Args:
        read: The store's read of the session.
        process: Its live process, when the process scan linked one to it.
        now_ms: The current time (epoch milliseconds).
        intent: The intent lifted from this same read before (it depends on the read
            alone; the state also on the process and the clock): not lifted again.
    """
    facts = gather(read, process, now_ms)
    state, why = decide(facts, now_ms)
    resets = None
    if state == "blocked" and facts.limit is not None and facts.limit.resets_at is not None:
        at = _ms(facts.limit.resets_at)
        resets = at if at > now_ms else None
    return Lifted(intent if intent is not None else lift_intent(read), state, why, resets)


# --- state -----------------------------------------------------------------------------------

def decide(f: Facts, now_ms: int) -> tuple[DetectState, str]:
    """The state and why, by the rules in the module docstring (first match wins)."""
    quiet = f.quiet_ms is not None and f.quiet_ms >= QUIET_MS
    if not f.readable:
        return "unknown", "nothing readable in the session's file"
    if f.limit is not None and not f.mid_turn:
        return "blocked", _limit_why(f.limit, now_ms)
    if f.alive:
        if f.question is not None:
            return "needs_input", f"asks: {f.question}"
        if not quiet:
            return "working", "its process is alive and wrote within the last minute"
        if f.approval is not None:
            return "needs_input", f"a {f.approval} call waits (for approval?); quiet for {_span(f)}"
        if f.mid_turn:
            return "working", f"mid-turn, quiet for {_span(f)} (a long tool call or API retries)"
        if f.asks:
            return "needs_input", "its last message asks a question"
        return "idle", _finished("its process is alive; the last turn", f.ending)
    if f.question is not None:
        return "ended", f"no process; it ended asking: {f.question}"
    if f.mid_turn:
        what = (f"a {f.pending[-1]} call got no result" if f.pending
                else "the last prompt got no answer")
        return "crashed", f"no process; it stopped mid-turn ({what})"
    return "ended", _finished("no process; the last turn", f.ending)


def gather(read: StoreRead, process: LiveProcess | None, now_ms: int) -> Facts:
    """The facts :func:`decide` needs, from the read, the process and the clock."""
    events = read.events
    start = _last_turn_start(events)
    tail = [e for e in events[start:] if e.kind in _TURN_ENDS]
    pending = _pending_calls(events, start)
    mode = next((e.permission_mode for e in reversed(events) if e.kind == "session_started"), None)
    mid_turn = read.open_turn or (bool(pending) and not tail)
    ending = _ending(tail)
    last = max(read.last_activity_ms or 0, read.item.mtime_ns // 1_000_000) or None
    return Facts(
        readable=bool(getattr(read, "initial_prompt", "")) or any(
            e.kind != "session_started" for e in events),
        alive=process is not None,
        quiet_ms=None if last is None else max(now_ms - last, 0),
        mid_turn=mid_turn,
        limit=next((e for e in tail if e.kind == "limit_hit" and e.blocking), None),
        question=_question(events, start, pending),
        approval=next((c.name for c in pending if _may_need_approval(c, mode)), None),
        asks=not mid_turn and ending is None and _asks(events),
        ending=ending,
        pending=tuple(c.name for c in pending))


def _last_turn_start(events: Sequence[AgentEvent]) -> int:
    """Index after the turn end before the last turn's own activity (its end included)."""
    index = len(events)
    while index > 0 and events[index - 1].kind in (*_TURN_ENDS, "notice", "quota_update"):
        index -= 1
    while index > 0 and events[index - 1].kind not in _TURN_ENDS:
        index -= 1
    return index


def _pending_calls(events: Sequence[AgentEvent], start: int) -> list[ToolCall]:
    answered = {e.call_id for e in events[start:] if e.kind == "tool_result"}
    return [e for e in events[start:] if e.kind == "tool_call" and e.call_id not in answered]


def _question(events: Sequence[AgentEvent], start: int, pending: list[ToolCall]) -> str | None:
    withdrawn = {e.request_id for e in events[start:] if e.kind == "input_withdrawn"}
    for event in reversed(events[start:]):  # a request the agent went on after was answered
        if event.kind == "needs_input" and event.request_id not in withdrawn:
            return clip(event.prompt, 300)
        if event.kind not in ("needs_input", "input_withdrawn", "notice", "quota_update"):
            break
    for call in pending:
        if call.name in _QUESTIONS:
            return _question_text(call)
    return None


def _question_text(call: ToolCall) -> str:
    if call.name == "ExitPlanMode":
        return "approve the plan"
    questions = [q.get("question") for q in call.input.get("questions", [])
                 if isinstance(q, dict)] if isinstance(call.input.get("questions"), list) else []
    texts = [q for q in questions if isinstance(q, str)]
    single = call.input.get("question") or call.input.get("prompt")
    return clip(" / ".join(texts) or (single if isinstance(single, str) else call.name), 300)


def _may_need_approval(call: ToolCall, mode: str | None) -> bool:
    """Whether ``call`` may be waiting for the user's approval under ``mode``."""
    if mode in _NEVER_ASKS:
        return False
    name = call.name
    if call.runtime == "claude":
        if mode == "acceptEdits" and name in _CLAUDE_EDITS:
            return False
        return name in _CLAUDE_ASKS or name.startswith("mcp__")
    if call.runtime == "codex":
        if name not in _CODEX_ASKS:
            return False
        if mode == "on-request":
            return call.input.get("sandbox_permissions") == "require_escalated" \
                or call.input.get("with_escalated_permissions") is True
        return True
    return call.runtime == "gemini" and name in _GEMINI_ASKS


def _asks(events: Sequence[AgentEvent]) -> bool:
    for event in reversed(events):
        if event.kind == "assistant_text" and not event.reasoning:
            return event.text.rstrip().rstrip("*_`").endswith("?")
        if event.kind in ("tool_call", "tool_result"):
            return False
    return False


def _ending(tail: Sequence[AgentEvent]) -> str | None:
    for event in tail:
        if event.kind == "session_ended" and event.outcome == "interrupted":
            return "was interrupted"
        if event.kind == "error":
            return f"failed: {clip(event.message, 200)}"
    return None


def _finished(subject: str, ending: str | None) -> str:
    return f"{subject} {ending}" if ending else f"{subject} finished"


def _limit_why(limit: LimitHit, now_ms: int) -> str:
    what = {"usage_limit": "a usage limit", "quota": "a quota", "rate_limit": "a rate limit",
            "overloaded": "an overload"}[limit.limit]
    if limit.resets_at is None:
        when = "reset time unknown"
    elif _ms(limit.resets_at) <= now_ms:
        when = f"the reset it gave ({_when(limit.resets_at)}) has passed, so it may go on now"
    else:
        when = f"resets {_when(limit.resets_at)}"
    return f"the last turn ended on {what}; {when} ({clip(limit.message, 160)})"


def _span(f: Facts) -> str:
    seconds = (f.quiet_ms or 0) // 1000
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


# --- intent ----------------------------------------------------------------------------------

def lift_intent(read: StoreRead) -> Intent:
    """What the session was about and what it did, from its events and metadata."""
    events = _with_foreign_todos(read.events)
    plan = _capped(latest_plan(events) or [])
    _, remaining = plan_lists(events)
    calls = [e for e in events if e.kind == "tool_call"]
    failed = {e.call_id for e in events if e.kind == "tool_result" and e.is_error is True}
    worktree = Path(read.cwd) if read.cwd else read.item.path.parent
    newest_first = calls[::-1]
    files = (path for c in newest_first if c.name in _WRITES and c.call_id not in failed
             for path, _ in reversed(written(c, worktree)))
    commands = (command_text(c.input) for c in newest_first if c.name in _SHELLS)
    texts = [e.text for e in events if e.kind == "assistant_text" and not e.reasoning]
    prompt = getattr(read, "initial_prompt", "")
    return Intent(
        initial_prompt=prompt if isinstance(prompt, str) else "",
        plan=[PlanEntry(item.text, item.status) for item in plan],
        tasks_remaining=remaining,
        files_touched=_recent(files, MAX_FILES),
        commands=_recent(commands, MAX_COMMANDS),
        skills=_unique([*_skills_used(calls), *read.skills]),
        mcp_servers=_unique([*_servers(calls), *read.mcp_servers]),
        models=_unique([*read.models, *_models(events)]),
        last_message=clip(texts[-1], MAX_MESSAGE) if texts else "")


def _with_foreign_todos(events: list[AgentEvent]) -> list[AgentEvent]:
    """Gemini's ``write_todos`` as the ``TodoWrite`` call :mod:`relay.sessions.intent` reads."""
    if not any(e.kind == "tool_call" and e.name == "write_todos" for e in events):
        return events
    return [_as_todo_write(e) if e.kind == "tool_call" and e.name == "write_todos" else e
            for e in events]


def _as_todo_write(call: ToolCall) -> ToolCall:
    raw = call.input.get("todos")
    todos = [{"content": t.get("description"), "status": t.get("status")}
             for t in (raw if isinstance(raw, list) else []) if isinstance(t, dict)]
    return call.model_copy(update={"name": "TodoWrite", "input": {"todos": todos}})


def _capped(items: list[PlanItem]) -> list[PlanItem]:
    """At most MAX_PLAN entries, dropping the oldest finished ones first."""
    while len(items) > MAX_PLAN:
        done = next((i for i, item in enumerate(items) if item.status == "completed"), 0)
        items = items[:done] + items[done + 1:]
    return items


def _skills_used(calls: Iterable[ToolCall]) -> list[str]:
    names = []
    for call in calls:
        if call.name in ("Skill", "activate_skill"):
            name = call.input.get("skill") or call.input.get("command") or call.input.get("name")
            if isinstance(name, str):
                names.append(name.lstrip("/"))
    return names


def _servers(calls: Iterable[ToolCall]) -> list[str]:
    return [c.name.split("__")[1] for c in calls
            if c.name.startswith("mcp__") and len(c.name.split("__")) >= 3]


def _models(events: Iterable[AgentEvent]) -> list[str]:
    return [e.model for e in events
            if e.kind in ("session_started", "turn_completed") and e.model]


def _unique(values: Iterable[Any]) -> list[str]:
    return [v for v in dict.fromkeys(values) if isinstance(v, str) and v]


def _recent(newest_first: Iterable[str], cap: int) -> list[str]:
    """Each value once, where it last appeared, the most recent last; at most ``cap``.

    Reads only as far back as it needs (a long session has thousands of calls).
    """
    seen: dict[str, None] = {}
    for value in newest_first:
        if value and value not in seen:
            seen[value] = None
            if len(seen) == cap:
                break
    return list(seen)[::-1]
