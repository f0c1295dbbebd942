"""The item-data roles of the stream view-model and how each reads a row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt

from relay.core.events import EventRecord
from relay.gui import event_text
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


def _record(node: StreamNode) -> EventRecord:
    assert node.record is not None, "the root has no row"
    return node.record


_ROLES: dict[int, Callable[[StreamNode], Any]] = {
    int(Qt.ItemDataRole.DisplayRole): lambda n: event_text.one_line(n.event),
    int(Qt.ItemDataRole.ToolTipRole): lambda n: event_text.tooltip(n.event),
    SUMMARY: lambda n: event_text.one_line(n.event),
    TEXT: lambda n: event_text.detail(n.event),
    KIND: lambda n: n.event.kind,
    STYLE: lambda n: event_text.style_key(n.event),
    BADGE: lambda n: event_text.badge(n.event),
    IS_ERROR: lambda n: event_text.is_error(n.event),
    SIMULATED: lambda n: n.event.simulated,
    RECORD_ID: lambda n: _record(n).id,
    BANNER: lambda n: event_text.is_banner(n.event),
    TIME: lambda n: n.event.ts.astimezone().strftime("%H:%M:%S"),
    DEPTH: lambda n: n.depth,
    CHILD_COUNT: lambda n: len(n.children),
    EXPANDED: lambda n: n.expanded and bool(n.children),
}


def role_value(node: StreamNode, role: int) -> Any:
    """What ``role`` reads for ``node``'s row (``None`` for roles the model does not know)."""
    getter = _ROLES.get(role)
    return None if getter is None else getter(node)
