"""The diff view's highlighting, by Pygments (Qt-free): a lexer per file name, tokens per line.

:func:`lexer_for` picks Pygments' lexer for a path by its file name (every language
Pygments knows; ``None`` for plain text and names it does not know). A diff shows
lines out of their file, but a hunk's lines on one side are consecutive lines of that
side's file: :class:`TokenCache` lexes a hunk's old side (context and deletions) and
new side (context and additions) as pieces of text of up to :data:`BLOCK` lines, so a
string or comment over several lines reads right, and keeps the tokens per file — a
block is lexed when one of its lines is first painted, and not again (a 5,000-line
hunk costs its first paint about 15 ms, not the 0.2–0.4 s of lexing all of it). A token is ``(start,
end, role)``: a half-open range of the line as painted (tabs expanded, see
:func:`relay.gui.diff_rows.shown`) and the name of its colour role in
:mod:`relay.gui.theme` (``SYNTAX_KEYWORD`` …), read when it is painted.
"""

from __future__ import annotations

import bisect
import functools
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Literal

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.token import (
    Comment,
    Generic,
    Keyword,
    Name,
    Number,
    Operator,
    String,
    _TokenType,
)
from pygments.token import (
    Literal as LiteralToken,
)
from pygments.util import ClassNotFound

from relay.gui.diff_rows import shown
from relay.history.diffmodel import FileDiff

#: (start, end, theme role): a half-open range of a painted line's characters
Token = tuple[int, int, str]
Side = Literal["old", "new"]

#: Pygments token types → theme colour roles; the first that contains a token wins
_ROLES: tuple[tuple[_TokenType, str], ...] = (
    (Keyword.Type, "SYNTAX_TYPE"),
    (Keyword, "SYNTAX_KEYWORD"),
    (Operator.Word, "SYNTAX_KEYWORD"),
    (Comment.Preproc, "SYNTAX_KEYWORD"),
    (Comment, "SYNTAX_COMMENT"),
    (String, "SYNTAX_STRING"),
    (Number, "SYNTAX_NUMBER"),
    (LiteralToken, "SYNTAX_NUMBER"),
    (Name.Builtin, "SYNTAX_BUILTIN"),
    (Name.Function, "SYNTAX_FUNCTION"),
    (Name.Class, "SYNTAX_TYPE"),
    (Name.Decorator, "SYNTAX_TAG"),
    (Name.Tag, "SYNTAX_TAG"),
    (Name.Attribute, "SYNTAX_TAG"),
    (Generic.Heading, "SYNTAX_KEYWORD"),
    (Generic.Subheading, "SYNTAX_KEYWORD"),
    (Generic.Inserted, "SYNTAX_TAG"),
    (Generic.Deleted, "SYNTAX_KEYWORD"),
)
#: every role a token can have (the theme defines each, in both palettes)
ROLES = tuple(dict.fromkeys(role for _, role in _ROLES))


@functools.cache
def role_of(kind: _TokenType) -> str | None:
    """The colour role of a Pygments token type (None: painted as plain text)."""
    return next((role for parent, role in _ROLES if kind in parent), None)


@functools.lru_cache(maxsize=1024)
def lexer_for(path: str) -> Lexer | None:
    """Pygments' lexer for ``path``'s file name (None: plain text)."""
    name = PurePosixPath(path).name
    try:
        lexer = get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None
    return None if isinstance(lexer, TextLexer) else lexer


def highlight(lexer: Lexer | None, lines: Sequence[str]) -> list[tuple[Token, ...]]:
    """The tokens of each of ``lines`` (consecutive lines of one file), lexed as one text."""
    if lexer is None or not lines:
        return [() for _ in lines]
    text = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    out: list[list[Token]] = [[] for _ in lines]
    for index, kind, value in lexer.get_tokens_unprocessed(text):
        role = role_of(kind)
        if role is None or not value:
            continue
        _place(out, starts, lines, index, index + len(value), role)
    return [tuple(tokens) for tokens in out]


def _place(out: list[list[Token]], starts: list[int], lines: Sequence[str], begin: int,
           end: int, role: str) -> None:
    """Add the token ``[begin, end)`` of the joined text to the lines it covers."""
    at = bisect.bisect_right(starts, begin) - 1
    while at < len(lines) and begin < end:
        start, stop = begin - starts[at], min(end - starts[at], len(lines[at]))
        if stop > start:
            tokens = out[at]
            if tokens and tokens[-1][1] == start and tokens[-1][2] == role:
                tokens[-1] = (tokens[-1][0], stop, role)  # one run, one draw call
            else:
                tokens.append((start, stop, role))
        at += 1
        if at < len(lines):
            begin = starts[at]


#: a hunk side is lexed this many lines at a time (a huge hunk's first paint stays quick)
BLOCK = 256


class _HunkSide:
    """One side of one hunk: its lines (numbered) and the tokens of the blocks lexed."""

    def __init__(self, diff: FileDiff, hunk: int, side: Side) -> None:
        kinds = ("context", "del") if side == "old" else ("context", "add")
        lines = [line for line in diff.hunks[hunk].lines if line.kind in kinds]
        self.texts = [shown(line.text) for line in lines]
        self.at = {number: i for i, line in enumerate(lines)
                   if (number := line.old_no if side == "old" else line.new_no) is not None}
        self.blocks: dict[int, list[tuple[Token, ...]]] = {}


class _FileTokens:
    """One file's lexer and, per (hunk, side), what was lexed of it."""

    def __init__(self, diff: FileDiff, lexer: Lexer | None) -> None:
        self.diff, self.lexer = diff, lexer
        self.hunks: dict[tuple[int, Side], _HunkSide] = {}


class TokenCache:
    """The tokens of the files of the diff shown, lexed on first need.

    A hunk side is lexed :data:`BLOCK` lines at a time (a string or comment that spans a
    block's edge reads right within each block). ``computed`` counts the blocks lexed and
    ``lexed_lines`` their lines, so a test can tell that only what was painted was lexed;
    files past ``size`` (least recently used) are dropped.
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.computed = 0
        self.lexed_lines = 0
        self._files: OrderedDict[int, _FileTokens] = OrderedDict()

    def tokens(self, diff: FileDiff, hunk: int, side: Side, number: int | None
               ) -> tuple[Token, ...]:
        """The tokens of line ``number`` (that side's numbering) of ``diff``'s hunk ``hunk``."""
        if number is None or not 0 <= hunk < len(diff.hunks):
            return ()
        entry = self._file(diff)
        if entry.lexer is None:
            return ()
        part = entry.hunks.get((hunk, side))
        if part is None:
            part = entry.hunks[(hunk, side)] = _HunkSide(diff, hunk, side)
        at = part.at.get(number)
        if at is None:
            return ()
        block, offset = divmod(at, BLOCK)
        found = part.blocks.get(block)
        if found is None:
            texts = part.texts[block * BLOCK:(block + 1) * BLOCK]
            found = part.blocks[block] = highlight(entry.lexer, texts)
            self.computed += 1
            self.lexed_lines += len(texts)
        return found[offset]

    def _file(self, diff: FileDiff) -> _FileTokens:
        key = id(diff)
        entry = self._files.get(key)
        if entry is None or entry.diff is not diff:
            entry = self._files[key] = _FileTokens(diff, lexer_for(diff.path))
            if len(self._files) > self.size:
                self._files.popitem(last=False)
        self._files.move_to_end(key)
        return entry

    def __len__(self) -> int:
        return len(self._files)

    def clear(self) -> None:
        self._files.clear()
