"""WalletDock: every account as a card — its windows as bars, costs, budgets, actions.

Top: "Add account…", "Rescan transcripts" with a progress bar while the index
refreshes, and an error (message and hint) in place. Below, one card per
account: its label, provider and auth kind with preferred / paused badges; per
limit window a bar with the part used (solid) and projected at the reset
(lighter), the reset countdown, where the figure came from and how sure the
forecast is; burn rate, cost today and this week, budgets, an open circuit
breaker; the plots (:mod:`relay.gui.wallet_charts`: each window's course with its limit,
reset and forecast, the burn, the cost per day with the budget — Qt Charts, imported the
first time a card's plots come into sight, and fed only while they are in sight); and the
actions (Test, Log in, Set as preferred, Pause/Resume, Edit, Remove, Plots). All text comes
from :mod:`relay.wallet.present`; the widgets only show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QHideEvent, QPainter, QPaintEvent, QPen, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from relay.core.accounts import PROVIDERS
from relay.engine.account_check import COST_NOTE
from relay.gui import theme
from relay.gui.account_dialog import AccountDialog
from relay.gui.docks.parts import empty_or_content, show_now
from relay.gui.fit import ElidedLabel, set_shown, tool_row
from relay.gui.messages import ErrorBanner
from relay.gui.viewmodels.wallet import Note, WalletViewModel
from relay.gui.wallet_backend import AccountForm
from relay.wallet import present as text
from relay.wallet.model import AccountHistory, AccountView, WindowKind, WindowView

if TYPE_CHECKING:  # imported when first shown (QtCharts costs start-up time)
    from relay.gui.wallet_charts import AccountPlots

EMPTY_TEXT = ("No accounts yet.\nAdd one to see how much of each limit is left, "
              "when it resets and what it costs.")
LOADING_TEXT = "Reading the wallet…"
_WIDEST_FIGURES = "100% used"

# Colours are relay.gui.theme roles, looked up when painted or styled (light or dark).
#: (solid, light) colour roles of a bar per level (see relay.wallet.present.level)
BAR_COLOURS = {
    "ok": ("BAR_OK", "BAR_OK_LIGHT"), "warn": ("BAR_WARN", "BAR_WARN_LIGHT"),
    "over": ("BAR_OVER", "BAR_OVER_LIGHT"), "unknown": ("BAR_UNKNOWN", "BAR_UNKNOWN_LIGHT"),
}
BUDGET_COLOURS = {"ok": "OK", "warn": "WARNING", "over": "ERROR"}
ACTION_CSS = ("QToolButton { color: $TEXT; border: 1px solid $BORDER; border-radius: 4px;"
              " padding: 2px 8px; background: $BUTTON; }"
              " QToolButton:hover { background: $NEUTRAL_BG; }"
              " QToolButton:disabled { color: $DISABLED_TEXT; }"
              " QToolButton::menu-indicator { image: none; width: 0; }")


class WindowBar(QWidget):
    """A limit window's bar: used (solid) over projected at the reset (lighter)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("walletWindowBar")
        self.used: float | None = None
        self.projected: float | None = None
        self.level = "unknown"
        self.watermark = 1.0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(160, 12)

    def minimumSizeHint(self) -> QSize:
        return QSize(60, 12)

    def set_values(self, used: float | None, projected: float | None, level: str,
                   watermark: float) -> None:
        self.used, self.projected, self.level, self.watermark = used, projected, level, watermark
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        solid, light = (theme.colour(c) for c in BAR_COLOURS[self.level])
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.setBrush(theme.colour("BAR_TRACK"))
        painter.drawRoundedRect(rect, 4, 4)
        for value, colour in ((self.projected, light), (self.used, solid)):
            if value is not None and value > 0:
                part = QRectF(rect)
                part.setWidth(max(rect.width() * min(value, 1.0), 2.0))
                painter.setBrush(colour)
                painter.drawRoundedRect(part, 4, 4)
        if 0 < self.watermark < 1 and self.level != "unknown":  # where a handoff comes early
            x = rect.left() + rect.width() * self.watermark
            painter.setPen(QPen(QColor(theme.MUTED), 1, Qt.PenStyle.DotLine))
            painter.drawLine(int(x), int(rect.top()), int(x), int(rect.bottom()))
        painter.end()


class _WindowRow:
    """The widgets of one window in a card's grid (three columns, two lines)."""

    def __init__(self, grid: QGridLayout, line: int) -> None:
        self.title = _label("walletWindowTitle", bold=True)
        self.bar = WindowBar()
        self.figures = _label("walletWindowFigures")
        # the same width in every card, so that the bars line up
        self.figures.setMinimumWidth(self.figures.fontMetrics().horizontalAdvance(_WIDEST_FIGURES))
        self.detail = _label("walletWindowDetail", muted=True)
        self.detail.setWordWrap(True)
        grid.addWidget(self.title, line, 0)
        grid.addWidget(self.bar, line, 1)
        grid.addWidget(self.figures, line, 2)
        grid.addWidget(self.detail, line + 1, 1, 1, 2)
        for widget in self.widgets():
            show_now(widget)

    def show(self, window: WindowView, now_ms: int, watermark: float) -> None:
        self.title.setText(text.WINDOW_TITLES[window.kind])
        self.bar.set_values(window.used.value, window.projected.value,
                            text.level(window, watermark), watermark)
        self.figures.setText(text.used_text(window))
        self.detail.setText(text.window_detail(window, now_ms))
        tip = "\n".join(t for t in (window.why, window.used.detail,
                                    f"tokens in the window: {text.tokens(window.tokens.value)}")
                        if t)
        for widget in (self.bar, self.figures, self.detail):
            widget.setToolTip(tip)

    def widgets(self) -> tuple[QWidget, ...]:
        return self.title, self.bar, self.figures, self.detail


class AccountCard(QFrame):
    """One account: header, actions, windows, figures, budgets, plots, breaker and note.

    Signals:
        plotsWanted(bool): the card's plots came into sight (True) or left it (False).
    """

    plotsWanted = Signal(bool)

    def __init__(self, entry: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.entry = entry
        self.plots: AccountPlots | None = None  # built with the first series
        self.plot_box = QVBoxLayout()
        self.plot_box.setContentsMargins(0, 0, 0, 0)
        self.plots_button = _action("Plots", "Show or hide this account's plots: each limit "
                                             "window's course, the burn and the cost per day")
        self.plots_button.setCheckable(True)
        self.plots_button.setChecked(True)
        self.plots_button.toggled.connect(self._toggle_plots)
        self.setObjectName("walletCard")
        theme.style(self, "$CARD_CSS")
        self.title = _label("walletAccountTitle", bold=True)
        self.subtitle = _label("walletAccountSubtitle", muted=True)
        self.preferred_badge = _badge("preferred", "ok")
        self.paused_badge = _badge("paused", "warning")
        self.test_button = _action("Test", f"Does this account answer? {COST_NOTE}")
        self.login_button = _action("Log in", "Open the CLI's login for this account's folder "
                                              "in a terminal")
        self.prefer_button = _action("Set as preferred",
                                     "Start new work on this account first")
        self.pause_button = _action("Pause", "")
        self.more_button = _action("⋯", "Edit or remove this account")
        self.more_button.setObjectName("walletAction_more")
        self.more_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more_menu = QMenu(self.more_button)
        self.edit_action = self.more_menu.addAction("Edit…")
        self.edit_action.setToolTip("Change the label, folder, auth kind or key")
        self.remove_action = self.more_menu.addAction("Remove…")
        self.remove_action.setToolTip("Forget this account (its folder is left as is)")
        self.more_button.setMenu(self.more_menu)
        self.register_button = _action("Register as an account…",
                                       "Give this provider's login a label and a folder of its "
                                       "own, to test, prefer or pause it")
        self.windows = QGridLayout()
        self.windows.setHorizontalSpacing(8)
        self.windows.setVerticalSpacing(1)
        self.windows.setColumnStretch(1, 1)
        self.window_rows: dict[WindowKind, _WindowRow] = {}
        self.no_windows = _label("walletNoWindows", muted=True)
        self.no_windows.setText(f"No limit window known yet {text.UNKNOWN} run a session or "
                                "rescan the transcripts.")
        self.figures = _label("walletFigures")
        self.figures.setWordWrap(True)
        self.budgets = _label("walletBudgets")
        self.budgets.setWordWrap(True)
        self.breaker = _label("walletBreaker")
        theme.style(self.breaker, "QLabel { color: $ERROR; font-weight: bold; }")
        self.breaker.setWordWrap(True)
        self.warnings = _label("walletWarnings", muted=True)
        self.note = _label("walletNote")
        self.note.setWordWrap(True)
        self.command = _label("walletCommand")
        theme.style(self.command, "$CODE_LABEL_CSS")
        self.command.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.command.setWordWrap(True)
        self._layout()

    def _layout(self) -> None:
        head = QHBoxLayout()
        head.setSpacing(6)
        head.addWidget(self.title)
        head.addWidget(self.subtitle)
        head.addWidget(self.preferred_badge)
        head.addWidget(self.paused_badge)
        head.addStretch(1)
        # the card's buttons overflow into a menu (») on a narrow screen (issue 23)
        actions = tool_row(self.test_button, self.login_button, self.prefer_button,
                           self.pause_button, self.more_button, self.register_button,
                           self.plots_button, name="walletCardActions")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addLayout(self.windows)
        for widget in (self.no_windows, self.figures, self.budgets, self.breaker,
                       self.warnings, self.note, self.command):
            layout.addWidget(widget)
        layout.addLayout(self.plot_box)
        layout.addWidget(actions)

    # -- plots --------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self.plots_button.isChecked():
            self.plotsWanted.emit(True)

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self.plotsWanted.emit(False)

    def _toggle_plots(self, shown: bool) -> None:
        if self.plots is not None:
            self.plots.setVisible(shown)
        self.plotsWanted.emit(shown and self.isVisible())

    def show_history(self, account: AccountView, history: AccountHistory) -> None:
        """Draw the account's series (the first time: build the plots, importing QtCharts)."""
        if self.plots is None:
            from relay.gui.wallet_charts import AccountPlots

            self.plots = AccountPlots()
            self.plot_box.addWidget(self.plots)
            self.plots.setVisible(self.plots_button.isChecked())
        self.plots.show_history(account, history)

    def show_account(self, account: AccountView, note: Note | None, busy: bool,
                     registered: bool, now_ms: int, watermark: float) -> None:
        self.title.setText(text.account_title(account))
        self.subtitle.setText(text.account_subtitle(account, registered))
        self.subtitle.setToolTip(f"{account.entry}\nfolder: {account.config_dir or 'the CLI default'}")
        self.preferred_badge.setVisible(account.preferred)
        self.paused_badge.setVisible(account.paused)
        self._show_windows(account.windows, now_ms, watermark)
        self.figures.setText(" · ".join((f"Burn {text.burn(account.burn_tpm)}",
                                         f"Today {text.cost(account.cost_today)}",
                                         f"This week {text.cost(account.cost_week)}")))
        self.figures.setToolTip("\n".join(
            f"{name}: {figure.detail}" for name, figure in (
                ("Burn", account.burn_tpm), ("Today", account.cost_today),
                ("This week", account.cost_week)) if figure.detail))
        self._show_budgets(account)
        self._show_breaker(account)
        self.warnings.setText(f"{account.warnings} transcript line(s) skipped in the last scan "
                              "(see the log)")
        self.warnings.setVisible(account.warnings > 0)
        self._show_note(note)
        self._show_actions(account, busy, registered)

    def _show_actions(self, account: AccountView, busy: bool, registered: bool) -> None:
        for widget in (self.test_button, self.login_button, self.prefer_button,
                       self.pause_button, self.more_button):
            set_shown(widget, registered)
        set_shown(self.register_button, not registered and account.provider in PROVIDERS)
        for widget in (self.test_button, self.pause_button, self.more_button):
            widget.setEnabled(not busy)
        self.login_button.setEnabled(not busy and account.auth_kind != "api_key")
        self.prefer_button.setEnabled(not busy and not account.preferred)
        self.pause_button.setText("Resume" if account.paused else "Pause")
        self.pause_button.setToolTip("Let new work go to this account again" if account.paused
                                     else "Send no new work to this account until resumed")

    def _show_windows(self, windows: list[WindowView], now_ms: int, watermark: float) -> None:
        kinds = [w.kind for w in windows]
        if kinds != list(self.window_rows):
            for row in self.window_rows.values():
                for widget in row.widgets():
                    widget.deleteLater()
            self.window_rows = {}
            for i, kind in enumerate(kinds):
                self.window_rows[kind] = _WindowRow(self.windows, 2 * i)
        for window in windows:
            self.window_rows[window.kind].show(window, now_ms, watermark)
        self.no_windows.setVisible(not windows)

    def _show_budgets(self, account: AccountView) -> None:
        parts = [f"<span style='color:{getattr(theme, BUDGET_COLOURS[b.state])}'>{b.scope} "
                 f"{text.money(b.spent_usd)} of {text.money(b.limit_usd)} · {b.state}</span>"
                 for b in account.budgets]
        self.budgets.setText("Budget: " + " &nbsp; ".join(parts))
        self.budgets.setToolTip("Warns at 80 %, stops new work at 100 % (calls already under "
                                "way can go past it).")
        self.budgets.setVisible(bool(parts))

    def _show_breaker(self, account: AccountView) -> None:
        until = account.breaker_until_ms
        self.breaker.setVisible(until is not None)
        if until is not None:
            why = f" — {account.breaker_reason}" if account.breaker_reason else ""
            self.breaker.setText(f"Circuit breaker open until {text.clock_ms(until)}{why}")

    def _show_note(self, note: Note | None) -> None:
        self.note.setVisible(note is not None)
        self.command.setVisible(note is not None and bool(note.command))
        if note is not None:
            self.note.setText(note.text)
            theme.style(self.note, f"$NOTE_CSS.{note.tone}")
            self.command.setText(note.command)


class WalletDock(QDockWidget):
    """Binds a :class:`WalletViewModel`: one :class:`AccountCard` per account."""

    def __init__(self, vm: WalletViewModel, parent: QWidget | None = None) -> None:
        super().__init__("Wallet", parent)
        self.setObjectName("walletDock")
        self.vm = vm
        self.cards: dict[str, AccountCard] = {}
        self.dialog: AccountDialog | None = None
        self.confirm: QMessageBox | None = None
        self._build_controls()
        self.cards_box = QVBoxLayout()
        self.cards_box.setSpacing(8)
        self.pages, self.empty = empty_or_content(LOADING_TEXT, "walletEmpty", self._scroller())
        self.setWidget(self._content())
        vm.modelReset.connect(self._rebuild)
        vm.dataChanged.connect(self._on_data_changed)
        vm.changed.connect(self.refresh)
        vm.scanChanged.connect(self._show_scan)
        vm.historyChanged.connect(self._show_history)
        self._rebuild()
        self._show_scan()

    # -- building -----------------------------------------------------------------------

    def _build_controls(self) -> None:
        self.add_button = QPushButton("Add account…")
        self.add_button.setObjectName("walletAddButton")
        self.add_button.clicked.connect(lambda: self.open_account_dialog())
        self.rescan_button = QPushButton("Rescan transcripts")
        self.rescan_button.setObjectName("walletRescanButton")
        self.rescan_button.setToolTip("Read what the CLIs wrote to their transcripts since the "
                                      "last scan (runs in the background)")
        self.rescan_button.clicked.connect(self.vm.rescan)
        self.progress = QProgressBar()
        self.progress.setObjectName("walletScanProgress")
        self.progress.setMaximumHeight(14)
        self.progress.setTextVisible(False)
        self.scan_label = _label("walletScanLabel", muted=True, elided=True)
        self.error = ErrorBanner("walletError")

    def _scroller(self) -> QScrollArea:
        inner = QWidget()
        inner.setObjectName("walletCards")
        box = QVBoxLayout(inner)
        box.setContentsMargins(0, 0, 4, 0)
        box.addLayout(self.cards_box)
        box.addStretch(1)
        scroll = QScrollArea()
        scroll.setObjectName("walletScroll")
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # cards wrap
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(inner)
        return scroll

    def _content(self) -> QWidget:
        controls = QHBoxLayout()
        controls.addWidget(self.add_button)
        controls.addWidget(self.rescan_button)
        controls.addWidget(self.progress, 1)
        controls.addWidget(self.scan_label, 1)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(controls)
        layout.addWidget(self.error)
        layout.addWidget(self.pages, 1)
        return page

    # -- intents ------------------------------------------------------------------------

    def open_account_dialog(self, entry: str | None = None,
                            provider: str | None = None) -> AccountDialog:
        """Open (non-blocking) the dialog to add an account (of ``provider``), or to edit
        ``entry``."""
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.close()
        account = self.vm.account(entry) if entry else None
        dialog = AccountDialog(self, account, provider=provider)
        dialog.formAccepted.connect(self._saved)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _saved(self, form: AccountForm) -> None:
        self.error.hide()
        self.vm.save(form)

    def _register(self, entry: str) -> None:
        provider, _, label = entry.partition(":")
        dialog = self.open_account_dialog(provider=provider)
        dialog.label.setText(label)

    def confirm_remove(self, entry: str) -> QMessageBox:
        """Ask before forgetting an account (non-blocking); Yes removes it."""
        box = QMessageBox(QMessageBox.Icon.Question, "Remove account",
                          f"Forget the account {entry}?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                          self)
        box.setObjectName("walletConfirmRemove")
        box.setInformativeText("Relay stops using it. Its CLI folder and its login are left "
                               "as they are; a stored API key is deleted from the keyring.")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.accepted.connect(lambda: self._act(self.vm.remove, entry))
        self.confirm = box
        box.open()
        return box

    def show_error(self, message: str, hint: str = "") -> None:
        """Show a wallet error (message and hint) in place."""
        self.error.show_error(message, hint)

    def _act(self, action: Callable[[str], None], entry: str) -> None:
        self.error.hide()
        action(entry)

    # -- binding ------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """One card per account, in the view-model's order; a card stays while its account does."""
        entries = [account.entry for account in self.vm.accounts()]
        for entry in [e for e in self.cards if e not in entries]:
            self.vm.set_plotted(entry, False)
            self.cards.pop(entry).deleteLater()
        for position, entry in enumerate(entries):
            card = self.cards.get(entry)
            if card is None:
                card = self.cards[entry] = AccountCard(entry)
                self._connect(card)
            else:
                self.cards_box.removeWidget(card)
            self.cards_box.insertWidget(position, card)
            show_now(card)
        self.cards = {entry: self.cards[entry] for entry in entries}
        self.refresh()

    def _connect(self, card: AccountCard) -> None:
        entry, vm = card.entry, self.vm
        card.test_button.clicked.connect(lambda: self._act(vm.test, entry))
        card.login_button.clicked.connect(lambda: self._act(vm.log_in, entry))
        card.prefer_button.clicked.connect(lambda: self._act(vm.set_preferred, entry))
        card.pause_button.clicked.connect(lambda: self._act(vm.toggle_paused, entry))
        card.edit_action.triggered.connect(lambda: self.open_account_dialog(entry))
        card.remove_action.triggered.connect(lambda: self.confirm_remove(entry))
        card.register_button.clicked.connect(lambda: self._register(entry))
        card.plotsWanted.connect(lambda shown: vm.set_plotted(entry, shown))

    def _on_data_changed(self, top: QModelIndex | QPersistentModelIndex,
                         bottom: QModelIndex | QPersistentModelIndex) -> None:
        for row in range(top.row(), bottom.row() + 1):
            self._show_row(row)

    def refresh(self) -> None:
        """Re-render every card (the countdowns and ages move with the clock)."""
        vm = self.vm
        self.empty.setText(EMPTY_TEXT if vm.loaded else LOADING_TEXT)
        self.pages.setCurrentIndex(1 if vm.rowCount() else 0)
        for row in range(vm.rowCount()):
            self._show_row(row)

    def _show_row(self, row: int) -> None:
        account = self.vm.index(row).data(WalletViewModel.AccountRole)
        card = self.cards.get(account.entry) if isinstance(account, AccountView) else None
        if card is not None and isinstance(account, AccountView):
            entry = account.entry
            card.show_account(account, self.vm.note(entry), self.vm.is_busy(entry),
                              self.vm.is_registered(entry), self.vm.now_ms(), self.vm.watermark)

    def _show_history(self, entry: str) -> None:
        card, account, history = self.cards.get(entry), self.vm.account(entry), \
            self.vm.history(entry)
        if card is not None and account is not None and history is not None:
            card.show_history(account, history)

    def _show_scan(self) -> None:
        scan = self.vm.scan
        self.rescan_button.setEnabled(not scan.running)
        self.progress.setVisible(scan.running)
        if scan.running:
            self.progress.setRange(0, max(scan.total, 0))  # total 0: a busy indicator
            self.progress.setValue(scan.done)
        self.scan_label.setText(text.scan_progress(scan.done, scan.total) if scan.running
                                else scan.message)


def _label(name: str, *, bold: bool = False, muted: bool = False,
           elided: bool = False) -> QLabel:
    label = ElidedLabel() if elided else QLabel()
    label.setObjectName(name)
    css = (["font-weight: bold;"] if bold else []) + (["color: $MUTED;"] if muted else [])
    if css:
        theme.style(label, f"QLabel {{ {' '.join(css)} }}")
    return label


def _badge(text_: str, tone: str) -> QLabel:
    badge = QLabel(text_)
    badge.setObjectName(f"walletBadge_{text_}")
    theme.style(badge, f"$BADGE_CSS.{tone}")
    return badge


def _action(text_: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setObjectName(f"walletAction_{text_.replace(' ', '_')}")
    button.setText(text_)
    button.setToolTip(tip)
    theme.style(button, ACTION_CSS)
    return button
