"""Dark mode: every dock, rendered in the light and the dark palette with a demo's data,
keeps its text readable (WCAG contrast ≥ 4.5:1), measured on the colours the widgets
actually use (their palettes once styled, their models' colours, the pixels on screen);
switching the theme at run time re-styles what is on screen; the choice comes from
``RELAY_THEME`` or relay.toml's ``gui_theme``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QAbstractListModel, QModelIndex, QRect, Qt
from PySide6.QtGui import QBrush, QColor, QImage, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDockWidget,
    QLabel,
    QListWidget,
    QWidget,
)
from pytestqt.qtbot import QtBot

from relay.core.config import load_config
from relay.core.errors import ConfigError
from relay.core.models import SessionSpec
from relay.engine.engine import Engine
from relay.gui import theme
from relay.gui.docks.board_dock import BoardDock, CardList
from relay.gui.docks.stream_view import StreamView
from relay.gui.shell import RelayShell
from relay.gui.viewmodels.stream import StreamViewModel as Vm
from tests.gui.conftest import Runner, Started

AA = 4.5  # WCAG AA for normal text
R = QPalette.ColorRole


@pytest.fixture(params=["light", "dark"])
def palette(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    assert theme.apply(qapp, request.param) == request.param
    yield request.param
    theme.apply(qapp, "system")  # the desktop's (offscreen: light) for the tests after


# -- the palettes themselves ---------------------------------------------------------------

def test_contrast_is_the_wcag_ratio() -> None:
    assert theme.contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert theme.contrast("#ffffff", "#000000") == pytest.approx(21.0)
    assert theme.contrast("#777777", "#777777") == pytest.approx(1.0)
    assert theme.contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)
    assert theme.contrast(QColor(0, 0, 0, 0), "#ffffff") == pytest.approx(1.0)  # see-through


def test_both_palettes_have_the_same_names() -> None:
    light, dark = theme._PALETTES["light"], theme._PALETTES["dark"]
    assert set(light) == set(dark)
    for name, value in light.items():
        if isinstance(value, dict):
            assert set(value) == set(dark[name]), name
    assert light["TEXT"] != dark["TEXT"]
    assert light["BASE"] != dark["BASE"]


def test_a_value_is_read_from_the_palette_in_use(qapp: QApplication) -> None:
    try:
        theme.use("dark")
        assert theme._DARK["TEXT"] == theme.TEXT
        assert theme.ROW_STYLES["assistant_text"][0] == theme._DARK["ACCENT_BG"]
        assert theme._DARK["ERROR_BG"] in theme.ERROR_LABEL_CSS
        assert theme.colour("MUTED") == QColor(theme._DARK["MUTED"])
        theme.use("light")
        assert theme._LIGHT["TEXT"] == theme.TEXT
        with pytest.raises(AttributeError):
            theme.NO_SUCH_ROLE  # noqa: B018
        with pytest.raises(ValueError, match="light or dark"):
            theme.use("sepia")
    finally:
        theme.use("light")


@pytest.mark.parametrize("name", ["light", "dark"])
def test_every_text_role_reads_on_what_it_is_drawn_on(name: str) -> None:
    p = theme._PALETTES[name]
    pairs = [(fg, bg) for fg in ("TEXT", "MUTED", "ERROR", "WARNING", "ACCENT", "OK",
                                 "SIMULATION_TEXT", "LINK_TEXT", "PURPLE")
             for bg in ("BASE", "WINDOW", "SUBTLE_BG")]
    pairs += [("TEXT", bg) for bg in ("NEUTRAL_BG", "SELECTION_BG", "SELECTED_CARD_BG",
                                      "DIFF_ADD_BG", "DIFF_DEL_BG", "CANVAS_BG", "BUTTON")]
    pairs += [("MUTED", bg) for bg in ("DIFF_ADD_GUTTER", "DIFF_DEL_GUTTER", "NEUTRAL_BG")]
    pairs += [(fg, "WARNING_BG") for fg in ("TEXT", "WARNING")]
    pairs += [("HUNK_TEXT", "ACCENT_BG"), ("HIGHLIGHTED_TEXT", "HIGHLIGHT")]
    pairs += [(f"SYNTAX_{k}", bg) for k in ("KEYWORD", "STRING", "COMMENT", "NUMBER",
                                            "FUNCTION", "BUILTIN", "TYPE", "TAG")
              for bg in ("BASE", "DIFF_ADD_BG", "DIFF_DEL_BG")]
    pairs += [(fg, "BASE") for fg in ("NEEDS_INPUT", "HANDOFF")]
    pairs += [("TEXT", bg) for bg in ("STREAM_SELECTED_BG", "STREAM_SEARCH_HIT_BG", "HANDOFF_BG")]
    low = [(fg, bg, round(theme.contrast(p[fg], p[bg]), 2)) for fg, bg in pairs
           if theme.contrast(p[fg], p[bg]) < AA]
    for style, (bg, fg) in p["ROW_STYLES"].items():
        for colour in (fg, p["TEXT"], p["MUTED"]):
            if theme.contrast(colour, bg) < AA:
                low.append((style, colour, round(theme.contrast(colour, bg), 2)))
    for state, colour in {**p["STATE_COLOURS"], **p["LIVE_COLOURS"]}.items():
        if theme.contrast(colour, p["BASE"]) < AA:
            low.append((state, colour, round(theme.contrast(colour, p["BASE"]), 2)))
    assert low == []


# -- the docks, rendered -------------------------------------------------------------------

def _most_common(image: QImage, rect: QRect) -> QColor:
    """The colour most pixels of ``rect`` have: what the text is drawn on."""
    rect = rect.intersected(image.rect())
    counts = Counter(image.pixel(x, y) for y in range(rect.top(), rect.bottom() + 1)
                     for x in range(rect.left(), rect.right() + 1))
    return QColor.fromRgb(counts.most_common(1)[0][0]) if counts else QColor()


def _strongest(image: QImage, rect: QRect, bg: QColor) -> float:
    """The highest contrast of a pixel of ``rect`` on ``bg`` (a glyph's core: its colour)."""
    rect = rect.intersected(image.rect())
    seen = {image.pixel(x, y) for y in range(rect.top(), rect.bottom() + 1)
            for x in range(rect.left(), rect.right() + 1)}
    return max((theme.contrast(QColor.fromRgb(p), bg) for p in seen), default=1.0)


def _on_screen(widget: QWidget, window: QWidget) -> QRect:
    shown = widget.visibleRegion().boundingRect()
    return QRect(widget.mapTo(window, shown.topLeft()), shown.size())


def _labels(dock: QDockWidget, shot: QImage, window: QWidget) -> list[str]:
    """Each visible label's text colour (its palette once styled, and any colour its rich
    text names) on the colour under it on screen."""
    low = []
    for label in dock.findChildren(QLabel):
        rect = _on_screen(label, window)
        if not label.isVisible() or not label.text().strip() or rect.isEmpty() \
                or not label.isEnabled():
            continue
        label.ensurePolished()
        bg = _most_common(shot, rect)
        colours = [label.palette().color(label.foregroundRole())]
        if label.textFormat() != Qt.TextFormat.PlainText:
            colours += [QColor(c) for c in _html_colours(label.text())]
        for fg in colours:
            ratio = theme.contrast(fg, bg)
            if ratio < AA:
                low.append(f"{label.objectName() or label.text()[:30]!r}: {fg.name()} on "
                           f"{bg.name()} = {ratio:.2f}")
    return low


def _html_colours(text: str) -> list[str]:
    return re.findall(r"color:\s*(#[0-9a-fA-F]{6})", text)


def _colour(value: object) -> QColor | None:
    if isinstance(value, QBrush):
        return value.color()
    return value if isinstance(value, QColor) else None


def _views(dock: QDockWidget) -> list[str]:
    """Each visible item view's cells: their foreground on their background or the view's."""
    low = []
    for view in dock.findChildren(QAbstractItemView):
        model = view.model()
        if not view.isVisible() or model is None or isinstance(view, StreamView) \
                or "::item" in view.styleSheet():  # styled items: see _chips
            continue
        pal = view.palette()
        for index in _indexes(view, QModelIndex()):
            if not str(index.data() or "").strip():
                continue
            fg = _colour(index.data(Qt.ItemDataRole.ForegroundRole)) or pal.color(R.Text)
            bg = _colour(index.data(Qt.ItemDataRole.BackgroundRole)) or pal.color(
                R.AlternateBase if view.alternatingRowColors() and index.row() % 2 else R.Base)
            if theme.contrast(fg, bg) < AA:
                low.append(f"{view.objectName()}[{index.row()},{index.column()}] "
                           f"{index.data()!r}: {fg.name()} on {bg.name()}")
    return low


def _indexes(view: QAbstractItemView, parent: QModelIndex, depth: int = 0) -> list[QModelIndex]:
    """The view's cells (and, in a tree, its children's), the first 50 rows of each level."""
    model = view.model()
    found = []
    for row in range(min(model.rowCount(parent), 50)):
        columns = 1 if isinstance(model, QAbstractListModel) else model.columnCount(parent)
        for col in range(columns):
            found.append(model.index(row, col, parent))
        if depth < 3 and not isinstance(model, QAbstractListModel):
            found += _indexes(view, model.index(row, 0, parent), depth + 1)
    return found


def _chips(chips: QListWidget) -> list[str]:
    """The designer's runtime chips (styled ``::item``): their text's pixels on their fill."""
    shot = chips.viewport().grab().toImage()
    low = []
    for i in range(chips.count()):
        rect = chips.visualItemRect(chips.item(i)).adjusted(4, 4, -4, -4)
        if rect.isEmpty() or not chips.viewport().rect().contains(rect.center()):
            continue
        bg = _most_common(shot, rect)
        if _strongest(shot, rect, bg) < AA:
            low.append(f"chip {chips.item(i).text()}: {_strongest(shot, rect, bg):.2f}")
    return low


def _stream(view: StreamView) -> list[str]:
    """The stream's rows: each style's badge text on its badge, and the summary (plain,
    dimmed or coloured) on the view's background as painted."""
    shot = view.viewport().grab().toImage()
    painted = _most_common(shot, shot.rect())
    assert painted == view.palette().color(R.Base)
    low = []
    model = view.model()
    for row in range(model.rowCount()):
        style = str(model.index(row, 0).data(Vm.StyleRole))
        bg, fg = theme.ROW_STYLES.get(style, (theme.SUBTLE_BG, theme.TEXT))
        summary = theme.MUTED if style in theme.DIMMED_STYLES else (
            fg if style in theme.COLOURED_TEXT_STYLES else theme.TEXT)
        for what, colour, under in (("badge", fg, bg), ("summary", summary, painted.name())):
            if theme.contrast(colour, under) < AA:
                low.append(f"row {row} {style} {what}: {colour} on {under}")
    return low


def _cards(board: BoardDock) -> list[str]:
    """The board's cards (painted): the strongest text pixel on the card's fill."""
    low = []
    for column in board.findChildren(CardList):
        model = column.model()
        if not column.isVisible() or model is None:
            continue
        shot = column.viewport().grab().toImage()
        for row in range(model.rowCount()):
            rect = column.visualRect(model.index(row, 0)).adjusted(6, 6, -6, -6)
            bg = _most_common(shot, rect)
            if rect.isEmpty() or _strongest(shot, rect, bg) < AA:
                low.append(f"card {row}: {_strongest(shot, rect, bg):.2f} on {bg.name()}")
    return low


@pytest.fixture
def demo_shell(shell: RelayShell, engine: Engine, arun: Runner, qtbot: QtBot, git_repo: Path,
               vault_env: None, palette: str) -> RelayShell:
    """The window with a demo that hits its limit and hands off: stream rows of every kind,
    wallet cards, a handoff timeline, History, a board card and a designer with a node."""
    arun(engine.board.create_task(str(git_repo), "Checkout page", stage="dev"))
    shell.start()
    window = shell.window
    window.resize(1280, 800)
    with qtbot.waitSignal(shell.bridge.sessionStarted, timeout=5000) as started:
        shell.start_session(SessionSpec(repo=git_repo, task="Add the notes",
                                        chain=["demo:primary", "demo:backup"],
                                        demo_limit_after=1))
    session_id = str(started.args[0])
    qtbot.waitUntil(lambda: any(r.state == "completed" for r in shell.sessions_vm.rows()),
                    timeout=30_000)
    qtbot.waitUntil(lambda: "demo:backup" in shell.wallet_dock.cards, timeout=10_000)
    shell.show_session(session_id)
    qtbot.waitUntil(lambda: shell.stream_vm.rowCount() > 5, timeout=10_000)
    chips = shell.designer_dock.runtime_list
    chips.itemDoubleClicked.emit(chips.item(0))  # a node on the canvas
    return shell


def test_every_dock_reads_in_both_palettes(demo_shell: RelayShell, qtbot: QtBot,
                                           palette: str) -> None:
    window = demo_shell.window
    pal = window.palette()
    assert pal.color(R.Base) == QColor(theme.BASE)  # the theme's palette is the window's
    for fg, bg in ((R.Text, R.Base), (R.WindowText, R.Window), (R.ButtonText, R.Button),
                   (R.HighlightedText, R.Highlight), (R.ToolTipText, R.ToolTipBase)):
        assert theme.contrast(pal.color(fg), pal.color(bg)) >= AA, (fg, bg)
    low: list[str] = []
    checked = 0
    for dock in window.findChildren(QDockWidget):
        dock.show()
        dock.raise_()
        qtbot.waitUntil(dock.isVisible, timeout=2000)
        QApplication.processEvents()
        shot = window.grab().toImage()
        labels = _labels(dock, shot, window)
        views = _views(dock)
        low += [f"{dock.windowTitle()}: {x}" for x in labels + views]
        checked += sum(1 for lb in dock.findChildren(QLabel) if lb.isVisible())
    low += _chips(demo_shell.designer_dock.runtime_list)
    board = demo_shell.board_dock
    board.raise_()
    qtbot.waitUntil(lambda: any(c.isVisible() and c.model().rowCount()
                                for c in board.findChildren(CardList)), timeout=5000)
    low += _cards(board)
    demo_shell.stream_dock.raise_()
    qtbot.waitUntil(demo_shell.stream_dock.view.isVisible, timeout=2000)
    low += _stream(demo_shell.stream_dock.view)
    assert checked > 30  # the docks had something to read
    assert low == [], f"{palette}: " + "\n".join(low)


def test_the_stream_header_and_wallet_cards_take_the_dark_colours(
        demo_shell: RelayShell, palette: str) -> None:
    header = demo_shell.stream_dock.findChild(QWidget, "streamHeader")
    assert header is not None
    header.ensurePolished()
    assert header.palette().color(header.backgroundRole()) == QColor(theme.SUBTLE_BG)
    card = demo_shell.wallet_dock.cards["demo:primary"]
    card.ensurePolished()
    assert card.palette().color(card.backgroundRole()) == QColor(theme.BASE)
    dark = palette == "dark"
    assert (QColor(theme.BASE).lightness() < 60) == dark
    assert theme.contrast(card.title.palette().color(R.WindowText), theme.BASE) >= AA


# -- switching -----------------------------------------------------------------------------

def test_switching_at_run_time_restyles_what_is_on_screen(shell: RelayShell, qtbot: QtBot,
                                                          qapp: QApplication) -> None:
    label = QLabel("hello")
    qtbot.addWidget(label)
    theme.style(label, "QLabel { color: $TEXT; background: $WARNING_BG; }")
    header = shell.stream_dock.findChild(QWidget, "streamHeader")
    assert header is not None
    sessions = shell.sessions_dock
    try:
        assert theme.apply(qapp, "light") == "light"
        assert theme._LIGHT["WARNING_BG"] in label.styleSheet()
        light_header = header.styleSheet()
        with qtbot.waitSignal(theme.notifier().changed, timeout=1000) as changed:
            theme.apply(qapp, "dark")
        assert changed.args == ["dark"]
        assert theme._DARK["WARNING_BG"] in label.styleSheet()
        assert theme._LIGHT["WARNING_BG"] not in label.styleSheet()
        assert header.styleSheet() != light_header
        assert theme._DARK["SUBTLE_BG"] in header.styleSheet()
        label.ensurePolished()
        assert label.palette().color(R.WindowText) == QColor(theme._DARK["TEXT"])
        assert qapp.style().name().lower() == "fusion"
        assert qapp.palette().color(R.Window) == QColor(theme._DARK["WINDOW"])
        qtbot.waitUntil(lambda: sessions.palette().color(R.Base) == QColor(theme._DARK["BASE"]),
                        timeout=2000)  # the application's palette reaches it in an event
    finally:
        theme.apply(qapp, "system")
    assert theme.current() == "light"  # offscreen's desktop palette is light
    assert theme._LIGHT["WARNING_BG"] in label.styleSheet()


def test_system_follows_the_desktops_scheme(qapp: QApplication,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    before, window = qapp.style().name(), qapp.palette().color(R.Window)
    try:
        theme.apply(qapp, "dark")
        assert theme.apply(qapp, "system") == "light"  # offscreen: no scheme, a light palette
        assert qapp.style().name() == before  # the desktop's style and palette back
        assert qapp.palette().color(R.Window) == window
        # the desktop turns dark but its palette stays light: our dark palette then
        monkeypatch.setattr(theme, "system_is_dark", lambda _app: True)
        theme._system_changed(Qt.ColorScheme.Dark)
        assert theme.current() == "dark"
        assert qapp.palette().color(R.Window) == QColor(theme._DARK["WINDOW"])
        monkeypatch.setattr(theme, "system_is_dark", lambda _app: False)
        theme._system_changed(Qt.ColorScheme.Light)
        assert theme.current() == "light"
        assert qapp.palette().color(R.Window) == window
        with pytest.raises(ValueError, match="system, light or dark"):
            theme.apply(qapp, "blue")
    finally:
        monkeypatch.undo()
        theme.apply(qapp, "system")


def test_the_choice_comes_from_the_environment_or_relay_toml(tmp_path: Path) -> None:
    assert load_config({}, home=tmp_path).gui_theme == "system"
    (tmp_path / "relay.toml").write_text('gui_theme = "light"\n')
    assert load_config({}, home=tmp_path).gui_theme == "light"
    assert load_config({"RELAY_THEME": "dark"}, home=tmp_path).gui_theme == "dark"
    with pytest.raises(ConfigError, match="gui_theme"):
        load_config({"RELAY_THEME": "sepia"}, home=tmp_path)


def test_relay_theme_dark_opens_a_dark_window(window: Started, qapp: QApplication,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELAY_THEME", "dark")
    try:
        _task, shell = window()
        assert theme.current() == "dark"
        assert shell.window.palette().color(R.Window) == QColor(theme._DARK["WINDOW"])
    finally:
        theme.apply(qapp, "system")
