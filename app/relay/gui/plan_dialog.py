"""Plan…: a goal and the runtime that turns it into a pipeline (the designer opens the
result as an unsaved draft to review; nothing runs until the user saves and runs it)."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QWidget,
)


class PlanDialog(QDialog):
    """Signals: planRequested(goal, runtime)."""

    planRequested = Signal(str, str)

    def __init__(self, runtimes: list[tuple[str, bool]], parent: QWidget | None = None) -> None:
        """``runtimes``: (name, usable) — unusable ones (CLI missing) are listed, disabled."""
        super().__init__(parent)
        self.setObjectName("planDialog")
        self.setWindowTitle("Plan a pipeline")
        self.goal = QPlainTextEdit()
        self.goal.setObjectName("planGoal")
        self.goal.setPlaceholderText("What should the pipeline achieve? e.g. add a /greet "
                                     "endpoint with tests, then review it")
        self.goal.setMinimumHeight(90)
        self.runtime = QComboBox()
        self.runtime.setObjectName("planRuntime")
        for name, usable in runtimes:
            self.runtime.addItem(name if usable else f"{name} (not installed)", name)
            if not usable:
                item = self.runtime.model().item(self.runtime.count() - 1)  # type: ignore[attr-defined]
                item.setEnabled(False)
        first = next((i for i, (n, ok) in enumerate(runtimes) if ok and n != "demo"), None)
        self.runtime.setCurrentIndex(first if first is not None else
                                     max(self.runtime.findData("demo"), 0))
        note = QLabel("The planner is a read-only agent session; its graph opens here unsaved "
                      "for you to review and edit before anything runs.")
        note.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Plan")
        ok.setObjectName("planOk")
        ok.setEnabled(False)
        self.goal.textChanged.connect(
            lambda: ok.setEnabled(bool(self.goal.toPlainText().strip())))
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Goal", self.goal)
        form.addRow("Planner", self.runtime)
        form.addRow(note)
        form.addRow(self.buttons)

    def _accept(self) -> None:
        goal = self.goal.toPlainText().strip()
        runtime = self.runtime.currentData()
        if goal and isinstance(runtime, str):
            self.planRequested.emit(goal, runtime)
            self.accept()
