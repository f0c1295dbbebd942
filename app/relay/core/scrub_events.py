"""Scrub secrets out of an agent event before it is stored, published or shown.

Applies :mod:`relay.core.redact` to the text-bearing fields of each event kind.
Clean events (the common case) come back as the same object; an event whose
text held a secret comes back as a copy with the secret replaced by a marker.
"""

from __future__ import annotations

from typing import Any

from relay.core.events import AgentEvent, InputOption
from relay.core.redact import scrub, scrub_obj

#: the fields of each kind that carry agent- or user-provided text.
_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "assistant_text": ("text",),
    "tool_call": ("input",),
    "tool_result": ("output",),
    "permission_denied": ("detail",),
    "turn_completed": ("result_text",),
    "needs_input": ("prompt", "options", "tool"),
    "input_withdrawn": ("reason",),
    "limit_hit": ("message",),
    "notice": ("message",),
    "error": ("message",),
    "session_ended": ("reason", "result_text"),
    "state_changed": ("reason",),
    "handoff_step": ("detail", "reason"),
    "verify_result": ("command", "output", "problem"),
    "board_changed": ("action", "project", "task", "fields", "actor"),
    "live_state": ("detail",),
    "guard_decision": ("reason", "summary", "rule", "environment"),
    "message": ("text", "source", "error"),
}


def _clean(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, list) and value and isinstance(value[0], InputOption):
        # a question's options: their labels are text; ids and kinds route the answer back
        return [o.model_copy(update={"label": scrub(o.label)}) for o in value]
    return scrub_obj(value)


def scrub_event(event: AgentEvent) -> AgentEvent:
    """``event`` with secrets in its text fields replaced (the same object if clean)."""
    fields = _TEXT_FIELDS.get(event.kind)
    if not fields:
        return event
    changed = {}
    for name in fields:
        before = getattr(event, name)
        after = _clean(before)
        if after != before:
            changed[name] = after
    return event.model_copy(update=changed) if changed else event
