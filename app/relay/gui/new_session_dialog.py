"""NewSessionDialog: what a user fills in to start a session → a SessionSpec.

The dialog is opened with ``open()`` (never a nested ``exec()``); Start (or Ctrl+Enter
anywhere in it) validates in place and keeps the dialog open with the problem shown under
the form. The repository box lists the repositories of the host's recent sessions; "Then
hand off to" is picked from the host's runtimes and accounts (installed ones first, missing
ones shown but not pickable, :mod:`relay.gui.runtime_choice`), never typed.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from relay.core.models import PermissionPolicy, SessionSpec
from relay.gui import theme
from relay.gui.messages import ErrorBanner
from relay.gui.runtime_choice import (
    choice_label,
    entry_choices,
    installed_first,
    missing,
    runtime_of,
)
from relay.runtimes.base import RuntimeInfo
from relay.sessions.instructions import Found
from relay.sessions.instructions_delivery import dialog_found, dialog_summary

POLICY_HELP = {
    PermissionPolicy.READ_ONLY: "Read files and run read-only commands; no edits.",
    PermissionPolicy.WORKSPACE: "Edit files and run commands inside its own worktree (default).",
    PermissionPolicy.FULL: "No restrictions: anything your user account may do.",
}


#: the approval policies the dialog offers, the default first (someone is at the window)
APPROVAL_CHOICES = (("ask", "Ask me"), ("read_only", "Approve read-only actions, ask the rest"),
                    ("deny", "Deny everything it asks"))


def default_runtime(infos: Sequence[RuntimeInfo]) -> str:
    """The first installed real agent; the demo when none is installed."""
    for info in infos:
        if info.runtime != "demo" and info.executable and info.problem is None:
            return info.runtime
    return "demo"


#: the limit policies as the dialog offers them (value, label)
ON_LIMIT_CHOICES = (
    ("auto", "wait for a near reset, else hand off"),
    ("handoff", "always hand off while the chain goes on"),
    ("wait", "wait for the reset, never hand off"),
)


def parse_checks(text: str) -> list[list[str]]:
    """``"pytest -q; ruff check ."`` → argument arrays; raises ValueError on bad quoting."""
    checks = []
    for part in text.split(";"):
        if not part.strip():
            continue
        try:
            checks.append(shlex.split(part))
        except ValueError as exc:
            raise ValueError(f"Acceptance check {part.strip()!r}: {exc}.") from exc
    return checks


#: how many recent repositories the repository box lists
RECENT_REPOS = 10
NO_CHAIN = "nobody — at a limit it waits or stops"


def recent_repos(repos: Iterable[str], limit: int = RECENT_REPOS) -> list[str]:
    """Distinct repositories, most recent first (``repos``: the sessions' newest first)."""
    return list(dict.fromkeys(r for r in repos if r))[:limit]


def parse_budget(text: str) -> float | None:
    """``""`` → None, ``"$2.50"`` → 2.5; ValueError for anything but USD ≥ 0."""
    text = text.strip().lstrip("$").strip()
    if not text:
        return None
    try:
        amount = float(text)
    except ValueError:
        raise ValueError(f"Budget {text!r} is not an amount of USD.") from None
    if not 0 <= amount < float("inf"):
        raise ValueError("A budget is an amount of USD ≥ 0.")
    return amount


def runtime_label(info: RuntimeInfo) -> str:
    if info.runtime == "demo":
        return "demo — SIMULATION (scripted, no real agent)"
    if info.problem is not None or not info.executable:
        return f"{info.runtime} — not installed"
    return f"{info.runtime} ({info.version})" if info.version else info.runtime


class ChainPicker(QWidget):
    """The entries to hand off to, in order: picked from a menu, never typed.

    The menu lists ``runtime`` and ``runtime:account`` entries, installed first; an entry on
    a runtime the doctor found missing is shown "(not installed)" and cannot be picked.

    Signals:
        changed(): the chain changed.
    """

    changed = Signal()

    def __init__(self, entries: Sequence[str], infos: Iterable[RuntimeInfo],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        infos = list(infos)
        self._gone = missing(infos)
        self._problems = {i.runtime: i.problem or "" for i in infos}
        self.entries = installed_first(entries, infos)
        self._chain: list[str] = []
        self.shown = QLabel(NO_CHAIN)
        self.shown.setObjectName("fallbacksChain")
        self.shown.setWordWrap(True)
        self.shown.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.menu = QMenu(self)
        self.menu.setObjectName("fallbacksMenu")
        self.add = QPushButton("Add")
        self.add.setObjectName("fallbacksAdd")
        self.add.setToolTip("Add a runtime or account to hand the task to, after the ones "
                            "already chosen")
        self.add.setMenu(self.menu)
        self.clear = QPushButton("Clear")
        self.clear.setObjectName("fallbacksClear")
        self.clear.clicked.connect(lambda: self.set_chain([]))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.shown, 1)
        row.addWidget(self.add)
        row.addWidget(self.clear)
        self._show()

    def chain(self) -> list[str]:
        return list(self._chain)

    def set_chain(self, entries: Sequence[str]) -> None:
        """Hand off to ``entries`` in order (those not offered, or missing, are left out)."""
        self._chain = [e for e in dict.fromkeys(entries)
                       if e in self.entries and runtime_of(e) not in self._gone]
        self._show()

    def pick(self, entry: str) -> None:
        self.set_chain([*self._chain, entry])

    def _fill(self) -> None:
        self.menu.clear()
        for entry in self.entries:
            action = self.menu.addAction(choice_label(entry, self._gone))
            action.setData(entry)
            action.setCheckable(True)
            action.setChecked(entry in self._chain)
            action.setEnabled(entry not in self._chain and runtime_of(entry) not in self._gone)
            action.setToolTip(self._problems.get(runtime_of(entry), ""))
            action.triggered.connect(lambda _=False, e=entry: self.pick(e))

    def _show(self) -> None:
        self.shown.setText(" → ".join(self._chain) or NO_CHAIN)
        theme.style(self.shown, "" if self._chain else "QLabel { color: $MUTED; }")
        self.clear.setEnabled(bool(self._chain))
        self._fill()
        self.changed.emit()


class NewSessionDialog(QDialog):
    """Repository, task, runtime, model, worktree and permission policy.

    Signals:
        specAccepted(SessionSpec): the form was valid and the user pressed Start.
    """

    specAccepted = Signal(object)

    def __init__(self, infos: Sequence[RuntimeInfo], parent: QWidget | None = None,
                 repo: str = "", recent: Sequence[str] = (),
                 entries: Sequence[str] | None = None) -> None:
        """``recent``: the repositories of recent sessions (newest first); ``entries``:
        the runtimes and accounts to hand off to (default: the runtimes of ``infos``)."""
        super().__init__(parent)
        self.setObjectName("newSessionDialog")
        self.setWindowTitle("New session")
        self.setMinimumWidth(560)
        self._infos = {info.runtime: info for info in infos}
        #: what the root of each repository path typed so far holds
        self._found: dict[str, Found | None] = {}
        self._spec: SessionSpec | None = None
        self.repos = QComboBox()
        self.repos.setObjectName("repoCombo")
        self.repos.setEditable(True)
        self.repos.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.repos.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.repos.setMinimumContentsLength(20)
        self.repos.addItems(recent_repos([repo, *recent]))
        self.repos.setToolTip("A git repository: type its path, or pick one of your recent "
                              "sessions' repositories")
        line = self.repos.lineEdit()
        assert line is not None
        self.repo: QLineEdit = line
        self.repo.setObjectName("repoEdit")  # the newest first: ``repo``, else the latest
        self.repo.setPlaceholderText("Path of a git repository")
        self.browse = QPushButton("Browse…")
        self.browse.setObjectName("browseButton")
        self.task = QPlainTextEdit()
        self.task.setObjectName("taskEdit")
        self.task.setPlaceholderText("What should the agent do?")
        self.task.setTabChangesFocus(True)
        self.task.setMinimumHeight(90)
        self.task.setMaximumHeight(140)
        self.runtime = QComboBox()
        self.runtime.setObjectName("runtimeCombo")
        for info in infos:
            self.runtime.addItem(runtime_label(info), info.runtime)
        self.runtime.setCurrentIndex(max(self.runtime.findData(default_runtime(infos)), 0))
        self.model = QLineEdit()
        self.model.setObjectName("modelEdit")
        self.model.setPlaceholderText("optional — the runtime's default")
        self.fallbacks = ChainPicker(
            entries if entries is not None else entry_choices([i.runtime for i in infos], []),
            infos)
        self.fallbacks.setObjectName("fallbacksPicker")
        self.fallbacks.setToolTip("When the runtime hits a usage limit, Relay snapshots the work "
                                  "and hands the task to these, in order.")
        self.verify = QLineEdit()
        self.verify.setObjectName("verifyEdit")
        self.verify.setPlaceholderText("optional — e.g. pytest -q; ruff check .")
        self.verify.setToolTip("Acceptance checks, separated by ';', run in the worktree after the "
                               "agent finishes. The session only completes when all pass.")
        self.on_limit = QComboBox()
        self.on_limit.setObjectName("onLimitCombo")
        for value, label in ON_LIMIT_CHOICES:
            self.on_limit.addItem(label, value)
        self.preempt = QCheckBox("Hand off early when the provider warns the limit is close")
        self.preempt.setObjectName("preemptCheck")
        self.budget = QLineEdit()
        self.budget.setObjectName("budgetEdit")
        self.budget.setPlaceholderText("optional — USD, e.g. 5")
        self.budget.setToolTip("Relay warns at 80 % and starts no new work at 100 % of it. Costs "
                               "are what the CLI reported, else estimates from list prices; calls "
                               "already in flight can go past it.")
        self.worktree = QCheckBox("Run in its own git worktree (recommended)")
        self.worktree.setObjectName("worktreeCheck")
        self.worktree.setChecked(True)
        self.policy = QComboBox()
        self.policy.setObjectName("policyCombo")
        for policy in PermissionPolicy:
            self.policy.addItem(policy.value, policy.value)
        self.policy.setCurrentIndex(self.policy.findData(PermissionPolicy.WORKSPACE.value))
        self.approvals = QComboBox()
        self.approvals.setObjectName("approvalsCombo")
        for value, label in APPROVAL_CHOICES:
            self.approvals.addItem(label, value)
        self.approvals.setToolTip("What happens when the agent asks permission for a tool call "
                                  "(runtimes that ask: the question shows in the live stream "
                                  "and the tray)")
        self.policy_help = QLabel()
        self.policy_help.setObjectName("policyHelp")
        theme.style(self.policy_help, "color: $MUTED;")
        self.runtime_help = QLabel()
        self.runtime_help.setObjectName("runtimeHelp")
        self.runtime_help.setWordWrap(True)
        self.instructions = QLabel()
        self.instructions.setObjectName("instructionsHelp")
        self.instructions.setWordWrap(True)
        theme.style(self.instructions, "color: $MUTED;")
        self.error = ErrorBanner("dialogError")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Start")
        self._layout()
        self.browse.clicked.connect(self._browse)
        self.policy.currentIndexChanged.connect(self._policy_changed)
        self.runtime.currentIndexChanged.connect(self._runtime_changed)
        self.runtime.currentIndexChanged.connect(self._show_instructions)
        self.repo.textChanged.connect(self._show_instructions)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setToolTip("Start (Ctrl+Enter)")
        self._policy_changed()
        self._runtime_changed()
        self._show_instructions()

    def _layout(self) -> None:
        repo_row = QHBoxLayout()
        repo_row.addWidget(self.repos, 1)
        repo_row.addWidget(self.browse)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Repository", repo_row)
        form.addRow("Task", self.task)
        form.addRow("Runtime", self.runtime)
        form.addRow("", self.runtime_help)
        form.addRow("", self.instructions)
        form.addRow("Model", self.model)
        form.addRow("Then hand off to", self.fallbacks)
        form.addRow("At a usage limit", self.on_limit)
        form.addRow("", self.preempt)
        form.addRow("Acceptance checks", self.verify)
        form.addRow("Budget", self.budget)
        form.addRow("", self.worktree)
        form.addRow("Permissions", self.policy)
        form.addRow("", self.policy_help)
        form.addRow("When it asks", self.approvals)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)

    # -- the result ---------------------------------------------------------------------

    def spec(self) -> SessionSpec | None:
        """The accepted spec (``None`` until the dialog was accepted)."""
        return self._spec

    def build_spec(self) -> SessionSpec:
        """The form as a spec; raises ValueError with a message for the user."""
        repo = self.repo.text().strip()
        if not repo:
            raise ValueError("Choose the repository the agent works in.")
        path = Path(repo).expanduser()
        if not path.is_dir():
            raise ValueError(f"{path} is not a folder.")
        task = self.task.toPlainText().strip()
        if not task:
            raise ValueError("Describe the task for the agent.")
        runtime = str(self.runtime.currentData())
        info = self._infos.get(runtime)
        if info is not None and info.problem is not None:
            raise ValueError(f"{info.problem} {info.hint or ''}".strip())
        chain = self.fallbacks.chain()
        verify = parse_checks(self.verify.text())
        budget = parse_budget(self.budget.text())
        try:
            return SessionSpec(repo=path, task=task, runtime=runtime,
                               chain=[runtime, *chain] if chain else [],
                               model=self.model.text().strip() or None,
                               worktree=self.worktree.isChecked(),
                               permission=PermissionPolicy(str(self.policy.currentData())),
                               verify=verify, on_limit=str(self.on_limit.currentData()),
                               preempt=self.preempt.isChecked(), budget_usd=budget,
                               approvals=str(self.approvals.currentData()))
        except ValidationError as exc:
            raise ValueError(f"Invalid session: {exc.errors()[0]['msg']}.") from exc

    def accept(self) -> None:
        try:
            spec = self.build_spec()
        except ValueError as exc:
            self.show_error(str(exc))
            return
        self._spec = spec
        self.error.hide()
        super().accept()
        self.specAccepted.emit(spec)

    def show_error(self, message: str) -> None:
        self.error.show_error(message)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Ctrl+Enter starts it, wherever the focus is (the fields pass it on: a text box
        takes Ctrl+Enter for a shortcut, so a QShortcut would never see it)."""
        if (event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier):
            event.accept()
            self.accept()
            return
        super().keyPressEvent(event)

    # -- helpers ------------------------------------------------------------------------

    def _policy_changed(self) -> None:
        policy = PermissionPolicy(str(self.policy.currentData()))
        self.policy_help.setText(POLICY_HELP[policy])

    def _runtime_changed(self) -> None:
        info = self._infos.get(str(self.runtime.currentData()))
        if info is None:
            self.runtime_help.clear()
        elif info.runtime == "demo":
            self.runtime_help.setText("Scripted SIMULATION: edits real files in the worktree; "
                                      "no AI agent runs.")
        elif info.problem is not None:
            self.runtime_help.setText(f"{info.problem} {info.hint or ''}".strip())
        else:
            self.runtime_help.setText(f"{info.executable}")
        role = "ERROR" if info is not None and info.problem else "MUTED"
        theme.style(self.runtime_help, f"color: ${role};")

    def _show_instructions(self) -> None:
        """Which instruction files the repository has, and how the runtime gets them (the
        repository's root is looked at once per path typed; a runtime change only re-words)."""
        repo = self.repo.text()
        if repo not in self._found:
            self._found[repo] = dialog_found(repo)
        text = dialog_summary(self._found[repo], str(self.runtime.currentData()))
        self.instructions.setText(text)
        self.instructions.setVisible(bool(text))

    def _browse(self) -> None:
        chooser = QFileDialog(self, "Choose a git repository", self.repo.text())
        chooser.setFileMode(QFileDialog.FileMode.Directory)
        chooser.setOption(QFileDialog.Option.ShowDirsOnly, True)
        chooser.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        chooser.fileSelected.connect(self.repo.setText)
        chooser.open()
