"""The first-run welcome: which agent CLIs were found, the demo, and how to add an account.

Shown once, on a machine with no data folder, instead of anything that could look like
an error: a missing CLI is information ("not found — how to install it"), not a failure.
The dialog is non-modal and holds no logic: it emits what the user chose.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from relay.gui import theme
from relay.runtimes.base import RuntimeInfo

ACCOUNT_HINT = ("To hand tasks between your own accounts, register each CLI configuration "
                "folder as an account, for example:<br><code>relay-cli accounts add claude work "
                "--config-dir ~/.claude-work</code><br>then chain them in a new session "
                "(<i>Then hand off to: claude:work, codex</i>).")


def runtimes_html(infos: Sequence[RuntimeInfo]) -> str:
    """One line per agent CLI: found with its version, or how to install it."""
    lines = []
    for info in infos:
        if info.runtime == "demo":
            continue
        name = html.escape(info.runtime)
        if info.problem is None:
            lines.append(f"<span style='color:{theme.OK}'>✓</span> <b>{name}</b> "
                         f"{html.escape(info.version or '')}")
        elif info.executable is None and info.version is None and info.hint is None:
            lines.append(f"… <b>{name}</b> — checking")
        else:
            lines.append(f"<span style='color:{theme.MUTED}'>–</span> <b>{name}</b> not found. "
                         f"<span style='color:{theme.MUTED}'>{html.escape(info.hint or '')}</span>")
    return "<br>".join(lines)


class WelcomeDialog(QDialog):
    """Say hello; offer the demo and a first session."""

    demoRequested = Signal()
    newSessionRequested = Signal()

    def __init__(self, infos: Sequence[RuntimeInfo], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomeDialog")
        self.setWindowTitle("Welcome to Relay")
        self.setMinimumWidth(560)
        intro = QLabel("<h3>Welcome to Relay</h3>Relay runs your AI coding agents in their own "
                       "git worktrees and, when one account hits its limit, hands the task to "
                       "the next account or provider — with a snapshot and a signed brief.")
        intro.setWordWrap(True)
        self.runtimes = QLabel()
        self.runtimes.setObjectName("welcomeRuntimes")
        self.runtimes.setTextFormat(Qt.TextFormat.RichText)
        self.runtimes.setWordWrap(True)
        self.none_found = QLabel("No agent CLI is installed yet: the demo shows the whole loop "
                                 "with a scripted, clearly labelled SIMULATION.")
        self.none_found.setObjectName("welcomeNoneFound")
        self.none_found.setWordWrap(True)
        accounts = QLabel(ACCOUNT_HINT)
        accounts.setObjectName("welcomeAccounts")
        accounts.setWordWrap(True)
        accounts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.demo_button = QPushButton("Run the demo")
        self.demo_button.setObjectName("welcomeDemo")
        self.demo_button.setDefault(True)
        self.new_button = QPushButton("New session…")
        self.new_button.setObjectName("welcomeNewSession")
        close = QPushButton("Close")
        buttons = QHBoxLayout()
        buttons.addWidget(self.demo_button)
        buttons.addWidget(self.new_button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        for widget in (intro, QLabel("<b>Agent CLIs on this machine</b>"), self.runtimes,
                       self.none_found, accounts):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        self.demo_button.clicked.connect(self._demo)
        self.new_button.clicked.connect(self._new)
        close.clicked.connect(self.close)
        self.set_infos(infos)

    def set_infos(self, infos: Sequence[RuntimeInfo]) -> None:
        self.runtimes.setText(runtimes_html(infos))
        probed = [i for i in infos if i.runtime != "demo" and (i.problem or i.version)]
        found = [i for i in probed if i.problem is None]
        self.none_found.setVisible(bool(probed) and not found)

    def _demo(self) -> None:
        self.demoRequested.emit()
        self.close()

    def _new(self) -> None:
        self.newSessionRequested.emit()
        self.close()
