"""Where the window takes the user: a session's stream, its History, its composer, the
Handoff panel, a detected session — the shell's moves between panels, in one place.

:class:`Navigation` is a mixin of :class:`relay.gui.shell.RelayShell`: it uses the shell's
view-models and docks, which the shell builds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from relay.gui.composer import ComposerPanel
    from relay.gui.docks.detect_dock import DetectDock
    from relay.gui.docks.handoff_dock import HandoffDock
    from relay.gui.docks.history_dock import HistoryDock
    from relay.gui.docks.sessions_dock import SessionsDock
    from relay.gui.docks.stream_dock import StreamDock
    from relay.gui.viewmodels.composer import ComposerViewModel
    from relay.gui.viewmodels.handoffs import HandoffsViewModel
    from relay.gui.viewmodels.history import HistoryViewModel
    from relay.gui.viewmodels.sessions import SessionsViewModel
    from relay.gui.viewmodels.stream import StreamViewModel


class Navigation:
    """The shell's moves between panels (see the module's docstring)."""

    if TYPE_CHECKING:
        sessions_vm: SessionsViewModel
        sessions_dock: SessionsDock
        stream_vm: StreamViewModel
        stream_dock: StreamDock
        composer_vm: ComposerViewModel
        composer: ComposerPanel
        history_vm: HistoryViewModel
        history_dock: HistoryDock
        handoffs_vm: HandoffsViewModel
        handoff_dock: HandoffDock
        detect_dock: DetectDock
        _focus_for: str | None

        def show(self) -> None: ...

    def show_session(self, session_id: str) -> None:
        """Select ``session_id`` in the list and show it in the stream and Handoff panels."""
        self.sessions_dock.select(session_id)
        self.stream_vm.load(session_id)

    def show_pipeline_session(self, session_id: str) -> None:
        """A session the stream should show: a pipeline step's (a click on its node), or one
        that asks something (a click on the tray's "needs your input")."""
        self.show()
        self.sessions_vm.refresh()
        self.show_session(session_id)
        self.stream_dock.show()
        self.stream_dock.raise_()

    def show_continued(self, session_id: str) -> None:
        """A session "Continue from here" started: select it; History keeps showing."""
        self.sessions_vm.refresh()
        self.show_session(session_id)

    def show_history(self, session_id: str) -> None:
        """Show ``session_id`` with the History dock (its diff, its stints) in front."""
        self.show_session(session_id)
        self.show_diff()

    def continue_in_composer(self, session_id: str) -> None:
        """Show ``session_id`` in the stream with the composer focused to write to it."""
        self._focus_for = session_id
        self.show_pipeline_session(session_id)
        self._focus_composer()

    def _focus_composer(self) -> None:
        if self._focus_for is not None and self._focus_for == self.composer_vm.session_id \
                and self.composer.isEnabled():
            self._focus_for = None
            self.composer.text.setFocus()

    def show_diff(self) -> None:
        """The History panel in front, on the shown session's whole diff."""
        self.history_dock.show()
        self.history_dock.raise_()
        self.history_dock.select_key("session")

    def ask_merge(self) -> None:
        """History's Finish… for the shown session: what it changed, then merge or keep."""
        self.show_diff()
        self.history_vm.ask_finish()

    def show_detected(self, detected_id: str) -> None:
        """Raise the Detect dock with ``detected_id`` selected (a tray notification's click)."""
        self.show()
        self.detect_dock.show()
        self.detect_dock.raise_()
        self.detect_dock.select(detected_id)

    def hand_off_now(self, session_id: str) -> None:
        """Hand ``session_id`` off to the next entry of its chain (the context menu)."""
        self.show_session(session_id)
        self.handoff_dock.raise_()
        self.handoffs_vm.request_handoff(None, session_id)

    def hand_off_to(self, session_id: str) -> None:
        """Show ``session_id`` with the Handoff panel's target field ready to type in."""
        self.show_session(session_id)
        self.handoff_dock.focus_target()
