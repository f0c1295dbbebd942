"""How one event reads in the stream: badge, one-line summary, full detail.

Plain Python (no Qt) over :mod:`relay.core.present`, so the CLI and the GUI
phrase events the same way.
"""

from __future__ import annotations

import html
import json
import re

from relay.core.events import AgentEvent
from relay.core.present import clip, summary, usage_line
from relay.core.termsafe import terminal_safe

_BADGES = {
    "session_started": "START", "assistant_text": "AGENT", "tool_call": "TOOL",
    "tool_result": "RESULT", "permission_denied": "DENIED", "turn_completed": "TURN",
    "needs_input": "INPUT", "input_withdrawn": "INPUT", "limit_hit": "LIMIT",
    "quota_update": "QUOTA",
    "notice": "NOTICE", "error": "ERROR", "session_ended": "END", "state_changed": "STATE",
    "handoff_step": "HANDOFF", "verify_result": "VERIFY",
    "board_changed": "BOARD", "live_state": "LIVE", "guard_decision": "GUARD",
    "message": "YOU",
}


def style_key(event: AgentEvent) -> str:
    """The visual style of an event's row (the delegate maps it to colours)."""
    if event.kind == "assistant_text" and event.reasoning:
        return "reasoning"
    if event.kind == "tool_result" and event.is_error:
        return "tool_error"
    if event.kind == "error" and not event.fatal:
        return "warning"
    if event.kind == "verify_result":
        return "session_ended" if event.passed else "tool_error"
    if event.kind == "session_ended" and event.outcome != "completed":
        return "ended_bad"
    return event.kind


def badge(event: AgentEvent) -> str:
    """A short label for the event's kind."""
    if event.kind == "assistant_text" and event.reasoning:
        return "THINK"
    if event.kind == "notice":
        return event.category.upper()
    return _BADGES.get(event.kind, event.kind.upper())


def is_error(event: AgentEvent) -> bool:
    """Whether the row reports a failure (drawn in the error colour)."""
    match event.kind:
        case "tool_result":
            return bool(event.is_error)
        case "error" | "limit_hit" | "permission_denied":
            return True
        case "guard_decision":
            return event.decision == "deny"
        case "session_ended":
            return event.outcome in ("failed", "interrupted")
        case "state_changed":
            return event.state in ("failed", "interrupted")
        case "handoff_step":
            return event.state == "failed"
        case "message":
            return event.state == "failed"
    return False


def is_banner(event: AgentEvent) -> bool:
    """Rows drawn as full-width banners: limits and fatal errors."""
    return event.kind == "limit_hit" or (event.kind == "error" and event.fatal)


def one_line(event: AgentEvent, limit: int = 300) -> str:
    """The event on one line (whitespace collapsed), for the list row; control characters
    shown as ``\x1b`` (:func:`relay.core.termsafe.terminal_safe`)."""
    return clip(" ".join(terminal_safe(summary(event)).split()), limit)


def detail(event: AgentEvent) -> str:
    """Everything worth reading about the event, for the detail pane (control characters
    shown as ``\x1b``)."""
    return terminal_safe(_detail(event))


_MD_PREFIX = re.compile(r"^(?:#{1,6}\s+|>\s*|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)+")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_MARKS = re.compile(r"\*\*|__|`+|~~|<[^>]+>")
#: rules, table separators, HTML comments: nothing to read
_MD_NOISE = re.compile(r"[-*_=]{3,}|\|?[\s:|-]*-[\s:|-]*\|?|<!--.*")


def task_title(task: str, lines: int = 2) -> str:
    """A task as a title: plain text from its first ``lines`` meaningful lines (markdown's
    headings, quotes, list marks, links, emphasis and code fences stripped), joined by
    " — " (control characters shown as ``\x1b``)."""
    found: list[str] = []
    fenced = False
    for raw in task.splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line or _MD_NOISE.fullmatch(line):
            continue
        line = _MD_MARKS.sub("", _MD_LINK.sub(r"\1", _MD_PREFIX.sub("", line)))
        line = " ".join(terminal_safe(line).split())
        if line:
            found.append(line)
        if len(found) == lines:
            break
    return " — ".join(found)


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip that shows as written. Qt renders a tooltip that looks like
    markup as rich text, so it is handed over as escaped rich text (control characters shown
    as ``\x1b``)."""
    escaped = html.escape(terminal_safe(text), quote=False)
    return f"<p style='white-space:pre-wrap'>{escaped}</p>"


def _detail(event: AgentEvent) -> str:
    match event.kind:
        case "assistant_text":
            return event.text
        case "tool_call":
            args = json.dumps(event.input, indent=2, ensure_ascii=False)
            return f"{event.name}  (call {event.call_id})\n\n{args}"
        case "tool_result":
            status = {True: "error", False: "ok", None: "status not reported"}[event.is_error]
            code = f", exit code {event.exit_code}" if event.exit_code is not None else ""
            return f"result of {event.call_id}: {status}{code}\n\n{event.output}"
        case "turn_completed":
            lines = [f"usage: {usage_line(event.usage)}", f"model: {event.model or '—'}"]
            if event.result_text:
                lines += ["", event.result_text]
            return "\n".join(lines)
        case "session_started":
            return "\n".join([summary(event), f"cwd: {event.cwd or '—'}",
                              f"tools: {', '.join(event.tools) or '—'}",
                              f"version: {event.version or '—'}"])
        case "session_ended" if event.result_text:
            return f"{summary(event)}\n\n{event.result_text}"
    return summary(event)
