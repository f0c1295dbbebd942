"""A diff as plain data: files, hunks and numbered lines (Qt-free; the CLI and the diff view read it).

Built from a pygit2 ``Diff`` (:func:`from_pygit2`) with renames found. Line text is
decoded as UTF-8 with replacement characters, without its line ending; a file git
treats as binary has no hunks and ``binary=True``. ``FileDiff.line_count`` is what
a view needs to lay out a file before it renders any line of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pygit2

LineKind = Literal["context", "add", "del", "note"]
FileStatus = Literal["added", "deleted", "modified", "renamed", "copied", "typechange"]

#: "?": a file the commit does not have, against the worktree (untracked there or not)
_STATUS: dict[str, FileStatus] = {"A": "added", "?": "added", "D": "deleted", "M": "modified",
                                  "R": "renamed", "C": "copied", "T": "typechange"}
_KIND: dict[str, LineKind] = {" ": "context", "+": "add", "-": "del"}


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    old_no: int | None
    new_no: int | None
    text: str


@dataclass(frozen=True, slots=True)
class Hunk:
    header: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: tuple[DiffLine, ...]


@dataclass(frozen=True)
class FileDiff:
    path: str
    old_path: str | None
    status: FileStatus
    binary: bool
    additions: int
    deletions: int
    hunks: tuple[Hunk, ...] = field(default=())

    @property
    def line_count(self) -> int:
        """Rows of a unified rendering: one header row per hunk plus its lines."""
        return sum(1 + len(h.lines) for h in self.hunks)

    @property
    def label(self) -> str:
        if self.old_path and self.old_path != self.path:
            return f"{self.old_path} → {self.path}"
        return self.path


def _text(line: pygit2.DiffLine) -> str:
    raw: bytes = line.raw_content
    return raw.decode("utf-8", "replace").rstrip("\r\n")


def _hunk(h: pygit2.DiffHunk) -> Hunk:
    lines = []
    for line in h.lines:
        kind = _KIND.get(line.origin)
        if kind is None:  # "\ No newline at end of file" and the like
            lines.append(DiffLine("note", None, None, _text(line).strip()))
            continue
        lines.append(DiffLine(kind, line.old_lineno if line.old_lineno >= 0 else None,
                              line.new_lineno if line.new_lineno >= 0 else None, _text(line)))
    return Hunk(h.header.rstrip("\r\n"), h.old_start, h.old_lines, h.new_start, h.new_lines,
                tuple(lines))


def from_pygit2(diff: pygit2.Diff) -> list[FileDiff]:
    """Every file of ``diff`` (renames found), in path order."""
    diff.find_similar()
    files = []
    for patch in diff:
        if patch is None:
            continue
        delta = patch.delta
        binary = bool(delta.is_binary)
        hunks = () if binary else tuple(_hunk(h) for h in patch.hunks)
        _, adds, dels = patch.line_stats
        old = delta.old_file.path
        files.append(FileDiff(path=delta.new_file.path, old_path=old,
                              status=_STATUS.get(delta.status_char(), "modified"), binary=binary,
                              additions=adds, deletions=dels, hunks=hunks))
    files.sort(key=lambda f: f.path)
    return files


def totals(files: list[FileDiff]) -> tuple[int, int]:
    """(lines added, lines deleted) over ``files``."""
    return sum(f.additions for f in files), sum(f.deletions for f in files)
