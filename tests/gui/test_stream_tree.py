"""StreamTree's rows (plain Python): display order, late children, folding."""

from __future__ import annotations

from relay.core.events import AgentEvent, AssistantText, EventRecord, Notice, ToolCall, ToolResult
from relay.gui.viewmodels.stream_tree import Insertion, Removal, StreamTree, Touched


def _records(first_id: int, *events: AgentEvent) -> list[EventRecord]:
    return [EventRecord(id=first_id + i, session_id="s", run_id=None, event=e)
            for i, e in enumerate(events)]


def _add(tree: StreamTree, records: list[EventRecord]) -> list[Insertion]:
    """Apply the changes of a batch as the view-model does; the insertions."""
    insertions: list[Insertion] = []
    for change in tree.add(records, "s"):
        if not isinstance(change, Touched):
            tree.apply(change)
        if isinstance(change, Insertion):
            insertions.append(change)
    return insertions


def _ids(tree: StreamTree) -> list[int]:
    return [n.record.id for n in tree.rows if n.record is not None]


def test_a_late_result_is_placed_before_newer_rows_of_the_same_batch() -> None:
    tree = StreamTree()
    _add(tree, _records(1, Notice(message="a"), ToolCall(call_id="c", name="ls")))
    # one batch: a new top-level row first, then the result of the call shown last
    insertions = _add(tree, _records(3, Notice(message="b"),
                                     ToolResult(call_id="c", output="ok")))
    assert _ids(tree) == [1, 2, 4, 3]
    assert [(i.first, i.last) for i in insertions] == [(2, 3)]
    # a result for a call further up goes after that call's other children
    insertions = _add(tree, _records(5, AssistantText(text="sub", parent_call_id="c")))
    assert _ids(tree) == [1, 2, 4, 5, 3]
    assert [(i.first, i.last) for i in insertions] == [(3, 3)]
    assert [n.depth for n in tree.rows] == [0, 0, 1, 1, 0]
    assert tree.count == 5
    assert [r.id for r in tree.records()] == [1, 2, 3, 4, 5]


def test_duplicates_and_other_sessions_are_dropped() -> None:
    tree = StreamTree()
    first = _records(1, Notice(message="a"), Notice(message="b"))
    _add(tree, first)
    other = EventRecord(id=9, session_id="other", run_id=None, event=Notice(message="x"))
    assert _add(tree, [*first, other]) == []
    assert tree.count == 2


def test_folding_keeps_the_state_of_nested_calls() -> None:
    tree = StreamTree()
    _add(tree, _records(1, ToolCall(call_id="outer", name="task"),
                        ToolCall(call_id="inner", name="ls", parent_call_id="outer"),
                        ToolResult(call_id="inner", output="x"),
                        ToolResult(call_id="outer", output="done"),
                        Notice(message="after")))
    assert _ids(tree) == [1, 2, 3, 4, 5]
    inner = tree.fold(1)
    assert isinstance(inner, Removal)
    assert (inner.first, inner.last) == (2, 2)
    tree.apply(inner)
    outer = tree.fold(0)
    assert outer is not None
    assert (outer.first, outer.last) == (1, 2)
    tree.apply(outer)
    assert _ids(tree) == [1, 5]
    assert tree.fold(0) is None  # folded already
    assert tree.unfold(1) is None  # nothing nested
    # a late child of a folded call is kept but gets no row
    assert _add(tree, _records(6, AssistantText(text="late", parent_call_id="outer"))) == []
    opening = tree.unfold(0)
    assert opening is not None
    tree.apply(opening)
    assert _ids(tree) == [1, 2, 4, 6, 5]  # the inner call stays folded
    assert tree.row_of(tree.nodes[2]) is None
    assert tree.row_of(tree.nodes[5]) == 3
