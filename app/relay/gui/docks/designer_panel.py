"""The designer's side panel: the selected node's fields, or the pipeline's own.

Every field shows the draft's value and writes a change back as a view-model edit (one
undo step per field; typing in a text box merges into one). Line fields apply when
editing finishes (Return or leaving the field), boxes and lists at once. A value the
draft refuses (a taken id) is put back and the reason shows in the dock. While a run is
shown, "Open stream" shows the selected step's session (as a double-click on its node does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QStackedWidget,
    QWidget,
)

from relay.core.models import PermissionPolicy
from relay.core.pipeline_model import Node
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel
from relay.gui.viewmodels.designer import DesignerViewModel

TASK_HINT = ("Pass a dependency's result in with {{dep.output}} (its final answer), "
             "{{dep.files}}, {{dep.commit}}, {{dep.branch}} or {{dep.session}}.")
DEPS_HINT = "Or drag from a node's right port to another node's left port."
NONE_SELECTED = "Select a node to edit it, or drag a runtime from the palette onto the canvas."


def _split(text: str, sep: str) -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


def _hint(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    theme.style(label, "QLabel { color: $MUTED; font-size: 11px; }")
    return label


class DesignerPanel(QStackedWidget):
    """Pages: 0 the pipeline (nothing selected), 1 one node, 2 several nodes.

    Signals:
        streamRequested(str): "Open stream" for this node's step in the shown run.
    """

    streamRequested = Signal(str)

    def __init__(self, vm: DesignerViewModel, runtimes: list[str],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("designerPanel")
        self.vm = vm
        self.runtimes = runtimes
        self.node_id: str | None = None
        self._loading = False
        self.addWidget(self._scrolled(self._pipeline_page()))
        self.addWidget(self._scrolled(self._node_page()))
        self.several = QLabel()
        self.several.setObjectName("designerSeveral")
        self.several.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.several.setWordWrap(True)
        theme.style(self.several, "$PLACEHOLDER_CSS")
        self.addWidget(self.several)
        self.setMinimumWidth(230)
        self.setMaximumWidth(380)
        vm.changed.connect(self.refresh)
        vm.selectionChanged.connect(self.refresh)
        vm.run.changed.connect(self.refresh)
        self.refresh()

    @staticmethod
    def _scrolled(page: QWidget) -> QScrollArea:
        """``page`` in a vertical scroll area, as wide as the panel (its hints wrap)."""
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setFrameShape(QScrollArea.Shape.NoFrame)
        area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        area.setWidget(page)
        return area

    # -- building -------------------------------------------------------------------

    def _pipeline_page(self) -> QWidget:
        self.name = self._line("designerName", lambda t: self.vm.edit_pipeline("name", t.strip()))
        self.description = self._line("designerDescription",
                                      lambda t: self.vm.edit_pipeline("description", t.strip()))
        self.concurrency = QSpinBox()
        self.concurrency.setObjectName("designerDefaultConcurrency")
        self.concurrency.setRange(1, 64)
        self.concurrency.valueChanged.connect(
            lambda v: self._apply(lambda: self.vm.edit_pipeline("concurrency", v)))
        self.budget = QDoubleSpinBox()
        self.budget.setObjectName("designerBudget")
        self.budget.setRange(0, 100_000)
        self.budget.setPrefix("$")
        self.budget.setSpecialValueText("no budget")
        self.budget.valueChanged.connect(
            lambda v: self._apply(lambda: self.vm.edit_pipeline("budget_usd", v or None)))
        self.none_selected = _hint(NONE_SELECTED)
        page = QWidget()
        form = QFormLayout(page)
        form.addRow(self._title("Pipeline"))
        form.addRow("Name", self.name)
        form.addRow("Description", self.description)
        form.addRow("Steps at once", self.concurrency)
        form.addRow("Budget", self.budget)
        form.addRow(self.none_selected)
        return page

    def _node_page(self) -> QWidget:
        self.node_id_edit = self._line("designerNodeId", self._rename)
        self.provider = QComboBox()
        self.provider.setObjectName("designerProvider")
        self.provider.addItems(self.runtimes)
        self.provider.currentTextChanged.connect(lambda t: self._field("provider", t))
        self.account = self._line("designerAccount", lambda t: self._field("account", t or None))
        self.account.setPlaceholderText("default login")
        self.model = self._line("designerModel", lambda t: self._field("model", t or None))
        self.model.setPlaceholderText("CLI default")
        self.task = QPlainTextEdit()
        self.task.setObjectName("designerTask")
        self.task.setPlaceholderText("What this step should do")
        self.task.setMinimumHeight(80)
        self.task.setMaximumHeight(130)
        self.task.textChanged.connect(lambda: self._field("task", self.task.toPlainText()))
        self.depends = QListWidget()
        self.depends.setObjectName("designerDependsOn")
        self.depends.itemChanged.connect(self._dependency_toggled)
        self.fallback = self._line("designerFallback",
                                   lambda t: self._field("fallback", _split(t, ",")))
        self.fallback.setPlaceholderText("e.g. codex, claude:work")
        self.verify = QPlainTextEdit()
        self.verify.setObjectName("designerVerify")
        self.verify.setPlaceholderText("one command per line,\ne.g. pytest -q")
        self.verify.setMaximumHeight(64)
        self.verify.textChanged.connect(
            lambda: self._field("verify", _split(self.verify.toPlainText(), "\n")))
        self.group = self._line("designerGroup", lambda t: self._field("group", t or None))
        self.timeout = QDoubleSpinBox()
        self.timeout.setObjectName("designerTimeout")
        self.timeout.setRange(0, 7 * 86_400)
        self.timeout.setDecimals(0)
        self.timeout.setSuffix(" s")
        self.timeout.setSpecialValueText("no limit")
        self.timeout.valueChanged.connect(lambda v: self._field("timeout", v or None))
        self.retries = QSpinBox()
        self.retries.setObjectName("designerRetries")
        self.retries.setRange(0, 10)
        self.retries.valueChanged.connect(lambda v: self._field("retries", v))
        self.permission = QComboBox()
        self.permission.setObjectName("designerPermission")
        for policy in PermissionPolicy:  # Qt keeps the value as a plain str
            self.permission.addItem(policy.value.replace("_", " "), policy.value)
        self.permission.currentIndexChanged.connect(
            lambda i: self._field("permission", PermissionPolicy(self.permission.itemData(i))))
        self.open_stream = QPushButton("Open stream")
        self.open_stream.setObjectName("designerOpenStream")
        self.open_stream.setToolTip("Show this step's session in the live stream (or "
                                    "double-click its node)")
        self.open_stream.clicked.connect(self._open_stream)
        self.node_problems = PlainLabel()  # they quote the repository's file
        self.node_problems.setObjectName("designerNodeProblems")
        self.node_problems.setWordWrap(True)
        theme.style(self.node_problems, "QLabel { color: $ERROR; }")
        page = QWidget()
        form = QFormLayout(page)
        form.addRow(self._title("Step"), self.open_stream)
        form.addRow("Id", self.node_id_edit)
        form.addRow("Provider", self.provider)
        form.addRow("Account", self.account)
        form.addRow("Model", self.model)
        form.addRow("Task", self.task)
        form.addRow(_hint(TASK_HINT))
        form.addRow("Depends on", self.depends)
        form.addRow(_hint(DEPS_HINT))
        form.addRow("Fallback", self.fallback)
        form.addRow("Verify", self.verify)
        form.addRow("Group", self.group)
        form.addRow("Timeout", self.timeout)
        form.addRow("Retries", self.retries)
        form.addRow("Permission", self.permission)
        form.addRow(self.node_problems)
        return page

    def _line(self, name: str, apply: Callable[[str], Any]) -> QLineEdit:
        edit = QLineEdit()
        edit.setObjectName(name)
        edit.editingFinished.connect(lambda: self._apply(lambda: apply(edit.text())))
        return edit

    @staticmethod
    def _title(text: str) -> QLabel:
        label = QLabel(text)
        label.setStyleSheet("QLabel { font-weight: bold; font-size: 13px; }")
        return label

    # -- writing back ---------------------------------------------------------------

    def _apply(self, edit: Callable[[], Any]) -> None:
        if not self._loading:
            edit()
            self.refresh()  # a refused or normalised value shows what the draft holds

    def _field(self, field: str, value: Any) -> None:
        node_id = self.node_id
        if node_id is not None:
            self._apply(lambda: self.vm.edit_node(node_id, field, value))

    def _open_stream(self) -> None:
        if self.node_id is not None:
            self.streamRequested.emit(self.node_id)

    def _rename(self, text: str) -> None:
        if self.node_id is not None and text.strip() != self.node_id:
            self.vm.rename(self.node_id, text.strip())

    def _dependency_toggled(self, item: QListWidgetItem) -> None:
        target = self.node_id
        if self._loading or target is None:
            return
        source = item.text()
        if item.checkState() == Qt.CheckState.Checked:
            self._apply(lambda: self.vm.connect_nodes(source, target))
        else:
            self._apply(lambda: self.vm.disconnect_nodes(source, target))

    # -- reading --------------------------------------------------------------------

    def refresh(self) -> None:
        """Show the draft's values (only widgets whose value differs are touched)."""
        selected = self.vm.selected
        self._loading = True
        try:
            if not selected:
                self.node_id = None
                self._show_pipeline()
                self.setCurrentIndex(0)
            elif len(selected) == 1:
                self.node_id = selected[0]
                self._show_node(self.vm.draft.node(selected[0]))
                self.setCurrentIndex(1)
            else:
                self.node_id = None
                self.several.setText(f"{len(selected)} nodes selected.\nDelete removes them; "
                                     "drag one to move them all.")
                self.setCurrentIndex(2)
        finally:
            self._loading = False

    def _show_pipeline(self) -> None:
        p = self.vm.pipeline
        _set_text(self.name, p.name)
        _set_text(self.description, p.description)
        self.concurrency.setValue(p.concurrency)
        self.budget.setValue(p.budget_usd or 0)

    def _show_node(self, node: Node) -> None:
        step = self.vm.run.steps.get(node.id)
        self.open_stream.setVisible(step is not None and bool(step.session_id))
        _set_text(self.node_id_edit, node.id)
        if self.provider.findText(node.provider) < 0:
            self.provider.addItem(node.provider)  # a provider this build does not know
        self.provider.setCurrentText(node.provider)
        _set_text(self.account, node.account or "")
        _set_text(self.model, node.model or "")
        if self.task.toPlainText() != node.task:
            self.task.setPlainText(node.task)
        self._show_dependencies(node)
        _set_text(self.fallback, ", ".join(node.fallback))
        if _split(self.verify.toPlainText(), "\n") != node.verify:
            self.verify.setPlainText("\n".join(node.verify))
        _set_text(self.group, node.group or "")
        self.timeout.setValue(node.timeout or 0)
        self.retries.setValue(node.retries)
        self.permission.setCurrentIndex(max(0, self.permission.findData(node.permission.value)))
        mine = [p for p in self.vm.problems() if p.node == node.id]
        self.node_problems.setText("\n".join(f"• {p.field}: {p.message}" for p in mine))
        self.node_problems.setVisible(bool(mine))

    def _show_dependencies(self, node: Node) -> None:
        """Every other node, checked when this one depends on it; a node that already
        depends on this one is greyed out (checking it would close a cycle)."""
        draft = self.vm.draft
        others = [n for n in draft.ids() if n != node.id]
        if [self.depends.item(i).text() for i in range(self.depends.count())] != others:
            self.depends.clear()
            for other in others:
                self.depends.addItem(QListWidgetItem(other))
        for i in range(self.depends.count()):
            item = self.depends.item(i)
            back = draft.path(item.text(), node.id)
            checked = item.text() in node.depends_on
            flags = Qt.ItemFlag.ItemIsUserCheckable | (
                Qt.ItemFlag.ItemIsEnabled if back is None or checked else Qt.ItemFlag.NoItemFlags)
            if item.flags() != flags:
                item.setFlags(flags)
            item.setToolTip("" if back is None or checked else
                            f"{item.text()} already depends on {node.id} ({' → '.join(back)})")
            state = Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked
            if item.data(Qt.ItemDataRole.CheckStateRole) is None or item.checkState() != state:
                item.setCheckState(state)
        self.depends.setMaximumHeight(min(90, 8 + 20 * max(1, len(others))))
        self.depends.setVisible(bool(others))


def _set_text(edit: QLineEdit, text: str) -> None:
    if edit.text() != text:
        edit.setText(text)
