"""Plain-text presentation of events, shared by the CLI and the GUI."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: relay-cli sessions formats rows without the models
    from relay.core.events import AgentEvent, MessageChanged, Usage

SIMULATION_LABEL = "SIMULATION — scripted demo, no real agent"


def fmt_tokens(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def fmt_cost(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}"


def usage_line(usage: Usage) -> str:
    """'in 1,200 · out 17 · cache r 4,000 w 300 · $0.0103' with gaps as '—'."""
    return (f"in {fmt_tokens(usage.input_tokens)} · out {fmt_tokens(usage.output_tokens)}"
            f" · cache r {fmt_tokens(usage.cache_read_tokens)} w {fmt_tokens(usage.cache_write_tokens)}"
            f" · {fmt_cost(usage.cost_usd)}")


def refused_note(count: int | None, *, short: bool = False) -> str:
    """'1 tool call refused' / '3 tool calls refused' ('3 refused' when ``short``); '' for
    none (or not counted)."""
    if not count:
        return ""
    return f"{count} refused" if short else f"{count} tool call{'' if count == 1 else 's'} refused"


def end_state(state: str, refused: int | None, *, short: bool = False) -> str:
    """A session's state with its refused tool calls: 'completed · 1 tool call refused'
    ('completed · 1 refused' for a table's narrow column).

    The one place that says it, for every surface (the CLI's footer, stream and sessions
    table, the window's header and sessions list): a refused call is never a silent success.
    """
    note = refused_note(refused, short=short)
    return f"{state} · {note}" if note else state


def args_summary(data: dict[str, Any], limit: int = 120) -> str:
    """A one-line summary of tool arguments."""
    if not data:
        return ""
    if len(data) == 1:
        value = next(iter(data.values()))
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    else:
        text = json.dumps(data, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clip(text: str, limit: int = 400) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: how a message's state reads in a stream row (relay.sessions.inbox)
_MESSAGE_STATES = {"queued": "queued", "sending": "sending", "cancelled": "cancelled",
                   "failed": "not delivered"}
_DELIVERED = {"steer": "steered in", "turn": "at the turn's end", "resume": "as a follow-up",
              "brief": "with Relay's brief"}


def message_line(event: MessageChanged) -> str:
    """A message to the agent as one line: ``you (queued): text`` … ``you: text``."""
    what = "review comment" if event.message_kind == "review" else (
        "board comment" if event.message_kind == "board" else "you")
    text = clip(" ".join(event.text.split()), 300)
    if event.state == "delivered":
        how = f" ({_DELIVERED[event.how]})" if event.how in _DELIVERED else ""
        return f"{what}{how}: {text}"
    why = f" — {clip(event.error, 160)}" if event.error else ""
    return f"{what} ({_MESSAGE_STATES.get(event.state, event.state)}): {text}{why}"


def summary(event: AgentEvent) -> str:
    """One human line for an event (without styling)."""
    match event.kind:
        case "session_started":
            return f"session {event.agent_session_id or '?'} · model {event.model or '—'}" \
                   f" · permissions {event.permission_mode or '—'}"
        case "assistant_text":
            return event.text
        case "tool_call":
            return f"{event.name}({args_summary(event.input)})"
        case "tool_result":
            status = "error" if event.is_error else "ok" if event.is_error is False else "done"
            code = f" exit {event.exit_code}" if event.exit_code is not None else ""
            return f"{status}{code}: {clip(event.output, 300)}"
        case "permission_denied":
            return f"permission denied: {event.tool} {clip(event.detail, 200)}"
        case "turn_completed":
            return f"turn done · {usage_line(event.usage)}"
        case "needs_input":
            choices = " / ".join(f"[{o.id}] {o.label}" for o in event.options)
            return f"needs input: {event.prompt}" + (f" — {choices}" if choices else "")
        case "input_withdrawn":
            return f"input no longer needed ({event.reason})"
        case "limit_hit":
            when = (f" · resets {event.resets_at:%Y-%m-%d %H:%M %Z}"
                    if event.resets_at and "resets" not in event.message else "")
            return f"{event.limit.replace('_', ' ')}: {event.message}{when}"
        case "quota_update":
            used = f"{event.used_percent:.0f}% used" if event.used_percent is not None else (
                event.status or "reading")
            when = f", resets {event.resets_at:%Y-%m-%d %H:%M %Z}" if event.resets_at else ""
            return f"quota {event.window.replace('_', ' ')}: {used}{when} ({event.origin})"
        case "notice":
            return event.message
        case "error":
            return f"{event.category}: {event.message}"
        case "session_ended":
            why = f" — {clip(event.reason, 160)}" if event.reason else ""
            return f"{event.outcome}{why}"
        case "state_changed":
            why = f" — {clip(event.reason, 160)}" if event.reason else ""
            until = f" until {event.until:%Y-%m-%d %H:%M:%S %Z}" if event.until else ""
            return f"state → {end_state(event.state, event.refused_calls)}{until}{why}"
        case "verify_result":
            verdict = "passed" if event.passed else "FAILED"
            code = f" (exit {event.exit_code})" if event.exit_code is not None else ""
            tail = f": {clip(event.problem or event.output, 300)}" if (
                event.problem or not event.passed) else ""
            return f"verify {' '.join(event.command)} {verdict}{code}{tail}"
        case "handoff_step":
            route = f" {event.from_entry or '?'} → {event.to_entry or '?'}"
            why = f" — {clip(event.detail, 160)}" if event.detail else ""
            if event.state == "pausing" and event.reason:
                why = f" — {clip(event.reason, 200)}{why}"
            return f"handoff {event.handoff_id} {event.state.replace('_', ' ')}:{route}{why}"
        case "board_changed":
            where = event.task or event.project
            changed = f" {args_summary(event.fields)}" if event.fields else ""
            by = f" by {event.actor}" if event.actor else ""
            return f"board {event.entity} {where} {event.action}{changed}{by}"
        case "live_state":
            needs = f" ({event.needs})" if event.needs else ""
            was = f" (was {event.previous.replace('_', ' ')})" if event.previous else ""
            what = f": {clip(event.detail, 160)}" if event.detail else ""
            return (f"session {event.agent_session_id} {event.state.replace('_', ' ')}"
                    f"{needs}{was}{what}")
        case "guard_decision":
            env = f" [{event.environment}]" if event.environment else ""
            return (f"guard {event.decision}{env} {event.tool}: {clip(event.summary, 160)}"
                    f" — {clip(event.reason, 200)} ({event.rule})")
        case "message":
            return message_line(event)
