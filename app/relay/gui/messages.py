"""The one way any part of the window shows an error or a passing message.

:class:`Messages` belongs to the main window; the shell hands it to whoever needs it (it is
never imported from the shell). ``error(source, text, hint)`` is said in the panel the
``source`` names — whatever that panel registered, usually its :class:`ErrorBanner` — and in
the status bar; ``notice(text)`` passes through the status bar. Both are scrubbed of secrets
first, and errors are logged, so every error looks and is recorded the same way.
:class:`StatusBarPresenter` is the status bar's side.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QStatusBar, QWidget

from relay.gui import theme

log = logging.getLogger(__name__)

#: how long an error or a notice stays in the status bar
STATUS_MS = 15_000

#: a panel's way to show an error in place: (text, hint)
PanelPresenter = Callable[[str, str], None]


def error_text(text: str, hint: str = "") -> str:
    """An error as every panel writes it: the message, and the hint on its own line."""
    return text + (f"\n→ {hint}" if hint else "")


class Messages(QObject):
    """Errors and passing messages for the whole window.

    Signals:
        errorShown(str, str, str): source, text, hint (scrubbed).
        noticeShown(str): a passing message (scrubbed).
    """

    errorShown = Signal(str, str, str)
    noticeShown = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._panels: dict[str, PanelPresenter] = {}

    def register(self, source: str, show: PanelPresenter) -> None:
        """Errors from ``source`` are also shown by ``show`` (the panel concerned)."""
        self._panels[source] = show

    def error(self, source: str, text: str, hint: str = "") -> None:
        """Show an error in the panel ``source`` names (if it registered) and the status bar."""
        from relay.core.redact import scrub  # with the first message: not before the first paint

        text, hint = scrub(text), scrub(hint)
        log.warning("%s: %s", source, error_text(text, hint).replace("\n", " "))
        show = self._panels.get(source)
        if show is not None:
            show(text, hint)
        self.errorShown.emit(source, text, hint)

    def notice(self, text: str) -> None:
        """A passing message (it fades after a while)."""
        from relay.core.redact import scrub

        self.noticeShown.emit(scrub(text))


class ErrorBanner(QLabel):
    """A panel's in-place error: red, wrapped, selectable, hidden until there is one."""

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        theme.style(self, "$ERROR_LABEL_CSS")
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hide()

    def show_error(self, text: str, hint: str = "") -> None:
        self.setText(error_text(text, hint))
        self.show()


class StatusBarPresenter(QObject):
    """Shows a window's :class:`Messages` in its status bar: errors in red, notices plain;
    each fades after :attr:`timeout_ms` (:data:`STATUS_MS`)."""

    def __init__(self, messages: Messages, bar: QStatusBar) -> None:
        super().__init__(bar)
        self.bar = bar
        self.timeout_ms = STATUS_MS
        self.error_label = QLabel()
        self.error_label.setObjectName("statusError")
        theme.style(self.error_label, "color: $ERROR;")
        bar.addWidget(self.error_label, 1)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.error_label.clear)
        messages.errorShown.connect(self.show_error)
        messages.noticeShown.connect(self.show_notice)

    def show_error(self, source: str, text: str, hint: str) -> None:
        line = f"{text}  → {hint}" if hint else text
        self.error_label.setText(line.replace("\n", " "))
        self.error_label.setToolTip(f"[{source}] {line}")
        self._timer.start(self.timeout_ms)

    def show_notice(self, text: str) -> None:
        self.bar.showMessage(text, self.timeout_ms)
