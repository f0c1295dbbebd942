"""DetectDock: the agent sessions on this machine, live, and the selected one's intent.

Top: how many sessions (how many live) and how long the scan took, "Show all" (every
session found, not only those live or active in the last 24 hours), Rescan, an error
(message and hint) in place and what the scan could not read. Below, the table
(runtime, repository, state — with the reset time for a blocked one —, age, usage,
account, and the task: its first prompt, which takes the room left) over the detail pane:
the session's state and why, its initial prompt, plan with each step's status, tasks
remaining, files touched, commands, its account, models, skills, MCP servers, usage, and
what could not be read; "Adopt on…" (a runtime or account — installed ones first, a missing
one shown but not offered —, in a new worktree or in place) and "Open transcript". All words
come from :mod:`relay.detect.present` and :mod:`relay.gui.detect_text`; the widgets only show.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QPoint, Qt, Signal
from PySide6.QtGui import QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from relay.detect import present as text
from relay.detect.model import DetectedSession
from relay.gui import theme
from relay.gui.detect_text import detail_html
from relay.gui.docks.parts import PlainLabel, empty_or_content, row_table
from relay.gui.messages import ErrorBanner
from relay.gui.runtime_choice import choice_label, runtime_of
from relay.gui.viewmodels.detect import (
    HOOKED_NOTE,
    STATE_COLOURS,
    TASK_COLUMN,
    DetectViewModel,
    Note,
    state_label,
)

EMPTY_TEXT = ("No agent sessions live or active in the last 24 hours.\n"
              "Start claude, codex, gemini or pi in a terminal and it shows up here;\n"
              "“Show all” lists older ones.")
EMPTY_ALL_TEXT = "No agent sessions found on this machine."
LOADING_TEXT = "Looking for agent sessions…"
NO_SELECTION_TEXT = "Select a session to see what it was doing."



class AdoptDialog(QDialog):
    """Where to continue a detected session: a runtime or account, in a worktree or in place.

    Signals:
        adoptAccepted(str, bool): the chosen ``runtime[:account]`` and whether in place.
    """

    adoptAccepted = Signal(str, bool)

    def __init__(self, session: DetectedSession, targets: list[str], default: str | None,
                 parent: QWidget | None = None, gone: frozenset[str] = frozenset()) -> None:
        super().__init__(parent)
        self.setObjectName("adoptDialog")
        self.setWindowTitle("Adopt session")
        self.session_id = session.id
        what = text.one_line(session.intent.initial_prompt, 90) or session.id
        self.intro = PlainLabel(f"Continue “{what}” ({text.runtime_name(session.runtime)} · "
                            f"{text.where(session)}) on:")
        self.intro.setWordWrap(True)
        self.target = QComboBox()
        self.target.setObjectName("adoptTarget")
        self.in_place = QCheckBox("Run in place: work in the repository itself, not a new "
                                  "worktree")
        self.in_place.setObjectName("adoptInPlace")
        self.explain = QLabel()
        self.explain.setObjectName("adoptExplain")
        self.explain.setWordWrap(True)
        theme.style(self.explain, "QLabel { color: $MUTED; }")
        self.live = QLabel("Its agent is still running: both would go on with the work.")
        self.live.setObjectName("adoptLiveWarning")
        theme.style(self.live, "QLabel { color: $WARNING; }")
        self.live.setVisible(session.process is not None and session.state == "working")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Adopt")
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (self.intro, self.target, self.in_place, self.explain, self.live,
                       self.buttons):
            layout.addWidget(widget)
        self.in_place.toggled.connect(self._explain)
        self.set_targets(targets, default, gone)
        self._explain()
        self.setMinimumWidth(460)

    def set_targets(self, targets: list[str], default: str | None = None,
                    gone: frozenset[str] = frozenset()) -> None:
        """Fill the choices, keeping the current one (else ``default``); an entry on a
        runtime in ``gone`` (missing here) is shown "(not installed)" and cannot be chosen."""
        keep = self.target.currentData() or default
        self.target.clear()
        model = self.target.model()
        for entry in targets:
            self.target.addItem(choice_label(entry, gone), entry)
            if runtime_of(entry) in gone and isinstance(model, QStandardItemModel):
                model.item(self.target.count() - 1).setEnabled(False)
        usable = [t for t in targets if runtime_of(t) not in gone]
        chosen = keep if keep in usable else (usable[0] if usable else None)
        self.target.setCurrentIndex(self.target.findData(chosen) if chosen else -1)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(usable))

    def _explain(self) -> None:
        if self.in_place.isChecked():
            self.explain.setText("The new agent writes in your working tree, where the "
                                 "session's uncommitted changes already are.")
        else:
            self.explain.setText("Relay writes a signed brief of what the agent did and starts "
                                 "a session that continues it in a new worktree at the "
                                 "repository's current state, uncommitted changes included. "
                                 "Your working tree is not touched.")

    def _accept(self) -> None:
        target = self.target.currentData()
        if target:
            self.adoptAccepted.emit(target, self.in_place.isChecked())
            self.accept()


class DetectDock(QDockWidget):
    """Binds a :class:`DetectViewModel`: the live table over the selected session's detail."""

    def __init__(self, vm: DetectViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Detect", parent)
        self.setObjectName("detectDock")
        self.vm = vm
        self.dialog: AdoptDialog | None = None
        self._build_controls()
        self.table = self._make_table()
        self.pages, self.empty = empty_or_content(LOADING_TEXT, "detectEmpty", self.table)
        self.detail = self._make_detail()
        self.setWidget(self._content())
        vm.modelReset.connect(self._select_in_table)
        vm.changed.connect(self.refresh)
        vm.targetsChanged.connect(self._targets_changed)
        self.visibilityChanged.connect(vm.set_visible)
        self.refresh()

    # -- building -----------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.count = _label("detectCount", muted=True)
        self.show_all = QCheckBox("Show all")
        self.show_all.setObjectName("detectShowAll")
        self.show_all.setToolTip("Every session found, not only those live or active in the "
                                 "last 24 hours")
        self.show_all.toggled.connect(self._toggle_all)
        self.rescan_button = QPushButton("Rescan")
        self.rescan_button.setObjectName("detectRescan")
        self.rescan_button.setToolTip("Look for agent sessions now (only what changed is read)")
        self.rescan_button.clicked.connect(self._rescan)
        self.error = ErrorBanner("detectError")
        self.problems = _label("detectProblems")
        theme.style(self.problems, "QLabel { color: $WARNING; }")
        self.problems.setWordWrap(True)
        self.problems.hide()

    def _make_table(self) -> QTableView:
        table = row_table("detectTable", self.vm, stretch=TASK_COLUMN)
        table.setAlternatingRowColors(True)
        # the task is what tells the rows apart: shown second, where a narrow dock still has
        # room for it (the model's column order stays)
        table.horizontalHeader().moveSection(TASK_COLUMN, 1)
        table.selectionModel().selectionChanged.connect(self._on_selection)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._on_context_menu)
        return table

    def _make_detail(self) -> QWidget:
        self.title = _label("detectTitle", bold=True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.badge = _label("detectBadge")
        self.adopt_button = QPushButton("Adopt on…")
        self.adopt_button.setObjectName("detectAdopt")
        self.adopt_button.setToolTip("Continue this session's work on a runtime or account "
                                     "from a signed brief")
        self.adopt_button.clicked.connect(lambda: self.open_adopt_dialog())
        self.open_button = QPushButton("Open transcript")
        self.open_button.setObjectName("detectOpenTranscript")
        self.open_button.clicked.connect(self._open_transcript)
        self.note = _label("detectNote")
        self.note.setWordWrap(True)
        self.path = _label("detectPath")
        theme.style(self.path, "$CODE_LABEL_CSS")
        self.path.setWordWrap(True)
        self.path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body = QTextBrowser()
        self.body.setObjectName("detectDetail")
        self.body.setOpenLinks(False)
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        self.body.setPlaceholderText(NO_SELECTION_TEXT)
        head = QHBoxLayout()
        head.setSpacing(6)
        head.addWidget(self.title, 1)
        head.addWidget(self.badge)
        actions = QHBoxLayout()
        actions.addWidget(self.adopt_button)
        actions.addWidget(self.open_button)
        actions.addStretch(1)
        box = QFrame()
        box.setObjectName("detectDetailBox")
        theme.style(box, "$CARD_CSS")
        layout = QVBoxLayout(box)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addLayout(actions)
        layout.addWidget(self.note)
        layout.addWidget(self.path)
        layout.addWidget(self.body, 1)
        return box

    def _content(self) -> QWidget:
        controls = QHBoxLayout()
        controls.addWidget(self.count, 1)
        controls.addWidget(self.show_all)
        controls.addWidget(self.rescan_button)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("detectSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.pages)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 3)  # the list first: on a laptop the dock is short
        self.splitter.setStretchFactor(1, 2)
        self.splitter.setSizes([300, 200])
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(controls)
        layout.addWidget(self.error)
        layout.addWidget(self.problems)
        layout.addWidget(self.splitter, 1)
        return page

    # -- intents ------------------------------------------------------------------------

    def select(self, session_id: str) -> None:
        """Show ``session_id`` (now, or as soon as a scan lists it)."""
        self.vm.select(session_id)
        self._select_in_table()

    def open_adopt_dialog(self, session_id: str | None = None) -> AdoptDialog | None:
        """Ask (non-blocking) where to continue the session; Adopt starts it there."""
        session = self.vm.session(session_id or self.vm.selected_id or "")
        if session is None:
            return None
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.close()
        dialog = AdoptDialog(session, self.vm.targets(), self.vm.default_target(session.id), self,
                             self.vm.missing_runtimes())
        dialog.adoptAccepted.connect(
            lambda target, in_place: self._adopt(session.id, target, in_place))
        self.dialog = dialog
        self.vm.refresh_targets()  # accounts added since: the list fills in when read
        dialog.open()
        return dialog

    def show_error(self, message: str, hint: str = "") -> None:
        """Show a Detect error (message and hint) in place."""
        self.error.show_error(message, hint)

    def _adopt(self, session_id: str, target: str, in_place: bool) -> None:
        self.error.hide()
        self.vm.adopt(session_id, target, in_place)

    def _open_transcript(self) -> None:
        if self.vm.selected_id is not None:
            self.vm.open_transcript(self.vm.selected_id)

    def _rescan(self) -> None:
        self.error.hide()
        self.vm.refresh()

    def _toggle_all(self, on: bool) -> None:
        self.error.hide()
        self.vm.set_show_all(on)

    def context_menu(self, row: int) -> QMenu:
        """The context menu of ``row`` (built, not shown)."""
        session_id = str(self.vm.index(row, 0).data(DetectViewModel.SessionIdRole))
        menu = QMenu(self.table)
        menu.setObjectName("detectContextMenu")
        adopt = menu.addAction("Adopt on…")
        adopt.setEnabled(not self.vm.is_busy(session_id))
        adopt.triggered.connect(lambda: self.open_adopt_dialog(session_id))
        menu.addAction("Open transcript").triggered.connect(
            lambda: self.vm.open_transcript(session_id))
        return menu

    def _on_context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid():
            menu = self.context_menu(index.row())
            menu.aboutToHide.connect(menu.deleteLater)
            menu.popup(self.table.viewport().mapToGlobal(pos))

    # -- binding ------------------------------------------------------------------------

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        rows = {i.row() for i in selected.indexes()}
        if len(rows) == 1:  # an empty selection (the model was reset) keeps the session shown
            self.vm.select(str(self.vm.index(rows.pop(), 0).data(DetectViewModel.SessionIdRole)))

    def _select_in_table(self) -> None:
        wanted = self.vm.selected_id
        row = self.vm.row_of(wanted) if wanted else None
        current = self.table.selectionModel().selectedRows()
        if row is None or (current and current[0].row() == row):
            return
        self.table.selectRow(row)
        self.table.scrollTo(self.vm.index(row, 0))

    def _targets_changed(self) -> None:
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.set_targets(self.vm.targets(),
                                    self.vm.default_target(self.dialog.session_id),
                                    self.vm.missing_runtimes())

    def refresh(self) -> None:
        """Re-read the status, the table's placeholder and the selected session's detail."""
        vm, status = self.vm, self.vm.status
        n = vm.rowCount()
        live = sum(1 for s in vm.sessions() if s.process is not None)
        took = f" · scanned in {status.elapsed_s:.1f} s" if status.loaded else ""
        self.count.setText("Scanning…" if status.scanning and not status.loaded else
                           f"{n} session{'s' if n != 1 else ''} · {live} live{took}")
        self.empty.setText((EMPTY_ALL_TEXT if vm.show_all else EMPTY_TEXT) if status.loaded
                           else LOADING_TEXT)
        self.pages.setCurrentIndex(1 if n else 0)
        self._show_problems(status.problems)
        self._select_in_table()
        self._show_detail()

    def _show_problems(self, problems: tuple[str, ...]) -> None:
        self.problems.setVisible(bool(problems))
        if problems:
            first = text.one_line(problems[0], 100)
            more = f" (and {len(problems) - 1} more: hover for all)" if len(problems) > 1 else ""
            self.problems.setText(f"Could not read: {first}{more}")
            self.problems.setToolTip("\n".join(f"could not read: {p}" for p in problems))

    def _show_detail(self) -> None:
        s = self.vm.selected()
        for widget in (self.title, self.badge, self.adopt_button, self.open_button):
            widget.setVisible(s is not None)
        if s is None:
            self.note.hide()
            self.path.hide()
            self.body.clear()
            return
        role = STATE_COLOURS[s.state]
        self.title.setText(f"{text.runtime_name(s.runtime)} · {text.repository(s)}")
        self.title.setToolTip(s.id)
        self.badge.setText(state_label(s, self.vm.now_ms()))
        self.badge.setToolTip(HOOKED_NOTE if s.hooked else "")
        theme.style(self.badge, f"$BADGE_CSS.{role.lower()}")  # a tone per colour role
        busy = self.vm.is_busy(s.id)
        self.adopt_button.setEnabled(not busy)
        self.adopt_button.setText("Adopting…" if busy else "Adopt on…")
        self._show_note(self.vm.note(s.id))
        html = detail_html(s, self.vm.now_ms(), getattr(theme, role))
        if html != self.body.property("relayHtml"):  # keep the scroll position when unchanged
            bar = self.body.verticalScrollBar()
            keep = bar.value() if self.body.property("relaySession") == s.id else 0
            self.body.setHtml(html)
            self.body.setProperty("relayHtml", html)
            self.body.setProperty("relaySession", s.id)
            bar.setValue(keep)

    def _show_note(self, note: Note | None) -> None:
        self.note.setVisible(note is not None)
        self.path.setVisible(note is not None and bool(note.path))
        if note is not None:
            self.note.setText(note.text)
            theme.style(self.note, f"$NOTE_CSS.{note.tone}")
            self.path.setText(note.path)


def _label(name: str, *, bold: bool = False, muted: bool = False) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    css = (["font-weight: bold;"] if bold else []) + (["color: $MUTED;"] if muted else [])
    if css:
        theme.style(label, f"QLabel {{ {' '.join(css)} }}")
    return label
