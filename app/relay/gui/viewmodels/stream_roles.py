"""The item-data roles of the stream view-model and how each reads a row.

A handoff's block (:attr:`StreamNode.handoff`) reads as one neutral row: what was handed
to whom and how far it got, then why, where the agent was paused, the contract and the
receiver (:func:`handoff_lines`); its detail is the Handoff panel's description of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt

from relay.core.events import EventRecord
from relay.core.present import clip
from relay.gui import event_text
from relay.gui.handoff_text import STEP_TITLES
from relay.gui.viewmodels.handoff_timeline import HandoffLine
from relay.gui.viewmodels.stream_tree import StreamNode

_USER = int(Qt.ItemDataRole.UserRole)

KIND = _USER + 1
STYLE = _USER + 2
BADGE = _USER + 3
SUMMARY = _USER + 4
TEXT = _USER + 5
IS_ERROR = _USER + 6
SIMULATED = _USER + 7
RECORD_ID = _USER + 8
TIME = _USER + 9
BANNER = _USER + 10
DEPTH = _USER + 11
CHILD_COUNT = _USER + 12
EXPANDED = _USER + 13
#: a handoff's block: its lines as (label, text); None for any other row
BLOCK = _USER + 14


def _line(node: StreamNode) -> HandoffLine:
    """The handoff a block shows, from its steps."""
    line = HandoffLine(node.event.handoff_id if node.event.kind == "handoff_step" else "")
    for child in node.children:
        if child.event.kind == "handoff_step":
            line.add_step(child.event)
    return line


def handoff_lines(node: StreamNode) -> list[tuple[str, str]]:
    """A handoff block's lines: the route and how far it got, then why, the pause point,
    the contract and the receiver (each once known)."""
    line = _line(node)
    state = STEP_TITLES[line.state] if line.state else "—"
    lines = [("Handoff", f"{line.title} · {state.lower()}")]
    why = line.reason.replace("_", " ") if line.reason else "—"
    limit = next((c.event for c in node.children if c.event.kind == "limit_hit"), None)
    if limit is not None:
        why = f"{why} — {limit.message}"
    lines.append(("Why", why))
    snapshot = line.detail_of("snapshotted")
    if snapshot:  # "<how the agent was paused>; commit <sha> on <branch>"
        pause, sep, commit = snapshot.rpartition("; commit ")
        lines.append(("Paused at", f"commit {commit} ({pause})" if sep else snapshot))
    contract = line.detail_of("envelope_built")
    if contract:
        lines.append(("Contract", contract))
    if line.state == "failed":
        lines.append(("Failed", line.error or "—"))
    else:
        to, started = line.to_entry or "?", line.detail_of("resuming") or line.detail_of(
            "dispatched") or "not started yet"
        lines.append(("Receiver", started if started.startswith(to) else f"{to} — {started}"))
    return [(label, " ".join(text.split())) for label, text in lines]


def _summary(node: StreamNode) -> str:
    if node.handoff:
        return clip(" · ".join(f"{label}: {text}" if label != "Handoff" else text
                               for label, text in handoff_lines(node)), 300)
    return event_text.one_line(node.event)


def _detail(node: StreamNode) -> str:
    if not node.handoff:
        return event_text.detail(node.event)
    described = _line(node).describe()
    endings = [event_text.one_line(c.event) for c in node.children
               if c.event.kind != "handoff_step"]
    return described + ("\n\nHow the paused run ended:\n" + "\n".join(endings)
                        if endings else "")


def _failed(node: StreamNode) -> bool:
    return _line(node).state == "failed"


def _record(node: StreamNode) -> EventRecord:
    assert node.record is not None, "the root has no row"
    return node.record


_ROLES: dict[int, Callable[[StreamNode], Any]] = {
    int(Qt.ItemDataRole.DisplayRole): _summary,
    int(Qt.ItemDataRole.ToolTipRole): lambda n: event_text.plain_tooltip(_detail(n)[:1500]),
    SUMMARY: _summary,
    TEXT: _detail,
    KIND: lambda n: "handoff" if n.handoff else n.event.kind,
    STYLE: lambda n: ("tool_error" if _failed(n) else "handoff") if n.handoff
    else event_text.style_key(n.event),
    BADGE: lambda n: "HANDOFF" if n.handoff else event_text.badge(n.event),
    IS_ERROR: lambda n: _failed(n) if n.handoff else event_text.is_error(n.event),
    SIMULATED: lambda n: n.event.simulated,
    RECORD_ID: lambda n: _record(n).id,
    BANNER: lambda n: not n.handoff and event_text.is_banner(n.event),
    BLOCK: lambda n: handoff_lines(n) if n.handoff else None,
    TIME: lambda n: (n.at or n.event.ts).astimezone().strftime("%H:%M:%S"),
    DEPTH: lambda n: n.depth,
    CHILD_COUNT: lambda n: len(n.children),
    EXPANDED: lambda n: n.expanded and bool(n.children),
}


def role_value(node: StreamNode, role: int) -> Any:
    """What ``role`` reads for ``node``'s row (``None`` for roles the model does not know)."""
    getter = _ROLES.get(role)
    return None if getter is None else getter(node)
