"""The event tree behind the stream view-model, and its visible rows (plain Python, no Qt).

Records are appended in id order. A :class:`ToolResult` becomes a child of its
:class:`ToolCall`; events a subagent emitted under a call (``parent_call_id``)
are nested there too. Everything else is top level. Records already seen (id
not above the last one) are dropped, so history and live records can overlap
without duplicates. A message to the agent is in the stream once it was delivered (the
user's turn) or failed; its queued, edited and cancelled states are the composer's rows
(:func:`in_stream`).

The view shows a flat list: :attr:`StreamTree.rows` holds the shown nodes in
display order (depth first: a call, then its children). A node's ``path`` (the
ids from its top-level ancestor down to itself) sorts in that order, so a
node's row is found by bisection and a call's shown descendants are the rows
between it and the first path past its subtree. Changes are planned first
(:class:`Insertion`, :class:`Removal`: where rows go, against the rows as they
are at that point) and then applied, so the view-model can wrap each one in
its begin/end notifications.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from relay.core.events import AgentEvent, EventRecord

#: the states of a message to the agent that the stream shows (the rest is the queue's)
STREAM_MESSAGE_STATES = frozenset({"delivered", "failed"})


def in_stream(event: AgentEvent) -> bool:
    """Whether the stream shows ``event`` (a message only once delivered or failed)."""
    return event.kind != "message" or event.state in STREAM_MESSAGE_STATES


#: above every record id: ``path + (_PAST,)`` sorts after a node's whole subtree.
_PAST = 1 << 63


@dataclass(eq=False, slots=True)
class StreamNode:
    """One event: its record, its parent, its children and whether they are shown."""

    record: EventRecord | None
    parent: StreamNode | None = None
    path: tuple[int, ...] = ()
    children: list[StreamNode] = field(default_factory=list)
    expanded: bool = True

    @property
    def event(self) -> AgentEvent:
        assert self.record is not None, "the root has no event"
        return self.record.event

    @property
    def depth(self) -> int:
        return len(self.path) - 1

    def shown(self) -> bool:
        """Whether every ancestor is unfolded (so the node has a row)."""
        up = self.parent
        while up is not None and up.record is not None:
            if not up.expanded:
                return False
            up = up.parent
        return True


def _path(node: StreamNode) -> tuple[int, ...]:
    return node.path


@dataclass
class Insertion:
    """Rows to insert at ``first``; ``opens`` is the call being unfolded, if any."""

    first: int
    nodes: list[StreamNode]
    opens: StreamNode | None = None

    @property
    def last(self) -> int:
        return self.first + len(self.nodes) - 1


@dataclass
class Removal:
    """Rows ``first`` … ``last`` to remove: the shown subtree of ``closes``, being folded."""

    first: int
    last: int
    closes: StreamNode


@dataclass
class Plan:
    """What one batch of records changes.

    ``insertions`` apply in order; ``grown`` are rows that were shown before
    and got their first child (their fold mark appears); ``added`` are all new
    nodes, shown or not, in id order.
    """

    insertions: list[Insertion]
    grown: list[StreamNode]
    added: list[StreamNode]


class StreamTree:
    """The events of one session's stream and the rows a view shows of them."""

    def __init__(self) -> None:
        self.root = StreamNode(None)
        self.rows: list[StreamNode] = []
        self.nodes: list[StreamNode] = []  # every node, in id order
        self.last_id = 0
        self._calls: dict[str, StreamNode] = {}

    @property
    def count(self) -> int:
        """How many events the tree holds (shown or folded away)."""
        return len(self.nodes)

    def records(self) -> list[EventRecord]:
        """Every record in the tree, in id order."""
        return [node.record for node in self.nodes if node.record is not None]

    # -- appending ----------------------------------------------------------------------

    def add(self, records: Iterable[EventRecord], session_id: str) -> Plan:
        """Attach the new records of ``session_id``; plan their rows (not applied yet)."""
        first_new = self.last_id
        rows = self.rows
        tail = rows[-1].path if rows else ()
        blocks: dict[int, list[StreamNode]] = {}
        grown: list[StreamNode] = []
        added: list[StreamNode] = []
        for record in records:
            if record.session_id != session_id or record.id <= self.last_id:
                continue
            self.last_id = record.id
            if not in_stream(record.event):
                continue
            parent = self._parent_for(record.event)
            node = StreamNode(record, parent, (*parent.path, record.id))
            if (not parent.children and parent.record is not None
                    and parent.record.id <= first_new and parent.shown()):
                grown.append(parent)
            parent.children.append(node)
            added.append(node)
            if record.event.kind == "tool_call":
                self._calls[record.event.call_id] = node
            if node.shown():
                # where it goes among the rows shown before this batch (usually the end)
                at = len(rows) if node.path > tail else bisect_left(rows, node.path, key=_path)
                blocks.setdefault(at, []).append(node)
        self.nodes.extend(added)
        insertions: list[Insertion] = []
        shift = 0
        for at in sorted(blocks):
            nodes = sorted(blocks[at], key=_path)  # e.g. a late result before a new row
            insertions.append(Insertion(at + shift, nodes))
            shift += len(nodes)
        return Plan(insertions, grown, added)

    def _parent_for(self, event: AgentEvent) -> StreamNode:
        if event.kind == "tool_result" and event.call_id in self._calls:
            return self._calls[event.call_id]
        parent_call = getattr(event, "parent_call_id", None)
        if parent_call and parent_call in self._calls:
            return self._calls[parent_call]
        return self.root

    # -- folding ------------------------------------------------------------------------

    def fold(self, row: int) -> Removal | None:
        """Plan hiding the subtree under ``row`` (``None``: nothing to fold)."""
        node = self.rows[row]
        if not node.children or not node.expanded:
            return None
        end = bisect_left(self.rows, (*node.path, _PAST), lo=row + 1, key=_path)
        return Removal(row + 1, end - 1, node)

    def unfold(self, row: int) -> Insertion | None:
        """Plan showing the subtree under ``row`` again (folded descendants stay folded)."""
        node = self.rows[row]
        if node.expanded or not node.children:
            return None
        shown: list[StreamNode] = []
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            shown.append(child)
            if child.expanded:
                stack.extend(reversed(child.children))
        return Insertion(row + 1, shown, opens=node)

    def apply(self, change: Insertion | Removal) -> None:
        """Carry out a planned change on :attr:`rows`."""
        if isinstance(change, Removal):
            del self.rows[change.first:change.last + 1]
            change.closes.expanded = False
            return
        self.rows[change.first:change.first] = change.nodes
        if change.opens is not None:
            change.opens.expanded = True

    # -- lookups ------------------------------------------------------------------------

    def row_of(self, node: StreamNode) -> int | None:
        """The row showing ``node``, or ``None`` when it is folded away."""
        at = bisect_left(self.rows, node.path, key=_path)
        return at if at < len(self.rows) and self.rows[at] is node else None
