"""Small helpers shared by the GUI tests."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex

from relay.gui.viewmodels.stream import StreamViewModel


def rows_in_display_order(vm: StreamViewModel, parent: QModelIndex | None = None) -> list[int]:
    """Record ids of every row, depth first, as a tree view lists them."""
    parent = parent or QModelIndex()
    ids: list[int] = []
    for row in range(vm.rowCount(parent)):
        index = vm.index(row, 0, parent)
        ids.append(int(index.data(StreamViewModel.RecordIdRole)))
        ids.extend(rows_in_display_order(vm, index))
    return ids


def top_level_kinds(vm: StreamViewModel) -> list[str]:
    return [str(vm.index(r, 0).data(StreamViewModel.KindRole)) for r in range(vm.rowCount())]
