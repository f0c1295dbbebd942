"""The welcome: which agent CLIs were found, how to install the rest, the demo, an account.

Shown once, on a machine with no data folder, and again from Help ▸ Welcome…. One screen:
what was found (with versions) first; for each of the rest the one command that installs it
(the runtime's own install hint, the one ``relay-cli doctor`` prints) with a Copy button, or
"Add key…" for an HTTP API that needs an account's key. The list scrolls, so every runtime
is on it at any window size. A missing CLI is information, not a failure. The dialog is
non-modal and holds no logic: it emits what the user chose.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from relay.gui import theme
from relay.runtimes.base import RuntimeInfo

ACCOUNT_HINT = ("<b>Your accounts.</b> To hand tasks between your own accounts, add each "
                "CLI configuration folder (or API key) as an account — <i>Add an account…</i> "
                "below, or <code>relay-cli accounts add claude work --config-dir "
                "~/.claude-work</code> — then chain them in a new session "
                "(<i>Then hand off to: claude:work, codex</i>).")
NONE_FOUND = ("No agent CLI is installed yet: <b>Try the demo</b> shows the whole loop with a "
              "scripted, clearly labelled SIMULATION.")
#: an HTTP API runtime's version in its info (it needs a key, not an install)
HTTP_API = "HTTP API"
#: the runtime whose accounts hold another's key (openai-chat uses openai's)
KEY_PROVIDER = {"openai-chat": "openai"}

_QUOTED = re.compile(r"`([^`]+)`")
_AFTER_COLON = re.compile(r":\s+(.+?)(?:\s+—|\s+\(|,\s+or\s|\.?$)")


def install_command(hint: str | None) -> str | None:
    """The command in a runtime's install hint ("Install Codex: npm install -g @openai/codex
    — or set …" → "npm install -g @openai/codex"; "Start it (`ollama serve`) …" → "ollama
    serve"), or None when it names none."""
    if not hint:
        return None
    found = _QUOTED.search(hint) or _AFTER_COLON.search(hint)
    return found.group(1).strip() if found else None


def kind(info: RuntimeInfo) -> str:
    """"found", "checking" (not probed yet), "key" (an HTTP API without a key) or
    "missing"."""
    if info.problem is None and (info.version or info.executable):
        return "found"
    if info.problem is None:
        return "checking"
    return "key" if info.version == HTTP_API else "missing"


class WelcomeDialog(QDialog):
    """Say hello; show what is installed and how to get the rest; offer the demo.

    Signals:
        demoRequested(), newSessionRequested(), accountRequested(str): add an account (of
        that provider, or "" to choose).
    """

    demoRequested = Signal()
    newSessionRequested = Signal()
    accountRequested = Signal(str)

    def __init__(self, infos: Sequence[RuntimeInfo], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomeDialog")
        self.setWindowTitle("Welcome to Relay")
        self.setMinimumWidth(480)
        intro = QLabel("<h3>Welcome to Relay</h3>Relay runs your AI coding agents in their own "
                       "git worktrees and, when one account hits its limit, hands the task to "
                       "the next account or provider — with a snapshot and a signed brief.")
        intro.setWordWrap(True)
        #: the runtimes' rows (rebuilt by :meth:`set_infos`) and what is under them
        self.list_area = QScrollArea()
        self.list_area.setObjectName("welcomeScroll")
        self.list_area.setWidgetResizable(True)
        self.list_area.setFrameShape(QFrame.Shape.NoFrame)
        self.list_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        #: runtime → its row (a QWidget with its name, state and install command)
        self.rows: dict[str, QWidget] = {}
        #: runtime → its install command's Copy button
        self.copy_buttons: dict[str, QPushButton] = {}
        self.none_found = QLabel(NONE_FOUND)
        self.none_found.setObjectName("welcomeNoneFound")
        self.none_found.setWordWrap(True)
        self.demo_button = QPushButton("Try the demo")
        self.demo_button.setObjectName("welcomeDemo")
        self.demo_button.setToolTip("A scripted session (a SIMULATION) in a throwaway "
                                    "repository: it hits a limit and hands off")
        self.demo_button.setDefault(True)
        self.account_button = QPushButton("Add an account…")
        self.account_button.setObjectName("welcomeAccount")
        self.new_button = QPushButton("New session…")
        self.new_button.setObjectName("welcomeNewSession")
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        for button in (self.demo_button, self.account_button, self.new_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.list_area, 1)
        layout.addLayout(buttons)
        self.demo_button.clicked.connect(self._demo)
        self.account_button.clicked.connect(lambda: self._account(""))
        self.new_button.clicked.connect(self._new)
        close.clicked.connect(self.close)
        self._infos: list[RuntimeInfo] = list(infos)
        self._fit()
        self._restyle()
        theme.notifier().changed.connect(self._restyle)

    def _fit(self) -> None:
        """A size that fits the screen: the list scrolls inside it."""
        width, height = 640, 600
        screen = self.screen()
        if screen is not None:
            room = screen.availableGeometry()
            width, height = min(width, room.width() - 40), min(height, room.height() - 60)
        self.resize(width, height)

    def _restyle(self) -> None:
        """The rows are built with the theme's colours of now (again on a theme change)."""
        self.set_infos(self._infos)

    def set_infos(self, infos: Sequence[RuntimeInfo]) -> None:
        """Show ``infos`` (the demo runtime is the button, not a row)."""
        self._infos = [i for i in infos if i.runtime != "demo"]
        self.rows.clear()
        self.copy_buttons.clear()
        self.none_found.setParent(None)  # kept across rebuilds
        page = QWidget()
        page.setObjectName("welcomePage")
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 8, 0)
        groups: dict[str, list[RuntimeInfo]] = {k: [] for k in ("found", "checking", "missing", "key")}
        for info in self._infos:
            groups[kind(info)].append(info)
        sections = (("found", "Found on this machine"), ("checking", "Looking for…"),
                    ("missing", "Not installed (or not running) — copy the command into a "
                                "terminal"),
                    ("key", "HTTP APIs — these need an API key"))
        for key, title in sections:
            if groups[key]:
                column.addWidget(_heading(title))
                column.addWidget(self._section(key, groups[key]))
        probed = [i for i in self._infos if kind(i) != "checking"]
        self.none_found.setVisible(bool(probed) and not groups["found"])
        column.addWidget(self.none_found)
        accounts = QLabel(ACCOUNT_HINT)
        accounts.setObjectName("welcomeAccounts")
        accounts.setWordWrap(True)
        accounts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(accounts)
        column.addStretch(1)
        self.list_area.setWidget(page)  # the old page is deleted

    def _section(self, key: str, infos: Sequence[RuntimeInfo]) -> QWidget:
        box = QWidget()
        rows = QVBoxLayout(box)
        rows.setContentsMargins(8, 0, 0, 4)
        rows.setSpacing(2)
        names = [QLabel(f"<b>{html.escape(i.runtime)}</b>") for i in infos]
        name_width = max(n.sizeHint().width() for n in names)
        for info, name in zip(infos, names, strict=True):
            mark, colour = {"found": ("✓", theme.OK), "checking": ("…", theme.MUTED)}.get(
                key, ("○", theme.MUTED))
            row = QWidget()
            row.setObjectName(f"welcomeRow-{info.runtime}")
            row.setToolTip(" ".join(p for p in (info.problem, info.hint) if p))
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.addWidget(QLabel(f"<span style='color:{colour}'>{mark}</span>"))
            name.setMinimumWidth(name_width)
            line.addWidget(name)
            detail = self._detail(key, info)
            for widget in detail:
                line.addWidget(widget, 1 if widget is detail[0] else 0)
            rows.addWidget(row)
            self.rows[info.runtime] = row
        return box

    def _detail(self, key: str, info: RuntimeInfo) -> list[QWidget]:
        """The cells after the name: the version, or how to get the runtime."""
        if key == "found":
            return [_muted(html.escape(info.version or info.executable or ""))]
        if key == "checking":
            return [_muted("checking…")]
        if key == "key":
            provider = KEY_PROVIDER.get(info.runtime, info.runtime)
            add = QPushButton("Add key…")
            add.setObjectName(f"welcomeKey-{info.runtime}")
            add.clicked.connect(lambda: self._account(provider))
            return [_muted(f"or export {provider.upper()}_API_KEY"), add]
        command = install_command(info.hint)
        if command is None:
            return [_muted(html.escape(info.problem or "not found"))]
        field = QLineEdit(command)
        field.setReadOnly(True)
        field.setObjectName(f"welcomeCommand-{info.runtime}")
        field.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        field.setCursorPosition(0)
        copy = QPushButton("Copy")
        copy.setObjectName(f"welcomeCopy-{info.runtime}")
        copy.clicked.connect(lambda: _copy(copy, command))
        self.copy_buttons[info.runtime] = copy
        return [field, copy]

    def _demo(self) -> None:
        self.demoRequested.emit()
        self.close()

    def _new(self) -> None:
        self.newSessionRequested.emit()
        self.close()

    def _account(self, provider: str) -> None:
        self.accountRequested.emit(provider)
        self.close()


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{html.escape(text)}</b>")
    label.setWordWrap(True)
    return label


def _muted(text: str) -> QLabel:
    label = QLabel(f"<span style='color:{theme.MUTED}'>{text}</span>")
    label.setWordWrap(True)
    return label


def _copy(button: QPushButton, command: str) -> None:
    QGuiApplication.clipboard().setText(command)
    button.setText("Copied")
