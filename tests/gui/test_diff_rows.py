"""The diff view's Qt-free layout on a recorded repository: rows, alignment, targets."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from relay.gui.diff_rows import MAX_CHARS, DiffLayout, layout, shown
from relay.history.diffmodel import DiffLine, FileDiff, Hunk
from relay.history.model import ReviewComment
from tests.gui.diff_helpers import Recorded, recorded_repo


@pytest.fixture
def recorded(tmp_path: Path) -> Recorded:
    return recorded_repo(tmp_path / "recorded")


def file_rows(out: DiffLayout, path: str) -> list[int]:
    index = next(i for i, f in enumerate(out.files) if f.path == path)
    start = out.file_rows[index]
    end = out.file_rows[index + 1] if index + 1 < len(out.file_rows) else len(out.rows)
    return list(range(start, end))


def comment(path: str, line: int, side: str, body: str = "why?",
            state: str = "queued") -> ReviewComment:
    return ReviewComment(id=f"c-{path}-{line}-{side}", session_id="s", sha="abc", path=path,
                         line=line, side=side, body=body, state=state,  # type: ignore[arg-type]
                         created_at=datetime(2025, 1, 1, tzinfo=UTC))


def test_unified_rows_of_each_kind_of_change(recorded: Recorded) -> None:
    out = layout(recorded.whole(), "unified")
    assert [out.rows[r].text for r in out.file_rows] == [
        "app.py", "logo.png", "src/old_name.rs → src/new_name.rs", "web/gone.js", "web/new.ts"]
    app = [out.rows[r] for r in file_rows(out, "app.py")]
    assert [r.kind for r in app[:2]] == ["file", "hunk"]
    assert app[1].text.startswith("@@ -3,7 +3,7 @@")
    deleted = next(r for r in app if r.kind == "line" and r.new is None)
    assert deleted.old is not None
    assert (deleted.old.old_no, deleted.old.text) == (6, "    return 'hello ' + name")
    added = app[app.index(deleted) + 1]
    assert added.old is None
    assert added.new is not None
    assert (added.new.new_no, added.new.text) == (6, "    return f'hello {name}!'")
    context = app[2]
    assert context.old is context.new  # one line, both numbers
    assert len([r for r in app if r.kind == "hunk"]) == 2
    binary = [out.rows[r] for r in file_rows(out, "logo.png")]
    assert [r.kind for r in binary] == ["file", "binary"]
    gone = [out.rows[r] for r in file_rows(out, "web/gone.js")]
    assert all(r.new is None for r in gone if r.kind == "line")
    assert len([r for r in gone if r.kind == "line"]) == 3


def test_split_rows_pair_deletions_with_additions(recorded: Recorded) -> None:
    out = layout(recorded.whole(), "split")
    app = [out.rows[r] for r in file_rows(out, "app.py") if out.rows[r].kind == "line"]
    numbers = [(r.old.old_no if r.old else None, r.new.new_no if r.new else None) for r in app]
    assert (6, 6) in numbers  # the changed return line faces its new version
    at = numbers.index((43, 43))
    assert numbers[at + 1] == (None, 44)  # the longer side is padded
    assert numbers[at + 2] == (44, 45)  # context again
    pair = app[at]
    assert pair.old is not None
    assert pair.new is not None
    assert (pair.old.kind, pair.new.kind) == ("del", "add")
    # a split layout has fewer rows: pairs share one
    assert len(out.rows) < len(layout(recorded.whole(), "unified").rows)


def _hunk(*lines: DiffLine) -> FileDiff:
    hunk = Hunk("@@ -1,3 +1,3 @@", 1, 3, 1, 3, lines)
    return FileDiff("f.py", "f.py", "modified", False, 2, 2, (hunk,))


def test_split_a_deletion_after_additions_starts_a_new_run() -> None:
    diff = _hunk(DiffLine("del", 1, None, "a"), DiffLine("add", None, 1, "A"),
                 DiffLine("del", 2, None, "b"), DiffLine("add", None, 2, "B"),
                 DiffLine("note", None, None, "\\ No newline at end of file"))
    out = layout([diff], "split")
    pairs = [(r.old.text if r.old else None, r.new.text if r.new else None)
             for r in out.rows if r.kind == "line"]
    assert pairs == [("a", "A"), ("b", "B")]
    assert out.rows[-1].kind == "note"
    assert out.rows[-1].text == "\\ No newline at end of file"


def test_navigation_positions(recorded: Recorded) -> None:
    out = layout(recorded.whole(), "unified")
    assert out.next_file(-1) == 0
    assert out.next_file(0) == out.file_rows[1]
    assert out.previous_file(out.file_rows[2]) == out.file_rows[1]
    assert out.previous_file(0) is None
    assert out.next_file(out.file_rows[-1]) is None
    assert out.next_hunk(0) == out.hunk_rows[0] == 1
    assert out.next_hunk(out.hunk_rows[0]) == out.hunk_rows[1]
    assert out.file_at(out.hunk_rows[1] + 2) == 0
    assert out.file_at(out.file_rows[3]) == 3


def test_comment_targets_and_sides(recorded: Recorded) -> None:
    unified = layout(recorded.whole(), "unified")
    rows = file_rows(unified, "app.py")
    context = unified.target(rows[2])
    assert context is not None
    assert (context.path, context.line, context.side, context.text) == ("app.py", 3, "new", "")
    deleted = next(r for r in rows if unified.rows[r].kind == "line"
                   and unified.rows[r].new is None)
    found = unified.target(deleted)
    assert found is not None
    assert (found.line, found.side, found.text) == (6, "old", "    return 'hello ' + name")
    assert unified.target(rows[0]) is None  # a file header
    assert unified.target(rows[1]) is None  # a hunk header
    split = layout(recorded.whole(), "split")
    renamed = [r for r in file_rows(split, "src/new_name.rs") if split.rows[r].kind == "line"]
    changed = next(r for r in renamed
                   if (line := split.rows[r].new) is not None and line.kind == "add")
    old = split.target(changed, "old")
    new = split.target(changed, "new")
    assert old is not None
    assert new is not None
    assert (old.path, old.line, old.text) == ("src/old_name.rs", 3, "    a + b")
    assert (new.path, new.line, new.text) == ("src/new_name.rs", 3, "    a.wrapping_add(b)")
    padded = next(r for r in file_rows(split, "app.py") if split.rows[r].kind == "line"
                  and split.rows[r].old is None)
    assert split.target(padded, "old") is None  # the empty half


def test_comments_sit_below_their_line(recorded: Recorded) -> None:
    notes = [comment("app.py", 6, "new", "use an f-string"), comment("app.py", 6, "old", "old"),
             comment("src/old_name.rs", 3, "old", "overflow?"), comment("web/new.ts", 99, "new")]
    out = layout(recorded.whole(), "unified", notes)
    bodies = {(r.comment.path, r.comment.side, r.comment.line): i
              for i, r in enumerate(out.rows) if r.comment is not None}
    assert set(bodies) == {("app.py", "new", 6), ("app.py", "old", 6),
                           ("src/old_name.rs", "old", 3)}  # line 99 is not in the diff
    above = out.rows[bodies[("app.py", "new", 6)] - 1]
    assert above.kind == "line"
    assert above.new is not None
    assert above.new.new_no == 6
    assert above.marks == ("new",)
    split = layout(recorded.whole(), "split", notes)
    line = next(r for r in split.rows if r.kind == "line" and r.marks)
    assert set(line.marks) == {"old", "new"}  # the pair's two halves are both commented


def test_find_line_and_long_lines() -> None:
    long = "x" * (MAX_CHARS + 50)
    diff = _hunk(DiffLine("context", 1, 1, "\tindented"), DiffLine("add", None, 2, long))
    out = layout([diff], "unified")
    assert out.find_line(0, None, 2) == 3
    assert out.find_line(0, 1, None) == 2
    assert out.find_line(5, 1, 1) is None
    assert out.max_chars == MAX_CHARS
    assert shown("\tindented") == "    indented"
    assert len(shown(long)) == MAX_CHARS
    assert shown(long).endswith("…")
    assert out.max_line_no >= 4
