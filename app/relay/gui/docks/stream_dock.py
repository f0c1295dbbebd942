"""StreamDock: the live agent stream of the selected session.

A header (task, runtime, model, permission policy, state, usage and cost), a
SIMULATION banner for scripted demo sessions, the countdown of a session waiting
for a limit's reset (ticking once a second), a Stop button, the event list
(:class:`~relay.gui.docks.stream_view.StreamView`: tool results nested under
their call, foldable; it follows the bottom; Esc asks to interrupt the turn), a detail pane
for the selected row and, under them, the composer (:meth:`StreamDock.add_footer`). A row's
context menu offers "Fork from here…" (:attr:`StreamDock.forkRequested`).
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelection, QPoint, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QGridLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from relay.core.events import utcnow
from relay.core.present import SIMULATION_LABEL, end_state, fmt_cost, fmt_tokens
from relay.gui import theme
from relay.gui.docks.parts import PlainLabel, detail_view, empty_or_content
from relay.gui.docks.stream_view import StreamView
from relay.gui.event_text import plain_tooltip
from relay.gui.handoff_text import wait_line
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.stream import StreamViewModel

EMPTY_TEXT = "Select a session on the left, or start one with File → New session…"


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

    def __init__(self, vm: StreamViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Live stream", parent)
        self.setObjectName("streamDock")
        self.vm = vm
        self.banner = QLabel(SIMULATION_LABEL)
        self.banner.setObjectName("simulationBanner")
        theme.style(self.banner, "$SIMULATION_BANNER_CSS")
        self.banner.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title = QLabel()
        self.title.setObjectName("streamTitle")
        self.title.setTextFormat(Qt.TextFormat.PlainText)
        self.title.setStyleSheet("font-weight: bold; font-size: 14px;")
        self.title.setWordWrap(True)
        self.meta = PlainLabel()
        self.meta.setObjectName("streamMeta")
        self.meta.setWordWrap(True)
        self.usage = QLabel()
        self.usage.setObjectName("streamUsage")
        self.usage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setToolTip("Stop this session (the agent process tree is ended)")
        self.wait = QLabel()
        self.wait.setObjectName("streamWait")
        theme.style(self.wait, "$WAIT_LABEL_CSS")
        self.wait.setWordWrap(True)
        self.wait.hide()
        self._ticker = QTimer(self)
        self._ticker.setInterval(1000)
        self._ticker.timeout.connect(self._show_wait)
        self.error = ErrorBanner("streamError")
        self.view = self._make_view()
        self.detail = detail_view("streamDetail", "Select a row to read it in full.")
        self.pages, self.empty = empty_or_content(EMPTY_TEXT, "streamEmpty", self._content())
        self.setWidget(self.pages)
        self.stop_button.clicked.connect(self.stopRequested)
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

    def _content(self) -> QWidget:
        header = QFrame()
        header.setObjectName("streamHeader")
        theme.style(header, "$HEADER_CSS")
        grid = QGridLayout(header)
        grid.setContentsMargins(10, 8, 10, 8)
        grid.addWidget(self.title, 0, 0)
        grid.addWidget(self.stop_button, 0, 1, 2, 1, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.meta, 1, 0)
        grid.addWidget(self.usage, 2, 0, 1, 2)
        grid.setColumnStretch(0, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.view)
        splitter.addWidget(self.detail)
        splitter.setStretchFactor(0, 5)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([520, 110])
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.banner)
        layout.addWidget(header)
        layout.addWidget(self.wait)
        layout.addWidget(self.error)
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
        self.title.setText(row.task if row else "")
        self.title.setToolTip(plain_tooltip(row.task) if row else "")
        self.meta.setText(meta_text(vm))
        self.usage.setText(usage_text(vm))
        self.banner.setVisible(vm.simulated)
        self.stop_button.setEnabled(vm.can_stop)
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

    def _on_selection(self, selected: QItemSelection, _deselected: QItemSelection) -> None:
        indexes = selected.indexes()
        text = indexes[0].data(StreamViewModel.TextRole) if indexes else ""
        self.detail.setPlainText(str(text or ""))
