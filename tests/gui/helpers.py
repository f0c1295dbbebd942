"""Small helpers shared by the GUI tests."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex

from relay.gui.viewmodels.stream import StreamViewModel as Vm


def rows_in_display_order(vm: Vm) -> list[int]:
    """Record ids of every shown row, top to bottom (a call's results follow it)."""
    return [int(vm.index(r, 0).data(Vm.RecordIdRole)) for r in range(vm.rowCount())]


def top_level_rows(vm: Vm) -> list[QModelIndex]:
    """The rows that are not nested under a call."""
    rows = [vm.index(r, 0) for r in range(vm.rowCount())]
    return [i for i in rows if i.data(Vm.DepthRole) == 0]


def top_level_kinds(vm: Vm) -> list[str]:
    return [str(i.data(Vm.KindRole)) for i in top_level_rows(vm)]


def children_of(vm: Vm, row: int) -> list[QModelIndex]:
    """The shown rows nested right under ``row`` (one level deeper)."""
    depth = int(vm.index(row, 0).data(Vm.DepthRole))
    found: list[QModelIndex] = []
    for r in range(row + 1, vm.rowCount()):
        index = vm.index(r, 0)
        below = int(index.data(Vm.DepthRole))
        if below <= depth:
            break
        if below == depth + 1:
            found.append(index)
    return found
