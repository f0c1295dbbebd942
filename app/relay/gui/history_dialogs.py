"""The History dock's two dialogs (non-modal; they only ask, the view-model acts).

:class:`CommentDialog` asks for a review comment on one line of the diff (on a finished
session it says that sending starts a new agent run, billed like any, and offers to queue
the comment for the session's next run instead);
:class:`FinishDialog` shows what a finished session changed and offers to merge
its branch into the base branch (refused with the reason when it cannot be) or
to keep the branch.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from relay.core.termsafe import terminal_safe
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, row_table
from relay.gui.history_text import summary_text
from relay.history.model import FinishSummary


class CommentDialog(QDialog):
    """Asks for a comment on ``path:line``; ``finished_on``: the session has finished and a
    comment sent now starts a new run there (its chain entry, e.g. ``claude:work``).

    Signals:
        commentAccepted(path, line, side, body, hold): ``hold`` — keep it for the next run.
    """

    commentAccepted = Signal(str, int, str, str, bool)

    def __init__(self, path: str, line: int, side: str, text: str,
                 parent: QWidget | None = None, *, finished_on: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("commentDialog")
        self.setWindowTitle("Review comment")
        self.path, self.line, self.side = path, line, side
        where = QLabel(f"<b>{html.escape(terminal_safe(path))}</b> line {line}"
                       + (" (the old version)" if side == "old" else ""))
        excerpt = PlainLabel(text.strip() or "(an empty line)")
        excerpt.setObjectName("commentExcerpt")
        excerpt.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        theme.style(excerpt, "color: $MUTED;")
        excerpt.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body = QPlainTextEdit()
        self.body.setObjectName("commentBody")
        self.body.setPlaceholderText("What should the agent change here? It gets this as its "
                                     "next instruction (after its current turn, if it is busy).")
        self.cost = PlainLabel()
        self.cost.setObjectName("commentCost")
        self.cost.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.queue: QPushButton | None = None
        if finished_on is None:
            self.send = buttons.addButton("Send to the agent",
                                          QDialogButtonBox.ButtonRole.AcceptRole)
        else:
            self.body.setPlaceholderText("What should the agent change here?")
            self.cost.setText(
                f"This session has finished. Sending the comment starts a new run of "
                f"{finished_on} on the session's branch — a billable agent run, like any "
                "other. Or queue it: it waits in the session's inbox and goes with its next "
                "run (the next message you send it).")
            self.send = buttons.addButton("Start a new run",
                                          QDialogButtonBox.ButtonRole.AcceptRole)
            self.send.setToolTip(f"Send it now: {finished_on} runs again and is billed")
            self.queue = buttons.addButton("Queue for the next run",
                                           QDialogButtonBox.ButtonRole.ActionRole)
            self.queue.setObjectName("commentQueue")
            self.queue.setToolTip("Nothing runs now; the comment goes with the session's "
                                  "next run")
            self.queue.clicked.connect(lambda: self._accept(hold=True))
        self.send.setObjectName("commentSend")
        self.cost.setVisible(finished_on is not None)
        theme.style(self.cost, "$NOTE_CSS.warning")
        for button in (self.send, self.queue):
            if button is not None:
                button.setEnabled(False)
                self.body.textChanged.connect(
                    lambda b=button: b.setEnabled(bool(self.body.toPlainText().strip())))
        self.send.clicked.connect(lambda: self._accept(hold=False))
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        for widget in (where, excerpt, self.cost, self.body, buttons):
            box.addWidget(widget)
        self.resize(560, 300 if finished_on else 260)

    def _accept(self, hold: bool) -> None:
        body = self.body.toPlainText().strip()
        if body:
            self.commentAccepted.emit(self.path, self.line, self.side, body, hold)
            self.accept()


class FinishDialog(QDialog):
    """What a session changed, with "Merge into <base>" and "Keep the branch".

    Signals:
        actionChosen(str): ``"merge"`` or ``"keep"``.
    """

    actionChosen = Signal(str)

    def __init__(self, summary: FinishSummary, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("finishDialog")
        self.setWindowTitle(f"Finish session {summary.session_id}")
        self.summary = summary
        intro = PlainLabel(summary_text(summary))
        intro.setObjectName("finishSummary")
        intro.setWordWrap(True)
        intro.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.files = QStandardItemModel(0, 4, self)
        self.files.setHorizontalHeaderLabels(["File", "Status", "+", "−"])
        for path, status, added, deleted in summary.files:
            row = [QStandardItem(path), QStandardItem(status), QStandardItem(f"+{added}"),
                   QStandardItem(f"−{deleted}")]
            for item in row:
                item.setEditable(False)
            self.files.appendRow(row)
        table = row_table("finishFiles", self.files, stretch=0, row_height=22)
        base = summary.base_branch or "the base branch"
        self.merge = QPushButton(f"Merge into {base}")
        self.merge.setObjectName("finishMerge")
        self.merge.setEnabled(summary.can_merge)
        self.why_not = QLabel()
        self.why_not.setObjectName("finishWhyNot")
        self.why_not.setWordWrap(True)
        theme.style(self.why_not, "$NOTE_CSS.warning")
        if not summary.can_merge:
            reason = summary.why_not or "the branch cannot be merged"
            self.merge.setToolTip(f"Cannot merge: {reason}")
            self.why_not.setText(f"Cannot merge into {base}: {reason}")
        self.why_not.setVisible(not summary.can_merge)
        self.keep = QPushButton("Keep the branch")
        self.keep.setObjectName("finishKeep")
        self.keep.setToolTip(f"Leave {summary.branch} as it is, to merge with git later")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        buttons.addButton(self.merge, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(self.keep, QDialogButtonBox.ButtonRole.AcceptRole)
        self.merge.clicked.connect(lambda: self._choose("merge"))
        self.keep.clicked.connect(lambda: self._choose("keep"))
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        for widget in (intro, table, self.why_not, buttons):
            box.addWidget(widget)
        self.resize(620, 420)

    def _choose(self, action: str) -> None:
        self.actionChosen.emit(action)
        self.accept()
