"""Colours: a light and a dark palette under the same names, read when painted; the choice.

Read a colour when you paint or build a style sheet: ``theme.TEXT`` is the current
palette's value (module ``__getattr__``), so never copy one into a module constant or a
default argument. :func:`style` gives a widget a style sheet written with ``$ROLE``
placeholders (``"QLabel { color: $MUTED; }"``, ``"$NOTE_CSS.ok"``) that is filled in again
whenever the theme changes. :func:`apply` picks the palette (``system`` follows the
desktop's colour scheme; ``light``/``dark`` use Fusion with a full QPalette), and
``notifier().changed`` says when it did. :func:`contrast` is the WCAG contrast ratio.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any, Literal

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QWidget

Choice = Literal["system", "light", "dark"]
CHOICES: tuple[Choice, ...] = ("system", "light", "dark")
#: the dynamic property holding a widget's ``$ROLE`` style sheet template (see style())
STYLE_PROPERTY = "relayStyle"

#: styles whose summary is dimmed, and those whose summary takes the badge colour.
DIMMED_STYLES = frozenset({"reasoning", "turn_completed", "state_changed", "session_started",
                           "input_withdrawn"})
COLOURED_TEXT_STYLES = frozenset({"message", "tool_error", "error", "limit_hit", "ended_bad",
                                  "permission_denied", "tool_call", "warning", "notice"})

# Both palettes have exactly the same roles (a test checks). Foreground roles keep a 4.5:1
# contrast on BASE and on the tinted backgrounds they are drawn on.
_LIGHT: dict[str, str] = {
    # text
    "TEXT": "#1f2328", "MUTED": "#59636e", "ERROR": "#cf222e", "WARNING": "#8a5c00",
    "ACCENT": "#0969da", "OK": "#1a7f37", "PURPLE": "#6639ba", "LINK_TEXT": "#0550ae",
    # surfaces and lines
    "BASE": "#ffffff", "WINDOW": "#f6f8fa", "SUBTLE_BG": "#f6f8fa", "NEUTRAL_BG": "#eaeef2",
    "BUTTON": "#f6f8fa", "BORDER": "#d0d7de", "BORDER_STRONG": "#8c959f", "EDGE": "#57606a",
    "DISABLED_TEXT": "#8c959f", "SELECTION_BG": "#cfe3ff", "SELECTED_CARD_BG": "#f3f9ff",
    "HIGHLIGHT": "#0969da", "HIGHLIGHTED_TEXT": "#ffffff",
    # tinted backgrounds and their borders
    "ACCENT_BG": "#ddf4ff", "OK_BG": "#dafbe1", "ERROR_BG": "#ffebe9", "WARNING_BG": "#fff8c5",
    "PURPLE_BG": "#fbefff", "ACCENT_BORDER": "#54aeff", "ERROR_BORDER": "#ff8182",
    "WARNING_BORDER": "#d4a72c",
    "SIMULATION_BG": "#fff1c2", "SIMULATION_BORDER": "#d4a72c", "SIMULATION_TEXT": "#7d4e00",
    # diff view
    "DIFF_ADD_BG": "#e6ffec", "DIFF_ADD_GUTTER": "#ccffd8", "DIFF_DEL_BG": "#ffebe9",
    "DIFF_DEL_GUTTER": "#ffd7d5", "DIFF_CURRENT_BG": "#280969da", "HUNK_TEXT": "#57606a",
    # syntax colours (gui.syntax maps Pygments' tokens to them)
    "SYNTAX_KEYWORD": "#cf222e", "SYNTAX_STRING": "#0a3069", "SYNTAX_COMMENT": "#59636e",
    "SYNTAX_NUMBER": "#0550ae", "SYNTAX_FUNCTION": "#6639ba", "SYNTAX_BUILTIN": "#0550ae",
    "SYNTAX_TYPE": "#953800", "SYNTAX_TAG": "#116329",
    # session states beyond the text roles: waiting for the user, being handed off
    "NEEDS_INPUT": "#bc4c00", "HANDOFF": "#8250df",
    # the stream: the selected row, a search hit, a handoff block
    "STREAM_SELECTED_BG": "#cfe3ff", "STREAM_SEARCH_HIT_BG": "#fff8c5",
    "HANDOFF_BG": "#f6f8fa", "HANDOFF_BORDER": "#d0d7de",
    # designer canvas
    "CANVAS_BG": "#fbfcfd", "CANVAS_GRID": "#d8dee4",
    # the Wallet's plots
    "CHART_BG": "#ffffff", "CHART_GRID": "#d0d7de",
    # wallet bars: solid and light part per level
    "BAR_OK": "#0969da", "BAR_OK_LIGHT": "#b6e3ff", "BAR_WARN": "#bf8700",
    "BAR_WARN_LIGHT": "#f5e0a0", "BAR_OVER": "#cf222e", "BAR_OVER_LIGHT": "#ffcecb",
    "BAR_UNKNOWN": "#d0d7de", "BAR_UNKNOWN_LIGHT": "#eaeef2", "BAR_TRACK": "#eaeef2",
    # the app icon (the same in both)
    "ICON_BG": "#1f6feb", "ICON_TEXT": "#ffffff",
}
_DARK: dict[str, str] = {
    "TEXT": "#e6edf3", "MUTED": "#9198a1", "ERROR": "#ff7b72", "WARNING": "#d29922",
    "ACCENT": "#58a6ff", "OK": "#3fb950", "PURPLE": "#bc8cff", "LINK_TEXT": "#79c0ff",
    "BASE": "#0d1117", "WINDOW": "#161b22", "SUBTLE_BG": "#161b22", "NEUTRAL_BG": "#21262d",
    "BUTTON": "#21262d", "BORDER": "#30363d", "BORDER_STRONG": "#6e7681", "EDGE": "#8b949e",
    "DISABLED_TEXT": "#6e7681", "SELECTION_BG": "#1c3350", "SELECTED_CARD_BG": "#131d2b",
    "HIGHLIGHT": "#1f6feb", "HIGHLIGHTED_TEXT": "#ffffff",
    "ACCENT_BG": "#121d2f", "OK_BG": "#12261e", "ERROR_BG": "#25171c", "WARNING_BG": "#272115",
    "PURPLE_BG": "#1f1a31", "ACCENT_BORDER": "#1f6feb", "ERROR_BORDER": "#da3633",
    "WARNING_BORDER": "#9e6a03",
    "SIMULATION_BG": "#2e2410", "SIMULATION_BORDER": "#9e6a03", "SIMULATION_TEXT": "#e3b341",
    "DIFF_ADD_BG": "#12261e", "DIFF_ADD_GUTTER": "#163020", "DIFF_DEL_BG": "#25171c",
    "DIFF_DEL_GUTTER": "#3d1f23", "DIFF_CURRENT_BG": "#40388bfd", "HUNK_TEXT": "#9198a1",
    "SYNTAX_KEYWORD": "#ff7b72", "SYNTAX_STRING": "#a5d6ff", "SYNTAX_COMMENT": "#9198a1",
    "SYNTAX_NUMBER": "#79c0ff", "SYNTAX_FUNCTION": "#d2a8ff", "SYNTAX_BUILTIN": "#79c0ff",
    "SYNTAX_TYPE": "#ffa657", "SYNTAX_TAG": "#7ee787",
    "NEEDS_INPUT": "#f0883e", "HANDOFF": "#bc8cff",
    "STREAM_SELECTED_BG": "#1c3350", "STREAM_SEARCH_HIT_BG": "#3b2e12",
    "HANDOFF_BG": "#161b22", "HANDOFF_BORDER": "#30363d",
    "CANVAS_BG": "#0d1117", "CANVAS_GRID": "#262c36",
    "CHART_BG": "#0d1117", "CHART_GRID": "#30363d",
    "BAR_OK": "#388bfd", "BAR_OK_LIGHT": "#1c3a5e", "BAR_WARN": "#d29922",
    "BAR_WARN_LIGHT": "#4b3a14", "BAR_OVER": "#f85149", "BAR_OVER_LIGHT": "#5a2327",
    "BAR_UNKNOWN": "#484f58", "BAR_UNKNOWN_LIGHT": "#30363d", "BAR_TRACK": "#21262d",
    "ICON_BG": "#1f6feb", "ICON_TEXT": "#ffffff",
}

_BADGE = "border-radius: 8px; padding: 1px 8px; font-size: 11px; font-weight: bold;"
#: style sheets, as $ROLE templates filled in per palette
_CSS: dict[str, str] = {
    "SIMULATION_BANNER_CSS": "QLabel { background: $SIMULATION_BG; color: $SIMULATION_TEXT;"
                             " border: 1px solid $SIMULATION_BORDER; border-radius: 4px;"
                             " padding: 6px 10px; font-weight: bold; }",
    "ERROR_LABEL_CSS": "QLabel { background: $ERROR_BG; color: $ERROR; border: 1px solid"
                       " $ERROR_BORDER; border-radius: 4px; padding: 4px 8px; }",
    "HEADER_CSS": "QFrame#streamHeader { background: $SUBTLE_BG; border: 1px solid $BORDER;"
                  " border-radius: 6px; }",
    "WAIT_LABEL_CSS": "QLabel { background: $WARNING_BG; color: $WARNING; border: 1px solid"
                      " $WARNING_BORDER; border-radius: 4px; padding: 4px 8px;"
                      " font-weight: bold; }",
    "INFO_LABEL_CSS": "QLabel { background: $ACCENT_BG; color: $TEXT; border: 1px solid"
                      " $ACCENT_BORDER; border-radius: 4px; padding: 4px 8px; }",
    "PLACEHOLDER_CSS": "QLabel { color: $MUTED; font-size: 15px; }",
    #: a monospace line to copy (a path, a command)
    "CODE_LABEL_CSS": "QLabel { background: $SUBTLE_BG; color: $TEXT; border: 1px solid"
                      " $BORDER; border-radius: 4px; padding: 4px 6px;"
                      " font-family: monospace; }",
    #: a framed card on the window background (wallet accounts, detect details)
    "CARD_CSS": "QFrame#walletCard, QFrame#detectDetailBox { background: $BASE;"
                " border: 1px solid $BORDER; border-radius: 6px; }",
}
#: NAME -> {key: template}
_CSS_MAPS: dict[str, dict[str, str]] = {
    #: the contract view's signature line per status (see gui.contract_check)
    "SIGNATURE_CSS": {
        "verified": "QLabel { color: $OK; font-weight: bold; }",
        "simulated": "QLabel { color: $WARNING; font-weight: bold; }",
        "tampered": "QLabel { color: $ERROR; font-weight: bold; }",
        "unreadable": "QLabel { color: $ERROR; font-weight: bold; }",
        "unchecked": "QLabel { color: $WARNING; font-weight: bold; }",
    },
    #: a dock's one-line note, by tone
    "NOTE_CSS": {
        "ok": "QLabel { color: $OK; }",
        "warning": "QLabel { color: $WARNING; font-weight: bold; }",
        "error": "QLabel { color: $ERROR; }",
        "info": "QLabel { color: $TEXT; }",
    },
    #: a small rounded badge per tone: (background, text) of the tinted pairs below
    "BADGE_CSS": {
        tone: f"QLabel {{ background: ${bg}; color: ${fg}; {_BADGE} }}"
        for tone, (bg, fg) in {"accent": ("ACCENT_BG", "ACCENT"), "ok": ("OK_BG", "OK"),
                               "warning": ("WARNING_BG", "WARNING"),
                               "error": ("ERROR_BG", "ERROR"), "text": ("NEUTRAL_BG", "TEXT"),
                               "muted": ("SUBTLE_BG", "MUTED")}.items()
    },
}


class _Template(string.Template):
    idpattern = r"[A-Z][A-Z0-9_]*(?:\.[a-z_]+)?"
    flags = re.NOFLAG


def _derive(c: Mapping[str, str]) -> dict[str, Any]:
    """The palette's composite values: state maps, stream row styles, style sheets."""
    flat = dict(c)
    out: dict[str, Any] = dict(flat)
    out["STATE_COLOURS"] = {
        "pending": c["MUTED"], "starting": c["ACCENT"], "running": c["ACCENT"],
        "needs_input": c["WARNING"], "waiting": c["WARNING"], "completed": c["OK"],
        "failed": c["ERROR"], "cancelled": c["MUTED"], "interrupted": c["WARNING"],
    }
    #: a hooked agent session's live state (relay.core.live), e.g. on a board card
    out["LIVE_COLOURS"] = {
        "working": c["ACCENT"], "needs_input": c["WARNING"], "idle": c["TEXT"],
        "quota_blocked": c["ERROR"], "ended": c["MUTED"],
    }
    #: (badge background, text colour) per stream row style (see event_text.style_key).
    out["ROW_STYLES"] = {
        "assistant_text": (c["ACCENT_BG"], c["TEXT"]),
        "reasoning": (c["NEUTRAL_BG"], c["MUTED"]),
        "tool_call": (c["PURPLE_BG"], c["PURPLE"]),
        "tool_result": (c["OK_BG"], c["TEXT"]),
        "tool_error": (c["ERROR_BG"], c["ERROR"]),
        "permission_denied": (c["ERROR_BG"], c["ERROR"]),
        "turn_completed": (c["SUBTLE_BG"], c["MUTED"]),
        "session_started": (c["SUBTLE_BG"], c["MUTED"]),
        "state_changed": (c["SUBTLE_BG"], c["MUTED"]),
        "session_ended": (c["OK_BG"], c["OK"]),
        "ended_bad": (c["ERROR_BG"], c["ERROR"]),
        "needs_input": (c["WARNING_BG"], c["WARNING"]),
        "input_withdrawn": (c["SUBTLE_BG"], c["MUTED"]),
        "notice": (c["WARNING_BG"], c["WARNING"]),
        "warning": (c["WARNING_BG"], c["WARNING"]),
        "limit_hit": (c["SIMULATION_BG"], c["SIMULATION_TEXT"]),
        "error": (c["ERROR_BG"], c["ERROR"]),
        "message": (c["ACCENT_BG"], c["LINK_TEXT"]),
        "handoff": (c["NEUTRAL_BG"], c["TEXT"]),
    }
    #: full-row banner background for limit hits and fatal errors.
    out["BANNER_BG"] = {"limit_hit": c["SIMULATION_BG"], "error": c["ERROR_BG"]}
    for name, template in _CSS.items():
        out[name] = _Template(template).substitute(flat)
    for name, templates in _CSS_MAPS.items():
        out[name] = {k: _Template(t).substitute(flat) for k, t in templates.items()}
    return out


def _lookup(values: Mapping[str, Any]) -> dict[str, str]:
    """What a ``$ROLE`` / ``$NAME.key`` placeholder may name: every string value."""
    found = {k: v for k, v in values.items() if isinstance(v, str)}
    for name, value in values.items():
        if isinstance(value, dict):
            found.update({f"{name}.{k}": v for k, v in value.items() if isinstance(v, str)})
    return found


_PALETTES: dict[str, dict[str, Any]] = {"light": _derive(_LIGHT), "dark": _derive(_DARK)}
_LOOKUPS = {name: _lookup(values) for name, values in _PALETTES.items()}
_current = "light"


def __getattr__(name: str) -> Any:
    """``theme.TEXT`` & co.: the current palette's value."""
    try:
        return _PALETTES[_current][name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def current() -> str:
    """``"light"`` or ``"dark"``: the palette in use."""
    return _current


def roles() -> frozenset[str]:
    """Every plain colour role (the names both palettes define)."""
    return frozenset(_LIGHT)


def colour(role: str) -> QColor:
    """The current palette's colour for ``role`` (a name such as ``"MUTED"``)."""
    return QColor(_LOOKUPS[_current][role])


def css(template: str, palette: str | None = None) -> str:
    """``template`` with its ``$ROLE`` / ``$NAME.key`` placeholders filled in."""
    return _Template(template).substitute(_LOOKUPS[palette or _current])


def style(widget: QWidget, template: str) -> None:
    """Give ``widget`` the style sheet ``template`` (``$ROLE`` placeholders), now and
    again whenever the theme changes."""
    widget.setProperty(STYLE_PROPERTY, template)
    widget.setStyleSheet(css(template))


class _Notifier(QObject):
    #: the palette now in use ("light" or "dark")
    changed = Signal(str)


_NOTIFIER: _Notifier | None = None


def notifier() -> _Notifier:
    """The object whose ``changed`` signal says the palette changed."""
    global _NOTIFIER
    if _NOTIFIER is None:
        _NOTIFIER = _Notifier()
    return _NOTIFIER


def use(name: str, *, restyle: bool = False) -> None:
    """Switch to the ``light`` or ``dark`` colours: re-style every widget styled with
    :func:`style` (and re-polish every widget a style sheet applies to, which keeps the
    palette it was polished with), repaint all, and say so on ``notifier().changed``. ``restyle`` does
    it even when the palette stays (the application's QPalette changed)."""
    global _current
    if name not in _PALETTES:
        raise ValueError(f"unknown palette {name!r}: light or dark")
    changed = name != _current
    if not (changed or restyle):
        return
    _current = name
    app = QApplication.instance()
    if isinstance(app, QApplication):
        widgets = app.allWidgets()
        for widget in widgets:
            template = widget.property(STYLE_PROPERTY)
            if isinstance(template, str):
                widget.setStyleSheet(css(template))
        # a styled widget's children too keep the palette they were polished with (a label
        # in a toolbar that has a style sheet): polish every styled one and its children again
        for widget in widgets:
            if _styled(widget):
                widget.style().unpolish(widget)
                widget.style().polish(widget)
            widget.update()
    if changed:
        notifier().changed.emit(name)


def _styled(widget: QWidget) -> bool:
    """Whether a style sheet applies to ``widget``: its own or an ancestor's."""
    at: QWidget | None = widget
    while at is not None:
        if at.styleSheet():
            return True
        at = at.parentWidget()
    return False


def qpalette(name: str) -> QPalette:
    """A full QPalette for the ``light`` or ``dark`` colours."""
    c = _PALETTES[name]
    pal = QPalette()
    R, G = QPalette.ColorRole, QPalette.ColorGroup
    roles_ = {
        R.Window: c["WINDOW"], R.WindowText: c["TEXT"], R.Base: c["BASE"],
        R.AlternateBase: c["SUBTLE_BG"], R.ToolTipBase: c["SUBTLE_BG"], R.ToolTipText: c["TEXT"],
        R.PlaceholderText: c["MUTED"], R.Text: c["TEXT"], R.Button: c["BUTTON"],
        R.ButtonText: c["TEXT"], R.BrightText: c["ERROR"], R.Light: c["BASE"],
        R.Midlight: c["NEUTRAL_BG"], R.Mid: c["BORDER"], R.Dark: c["BORDER_STRONG"],
        R.Shadow: "#000000" if name == "light" else "#010409",
        R.Highlight: c["HIGHLIGHT"], R.HighlightedText: c["HIGHLIGHTED_TEXT"],
        R.Link: c["ACCENT"], R.LinkVisited: c["PURPLE"], R.Accent: c["HIGHLIGHT"],
    }
    for role, value in roles_.items():
        pal.setColor(role, QColor(value))
    for role in (R.WindowText, R.Text, R.ButtonText, R.HighlightedText):
        pal.setColor(G.Disabled, role, QColor(c["DISABLED_TEXT"]))
    return pal


def system_is_dark(app: QGuiApplication) -> bool:
    """The desktop's colour scheme; when it does not say, the palette's lightness."""
    scheme = app.styleHints().colorScheme()
    if scheme != Qt.ColorScheme.Unknown:
        return scheme == Qt.ColorScheme.Dark
    pal = app.palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < \
        pal.color(QPalette.ColorRole.WindowText).lightness()


_FOLLOWING: list[QApplication] = []
#: the desktop's style name (kept while ours is used) and whether ours is in use ("own")
_DESKTOP: dict[str, Any] = {}


def apply(app: QApplication, choice: str) -> str:
    """Use ``choice`` (``system``, ``light`` or ``dark``) in ``app``; returns the palette
    used. ``system`` keeps the desktop's style and palette and follows its colour scheme
    as it changes; an explicit choice uses Fusion with Relay's full QPalette."""
    if choice not in CHOICES:
        raise ValueError(f"unknown theme {choice!r}: system, light or dark")
    hints = app.styleHints()
    following = app in _FOLLOWING
    if not _DESKTOP.get("own"):
        _DESKTOP["style"] = app.style().name()
    if choice == "system":
        if not following:
            hints.unsetColorScheme()  # what the desktop says, not what we asked for
            hints.colorSchemeChanged.connect(_system_changed)
            _FOLLOWING.append(app)
        return _follow_system(app)
    if following:
        hints.colorSchemeChanged.disconnect(_system_changed)
        _FOLLOWING.remove(app)
    # where the platform can (title bars, native dialogs), it draws in the same scheme
    hints.setColorScheme(Qt.ColorScheme.Dark if choice == "dark" else Qt.ColorScheme.Light)
    _use_own(app, choice)
    return choice


def _use_own(app: QApplication, name: str) -> None:
    if app.style().name().lower() != "fusion":
        app.setStyle("Fusion")
    app.setPalette(qpalette(name))
    _DESKTOP["own"] = True
    use(name, restyle=True)


def _follow_system(app: QApplication) -> str:
    """The desktop's style and palette when they agree with its colour scheme; Relay's
    own palette of that scheme when they do not (a dark scheme over a light palette)."""
    restyle = bool(_DESKTOP.get("own"))
    if restyle:  # an explicit choice replaced them: the desktop's back
        app.setStyle(_DESKTOP["style"])
        app.setPalette(QPalette())  # none of its own: the platform's, as it changes
        _DESKTOP["own"] = False
    name = "dark" if system_is_dark(app) else "light"
    window = app.palette().color(QPalette.ColorRole.Window)
    if (window.lightness() < 128) != (name == "dark"):
        _use_own(app, name)
    else:
        use(name, restyle=restyle)
    return name


def _system_changed(_scheme: Qt.ColorScheme) -> None:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        _follow_system(app)


def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.03928 else ((channel + 0.055) / 1.055) ** 2.4


def _luminance(c: QColor) -> float:
    return 0.2126 * _linear(c.redF()) + 0.7152 * _linear(c.greenF()) + 0.0722 * _linear(c.blueF())


def contrast(fg: QColor | str, bg: QColor | str) -> float:
    """The WCAG contrast ratio (1–21) of text ``fg`` on ``bg``; a translucent ``fg`` is
    blended over ``bg`` first."""
    front, back = QColor(fg), QColor(bg)
    if front.alphaF() < 1:
        a = front.alphaF()
        front = QColor.fromRgbF(front.redF() * a + back.redF() * (1 - a),
                                front.greenF() * a + back.greenF() * (1 - a),
                                front.blueF() * a + back.blueF() * (1 - a))
    lighter, darker = sorted((_luminance(front), _luminance(back)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)
