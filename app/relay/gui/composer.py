"""The composer under the live stream: what the user says to the shown session's agent.

:class:`ComposerPanel` shows a :class:`~relay.gui.viewmodels.composer.ComposerViewModel`:
the session's queued messages (each with Edit and Cancel, live from any client), the
attachment chips, the text box (:class:`ComposerEdit`: multi-line, Ctrl+Enter sends, ↑ in
an empty box or on its top line walks the texts sent to this session, a pasted or dropped
file path becomes an attachment) and one button per way to send — Send (queued while a turn
runs, else a follow-up), Steer now (only where the runtime takes input mid-turn; else its
tooltip says why) and Interrupt & send — then the status line and errors, in place.
:class:`TextDialog` asks for a text (a queued message's new wording, a fork's prompt).
The widgets only show and forward: the view-model acts.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from relay.core.events import MessageMode
from relay.core.present import clip
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, show_now
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.composer import ComposerViewModel, Offer, Queued, attachment_paths

PANEL_CSS = ("QFrame#composer { background: $SUBTLE_BG; border: 1px solid $BORDER;"
             " border-radius: 6px; }")
ROW_CSS = ("QFrame#queuedRow { background: $WARNING_BG; border: 1px solid $WARNING_BORDER;"
           " border-radius: 4px; }")
CHIP_CSS = ("QToolButton { background: $ACCENT_BG; color: $TEXT; border: 1px solid"
            " $ACCENT_BORDER; border-radius: 9px; padding: 1px 8px; }")
_SEND_KEYS = frozenset({Qt.Key.Key_Return, Qt.Key.Key_Enter})


class ComposerEdit(QPlainTextEdit):
    """The text box. Signals: submitted() (Ctrl+Enter), attached(list) (file paths pasted or
    dropped instead of text)."""

    submitted = Signal()
    attached = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composerText")
        self.setTabChangesFocus(True)
        self.setPlaceholderText("Message the agent — Ctrl+Enter sends, ↑ recalls, "
                                "paste or drop a file to attach it")
        #: the texts ↑ walks (the view-model's, for the shown session)
        self.past: list[str] = []
        self._walk: int | None = None
        self._draft = ""
        self._recalling = False
        self.textChanged.connect(self._on_edited)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key, mods = event.key(), event.modifiers()
        if key in _SEND_KEYS and mods & Qt.KeyboardModifier.ControlModifier:
            self.submitted.emit()
            event.accept()
            return
        if key == Qt.Key.Key_Up and not mods and self._on_top_line() and self.recall(-1):
            event.accept()
            return
        if key == Qt.Key.Key_Down and not mods and self._walk is not None \
                and self._on_last_line() and self.recall(+1):
            event.accept()
            return
        super().keyPressEvent(event)

    def _on_top_line(self) -> bool:
        return not self.toPlainText() or self.textCursor().blockNumber() == 0

    def _on_last_line(self) -> bool:
        return self.textCursor().blockNumber() == self.blockCount() - 1

    def recall(self, step: int) -> bool:
        """Walk the sent texts (−1 older, +1 newer; past the newest, the draft comes back)."""
        if not self.past:
            return False
        if self._walk is None:
            if step > 0:
                return False
            self._draft, self._walk = self.toPlainText(), len(self.past)
        at = max(0, self._walk + step)
        if at >= len(self.past):
            self._walk, text = None, self._draft
        else:
            self._walk, text = at, self.past[at]
        self._recalling = True
        try:
            self.setPlainText(text)
        finally:
            self._recalling = False
        self.moveCursor(QTextCursor.MoveOperation.End)
        return True

    def _on_edited(self) -> None:
        if not self._recalling:
            self._walk = None  # typing makes the recalled text a new draft

    def reset(self) -> None:
        self._walk, self._draft = None, ""
        self.clear()

    # a pasted or dropped file or image path is an attachment, not text
    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        paths = [u.toLocalFile() for u in source.urls() if u.isLocalFile()] \
            if source.hasUrls() else []
        paths = [p for p in paths if Path(p).is_file()]
        if not paths and source.hasText():
            paths = attachment_paths(source.text())
        if paths:
            self.attached.emit(paths)
            return
        super().insertFromMimeData(source)


class QueuedRow(QFrame):
    """One queued message: what it says, where from, Edit and Cancel."""

    def __init__(self, message: Queued, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queuedRow")
        theme.style(self, ROW_CSS)
        self.message_id = message.id
        what = {"review": "review comment", "board": "board comment"}.get(message.kind, "")
        origin = f" from {message.source}" if message.source not in ("window", "") else ""
        state = "sending…" if message.state == "sending" else "queued"
        self.label = PlainLabel(f"{state}{' · ' + what if what else ''}{origin}: "
                                f"{clip(' '.join(message.text.split()), 200)}")
        self.label.setObjectName("queuedText")
        self.label.setToolTip(message.text[:2000])
        self.label.setWordWrap(True)
        self.edit_button = QPushButton("Edit")
        self.edit_button.setObjectName("queuedEdit")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("queuedCancel")
        for button in (self.edit_button, self.cancel_button):
            button.setEnabled(message.editable)
            button.setToolTip("" if message.editable else "It is being delivered now")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 4, 2)
        row.addWidget(self.label, 1)
        row.addWidget(self.edit_button)
        row.addWidget(self.cancel_button)


class ComposerPanel(QFrame):
    """Binds a :class:`ComposerViewModel`; see the module documentation."""

    def __init__(self, vm: ComposerViewModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        theme.style(self, PANEL_CSS)
        self.vm = vm
        self.rows: list[QueuedRow] = []
        self.edit_dialog: TextDialog | None = None
        self.fork_dialog: TextDialog | None = None
        self.queue_box = QVBoxLayout()
        self.queue_box.setSpacing(3)
        self.chips = QHBoxLayout()
        self.chips.setSpacing(4)
        self.chip_buttons: list[QToolButton] = []
        self._chip_label = QLabel("Attached:")
        theme.style(self._chip_label, "color: $MUTED;")
        self._chip_label.hide()
        self.chips.addWidget(self._chip_label)
        self.chips.addStretch(1)
        self.text = ComposerEdit()
        self.text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.text.setFixedHeight(self.fontMetrics().lineSpacing() * 3 + 14)
        self.send_button = self._mode_button("Send", "composerSend", "queue")
        self.send_button.setDefault(True)
        self.steer_button = self._mode_button("Steer now", "composerSteer", "now")
        self.interrupt_button = self._mode_button("Interrupt && send", "composerInterrupt",
                                                  "interrupt")
        self.status = PlainLabel()
        self.status.setObjectName("composerStatus")
        theme.style(self.status, "color: $MUTED;")
        self.status.setWordWrap(True)
        self.error = ErrorBanner("composerError")
        self._build()
        self.text.submitted.connect(lambda: self.send("queue"))
        self.text.attached.connect(vm.add_attachments)
        vm.changed.connect(self.refresh)
        vm.queueChanged.connect(self.refresh_queue)
        vm.sent.connect(self._on_sent)
        self.refresh()
        self.refresh_queue()

    def _mode_button(self, text: str, name: str, mode: MessageMode) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.clicked.connect(lambda: self.send(mode))
        return button

    def _build(self) -> None:
        buttons = QVBoxLayout()
        buttons.setSpacing(3)
        for button in (self.send_button, self.steer_button, self.interrupt_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        entry = QHBoxLayout()
        entry.addWidget(self.text, 1)
        entry.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addLayout(self.queue_box)
        layout.addLayout(self.chips)
        layout.addLayout(entry)
        layout.addWidget(self.status)
        layout.addWidget(self.error)

    # -- showing ------------------------------------------------------------------------

    def refresh(self) -> None:
        vm = self.vm
        self.setEnabled(vm.session_id is not None)
        for button, offer in ((self.send_button, vm.send_offer()),
                              (self.steer_button, vm.steer_offer()),
                              (self.interrupt_button, vm.interrupt_offer())):
            _offer(button, offer)
        self.status.setText(vm.status)
        self.status.setVisible(bool(vm.status))
        self.text.past = vm.history()
        self._refresh_chips()

    def _refresh_chips(self) -> None:
        if [c.property("path") for c in self.chip_buttons] == self.vm.attachments:
            return
        for chip in self.chip_buttons:
            self.chips.removeWidget(chip)
            chip.deleteLater()
        self.chip_buttons = []
        self._chip_label.setVisible(bool(self.vm.attachments))
        for path in self.vm.attachments:
            chip = QToolButton()
            chip.setObjectName("attachmentChip")
            chip.setProperty("path", path)
            theme.style(chip, CHIP_CSS)
            chip.setText(f"{Path(path).name}  ✕")
            chip.setToolTip(f"{path}\n(the agent reads it; click to remove)")
            chip.clicked.connect(lambda _=False, p=path: self.vm.remove_attachment(p))
            self.chips.insertWidget(self.chips.count() - 1, chip)  # before the stretch
            show_now(chip)
            self.chip_buttons.append(chip)

    def refresh_queue(self) -> None:
        for row in self.rows:
            self.queue_box.removeWidget(row)
            row.deleteLater()
        self.rows = []
        for message in self.vm.queued.values():
            row = QueuedRow(message)
            row.edit_button.clicked.connect(lambda _=False, m=message: self.open_edit(m))
            row.cancel_button.clicked.connect(lambda _=False, mid=message.id: self.vm.cancel(mid))
            self.queue_box.addWidget(row)
            show_now(row)
            self.rows.append(row)

    def row_of(self, message_id: str) -> QueuedRow | None:
        return next((r for r in self.rows if r.message_id == message_id), None)

    def show_error(self, message: str, hint: str = "") -> None:
        """Show an error about sending in place (the text stays in the box)."""
        self.error.show_error(message, hint)

    # -- forwarding ---------------------------------------------------------------------

    def send(self, mode: MessageMode) -> None:
        self.error.hide()
        self.vm.send(self.text.toPlainText(), mode)

    def _on_sent(self) -> None:
        self.error.hide()
        self.text.reset()
        self.text.past = self.vm.history()

    def open_edit(self, message: Queued) -> TextDialog:
        if self.edit_dialog is not None:
            self.edit_dialog.close()
        dialog = TextDialog("Edit the queued message", "It goes to the agent when its turn "
                            "ends; until then you can change it.", "Save", message.text, self)
        dialog.setObjectName("editQueuedDialog")
        dialog.textAccepted.connect(lambda text: self.vm.edit(message.id, text))
        self.edit_dialog = dialog
        dialog.open()
        return dialog

    def ask_fork(self, session_id: str, at_event: int | None = None,
                 at_commit: str | None = None, context: str = "composer") -> TextDialog:
        """Ask for the fork's optional new prompt, then fork (a stream row's event, or a
        History commit)."""
        if self.fork_dialog is not None:
            self.fork_dialog.close()
        where = f"this point of the stream (event {at_event})" if at_event is not None \
            else f"commit {at_commit[:10]}" if at_commit else "its latest snapshot"
        dialog = TextDialog(
            "Fork session", f"A new session in a new worktree at {where}, carrying the "
            "conversation up to there where the runtime can (else Relay's signed brief). "
            "This session stays as it is.", "Fork", "", self.window(), optional=True,
            placeholder="A new prompt for the fork (optional: empty keeps the task)")
        dialog.setObjectName("forkDialog")
        dialog.textAccepted.connect(lambda prompt: self.vm.fork(
            session_id, at_event=at_event, at_commit=at_commit, prompt=prompt or None,
            context=context))
        self.fork_dialog = dialog
        dialog.open()
        return dialog


def _offer(button: QPushButton, offer: Offer) -> None:
    button.setEnabled(offer.enabled)
    button.setToolTip(offer.tip)


class TextDialog(QDialog):
    """Asks for a text (non-modal). Signals: textAccepted(str) — OK with the text (empty when
    ``optional`` and nothing was written)."""

    textAccepted = Signal(str)

    def __init__(self, title: str, explanation: str, ok: str, text: str = "",
                 parent: QWidget | None = None, *, optional: bool = False,
                 placeholder: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.optional = optional
        about = QLabel(explanation)
        about.setWordWrap(True)
        self.body = QPlainTextEdit()
        self.body.setObjectName("dialogText")
        self.body.setPlainText(text)
        self.body.setPlaceholderText(placeholder)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok = buttons.addButton(ok, QDialogButtonBox.ButtonRole.AcceptRole)
        self.body.textChanged.connect(self._check)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        for widget in (about, self.body, buttons):
            box.addWidget(widget)
        self._check()
        self.resize(480, 240)

    def _check(self) -> None:
        self.ok.setEnabled(self.optional or bool(self.body.toPlainText().strip()))

    def _accept(self) -> None:
        text = self.body.toPlainText().strip()
        if text or self.optional:
            self.textAccepted.emit(text)
            self.accept()
