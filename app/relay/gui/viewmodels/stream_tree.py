"""The event tree behind the stream view-model, and its visible rows (plain Python, no Qt).

Records are appended in id order. A :class:`ToolResult` becomes a child of its
:class:`ToolCall`; events a subagent emitted under a call (``parent_call_id``)
are nested there too. Everything else is top level. Records already seen (id
not above the last one) are dropped, so history and live records can overlap
without duplicates. A message to the agent is in the stream once it was delivered (the
user's turn) or failed; its queued, edited and cancelled states are the composer's rows
(:func:`in_stream`).

A handoff is one block (a folded node, :attr:`StreamNode.handoff`): its first step takes in
the rows that ended the run it pauses (limit, error, end, state — the trailing top-level
rows of those kinds), and every later step, and every such ending row until the handoff is
done or failed, goes under it. Rows keep the id (commit) order; the time a row shows never
goes back (:attr:`StreamNode.at`): an agent's event is stamped when it is read but committed
after Relay's own (the receiver's first event before the handoff's last step), so its own
time could read earlier than the row above it. Replayed events keep their own times.

The view shows a flat list: :attr:`StreamTree.rows` holds the shown nodes in
display order (depth first: a call, then its children). A node's ``path`` (the
ids from its top-level ancestor down to itself) sorts in that order, so a
node's row is found by bisection and a call's shown descendants are the rows
between it and the first path past its subtree. Changes are planned first
(:class:`Insertion`, :class:`Removal`, :class:`Touched`: where rows go, against the rows
as they are at that point) and then applied, so the view-model can wrap each one in its
begin/end notifications.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from relay.core.events import AgentEvent, EventRecord

#: the states of a message to the agent that the stream shows (the rest is the queue's)
STREAM_MESSAGE_STATES = frozenset({"delivered", "failed"})


def in_stream(event: AgentEvent) -> bool:
    """Whether the stream shows ``event`` (a message only once delivered or failed)."""
    return event.kind != "message" or event.state in STREAM_MESSAGE_STATES


#: the rows a handoff's block takes in: how the run it paused ended (not a completed end)
_ENDING_KINDS = frozenset({"limit_hit", "error", "session_ended", "state_changed"})


def _ending(event: AgentEvent) -> bool:
    return event.kind in _ENDING_KINDS and not (
        event.kind == "session_ended" and event.outcome == "completed")


def _absorbed(node: StreamNode) -> bool:
    """Whether a new handoff's block takes in this top-level row."""
    return not node.children and not node.handoff and _ending(node.event)


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
    #: a handoff's block: its record is the first step, its children the steps and the
    #: ending rows of the run it paused
    handoff: bool = False
    #: the time the row shows (the event's, never before an earlier row's)
    at: datetime | None = None

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
    """Rows ``first`` … ``last`` to remove: the shown subtree of ``closes``, being folded
    (``None``: rows a handoff's block takes in)."""

    first: int
    last: int
    closes: StreamNode | None = None


@dataclass
class Touched:
    """A shown row whose content changed (a fold mark appeared, a handoff moved on)."""

    node: StreamNode


#: what :meth:`StreamTree.add` yields, each against the rows as they are at that point
Change = Insertion | Removal | Touched


class StreamTree:
    """The events of one session's stream and the rows a view shows of them."""

    def __init__(self) -> None:
        self.root = StreamNode(None)
        self.rows: list[StreamNode] = []
        self.nodes: list[StreamNode] = []  # every event's node, in id order
        self.last_id = 0
        self._calls: dict[str, StreamNode] = {}
        self._blocks: dict[str, StreamNode] = {}
        self._open: StreamNode | None = None  # the handoff under way
        self._clock: datetime | None = None

    @property
    def count(self) -> int:
        """How many events the tree holds (shown or folded away)."""
        return len(self.nodes)

    def records(self) -> list[EventRecord]:
        """Every record in the tree, in id order."""
        return [node.record for node in self.nodes if node.record is not None]

    def release(self) -> None:
        """Unlink the nodes (a tree no longer shown): without the parent ↔ children cycles,
        reference counting frees them at once — the cyclic collector never has to walk
        them (see gui/main_thread_gc.py)."""
        for node in (self.root, *self.nodes):
            node.children = []
            node.parent = None
        self.rows, self.nodes = [], []
        self._calls.clear()
        self._blocks.clear()
        self._open = None

    # -- appending ----------------------------------------------------------------------

    def add(self, records: Iterable[EventRecord], session_id: str,
            added: list[StreamNode] | None = None) -> Iterator[Change]:
        """Attach the new records of ``session_id``, yielding the row changes one by one;
        the caller applies each (:meth:`apply`) before asking for the next. New nodes, shown
        or not, are appended to ``added`` in id order."""
        added = [] if added is None else added
        segment: list[StreamNode] = []
        grown: list[StreamNode] = []
        touched: list[StreamNode] = []
        before = self.last_id  # nodes up to this id have their rows placed
        for record in records:
            if record.session_id != session_id or record.id <= self.last_id:
                continue
            self.last_id = record.id
            event = record.event
            if not in_stream(event):
                continue
            if event.kind == "handoff_step" and event.handoff_id not in self._blocks:
                yield from self._place(segment, grown, touched)
                segment, grown, touched = [], [], []
                added.append((yield from self._open_block(record)))
                before = record.id
                continue
            parent = self._parent_for(event)
            if parent.handoff:
                if parent not in touched:
                    touched.append(parent)
            elif (not parent.children and parent.record is not None
                    and parent.record.id <= before and parent.shown()):
                grown.append(parent)
            node = self._attach(record, parent)
            added.append(node)
            if parent is self._open and event.kind == "handoff_step" \
                    and event.state in ("done", "failed"):
                self._open = None
            if node.shown():
                segment.append(node)
        yield from self._place(segment, grown, touched)

    def _attach(self, record: EventRecord, parent: StreamNode) -> StreamNode:
        at = record.event.ts
        if not record.event.replay:  # shown times never go back (see the module doc)
            at = at if self._clock is None or at > self._clock else self._clock
            self._clock = at
        node = StreamNode(record, parent, (*parent.path, record.id), at=at)
        parent.children.append(node)
        self.nodes.append(node)
        if record.event.kind == "tool_call":
            self._calls[record.event.call_id] = node
        return node

    def _place(self, nodes: list[StreamNode], grown: list[StreamNode],
               touched: list[StreamNode]) -> Iterator[Change]:
        """Insert the rows of ``nodes`` (new, shown), in as few contiguous blocks as can be."""
        rows = self.rows
        tail = rows[-1].path if rows else ()
        blocks: dict[int, list[StreamNode]] = {}
        for node in nodes:
            # where it goes among the rows shown before (usually the end)
            at = len(rows) if node.path > tail else bisect_left(rows, node.path, key=_path)
            blocks.setdefault(at, []).append(node)
        shift = 0
        insertions: list[Insertion] = []
        for at in sorted(blocks):
            ordered = sorted(blocks[at], key=_path)  # e.g. a late result before a new row
            insertions.append(Insertion(at + shift, ordered))
            shift += len(ordered)
        yield from insertions
        for node in [*grown, *touched]:
            yield Touched(node)

    def _open_block(self, record: EventRecord) -> Generator[Change, None, StreamNode]:
        """A handoff begins: one block row, folded, that takes in the ending rows of the
        run it pauses (limit, error, end, state) and every step and ending that follows
        until it is done or failed."""
        rows, top = self.rows, self.root.children
        taken: list[StreamNode] = []
        while top and len(taken) < len(top) and _absorbed(top[-1 - len(taken)]):
            taken.append(top[-1 - len(taken)])
        taken.reverse()
        if taken:  # top-level rows with nothing nested: the last rows
            yield Removal(len(rows) - len(taken), len(rows) - 1)
            del top[-len(taken):]
        start = taken[0] if taken else None
        block = StreamNode(record, self.root, (start.path[0] if start else record.id,),
                           expanded=False, handoff=True,
                           at=start.at if start else record.event.ts)
        for node in taken:
            node.parent, node.path = block, (*block.path, *node.path)
            block.children.append(node)
        step = self._attach(record, block)
        if start is None:
            block.at = step.at
        top.append(block)
        event = record.event
        assert event.kind == "handoff_step"
        self._blocks[event.handoff_id] = self._open = block
        yield Insertion(len(rows), [block])
        return step

    def _parent_for(self, event: AgentEvent) -> StreamNode:
        if event.kind == "handoff_step":
            return self._blocks[event.handoff_id]
        if self._open is not None and _ending(event):
            return self._open
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
            if change.closes is not None:
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
