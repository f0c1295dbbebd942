"""QuestionPanel: the question the shown session's agent asks, with a button per option.

Shown only while a question is open (the session's state is ``needs_input``): what is
asked, about which tool, and the options — allows in the accent colour, rejects in the
error colour, in the order the runtime gave them — or a text field for a question without
options. A click sends the answer (buttons wait until it is confirmed); the panel goes
away when the question is answered or withdrawn anywhere.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from relay.core.events import InputOption
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, show_now
from relay.gui.viewmodels.questions import QuestionsViewModel

PANEL_CSS = ("QFrame#questionPanel { background: $WARNING_BG; border: 1px solid $WARNING;"
             " border-radius: 6px; }")
#: a button's colour role per kind of answer
_TONE = {"allow_once": "ACCENT", "allow_always": "ACCENT",
         "reject_once": "ERROR", "reject_always": "ERROR"}


class QuestionPanel(QFrame):
    def __init__(self, vm: QuestionsViewModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("questionPanel")
        theme.style(self, PANEL_CSS)
        self.vm = vm
        self.title = PlainLabel()
        self.title.setObjectName("questionTitle")
        self.title.setWordWrap(True)
        self.more = QLabel()
        self.more.setObjectName("questionMore")
        theme.style(self.more, "color: $MUTED;")
        self.buttons = QHBoxLayout()
        self.text = QLineEdit()
        self.text.setObjectName("questionText")
        self.text.setPlaceholderText("Your answer (Enter to send)")
        self.text.returnPressed.connect(self._send_text)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.title)
        layout.addWidget(self.more)
        layout.addLayout(self.buttons)
        layout.addWidget(self.text)
        self.option_buttons: list[QPushButton] = []
        vm.changed.connect(self.refresh)
        vm.answering.connect(lambda _: self._enable(False))
        self.refresh()

    def refresh(self) -> None:
        question = self.vm.current
        self.setVisible(question is not None)
        for button in self.option_buttons:
            self.buttons.removeWidget(button)
            button.deleteLater()
        self.option_buttons = []
        if question is None:
            return
        tool = f" · {question.tool}" if question.tool else ""
        self.title.setText(f"The agent asks{tool}: {question.prompt}")
        others = len(self.vm.questions) - 1
        self.more.setText(f"{others} more question{'s' * (others != 1)} after this one"
                          if others else "")
        self.more.setVisible(others > 0)
        for option in question.options:
            self.option_buttons.append(self._button(question.request_id, option))
        self.text.setVisible(not question.options)
        self._enable(question.request_id not in self.vm.sent)

    def _button(self, request_id: str, option: InputOption) -> QPushButton:
        button = QPushButton(option.label)
        button.setObjectName(f"answer-{option.id}")
        role = _TONE.get(option.kind)
        if role:
            theme.style(button, f"QPushButton {{ color: ${role}; font-weight: bold; }}")
        button.clicked.connect(lambda: self.vm.answer(request_id, option.id))
        self.buttons.addWidget(button)
        show_now(button)
        return button

    def _send_text(self) -> None:
        question = self.vm.current
        if question is not None and self.text.text().strip():
            self.vm.answer(question.request_id, text=self.text.text().strip())
            self.text.clear()

    def _enable(self, enabled: bool) -> None:
        for button in self.option_buttons:
            button.setEnabled(enabled)
        self.text.setEnabled(enabled)
