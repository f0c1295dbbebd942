"""The diff view widget on a recorded repository (pytest-qt, offscreen).

Modes, per-file and per-hunk navigation (actions, shortcuts, the file list),
the comment signal (mouse, keyboard, context menu), comments shown on their
lines, highlighting as painted pixels, and laziness on a 10,000-line diff.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QColor, QFont, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from relay.gui import theme
from relay.gui.docks.diff_delegate import LINE_BG
from relay.gui.docks.diff_view import DiffView
from relay.gui.syntax import BLOCK
from relay.history.diffmodel import DiffLine, FileDiff, Hunk
from relay.history.model import ReviewComment
from tests.gui.diff_helpers import Recorded, diff_of, long_repo, recorded_repo


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return recorded_repo(tmp_path / "recorded")


@pytest.fixture
def view(qtbot: QtBot, recorded: Recorded) -> DiffView:
    widget = DiffView()
    qtbot.addWidget(widget)
    widget.resize(1000, 700)
    widget.set_files(recorded.whole())
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def row_where(view: DiffView, path: str, old_no: int | None, new_no: int | None) -> int:
    """The row showing that line of ``path`` (old and/or new number)."""
    layout = view.rows.layout
    for at, row in enumerate(layout.rows):
        if row.kind != "line" or layout.files[row.file].path != path:
            continue
        if (row.old.old_no if row.old else None) == old_no and \
                (row.new.new_no if row.new else None) == new_no:
            return at
    raise AssertionError(f"no row for {path} old={old_no} new={new_no}")


def display(view: DiffView, row: int) -> str:
    return str(view.rows.index(row, 0).data(Qt.ItemDataRole.DisplayRole))


def test_unified_rows_show_text_and_both_numbers(view: DiffView) -> None:
    assert view.mode == "unified"
    assert view.files.summary == "5 files · +9 −6"
    assert view.files.headerData(1, Qt.Orientation.Horizontal) == "5 files · +9 −6"
    deleted = row_where(view, "app.py", 6, None)
    added = row_where(view, "app.py", None, 6)
    assert added == deleted + 1
    assert display(view, deleted) == "    6       -    return 'hello ' + name"
    assert display(view, added) == "          6 +    return f'hello {name}!'"
    assert display(view, row_where(view, "app.py", 44, 45)) == "   44    45      return 0"
    assert display(view, 1).startswith("@@ -3,7 +3,7 @@")


def test_side_by_side_rows_face_each_other(view: DiffView) -> None:
    view.set_mode("split")
    assert view.split_action.isChecked()
    pair = row_where(view, "app.py", 43, 43)
    assert display(view, pair) == ("   43     print(greet('world')) │    43     for who in "
                                   "('world', 'relay'):")
    assert display(view, pair + 1) == "       │    44         print(greet(who))"
    row = view.rows.row(pair)
    assert row.old is not None
    assert row.new is not None
    assert (row.old.kind, row.new.kind) == ("del", "add")
    view.toggle_mode()
    assert view.mode == "unified"
    assert view.unified_action.isChecked()


def test_binary_rename_deletion_and_addition_are_labelled(view: DiffView) -> None:
    files = view.files
    shown = [(files.index(r, 0).data(), files.index(r, 1).data(), files.index(r, 2).data(),
              files.index(r, 3).data()) for r in range(files.rowCount())]
    assert shown == [("M", "app.py", "+3", "−2"), ("M", "logo.png (binary)", "+0", "−0"),
                     ("R", "src/old_name.rs → src/new_name.rs", "+1", "−1"),
                     ("D", "web/gone.js", "+0", "−3"), ("A", "web/new.ts", "+5", "−0")]
    layout = view.rows.layout
    assert layout.rows[layout.file_rows[1] + 1].kind == "binary"
    assert display(view, layout.file_rows[1] + 1) == "Binary file — not shown"


def test_next_file_selects_and_scrolls(qtbot: QtBot, view: DiffView) -> None:
    layout = view.rows.layout
    view.resize(1000, 300)  # a short view, so files below the first are out of sight
    qtbot.waitUntil(lambda: view.table.rowAt(view.table.viewport().height() - 1) >= 0)
    assert view.table.top_row() == 0
    with qtbot.waitSignal(view.currentFileChanged) as changed:
        view.next_file()
    assert changed.args == [0]
    view.next_file()
    assert view.table.current_row() == layout.file_rows[1]
    assert view.table.top_row() == layout.file_rows[1]
    assert view.file_list.currentIndex().row() == 1
    view.table.setFocus()
    QTest.keyClick(view.table, Qt.Key.Key_BracketRight)  # the "]" shortcut
    assert view.table.current_row() == layout.file_rows[2]
    assert view.current_file == 2
    QTest.keyClick(view.table, Qt.Key.Key_BracketLeft)
    assert view.table.current_row() == layout.file_rows[1]
    view.previous_file()
    assert view.table.current_row() == 0
    assert not view.prev_file_action.isEnabled()


def test_picking_a_file_in_the_list_scrolls_to_it(qtbot: QtBot, view: DiffView) -> None:
    layout = view.rows.layout
    view.resize(1000, 300)
    qtbot.waitUntil(lambda: view.table.top_row() == 0)
    view.file_list.setCurrentIndex(view.files.index(4, 1))
    assert view.table.current_row() == layout.file_rows[4]
    last = view.table.rowAt(view.table.viewport().height() - 1)
    assert layout.file_rows[4] in range(view.table.top_row(), (last if last >= 0 else 10**6) + 1)
    assert view.current_file == 4


def test_hunk_navigation_walks_every_hunk(qtbot: QtBot, view: DiffView) -> None:
    layout = view.rows.layout
    seen = []
    view.table.setFocus()
    for _ in layout.hunk_rows:
        QTest.keyClick(view.table, Qt.Key.Key_N)
        seen.append(view.table.current_row())
    assert seen == layout.hunk_rows
    assert not view.next_hunk_action.isEnabled()
    QTest.keyClick(view.table, Qt.Key.Key_P)
    assert view.table.current_row() == layout.hunk_rows[-2]
    view.previous_hunk()
    assert view.table.current_row() == layout.hunk_rows[-3]


def test_comment_on_a_unified_line(qtbot: QtBot, view: DiffView) -> None:
    assert not view.comment_action.isEnabled()  # nothing picked yet
    added = row_where(view, "app.py", None, 6)
    view.table.go_to(added)
    with qtbot.waitSignal(view.commentRequested) as asked:
        view.request_comment()
    assert asked.args == ["app.py", 6, "new", "    return f'hello {name}!'"]
    view.table.go_to(added - 1)
    view.table.setFocus()
    with qtbot.waitSignal(view.commentRequested) as asked:
        QTest.keyClick(view.table, Qt.Key.Key_C)  # the shortcut
    assert asked.args == ["app.py", 6, "old", "    return 'hello ' + name"]
    view.table.go_to(1)  # a hunk header: nothing to comment on
    assert not view.comment_action.isEnabled()


def click_half(qtbot: QtBot, view: DiffView, row: int, side: str,
               button: Qt.MouseButton = Qt.MouseButton.LeftButton) -> QPoint:
    rect = view.table.visualRect(view.rows.index(row, 0))
    x = rect.left() + rect.width() // 4 * (1 if side == "old" else 3)
    point = QPoint(x, rect.center().y())
    QTest.mouseClick(view.table.viewport(), button, Qt.KeyboardModifier.NoModifier, point)
    return point


def test_comment_on_either_half_of_a_side_by_side_row(qtbot: QtBot, view: DiffView) -> None:
    view.set_mode("split")
    pair = row_where(view, "src/new_name.rs", 3, 3)
    view.table.scrollTo(view.rows.index(pair, 0))
    click_half(qtbot, view, pair, "old")
    assert view.rows.side == "old"
    with qtbot.waitSignal(view.commentRequested) as asked:
        view.request_comment()
    assert asked.args == ["src/old_name.rs", 3, "old", "    a + b"]
    QTest.keyClick(view.table, Qt.Key.Key_Right)  # → the new half
    with qtbot.waitSignal(view.commentRequested) as asked:
        QTest.keyClick(view.table, Qt.Key.Key_C)
    assert asked.args == ["src/new_name.rs", 3, "new", "    a.wrapping_add(b)"]
    padded = row_where(view, "app.py", None, 44)
    view.table.scrollTo(view.rows.index(padded, 0))
    click_half(qtbot, view, padded, "old")  # the empty half
    assert not view.comment_action.isEnabled()


def test_context_menu_offers_comment(qtbot: QtBot, view: DiffView) -> None:
    added = row_where(view, "app.py", None, 6)
    click_half(qtbot, view, added, "new", Qt.MouseButton.RightButton)  # picks the line
    assert view.table.current_row() == added
    menu = view.context_menu()
    items = {a.text(): a for a in menu.actions() if a.text()}
    assert items["Comment…"].isEnabled()
    assert items["Side by side"].isCheckable()
    with qtbot.waitSignal(view.commentRequested) as asked:
        items["Comment…"].trigger()
    assert asked.args[:3] == ["app.py", 6, "new"]
    menu.deleteLater()


def review(line: int, side: str, body: str, state: str, path: str = "app.py") -> ReviewComment:
    return ReviewComment(id=f"{path}:{line}:{side}", session_id="s", sha="abc", path=path,
                         line=line, side=side, body=body, state=state,  # type: ignore[arg-type]
                         created_at=datetime(2025, 1, 1, tzinfo=UTC), excerpt="x")


def test_existing_comments_show_on_their_lines(qtbot: QtBot, view: DiffView) -> None:
    added = row_where(view, "app.py", None, 6)
    view.table.go_to(added)
    view.set_comments([review(6, "new", "Use an f-string everywhere", "queued")])
    line = row_where(view, "app.py", None, 6)
    assert view.table.current_row() == line  # the current line stayed current
    assert view.rows.row(line).marks == ("new",)
    assert display(view, line + 1) == "[queued] Use an f-string everywhere"
    tip = view.rows.index(line, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert tip == "[queued] Use an f-string everywhere"
    view.set_comments([review(6, "new", "Use an f-string everywhere", "sent")])
    assert display(view, line + 1) == "[sent] Use an f-string everywhere"
    view.set_mode("split")
    pair = row_where(view, "app.py", 6, 6)
    assert view.table.current_row() == pair
    assert view.rows.row(pair + 1).comment is not None


def colour_pixels(image: QImage, role: str, tolerance: int = 40) -> int:
    """How many pixels of ``image`` have the current theme's colour ``role``."""
    colour = getattr(theme, role)
    want = QColor(colour)
    found = 0
    for y in range(image.height()):
        for x in range(image.width()):
            got = image.pixelColor(x, y)
            if (abs(got.red() - want.red()) + abs(got.green() - want.green())
                    + abs(got.blue() - want.blue())) <= tolerance:
                found += 1
    return found


def row_image(view: DiffView, row: int) -> QImage:
    rect = view.table.visualRect(view.rows.index(row, 0))
    return view.table.viewport().grab(rect).toImage()


def test_keywords_are_painted_in_the_keyword_colour(qtbot: QtBot, view: DiffView) -> None:
    big = QFont(view.table.font())
    big.setPixelSize(22)
    view.table.setFont(big)
    keyword_row = row_where(view, "app.py", 4, 4)  # "def greet(name):"
    string_row = row_where(view, "app.py", 5, 5)  # '    """Say hello."""'
    view.table.scrollTo(view.rows.index(keyword_row, 0))
    qtbot.waitUntil(lambda: view.table.visualRect(view.rows.index(string_row, 0)).top() >= 0)
    with_keyword = row_image(view, keyword_row)
    without = row_image(view, string_row)
    assert colour_pixels(with_keyword, "SYNTAX_KEYWORD") > 20
    assert colour_pixels(without, "SYNTAX_KEYWORD") == 0
    assert colour_pixels(without, "SYNTAX_STRING") > 20
    row = view.rows.layout.rows[keyword_row]
    tokens = view.table.delegate.tokens.tokens(view.rows.layout.files[row.file], row.hunk,
                                               "new", 4)
    assert tokens[0] == (0, 3, "SYNTAX_KEYWORD")


def test_a_10000_line_diff_paints_only_what_is_in_sight(qtbot: QtBot, tmp_path: Path) -> None:
    path, old, new = long_repo(tmp_path / "long", lines=10_000)
    files = diff_of(path, old, new)
    assert sum(f.line_count for f in files) >= 10_000
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    qtbot.waitExposed(view)
    delegate = view.table.delegate
    delegate.painted = 0
    view.set_files(files)
    qtbot.waitUntil(lambda: delegate.painted > 0)
    QApplication.processEvents()
    assert view.rows.rowCount() >= 10_000
    row_px = view.table.rowHeight(0)
    screenful = view.table.viewport().height() // row_px + 2
    assert delegate.painted <= 2 * screenful, (delegate.painted, screenful)
    assert delegate.tokens.lexed_lines <= 2 * BLOCK  # the block(s) in sight, not the diff
    painted = delegate.painted
    view.table.scrollToBottom()
    qtbot.waitUntil(lambda: delegate.painted > painted)
    QApplication.processEvents()
    assert delegate.painted - painted <= 2 * screenful
    view.set_mode("split")
    QApplication.processEvents()
    assert delegate.tokens.lexed_lines <= 8 * BLOCK


def test_no_files_says_so_and_navigation_is_off(qtbot: QtBot, view: DiffView) -> None:
    assert view.pages.currentIndex() == 1
    view.show_message("Loading the diff…")
    assert view.pages.currentIndex() == 0
    assert view.empty.text() == "Loading the diff…"
    assert view.rows.rowCount() == 0
    assert view.files.rowCount() == 0
    assert view.files.summary == ""
    assert view.files.headerData(1, Qt.Orientation.Horizontal) == "File"
    assert not view.next_file_action.isEnabled()
    assert not view.next_hunk_action.isEnabled()
    assert not view.comment_action.isEnabled()
    with qtbot.assertNotEmitted(view.commentRequested):
        view.request_comment()


def test_scrolling_sideways_moves_the_text_not_the_halves(qtbot: QtBot) -> None:
    long_old = "old = " + "x" * 400
    long_new = "new = " + "y" * 400
    hunk = Hunk("@@ -1 +1 @@", 1, 1, 1, 1, (DiffLine("del", 1, None, long_old),
                                            DiffLine("add", None, 1, long_new)))
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(800, 400)
    view.set_files([FileDiff("a.py", "a.py", "modified", False, 1, 1, (hunk,))])
    view.set_mode("split")
    view.show()
    qtbot.waitExposed(view)
    bar = view.table.horizontalScrollBar()
    assert bar.maximum() > 0  # 400 characters do not fit in half of 800 pixels
    bar.setValue(bar.maximum())
    pair = view.rows.layout.hunk_rows[0] + 1
    width = view.table.viewport().width()
    rect = view.table.visualRect(view.rows.index(pair, 0))
    image = view.table.viewport().grab(QRect(0, rect.top(), width, rect.height())).toImage()
    left = image.copy(0, 0, width // 2, image.height())
    right = image.copy(width // 2, 0, width - width // 2, image.height())
    assert colour_pixels(left, LINE_BG["del"][0], 0) > 100  # both halves still in sight
    assert colour_pixels(right, LINE_BG["add"][0], 0) > 100
    assert colour_pixels(left, LINE_BG["add"][0], 0) == 0


def test_scrolled_sideways_the_screen_shows_every_line_from_its_gutter(qtbot: QtBot) -> None:
    """What is on screen after scrolling sideways step by step is what a fresh paint gives:
    no row keeps pixels moved from where it was (the line numbers and the left half's
    start shifted under the gutter), as Qt's scroll-by-copying would leave them."""
    lines = [DiffLine("del", i, None, f"old_{i} = " + "abcdefghij" * 30) for i in range(1, 9)]
    lines += [DiffLine("add", None, i, f"new_{i} = " + "klmnopqrst" * 30) for i in range(1, 9)]
    hunk = Hunk("@@ -1,8 +1,8 @@", 1, 8, 1, 8, tuple(lines))
    view = DiffView()
    qtbot.addWidget(view)
    view.resize(800, 500)
    view.set_files([FileDiff("a.py", "a.py", "modified", False, 8, 8, (hunk,))])
    view.set_mode("split")
    view.show()
    qtbot.waitExposed(view)
    viewport = view.table.viewport()
    bar = view.table.horizontalScrollBar()
    for _ in range(6):
        bar.setValue(bar.value() + 37)
        QApplication.processEvents()
    assert bar.value() > 0
    origin = viewport.mapTo(view.window(), QPoint(0, 0))
    screen = view.screen().grabWindow(view.window().winId()).toImage().copy(
        QRect(origin, viewport.size()))
    fresh = viewport.grab().toImage()
    assert screen.size() == fresh.size()
    differing = sum(screen.pixel(x, y) != fresh.pixel(x, y)
                    for y in range(0, fresh.height(), 3) for x in range(0, fresh.width(), 3))
    assert differing == 0
