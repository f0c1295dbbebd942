"""StreamDock: the live agent stream of the selected session.

A header (:class:`~relay.gui.docks.stream_header.StreamHeader`: the task as a title of at
most two lines, runtime, model, permission policy, state, usage and cost, Stop), a
SIMULATION banner for scripted demo sessions (the rows do not repeat it), the countdown of
a session waiting for a limit's reset (ticking once a second), a filter (all, messages,
tools, errors) and a search box (Ctrl+F; Enter: the next row holding the text, Shift+Enter
the one before), the event list (:class:`~relay.gui.docks.stream_view.StreamView`: tool results
nested under their call, foldable, a handoff one block; it follows the bottom; Esc asks to
interrupt the turn), a detail pane for the selected row, the next actions of a finished
session (View diff · Merge… · Continue: :attr:`StreamDock.viewDiffRequested`,
:attr:`~StreamDock.mergeRequested`, :attr:`~StreamDock.continueRequested`) and, under
them, the composer (:meth:`StreamDock.add_footer`). A row's context menu offers "Fork from
here…" (:attr:`StreamDock.forkRequested`).
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from relay.core.events import utcnow
from relay.core.present import SIMULATION_LABEL, end_state, fmt_cost, fmt_tokens
from relay.core.states import FINAL_STATES
from relay.gui import theme
from relay.gui.docks.parts import detail_view, empty_or_content
from relay.gui.docks.stream_header import ElidedTitle, StreamHeader
from relay.gui.docks.stream_view import StreamView
from relay.gui.handoff_text import wait_line
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.stream import StreamViewModel

EMPTY_TEXT = "Select a session on the left, or start one with File → New session…"
#: the filter's choices: (label, StreamView filter)
FILTER_CHOICES = (("All", "all"), ("Messages", "messages"), ("Tools", "tools"),
                  ("Errors", "errors"))
#: the search waits this long after the last key before it looks
SEARCH_DELAY_MS = 250


def usage_text(vm: StreamViewModel) -> str:
    """The usage and cost line of the header; unknown values read '—'."""
    u = vm.usage
    return (f"Tokens in {fmt_tokens(u.input_tokens)} · out {fmt_tokens(u.output_tokens)}"
            f" · cache read {fmt_tokens(u.cache_read_tokens)}"
            f" · cache write {fmt_tokens(u.cache_write_tokens)}"
            f"    Cost {fmt_cost(u.cost_usd)}")


def meta_text(vm: StreamViewModel) -> str:
    """Runtime · model · permission policy · state."""
    row = vm.session
    if row is None:
        return "loading…" if vm.loading else ""
    state = end_state(row.state, row.refused_calls) + (f" ({row.reason})" if row.reason else "")
    return (f"Runtime {row.runtime} · Model {vm.model_name or '—'}"
            f" · Permissions {row.permission.value} · State {state}")


class StreamDock(QDockWidget):
    """Binds a :class:`StreamViewModel` to a :class:`StreamView` and its header."""

    stopRequested = Signal()
    #: "Fork from here…" on a row: the session and the row's event id
    forkRequested = Signal(str, int)
    #: a finished session's next actions: its whole diff, merging it, talking on
    viewDiffRequested = Signal()
    mergeRequested = Signal()
    continueRequested = Signal()

    def __init__(self, vm: StreamViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Live stream", parent)
        self.setObjectName("streamDock")
        self.vm = vm
        self.banner = QLabel(SIMULATION_LABEL)
        self.banner.setObjectName("simulationBanner")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.header = StreamHeader()
        self.title, self.meta, self.usage = self.header.title, self.header.meta, self.header.usage
        self.stop_button = self.header.stop_button
        self.wait = QLabel()
        self.wait.setObjectName("streamWait")
        self.wait.setWordWrap(True)
        self.wait.hide()
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._show_wait)
        self.error = ErrorBanner("streamError")
        self.view = self._make_view()
        self.find_bar = self._make_find_bar()
        self.end_bar = self._make_end_bar()
        self.detail = detail_view("streamDetail", "Select a row to read it in full.")
        self.pages, self.empty = empty_or_content(EMPTY_TEXT, "streamEmpty", self._content())
        self.setWidget(self.pages)
        self.stop_button.clicked.connect(self.stopRequested)
        theme.style(self.banner, "$SIMULATION_BANNER_CSS QLabel { padding: 2px 10px; }")
        theme.style(self.wait, "$WAIT_LABEL_CSS")
        vm.headerChanged.connect(self.refresh_header)
        vm.modelReset.connect(self._on_reset)
        self.refresh_header()

    def _make_view(self) -> StreamView:
        view = StreamView(self.vm)
        view.selectionModel().selectionChanged.connect(self._on_selection)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(
            lambda pos: self.row_menu(pos).popup(view.viewport().mapToGlobal(pos)))
        return view

    def _make_find_bar(self) -> QWidget:
        self.filter = QComboBox()
        self.filter.setObjectName("streamFilter")
        self.filter.setToolTip("Show every row, or only the conversation, tool calls or errors")
        for label, name in FILTER_CHOICES:
            self.filter.addItem(label, name)
        self.filter.currentIndexChanged.connect(
            lambda _i: self.view.set_filter(str(self.filter.currentData())))
        self.search = QLineEdit()
        self.search.setObjectName("streamSearch")
        self.search.setPlaceholderText("Find in the stream (Enter: next, Shift+Enter: previous)")
        self.search.setClearButtonEnabled(True)
        self.search.returnPressed.connect(lambda: self.find_next(True))
        back = QShortcut(QKeySequence("Shift+Return"), self.search)
        back.setContext(Qt.ShortcutContext.WidgetShortcut)
        back.activated.connect(lambda: self.find_next(False))
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(lambda: self.find_next(True, fresh=True))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        find = QAction("Find in the stream", self)
        find.setObjectName("streamFind")
        find.setShortcut(QKeySequence(QKeySequence.StandardKey.Find))
        find.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        find.triggered.connect(self.focus_search)
        self.addAction(find)
        self.found = QLabel()
        self.found.setObjectName("streamFound")
        bar = QWidget()
        row = QHBoxLayout(bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.filter)
        row.addWidget(self.search, 1)
        row.addWidget(self.found)
        return bar

    def _make_end_bar(self) -> QFrame:
        bar = QFrame()
        bar.setObjectName("streamEnd")
        self.end_label = ElidedTitle(1)
        self.end_label.setObjectName("streamEndLabel")
        row = QHBoxLayout(bar)
        row.setContentsMargins(2, 0, 2, 0)
        row.addWidget(self.end_label, 1)
        self.end_buttons: dict[str, QPushButton] = {}
        for key, text, tip, signal in (
                ("diff", "View diff", "Everything the session changed, in the History panel",
                 self.viewDiffRequested),
                ("merge", "Merge…", "Merge the session's branch into its base, or keep it "
                 "(asks first)", self.mergeRequested),
                ("continue", "Continue", "Tell the agent what to do next (the composer below)",
                 self.continueRequested)):
            button = QPushButton(text)
            button.setObjectName(f"streamEnd{key.capitalize()}")
            button.setToolTip(tip)
            button.clicked.connect(signal)
            row.addWidget(button)
            self.end_buttons[key] = button
        bar.hide()
        return bar

    def _content(self) -> QWidget:
        self.view.setMinimumHeight(44)  # the rows get what the window can spare
        self.detail.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Ignored)
        lower = QWidget()  # a finished session's actions, right under its last row
        box = QVBoxLayout(lower)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.end_bar)
        box.addWidget(self.detail, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setObjectName("streamSplitter")
        splitter.addWidget(self.view)
        splitter.addWidget(lower)
        splitter.setStretchFactor(0, 5)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([520, 110])
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(3, 3, 3, 3)
        layout.setSpacing(3)
        layout.addWidget(self.banner)
        layout.addWidget(self.header)
        layout.addWidget(self.wait)
        layout.addWidget(self.error)
        layout.addWidget(self.find_bar)
        layout.addWidget(splitter, 1)
        self._layout = layout
        return page

    def add_panel(self, panel: QWidget) -> None:
        """A panel about the shown session (e.g. its open question), under the header."""
        self._layout.insertWidget(self._layout.indexOf(self.error), panel)

    def add_footer(self, panel: QWidget) -> None:
        """A panel under the stream (the composer)."""
        self._layout.addWidget(panel)

    def row_menu(self, pos: QPoint) -> QMenu:
        """The context menu of the row at ``pos`` (the view's viewport coordinates)."""
        menu = QMenu(self)
        menu.setObjectName("streamRowMenu")
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        index = self.view.indexAt(pos)
        record_id = index.data(StreamViewModel.RecordIdRole) if index.isValid() else None
        session_id = self.vm.session_id
        fork = menu.addAction("Fork from here…")
        fork.setObjectName("forkFromHere")
        fork.setToolTip("A new session in a new worktree at this point, carrying the "
                        "conversation up to here where the runtime can")
        fork.setEnabled(record_id is not None and session_id is not None)
        if record_id is not None and session_id is not None:
            fork.triggered.connect(lambda: self.forkRequested.emit(session_id, int(record_id)))
        return menu

    # -- binding ------------------------------------------------------------------------

    def refresh_header(self) -> None:
        vm = self.vm
        self.pages.setCurrentIndex(0 if vm.session_id is None else 1)
        row = vm.session
        self.header.set_task(row.task if row else "")
        self.meta.set_line(meta_text(vm))
        self.usage.set_line(usage_text(vm))
        self.banner.setVisible(vm.simulated)
        self.stop_button.setEnabled(vm.can_stop)
        finished = row is not None and row.state in FINAL_STATES and not vm.loading
        self.end_bar.setVisible(finished)
        if finished and row is not None:
            self.end_label.set_line(f"Session {end_state(row.state, row.refused_calls)}"
                                   " — next:")
        waiting = row is not None and row.state == "waiting" and row.wait_until is not None
        self.wait.setVisible(waiting)
        if waiting:
            self._show_wait()
            if not self._ticker.isActive():
                self._ticker.start()
        else:
            self._ticker.stop()

    @property
    def ticking(self) -> bool:
        """Whether the wait countdown is ticking."""
        return self._ticker.isActive()

    def _show_wait(self) -> None:
        row = self.vm.session
        if row is not None and row.wait_until is not None:
            self.wait.setText(wait_line(row.wait_until, utcnow()))

    def show_error(self, message: str, hint: str = "") -> None:
        """Show an error about this panel's session in place."""
        self.error.show_error(message, hint)

    def _on_reset(self) -> None:
        self.error.hide()
        self.detail.clear()
        self.found.clear()

    def focus_search(self) -> None:
        """The search box, its text selected to type over (Ctrl+F)."""
        self.search.setFocus()
        self.search.selectAll()

    def find_next(self, forward: bool = True, fresh: bool = False) -> bool:
        """Go to the next (or previous) row holding the search text; say how many do.
        ``fresh`` (the text changed): from the top (or the bottom)."""
        self._search_timer.stop()
        if fresh:
            self.view.clearSelection()
            self.view.setCurrentIndex(self.vm.index(-1, 0))
        text = self.search.text()
        hit = self.view.find_text(text, forward)
        count = self.view.matches()
        self.found.setText("" if not text.strip() else
                           f"{count} row{'' if count == 1 else 's'}" if hit else "not found")
        return hit

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = selected.indexes()
        text = indexes[0].data(StreamViewModel.TextRole) if indexes else ""
        self.detail.setPlainText(str(text or ""))
