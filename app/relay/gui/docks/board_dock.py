"""BoardDock: the board — a column per stage (plan, dev, review, test, live, done) of cards.

Top: the project picker (All projects, or one), the count, an error in place. Each card
shows its key, title, next step, its sessions' live state (working, needs input, idle,
quota-blocked, ended — coloured), a needs-input badge, the last report's summary and how
many of its plan's steps are done. Drag a card to another column to set its stage (a refusal
puts it back and says why); double-click or Enter opens its session (the stream, or the
Detect dock for a Claude session Relay did not start); the context menu moves it, writes a
comment to its session, or opens it on the web board. The words of the agents (titles,
reports, plan steps) are painted as plain text, never as markup.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QMenu,
    QPlainTextEdit,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from relay.core.termsafe import terminal_safe
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel
from relay.gui.fit import scrolled
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.board import (
    LIVE_LABELS,
    BoardViewModel,
    StageColumn,
    plan_progress,
    session_state,
    unlinked_text,
)

STAGE_TITLES = {"plan": "Plan", "dev": "Dev", "review": "Review", "test": "Test",
                "live": "Live", "done": "Done"}
EMPTY_TEXT = ("No tasks on the board yet. Agents add theirs with Relay's board tools "
              "(board_task_create); the web board and relay-cli board do too.")
LOADING_TEXT = "Reading the board…"
#: a column's narrowest width: six of them scroll sideways in a narrow window
COLUMN_MIN_WIDTH = 136

#: the needs-input badge, from the widest to what fits a narrow column
BADGE_TEXTS = ("needs input", "input", "!")
PAD = 8
GAP = 3
MAX_SESSIONS = 3


def _elided_lines(fm: QFontMetrics, text: str, width: int, lines: int) -> list[str]:
    """``text`` wrapped at ``width``, at most ``lines`` lines (the last one elided)."""
    out: list[str] = []
    words = terminal_safe(" ".join(text.split())).split(" ")
    line = ""
    for i, word in enumerate(words):
        candidate = f"{line} {word}" if line else word
        if fm.horizontalAdvance(candidate) <= width or not line:
            line = candidate
            continue
        out.append(line)
        line = word
        if len(out) == lines - 1:
            rest = " ".join([line, *words[i + 1:]])
            out.append(fm.elidedText(rest, Qt.TextElideMode.ElideRight, width))
            return out
    if line:
        out.append(fm.elidedText(line, Qt.TextElideMode.ElideRight, width))
    return out


def _card_box(rect: QRect) -> QRect:
    """A card inside its row: a little room around it."""
    return rect.adjusted(2, 2, -2, -4)


def _row_width(option: QStyleOptionViewItem) -> int:
    """A card's width: its column's (the same when its height is measured and when it is
    painted, so a wrapped title always fits)."""
    view = option.widget
    if isinstance(view, QListView):
        return max(COLUMN_MIN_WIDTH - 20, view.viewport().width() - 2 * view.spacing())
    return option.rect.width() if option.rect.width() > 0 else COLUMN_MIN_WIDTH


def _inner(width: int) -> int:
    """The text's width in a row ``width`` wide."""
    return max(40, width - 4 - 2 * PAD)


class CardDelegate(QStyledItemDelegate):
    """Paints a card (no widgets per card: a column of hundreds scrolls smoothly)."""

    def _fonts(self, option: QStyleOptionViewItem) -> tuple[QFont, QFont, QFont]:
        base = QFont(option.font)
        bold = QFont(base)
        bold.setBold(True)
        small = QFont(base)
        small.setPointSizeF(max(7.0, base.pointSizeF() - 1))
        return base, bold, small

    def _rows(self, card: Any, width: int, option: QStyleOptionViewItem
              ) -> list[tuple[str, QFont, str, list[str]]]:
        """(what, font, colour, lines) top to bottom, below the key line."""
        _base, bold, small = self._fonts(option)
        inner = _inner(width)
        task = card.task
        rows = [("title", bold, theme.TEXT, _elided_lines(QFontMetrics(bold), task.title,
                                                          inner, 3))]
        if task.next_step:
            rows.append(("next", small, theme.TEXT, _elided_lines(
                QFontMetrics(small), f"Next: {task.next_step}", inner, 2)))
        for link in card.sessions[:MAX_SESSIONS]:
            state = session_state(link)
            label = LIVE_LABELS.get(state, state.replace("_", " ") or "unknown")
            detail = link.live.detail if link.live is not None and link.live.detail else ""
            text = f"● {label}" + (f" · {detail}" if detail else "")
            colour = theme.LIVE_COLOURS.get(state) or theme.STATE_COLOURS.get(state, theme.MUTED)
            rows.append(("session", small, colour,
                         _elided_lines(QFontMetrics(small), text, inner, 1)))
        if len(card.sessions) > MAX_SESSIONS:
            rows.append(("more", small, theme.MUTED,
                         [f"+{len(card.sessions) - MAX_SESSIONS} more sessions"]))
        if card.last_report is not None and card.last_report.summary:
            rows.append(("report", small, theme.MUTED, _elided_lines(
                QFontMetrics(small), f"“{card.last_report.summary}”", inner, 2)))
        done, total = plan_progress(card.plan)
        if total:
            rows.append(("plan", small, theme.MUTED, [f"{done}/{total} steps"]))
        return rows

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
                 ) -> QSize:
        card = index.data(StageColumn.CardRole)
        width = _row_width(option)
        if card is None:
            return QSize(width, 24)
        _base, _bold, small = self._fonts(option)
        height = PAD + QFontMetrics(small).height() + GAP
        for _what, font, _colour, lines in self._rows(card, width, option):
            height += QFontMetrics(font).lineSpacing() * len(lines) + GAP
        return QSize(width, height + PAD + 4)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        card = index.data(StageColumn.CardRole)
        if card is None:
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        box = _card_box(option.rect)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.setPen(QPen(theme.colour("ACCENT" if selected else "BORDER"),
                            2 if selected else 1))
        painter.setBrush(theme.colour("SELECTED_CARD_BG" if selected else "BASE"))
        painter.drawRoundedRect(box, 6, 6)
        if card.needs_input:  # a stripe down the left edge: seen at a glance
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(theme.WARNING))
            painter.drawRoundedRect(QRect(box.left(), box.top(), 4, box.height()), 2, 2)
        _base, _bold, small = self._fonts(option)
        x, y, inner = box.left() + PAD, box.top() + PAD - 2, _inner(_row_width(option))
        y = self._key_line(painter, card, small, x, y, inner)
        for what, font, colour, lines in self._rows(card, _row_width(option), option):
            painter.setFont(font)
            fm = QFontMetrics(font)
            if what == "plan":
                self._plan_bar(painter, card, x, y, inner, fm)
            else:
                painter.setPen(QColor(colour))
                for line in lines:
                    painter.drawText(QRect(x, y, inner, fm.height()),
                                     Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                                     line)
                    y += fm.lineSpacing()
                y += GAP
                continue
            y += fm.lineSpacing() * len(lines) + GAP
        painter.restore()

    def _key_line(self, painter: QPainter, card: Any, font: QFont, x: int, y: int,
                  width: int) -> int:
        fm = QFontMetrics(font)
        key_font = QFont(font)
        key_font.setBold(True)
        bold = QFontMetrics(key_font)
        text, badge_w = "", 0
        if card.needs_input:  # the words that fit beside the whole key
            room = width - bold.horizontalAdvance(card.task.key) - 6
            text = next((t for t in BADGE_TEXTS if bold.horizontalAdvance(t) + 12 <= room),
                        BADGE_TEXTS[-1])
            badge_w = bold.horizontalAdvance(text) + 12
        key_w = max(0, width - badge_w - (6 if badge_w else 0))
        painter.setFont(key_font)
        painter.setPen(QColor(theme.MUTED))
        painter.drawText(QRect(x, y, key_w, fm.height()), Qt.AlignmentFlag.AlignLeft
                         | Qt.AlignmentFlag.AlignVCenter,
                         bold.elidedText(card.task.key, Qt.TextElideMode.ElideRight, key_w))
        if card.needs_input:
            badge = QRect(x + width - badge_w, y, badge_w, fm.height())
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(theme.colour("WARNING_BG"))
            painter.drawRoundedRect(badge, fm.height() / 2, fm.height() / 2)
            painter.setPen(QColor(theme.WARNING))
            painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, text)
        return y + fm.height() + GAP

    def _plan_bar(self, painter: QPainter, card: Any, x: int, y: int, width: int,
                  fm: QFontMetrics) -> None:
        done, total = plan_progress(card.plan)
        label = f"{done}/{total} steps"
        label_w = fm.horizontalAdvance(label) + 6
        bar = QRect(x, y + fm.height() // 2 - 3, max(10, width - label_w), 6)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(theme.colour("NEUTRAL_BG"))
        painter.drawRoundedRect(bar, 3, 3)
        if done:
            painter.setBrush(QColor(theme.OK))
            painter.drawRoundedRect(QRect(bar.left(), bar.top(), bar.width() * done // total,
                                          bar.height()), 3, 3)
        painter.setPen(QColor(theme.MUTED))
        painter.drawText(QRect(x + width - label_w, y, label_w, fm.height()),
                         Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, label)


class CardList(QListView):
    """One column: cards dragged out and dropped in (the model sets the stage)."""

    def __init__(self, column: StageColumn, delegate: CardDelegate) -> None:
        super().__init__()
        self.setObjectName(f"boardColumn_{column.stage}")
        self.setModel(column)
        self.setItemDelegate(delegate)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)  # card heights follow the width
        self.setSpacing(2)
        self.setMinimumWidth(COLUMN_MIN_WIDTH)
        self.setFrameShape(QFrame.Shape.NoFrame)
        theme.style(self, "QListView { background: $SUBTLE_BG; border-radius: 6px; }")
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)


class CommentDialog(QDialog):
    """A comment to the task's session (delivered without interrupting it).

    Signals:
        commentAccepted(str): the text written.
    """

    commentAccepted = Signal(str)

    def __init__(self, key: str, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("boardCommentDialog")
        self.setWindowTitle(f"Comment on {key}")
        intro = PlainLabel(f"{key}: {title}")
        intro.setWordWrap(True)
        note = QLabel("The session linked to this task reads it with its next prompt or tool "
                      "call, and acknowledges it before it stops.")
        note.setWordWrap(True)
        theme.style(note, "QLabel { color: $MUTED; }")
        self.text = QPlainTextEdit()
        self.text.setObjectName("boardCommentText")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Comment")
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (intro, note, self.text, self.buttons):
            layout.addWidget(widget)
        self.setMinimumWidth(420)

    def _accept(self) -> None:
        body = self.text.toPlainText().strip()
        if body:
            self.commentAccepted.emit(body)
            self.accept()


class BoardDock(QDockWidget):
    """Binds a :class:`BoardViewModel`: the picker over six columns of cards."""

    def __init__(self, vm: BoardViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Board", parent)
        self.setObjectName("boardDock")
        self.vm = vm
        self.dialog: CommentDialog | None = None
        self.delegate = CardDelegate(self)
        self.picker = QComboBox()
        self.picker.setObjectName("boardProject")
        self.picker.setMinimumContentsLength(16)
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.picker.activated.connect(self._pick)
        self.count = QLabel()
        self.count.setObjectName("boardCount")
        theme.style(self.count, "QLabel { color: $MUTED; }")
        self.unlinked = QLabel()
        self.unlinked.setObjectName("boardUnlinked")
        self.unlinked.setWordWrap(True)
        theme.style(self.unlinked, "QLabel { color: $MUTED; }")
        self.unlinked.hide()
        self.error = ErrorBanner("boardError")
        self.empty = QLabel(LOADING_TEXT)
        self.empty.setObjectName("boardEmpty")
        self.empty.setWordWrap(True)
        theme.style(self.empty, "QLabel { color: $MUTED; }")
        self.lists: dict[str, CardList] = {}
        self.heads: dict[str, QLabel] = {}
        self.setWidget(self._content())
        vm.changed.connect(self.refresh)
        vm.unlinkedChanged.connect(self._show_unlinked)
        for column in vm.columns.values():
            for signal in (column.rowsInserted, column.rowsRemoved, column.modelReset,
                           column.dataChanged):
                signal.connect(self._count)
        self.refresh()

    def _content(self) -> QWidget:
        top = QHBoxLayout()
        top.addWidget(QLabel("Project:"))
        top.addWidget(self.picker)
        top.addWidget(self.count, 1)
        lanes = QWidget()
        columns = QHBoxLayout(lanes)
        columns.setContentsMargins(0, 0, 0, 0)
        columns.setSpacing(6)
        for stage, column in self.vm.columns.items():
            view = CardList(column, self.delegate)
            view.activated.connect(lambda index, v=view: self._open(v, index))
            view.customContextMenuRequested.connect(
                lambda pos, v=view: self._on_context_menu(v, pos))
            head = QLabel()
            head.setObjectName(f"boardHead_{stage}")
            head.setStyleSheet("QLabel { font-weight: bold; padding: 2px 4px; }")
            box = QVBoxLayout()
            box.setSpacing(2)
            box.addWidget(head)
            box.addWidget(view, 1)
            columns.addLayout(box, 1)
            self.lists[stage], self.heads[stage] = view, head
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(top)
        layout.addWidget(self.unlinked)
        layout.addWidget(self.error)
        layout.addWidget(self.empty)
        # the columns scroll sideways on a narrow screen; the project picker stays in sight
        layout.addWidget(scrolled(lanes, "boardColumns"), 1)
        return page

    # -- binding --------------------------------------------------------------------------

    def refresh(self) -> None:
        """The picker (All projects + each) and the counts."""
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItem("All projects", None)
        for project in self.vm.projects:
            self.picker.addItem(terminal_safe(project.name or project.slug), project.slug)
        at = self.picker.findData(self.vm.project)
        self.picker.setCurrentIndex(max(0, at))
        self.picker.blockSignals(False)
        self._count()

    def _count(self) -> None:
        total = 0
        for stage, view in self.lists.items():
            n = view.model().rowCount()
            total += n
            self.heads[stage].setText(f"{STAGE_TITLES[stage]}  {n}")
        waiting = sum(1 for stage in self.lists for key in self.vm.keys(stage)
                      if (card := self.vm.card(key)) is not None and card.needs_input)
        self.count.setText(f"{total} task{'s' if total != 1 else ''}"
                           + (f" · {waiting} need{'s' if waiting == 1 else ''} input"
                              if waiting else ""))
        self.empty.setText(EMPTY_TEXT if self.vm.loaded else LOADING_TEXT)
        self.empty.setVisible(total == 0)

    def _show_unlinked(self) -> None:
        """The hooked sessions no task names, in one line under the picker (none: hidden)."""
        text = unlinked_text(self.vm.unlinked)
        self.unlinked.setText(terminal_safe(text))
        self.unlinked.setToolTip(terminal_safe("\n".join(
            f"{s.agent_session_id}  {s.cwd}  {s.detail}".rstrip() for s in self.vm.unlinked)))
        self.unlinked.setVisible(bool(text))

    def _pick(self, at: int) -> None:
        self.error.hide()
        self.vm.set_project(self.picker.itemData(at))

    def show_error(self, message: str, hint: str = "") -> None:
        """Show a Board error (message and hint) in place."""
        self.error.show_error(message, hint)

    # -- intents --------------------------------------------------------------------------

    def _open(self, view: CardList, index: QModelIndex) -> None:
        key = index.data(StageColumn.KeyRole)
        if key and not self.vm.open(key):
            self.show_error(f"{key} has no session linked yet.",
                            "An agent links its session with board_link.")

    def context_menu(self, key: str) -> QMenu:
        """The context menu of ``key``'s card (built, not shown)."""
        menu = QMenu(self)
        menu.setObjectName("boardContextMenu")
        card = self.vm.card(key)
        opened = menu.addAction("Open session")
        opened.setEnabled(bool(card is not None and card.sessions))
        opened.triggered.connect(lambda: self.vm.open(key))
        move = menu.addMenu("Move to")
        for stage, title in STAGE_TITLES.items():
            action = move.addAction(title)
            action.setEnabled(stage != self.vm.stage_of(key))
            action.triggered.connect(lambda _=False, s=stage: self._move(key, s))
        menu.addAction("Comment…").triggered.connect(lambda: self.open_comment_dialog(key))
        menu.addAction("Open on the web board").triggered.connect(lambda: self.vm.open_web(key))
        return menu

    def _move(self, key: str, stage: str) -> None:
        self.error.hide()
        self.vm.set_stage(key, stage)

    def _on_context_menu(self, view: CardList, pos: QPoint) -> None:
        index = view.indexAt(pos)
        key = index.data(StageColumn.KeyRole) if index.isValid() else None
        if key:
            menu = self.context_menu(key)
            menu.aboutToHide.connect(menu.deleteLater)
            menu.popup(view.viewport().mapToGlobal(pos))

    def open_comment_dialog(self, key: str) -> CommentDialog | None:
        card = self.vm.card(key)
        if card is None:
            return None
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.close()
        dialog = CommentDialog(key, card.task.title, self)
        dialog.commentAccepted.connect(lambda body: self.vm.comment(key, body))
        self.dialog = dialog
        dialog.open()
        return dialog
