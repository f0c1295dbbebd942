"""Preferences…: the settings a user changes, written back to the data folder's relay.toml.

Until now they lived only in relay.toml and the RELAY_* environment. The dialog shows them
in tabs, each with its help (the :class:`~relay.core.config.Config` field's description)
and, where a RELAY_* variable overrides relay.toml in this process, says so. Save hands the
changed ones to :func:`relay.core.config.write_settings` — the one writer, which validates
them as a Config first and keeps the file's comments: an invalid value is shown in the
dialog and nothing is written. A setting put back to its default is removed from the file.
The engine reads its settings when it opens, so they take effect when Relay next starts; the
theme at once (the shell applies it).
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from relay.core.config import SETTINGS_FILE, Config, env_overrides, read_settings, write_settings
from relay.core.errors import ConfigError
from relay.core.numbers import DELAY, SECONDS
from relay.gui import theme
from relay.gui.messages import ErrorBanner

#: (tab, its settings) — the settings a user changes; the rest (leases, demo timings…)
#: stay in relay.toml and the environment, for tests and experts
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Appearance", ("gui_theme",)),
    ("Sessions", ("inactivity_timeout", "pause_timeout", "reset_margin", "retry_max_delay",
                  "max_retries", "verify_timeout")),
    ("Wallet", ("wallet_watermark", "wallet_horizon", "wallet_preempt_confidence",
                "wallet_interval", "wallet_default_folders")),
    ("Integrations", ("mcp_require_approval",)),
)
#: settings that apply as soon as they are saved (the rest when Relay next starts)
LIVE = frozenset({"gui_theme"})
#: the environment variable that overrides gui_theme (read by the theme, not the Config)
THEME_ENV = "RELAY_THEME"
RESTART_NOTE = "These take effect when Relay next starts."
LIVE_NOTE = "Applies at once."


def label_of(name: str) -> str:
    """``wallet_preempt_confidence`` → "Wallet preempt confidence" (+ its unit)."""
    text = name.replace("_", " ").capitalize().replace("Gui ", "Window ")
    return f"{text} (seconds)" if _is_seconds(name) else text


def _is_seconds(name: str) -> bool:
    return any(getattr(getattr(m, "func", None), "__self__", None) in (SECONDS, DELAY)
               for m in Config.model_fields[name].metadata)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


class PreferencesDialog(QDialog):
    """The settings of the data folder ``home``, in tabs.

    Signals:
        saved(dict): the settings written (name → value; None: back to its default).
    """

    saved = Signal(dict)

    def __init__(self, home: Path, parent: QWidget | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("preferencesDialog")
        self.setWindowTitle("Preferences")
        self.home = home
        env = os.environ if env is None else env
        self.error = ErrorBanner("preferencesError")
        try:
            in_file = read_settings(home)
        except ConfigError as exc:
            in_file = {}
            self.error.show_error(exc.message, exc.hint or "")
        defaults = {name: field.default for name, field in Config.model_fields.items()}
        #: name → the value shown when the dialog opened (the file's, else the default)
        self.initial = {name: in_file.get(name, defaults[name])
                        for _, names in SECTIONS for name in names}
        self.defaults = {name: defaults[name] for name in self.initial}
        overrides = env_overrides(env)
        if env.get(THEME_ENV):
            overrides["gui_theme"] = THEME_ENV
        #: name → its editor (QLineEdit, QComboBox or QCheckBox)
        self.editors: dict[str, QWidget] = {}
        #: the muted help lines, and those that warn (an environment override)
        self._notes: list[tuple[QLabel, bool]] = []
        self.tabs = QTabWidget()
        self.tabs.setObjectName("preferencesTabs")
        for title, names in SECTIONS:
            self.tabs.addTab(self._page(names, overrides), title)
        where = QLabel(f"Settings file: {home / SETTINGS_FILE} (Save keeps your comments in "
                       "it).")
        where.setObjectName("preferencesWhere")
        where.setWordWrap(True)
        where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.defaults_button = QPushButton("Restore defaults")
        self.defaults_button.setObjectName("preferencesDefaults")
        self.defaults_button.setToolTip("Put every setting here back to its default "
                                        "(written when you save)")
        self.buttons.addButton(self.defaults_button, QDialogButtonBox.ButtonRole.ResetRole)
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.defaults_button.clicked.connect(self.restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.error)
        layout.addWidget(where)
        layout.addWidget(self.buttons)
        self.resize(620, 520)
        for label, warns in self._notes:
            theme.style(label, "color: $WARNING;" if warns else "color: $MUTED;")

    def _page(self, names: tuple[str, ...], overrides: Mapping[str, str]) -> QScrollArea:
        page = QWidget()
        form = QFormLayout(page)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        live = all(name in LIVE for name in names)
        note = QLabel(LIVE_NOTE if live else RESTART_NOTE)
        self._notes.append((note, False))
        form.addRow(note)
        for name in names:
            editor = self._editor(name)
            self.editors[name] = editor
            editor.setObjectName(f"pref-{name}")
            form.addRow(label_of(name), editor)
            help_text = Config.model_fields[name].description or ""
            if name in overrides:
                help_text += (f" Set by {overrides[name]} in the environment, which overrides "
                              "relay.toml while it is set.")
            helper = QLabel(help_text)
            helper.setObjectName(f"prefHelp-{name}")
            helper.setWordWrap(True)
            self._notes.append((helper, name in overrides))
            form.addRow(helper)
        area = QScrollArea()
        area.setWidgetResizable(True)
        area.setFrameShape(QFrame.Shape.NoFrame)
        area.setWidget(page)
        return area

    def _editor(self, name: str) -> QWidget:
        annotation = Config.model_fields[name].annotation
        value = self.initial[name]
        if annotation is bool:
            box = QCheckBox()
            box.setChecked(bool(value))
            return box
        if typing.get_origin(annotation) is typing.Literal:
            combo = QComboBox()
            combo.addItems([str(choice) for choice in typing.get_args(annotation)])
            combo.setCurrentText(str(value))
            return combo
        field = QLineEdit(_text(value))
        field.setPlaceholderText(f"default {_text(self.defaults[name])}")
        return field

    # -- values -------------------------------------------------------------------------

    def value_of(self, name: str) -> Any:
        """What the editor of ``name`` holds (numbers as typed: the Config reads them)."""
        editor = self.editors[name]
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, QComboBox):
            return editor.currentText()
        assert isinstance(editor, QLineEdit)
        return editor.text().strip()

    def set_value(self, name: str, value: Any) -> None:
        editor = self.editors[name]
        if isinstance(editor, QCheckBox):
            editor.setChecked(bool(value))
        elif isinstance(editor, QComboBox):
            editor.setCurrentText(str(value))
        elif isinstance(editor, QLineEdit):
            editor.setText(_text(value))

    def changes(self) -> dict[str, Any]:
        """The settings changed here (None: back to the default, so out of the file)."""
        changed: dict[str, Any] = {}
        for name, before in self.initial.items():
            now = self.value_of(name)
            if _text(now) == _text(before):
                continue
            changed[name] = None if _text(now) == _text(self.defaults[name]) else now
        return changed

    def restore_defaults(self) -> None:
        for name, value in self.defaults.items():
            self.set_value(name, value)

    def save(self) -> None:
        """Write the changes (validated first); an invalid value is shown, nothing written."""
        changes = self.changes()
        if not changes:
            self.accept()
            return
        try:
            write_settings(self.home, changes)
        except ConfigError as exc:
            self.error.show_error(exc.message, exc.hint or "")
            self._focus_named(exc.message)
            return
        self.error.hide()
        self.saved.emit(changes)
        self.accept()

    def _focus_named(self, message: str) -> None:
        """Show the tab and editor of the setting an error names."""
        for name, editor in self.editors.items():
            if f"'{name}'" in message:
                for index in range(self.tabs.count()):
                    page = self.tabs.widget(index)
                    if page is not None and page.isAncestorOf(editor):
                        self.tabs.setCurrentIndex(index)
                editor.setFocus()
                return
