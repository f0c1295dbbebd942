"""HandoffDock: the shown session's handoffs, "Hand off now", and the contract view.

Top: the "Hand off now" button with an optional target (``provider[:account]``;
empty means the next entry of the chain), the engine's answer and, in place,
a refusal (message and hint). Below, a table with one row per handoff and one
column per state — the time each was reached, the current state highlighted, a
failure in red where it happened — and the selected handoff's details (why,
where the agent was paused, every step). Last, its continuation contract
rendered from markdown under its signature status.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QPainter, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.gui.docks.parts import detail_view, empty_or_content, row_table
from relay.gui.handoff_text import parse_target
from relay.gui.messages import ErrorBanner, Messages
from relay.gui.viewmodels.contract import ContractViewModel
from relay.gui.viewmodels.handoffs import CONTEXT, HandoffsViewModel

EMPTY_TEXT = "Select a session to see its handoffs."
NO_HANDOFF_TEXT = ("No handoff in this session yet. “Hand off now” pauses the agent at a safe "
                   "point and hands the task to the next provider of its chain (or the one "
                   "you name).")
TARGET_PLACEHOLDER = "next in the chain — or provider[:account], e.g. codex:work"
#: the timeline grows with its rows up to this many, then scrolls
_VISIBLE_ROWS = 4
_ROW_HEIGHT = 26


class _StepCellDelegate(QStyledItemDelegate):
    """Step cells keep their colours (current, failed) in a selected row; the title shows it."""

    def initStyleOption(self, option: QStyleOptionViewItem,
                        index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        if index.column() > 0:
            option.state &= ~QStyle.StateFlag.State_Selected

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        if index.column() > 0:  # cover the row's selection the view has already painted
            painter.fillRect(option.rect, option.palette.base())
        super().paint(painter, option, index)


class HandoffDock(QDockWidget):
    """Binds a :class:`HandoffsViewModel` and a :class:`ContractViewModel`.

    Signals:
        handoffRequested(str): "Hand off now" with a valid target ("" = next in the chain).
    """

    handoffRequested = Signal(str)

    def __init__(self, vm: HandoffsViewModel, contract: ContractViewModel,
                 messages: Messages, parent: QWidget | None = None) -> None:
        super().__init__("Handoff", parent)
        self.setObjectName("handoffDock")
        self.vm = vm
        self.contract = contract
        self.messages = messages
        self._selected: str | None = None
        self._build_controls()
        self.table = self._make_table()
        self.table.horizontalScrollBar().rangeChanged.connect(lambda *_: self._fit_table())
        self.none_label = _muted_label(NO_HANDOFF_TEXT, "handoffNone")
        self.detail = detail_view("handoffDetail", "Select a handoff to read its steps.")
        self._build_contract_view()
        self.pages, self.empty = empty_or_content(EMPTY_TEXT, "handoffEmpty", self._content())
        self.setWidget(self.pages)
        vm.changed.connect(self.refresh)
        vm.modelReset.connect(self._on_reset)
        vm.rowsInserted.connect(self._on_rows_inserted)
        vm.handoffChanged.connect(self._on_handoff_changed)
        contract.changed.connect(self._show_contract)
        self.refresh()
        self._show_contract()

    # -- building -----------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.hand_off_button = QPushButton("Hand off now")
        self.hand_off_button.setObjectName("handOffNowButton")
        self.hand_off_button.setToolTip(
            "Pause the agent at its next safe point (the end of a tool call or turn) and "
            "hand the task on with a signed continuation contract")
        self.hand_off_button.clicked.connect(self.request)
        self.target = QLineEdit()
        self.target.setObjectName("handoffTarget")
        self.target.setPlaceholderText(TARGET_PLACEHOLDER)
        self.target.setClearButtonEnabled(True)
        self.target.returnPressed.connect(self.request)
        self.answer = QLabel()
        self.answer.setObjectName("handoffAnswer")
        theme.style(self.answer, "$INFO_LABEL_CSS")
        self.answer.setWordWrap(True)
        self.answer.hide()
        self.error = ErrorBanner("handoffError")

    def _make_table(self) -> QTableView:
        # the last column takes the room left: on a narrow dock the step times scroll
        # sideways and who handed to whom (the first column) stays readable
        table = row_table("handoffTable", self.vm, stretch=self.vm.columnCount() - 1,
                          row_height=_ROW_HEIGHT)
        table.setItemDelegate(_StepCellDelegate(table))
        table.selectionModel().selectionChanged.connect(self._on_selection)
        return table

    def _build_contract_view(self) -> None:
        self.signature = QLabel()
        self.signature.setObjectName("contractSignature")
        self.signature.setWordWrap(True)
        self.signature.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.check_again = QPushButton("Check again")
        self.check_again.setObjectName("contractCheckAgain")
        self.check_again.setToolTip("Read and verify envelope.json again")
        self.check_again.clicked.connect(self.contract.reload)
        self.browser = QTextBrowser()
        self.browser.setObjectName("contractBrowser")
        self.browser.setOpenExternalLinks(False)
        self.browser.setPlaceholderText("The continuation contract appears here.")

    def _content(self) -> QWidget:
        controls = QHBoxLayout()
        controls.addWidget(self.hand_off_button)
        controls.addWidget(self.target, 1)
        timeline = QWidget()
        tl = QVBoxLayout(timeline)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.table)
        tl.addWidget(self.detail, 1)
        contract = QWidget()
        cl = QVBoxLayout(contract)
        cl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        title = QLabel("Continuation contract")
        title.setStyleSheet("font-weight: bold;")
        head.addWidget(title, 1)
        head.addWidget(self.check_again)
        cl.addLayout(head)
        cl.addWidget(self.signature)  # its own line: a long status wraps across the width
        cl.addWidget(self.browser, 1)
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("handoffSplitter")
        splitter.addWidget(timeline)
        splitter.addWidget(contract)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(controls)
        layout.addWidget(self.answer)
        layout.addWidget(self.error)
        layout.addWidget(self.none_label)
        layout.addWidget(splitter, 1)
        layout.addStretch(0)
        return page

    # -- intents ------------------------------------------------------------------------

    def request(self) -> None:
        """"Hand off now" for the shown session, to the typed target or the next entry."""
        if not self.vm.can_hand_off:
            return
        try:
            target = parse_target(self.target.text())
        except ValueError as exc:
            self.messages.error(CONTEXT, str(exc),
                                "Leave the field empty to hand off to the next entry.")
            return
        self.error.hide()
        self.handoffRequested.emit(target or "")

    def focus_target(self) -> None:
        """Bring the panel forward with the target field ready to type in."""
        self.show()
        self.raise_()
        self.target.setFocus()
        self.target.selectAll()

    def show_error(self, message: str, hint: str = "") -> None:
        """Show a refusal or error about this panel's session in place."""
        self.error.show_error(message, hint)

    # -- binding ------------------------------------------------------------------------

    def refresh(self) -> None:
        vm = self.vm
        self.pages.setCurrentIndex(0 if vm.session_id is None else 1)
        self.hand_off_button.setEnabled(vm.can_hand_off)
        self.target.setEnabled(vm.can_hand_off)
        self.answer.setText(f"Hand off now: {vm.answer}")
        self.answer.setVisible(bool(vm.answer))
        if vm.answer:
            self.error.hide()
        has_rows = vm.rowCount() > 0
        self.none_label.setVisible(not has_rows)
        self.splitter.setVisible(has_rows)
        self._fit_table()

    def _fit_table(self) -> None:
        """The table as tall as its rows (a few at most), and its sideways scroll bar when a
        narrow dock has one: it never covers the last row."""
        rows = min(max(self.vm.rowCount(), 1), _VISIBLE_ROWS)
        frame = 2 * self.table.frameWidth()
        bar = self.table.horizontalScrollBar()
        sideways = bar.sizeHint().height() if bar.maximum() > 0 else 0
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + rows * _ROW_HEIGHT + frame + sideways)

    def selected_handoff(self) -> str | None:
        return self._selected

    def select_handoff(self, handoff_id: str) -> None:
        row = self.vm.row_of(handoff_id)
        if row is not None:
            self.table.selectRow(row)

    def _on_reset(self) -> None:
        self._selected = None
        self.error.hide()
        self.detail.clear()
        self.contract.show(None)
        self.refresh()

    def _on_rows_inserted(self, _parent: QModelIndex, _first: int, last: int) -> None:
        self.refresh()
        following = self._selected is None or self.vm.row_of(self._selected) == _first - 1
        if following:  # show the newest handoff unless the user picked an older one
            self.table.selectRow(last)

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = {i.row() for i in selected.indexes()}
        if len(rows) == 1:
            self._selected = self.vm.line(rows.pop()).id
            self._show_handoff()

    def _on_handoff_changed(self, handoff_id: str) -> None:
        if handoff_id == self._selected:
            self._show_handoff()

    def _show_handoff(self) -> None:
        row = self.vm.row_of(self._selected) if self._selected else None
        if row is None:
            return
        line = self.vm.line(row)
        self.detail.setPlainText(line.describe())
        self.contract.show(line.contract_dir)

    def _show_contract(self) -> None:
        c = self.contract
        self.signature.setText(c.message)
        self.signature.setToolTip(c.hint)
        known = c.status in theme.SIGNATURE_CSS
        theme.style(self.signature, f"$SIGNATURE_CSS.{c.status}" if known else "color: $MUTED;")
        self.check_again.setEnabled(c.folder is not None and not c.loading)
        if c.markdown:
            # No HTML: a contract quotes the task and the agent's words, which must show
            # as text, never as markup the panel would render (or fetch).
            self.browser.document().setMarkdown(c.markdown, CONTRACT_MARKDOWN)
            _compact_headings(self.browser.document())
        else:
            self.browser.clear()


CONTRACT_MARKDOWN = (QTextDocument.MarkdownFeature.MarkdownDialectGitHub
                     | QTextDocument.MarkdownFeature.MarkdownNoHTML)


def _compact_headings(doc: QTextDocument) -> None:
    """Headings two sizes smaller than Qt's markdown defaults: the panel is small."""
    block = doc.begin()
    while block.isValid():
        level = block.blockFormat().headingLevel()
        if level:
            cursor = QTextCursor(block)
            cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock,
                                QTextCursor.MoveMode.KeepAnchor)
            fmt = QTextCharFormat()
            fmt.setProperty(QTextFormat.Property.FontSizeAdjustment, max(1 - level, 0))
            cursor.mergeCharFormat(fmt)
        block = block.next()


def _muted_label(text: str, name: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName(name)
    label.setWordWrap(True)
    theme.style(label, "color: $MUTED; padding: 8px;")
    return label
