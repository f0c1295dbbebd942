"""The diff view's rows: a list of :class:`FileDiff` laid out for one mode (Qt-free).

Every file starts with a ``file`` row (its label, status, +/− counts), then per
hunk a ``hunk`` separator row and its lines. In **unified** mode a line row
holds one line: ``old`` is set for a deletion, ``new`` for an addition, both
(the same line) for context. In **split** (side-by-side) mode each hunk is
aligned: context lines face themselves, and a run of deletions followed by a
run of additions is paired line by line, the shorter side padded with ``None``.
A binary file has a ``binary`` row instead of hunks, a file without hunks (a
pure rename, an empty file) an ``empty`` row; git's "\\ No newline at end of
file" is a ``note`` row. A review comment is a ``comment`` row right below the
line it is about (its side's line number in that file).

:class:`DiffLayout` also keeps where each file and hunk starts (for navigation)
and the widest line (the horizontal extent), so a view lays out every row
without measuring any.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from relay.history.diffmodel import DiffLine, FileDiff, Hunk
from relay.history.model import ReviewComment

Mode = Literal["unified", "split"]
Side = Literal["old", "new"]
RowKind = Literal["file", "hunk", "line", "note", "binary", "empty", "comment"]

TAB = 4
#: characters of a line that are shown (a minified file's one huge line is cut)
MAX_CHARS = 1000


@dataclass(frozen=True, slots=True)
class DiffRow:
    kind: RowKind
    file: int
    hunk: int = -1
    old: DiffLine | None = None
    new: DiffLine | None = None
    comment: ReviewComment | None = None
    #: the sides of this row with comments on their line (the gutter marks them)
    marks: tuple[Side, ...] = ()
    text: str = ""


@dataclass(frozen=True, slots=True)
class CommentTarget:
    """A line a comment can be about."""

    path: str
    line: int
    side: Side
    text: str


@dataclass
class DiffLayout:
    mode: Mode
    files: list[FileDiff]
    rows: list[DiffRow] = field(default_factory=list)
    file_rows: list[int] = field(default_factory=list)
    hunk_rows: list[int] = field(default_factory=list)
    #: the widest line's length in characters (tabs expanded)
    max_chars: int = 0
    #: the largest line number shown (the gutters' width)
    max_line_no: int = 0

    def file_at(self, row: int) -> int | None:
        """The file that ``row`` belongs to."""
        at = bisect.bisect_right(self.file_rows, row) - 1
        return at if at >= 0 else None

    def next_file(self, row: int) -> int | None:
        return _after(self.file_rows, row)

    def previous_file(self, row: int) -> int | None:
        return _before(self.file_rows, row)

    def next_hunk(self, row: int) -> int | None:
        return _after(self.hunk_rows, row)

    def previous_hunk(self, row: int) -> int | None:
        return _before(self.hunk_rows, row)

    def find_line(self, file: int, old_no: int | None, new_no: int | None) -> int | None:
        """The row of ``file`` showing old line ``old_no`` or new line ``new_no``."""
        if not 0 <= file < len(self.file_rows):
            return None
        start = self.file_rows[file]
        end = self.file_rows[file + 1] if file + 1 < len(self.file_rows) else len(self.rows)
        for at in range(start, end):
            row = self.rows[at]
            if row.kind != "line":
                continue
            if new_no is not None and row.new is not None and row.new.new_no == new_no:
                return at
            if old_no is not None and row.old is not None and row.old.old_no == old_no:
                return at
        return None

    def target(self, row: int, side: Side | None = None) -> CommentTarget | None:
        """The line a comment on ``row`` would be about (``side`` picks a half in split mode).

        In unified mode a context line is commented on its new side, like a review
        on a hosting site; a split row's empty half has no target.
        """
        if not 0 <= row < len(self.rows):
            return None
        item = self.rows[row]
        if item.kind != "line":
            return None
        if self.mode == "unified" or side is None:
            side = "new" if item.new is not None else "old"
        line = item.old if side == "old" else item.new
        number = None if line is None else (line.old_no if side == "old" else line.new_no)
        if line is None or number is None:
            return None
        diff = self.files[item.file]
        path = (diff.old_path or diff.path) if side == "old" else diff.path
        return CommentTarget(path, number, side, line.text)


def _after(starts: list[int], row: int) -> int | None:
    at = bisect.bisect_right(starts, row)
    return starts[at] if at < len(starts) else None


def _before(starts: list[int], row: int) -> int | None:
    at = bisect.bisect_left(starts, row) - 1
    return starts[at] if at >= 0 else None


CommentKey = tuple[str, Side, int]


def comments_by_line(comments: Iterable[ReviewComment]) -> dict[CommentKey, list[ReviewComment]]:
    found: dict[CommentKey, list[ReviewComment]] = defaultdict(list)
    for comment in sorted(comments, key=lambda c: c.created_at):
        found[(comment.path, comment.side, comment.line)].append(comment)
    return found


def layout(files: Sequence[FileDiff], mode: Mode,
           comments: Iterable[ReviewComment] = ()) -> DiffLayout:
    """The rows of ``files`` in ``mode``, with ``comments`` below their lines."""
    out = DiffLayout(mode, list(files))
    notes = comments_by_line(comments)
    widest = 0
    for f_index, diff in enumerate(out.files):
        out.file_rows.append(len(out.rows))
        out.rows.append(DiffRow("file", f_index, text=diff.label))
        if diff.binary:
            out.rows.append(DiffRow("binary", f_index, text="Binary file — not shown"))
            continue
        if not diff.hunks:
            text = "Renamed, content unchanged" if diff.status == "renamed" else "No content"
            out.rows.append(DiffRow("empty", f_index, text=text))
            continue
        old_path, new_path = diff.old_path or diff.path, diff.path
        for h_index, hunk in enumerate(diff.hunks):
            out.hunk_rows.append(len(out.rows))
            out.rows.append(DiffRow("hunk", f_index, h_index, text=hunk.header))
            pairs = _unified(hunk) if mode == "unified" else _aligned(hunk)
            for old, new in pairs:
                widest = max(widest, _width(old), _width(new))
                if old is not None and old.kind == "note":
                    out.rows.append(DiffRow("note", f_index, h_index, text=old.text))
                    continue
                found = _comments_of(notes, old_path, new_path, old, new)
                marks = tuple(dict.fromkeys(c.side for c in found))
                out.rows.append(DiffRow("line", f_index, h_index, old, new, marks=marks))
                out.rows.extend(DiffRow("comment", f_index, h_index, old, new, comment=c)
                                for c in found)
        last = diff.hunks[-1]
        out.max_line_no = max(out.max_line_no, last.old_start + last.old_lines,
                              last.new_start + last.new_lines)
    out.max_chars = widest
    return out


def shown(text: str) -> str:
    """``text`` as painted: tabs expanded, cut at :data:`MAX_CHARS` (with an ellipsis)."""
    if "\t" in text:
        text = text.expandtabs(TAB)
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def _width(line: DiffLine | None) -> int:
    if line is None:
        return 0
    text = line.text
    return min(len(text.expandtabs(TAB)) if "\t" in text else len(text), MAX_CHARS)


def _comments_of(notes: dict[CommentKey, list[ReviewComment]], old_path: str, new_path: str,
                 old: DiffLine | None, new: DiffLine | None) -> list[ReviewComment]:
    if not notes:
        return []
    found: list[ReviewComment] = []
    if old is not None and old.old_no is not None:
        found += notes.get((old_path, "old", old.old_no), ())
    if new is not None and new.new_no is not None:
        found += notes.get((new_path, "new", new.new_no), ())
    return found


Pair = tuple[DiffLine | None, DiffLine | None]


def _unified(hunk: Hunk) -> list[Pair]:
    pairs: list[Pair] = []
    for line in hunk.lines:
        if line.kind == "add":
            pairs.append((None, line))
        elif line.kind == "del":
            pairs.append((line, None))
        else:  # context (both sides) or a note
            pairs.append((line, line if line.kind == "context" else None))
    return pairs


def _aligned(hunk: Hunk) -> list[Pair]:
    """Side by side: deletions left, additions right, each run paired line by line."""
    pairs: list[Pair] = []
    dels: list[DiffLine] = []
    adds: list[DiffLine] = []

    def flush() -> None:
        for i in range(max(len(dels), len(adds))):
            pairs.append((dels[i] if i < len(dels) else None, adds[i] if i < len(adds) else None))
        dels.clear()
        adds.clear()

    for line in hunk.lines:
        if line.kind == "del":
            if adds:  # a deletion after additions starts a new run
                flush()
            dels.append(line)
        elif line.kind == "add":
            adds.append(line)
        else:
            flush()
            pairs.append((line, line if line.kind == "context" else None))
    flush()
    return pairs
