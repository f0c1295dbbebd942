"""The event tree behind the stream view-model (plain Python, no Qt).

Records are appended in id order. A :class:`ToolResult` becomes a child of its
:class:`ToolCall`; events a subagent emitted under a call (``parent_call_id``)
are nested there too. Everything else is a top-level row. Records already
seen (id not above the last one) are dropped, so history and live records can
overlap without duplicates.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from relay.core.events import AgentEvent, EventRecord


@dataclass(eq=False)
class StreamNode:
    """One row: a record, its parent row and its children."""

    record: EventRecord | None
    parent: StreamNode | None = None
    row: int = 0
    children: list[StreamNode] = field(default_factory=list)

    @property
    def event(self) -> AgentEvent:
        assert self.record is not None, "the root has no event"
        return self.record.event


@dataclass
class Insertion:
    """New children for one parent, to append at ``first`` (one beginInsertRows)."""

    parent: StreamNode
    first: int
    nodes: list[StreamNode]


class StreamTree:
    """The rows of one session's stream."""

    def __init__(self) -> None:
        self.root = StreamNode(None)
        self.last_id = 0
        self.count = 0
        self._calls: dict[str, StreamNode] = {}

    def plan(self, records: Iterable[EventRecord], session_id: str) -> list[Insertion]:
        """Group the new records of ``session_id`` by parent; nothing is attached yet.

        Groups come parents-first, so applying them in order is always valid.
        """
        groups: dict[int, Insertion] = {}
        pending: dict[int, int] = {}
        for record in records:
            if record.session_id != session_id or record.id <= self.last_id:
                continue
            self.last_id = record.id
            parent = self._parent_for(record.event)
            node = StreamNode(record, parent)
            key = id(parent)
            if key not in groups:
                groups[key] = Insertion(parent, len(parent.children), [])
                pending[key] = len(parent.children)
            node.row = pending[key]
            pending[key] += 1
            groups[key].nodes.append(node)
            if record.event.kind == "tool_call":
                self._calls[record.event.call_id] = node
        return list(groups.values())

    def attach(self, insertion: Insertion) -> None:
        """Append one planned group to its parent."""
        insertion.parent.children.extend(insertion.nodes)
        self.count += len(insertion.nodes)

    def _parent_for(self, event: AgentEvent) -> StreamNode:
        if event.kind == "tool_result" and event.call_id in self._calls:
            return self._calls[event.call_id]
        parent_call = getattr(event, "parent_call_id", None)
        if parent_call and parent_call in self._calls:
            return self._calls[parent_call]
        return self.root

    def records(self) -> list[EventRecord]:
        """Every record in the tree, in id order."""
        out: list[EventRecord] = []
        stack = list(reversed(self.root.children))
        while stack:
            node = stack.pop()
            assert node.record is not None
            out.append(node.record)
            stack.extend(reversed(node.children))
        return sorted(out, key=lambda r: r.id)
