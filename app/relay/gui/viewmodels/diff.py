"""The diff view's models: its rows (one per painted line) and its file list.

:class:`DiffRowsModel` is a flat list model over a
:class:`~relay.gui.diff_rows.DiffLayout`; the view asks it only about the rows
it paints, so a diff of any size costs one layout pass (plain Python objects)
and nothing per row until the row is in sight. The model also holds the view's
display state that the painter needs: the mode and, in side-by-side mode, the
side the current line is on. :class:`DiffFilesModel` lists the files with their
status and +/− counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from relay.gui import theme
from relay.gui.diff_rows import CommentTarget, DiffLayout, DiffRow, Mode, Side, layout
from relay.gui.viewmodels.table import ColumnsModel
from relay.history.diffmodel import FileDiff, totals
from relay.history.model import ReviewComment

Index = QModelIndex | QPersistentModelIndex

#: one-letter status and its colour role (relay.gui.theme) in the file list
STATUS_MARKS: dict[str, tuple[str, str]] = {
    "added": ("A", "OK"), "deleted": ("D", "ERROR"), "modified": ("M", "WARNING"),
    "renamed": ("R", "ACCENT"), "copied": ("C", "ACCENT"), "typechange": ("T", "MUTED"),
}


def row_text(row: DiffRow, mode: Mode) -> str:
    """A row as plain text (what a screen reader or a copy gets)."""
    if row.kind == "comment" and row.comment is not None:
        return f"[{row.comment.state}] {row.comment.body}"
    if row.kind != "line":
        return row.text
    if mode == "split":
        left = f"{_no(row.old, 'old')} {row.old.text if row.old else ''}"
        right = f"{_no(row.new, 'new')} {row.new.text if row.new else ''}"
        return f"{left} │ {right}"
    line = row.new or row.old
    mark = {"add": "+", "del": "-"}.get(line.kind, " ") if line else " "
    return f"{_no(row.old, 'old')} {_no(row.new, 'new')} {mark}{line.text if line else ''}"


def _no(line: Any, side: Side) -> str:
    number = None if line is None else (line.old_no if side == "old" else line.new_no)
    return f"{number:>5}" if number is not None else " " * 5


class DiffRowsModel(QAbstractListModel):
    """The rows of the diff shown, in the current mode.

    Signals:
        sideChanged(): the current side (split mode) changed; the view repaints.
    """

    RowRole = int(Qt.ItemDataRole.UserRole) + 1

    sideChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._layout = DiffLayout("unified", [])
        self._comments: list[ReviewComment] = []
        self._side: Side = "new"

    # -- reading ------------------------------------------------------------------------

    @property
    def layout(self) -> DiffLayout:
        return self._layout

    @property
    def mode(self) -> Mode:
        return self._layout.mode

    @property
    def files(self) -> list[FileDiff]:
        return self._layout.files

    @property
    def side(self) -> Side:
        """The half the current line is on in split mode (``"new"`` in unified mode)."""
        return self._side

    def row(self, row: int) -> DiffRow:
        return self._layout.rows[row]

    def target(self, row: int) -> CommentTarget | None:
        return self._layout.target(row, self._side if self.mode == "split" else None)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._layout.rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._layout.rows):
            return None
        row = self._layout.rows[index.row()]
        if role == self.RowRole:
            return row
        if role == Qt.ItemDataRole.DisplayRole:
            return row_text(row, self.mode)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(index.row(), row)
        return None

    def _tooltip(self, at: int, row: DiffRow) -> str | None:
        if row.kind == "comment" and row.comment is not None:
            c = row.comment
            return f"{c.state} · {c.path}:{c.line} ({c.side})\n{c.body}"
        if row.kind == "line" and row.marks:
            rows, bodies = self._layout.rows, []
            at += 1
            while at < len(rows) and (below := rows[at].comment) is not None:
                bodies.append(f"[{below.state}] {below.body}")
                at += 1
            return "\n".join(bodies)
        return None

    # -- changing -----------------------------------------------------------------------

    def set_files(self, files: Sequence[FileDiff]) -> None:
        self._relayout(list(files), self.mode)

    def set_mode(self, mode: Mode) -> None:
        if mode != self.mode:
            self._relayout(self.files, mode)

    def set_comments(self, comments: Sequence[ReviewComment]) -> None:
        self._comments = list(comments)
        self._relayout(self.files, self.mode)

    def set_side(self, side: Side) -> None:
        if side != self._side:
            self._side = side
            self.sideChanged.emit()

    def _relayout(self, files: list[FileDiff], mode: Mode) -> None:
        self.beginResetModel()
        self._layout = layout(files, mode, self._comments)
        self.endResetModel()


class DiffFilesModel(ColumnsModel):
    """The files of the diff shown: status, path (a rename as old → new), +added, −deleted.

    The path column's header is the totals ("3 files · +12 −4").
    """

    COLUMNS = ("", "File", "+", "−")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._files: list[FileDiff] = []
        self.summary = ""

    def row_total(self) -> int:
        return len(self._files)

    def set_files(self, files: Sequence[FileDiff]) -> None:
        self.beginResetModel()
        self._files = list(files)
        added, deleted = totals(self._files)
        count = len(self._files)
        self.summary = (f"{count} file{'s' if count != 1 else ''} · +{added} −{deleted}"
                        if count else "")
        self.endResetModel()
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 1, 1)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (section == 1 and orientation == Qt.Orientation.Horizontal
                and role == Qt.ItemDataRole.DisplayRole and self.summary):
            return self.summary
        return super().headerData(section, orientation, role)

    def file(self, row: int) -> FileDiff:
        return self._files[row]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._files):
            return None
        f, col = self._files[index.row()], index.column()
        mark, colour = STATUS_MARKS.get(f.status, ("?", "MUTED"))
        if role == Qt.ItemDataRole.DisplayRole:
            binary = " (binary)" if f.binary else ""
            return (mark, f.label + binary, f"+{f.additions}", f"−{f.deletions}")[col]
        if role == Qt.ItemDataRole.ForegroundRole:
            return theme.colour((colour, "TEXT", "OK", "ERROR")[col])
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{f.status}: {f.label}" + (" — binary" if f.binary else "")
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 2, 3):
            return int(Qt.AlignmentFlag.AlignCenter)
        return None
