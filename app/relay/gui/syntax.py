"""A small line tokenizer for the diff view's highlighting (Qt-free, no dependency).

Languages are picked by file extension (:func:`language_for`): Python, Go, Rust,
TypeScript/JavaScript, Java and Ruby; any other file is plain (no tokens). One
regular expression per language finds comments, strings, numbers and words; a
word in the language's keyword set is a keyword. It works on one line at a time
(a diff shows lines out of their file), so state that spans lines is guessed:
a line that starts with ``*`` in a C-like language is taken as inside a block
comment, and a Python docstring's middle lines read as code. :class:`TokenCache`
keeps the tokens of the lines painted recently, so a line is tokenized when it
is first painted and not again while it stays in the cache.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

TokenKind = Literal["keyword", "string", "comment", "number"]
#: (start, end, kind): a half-open range of the line's characters
Token = tuple[int, int, TokenKind]

_NUMBER = (r"(?<![\w$])(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+"
           r"|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)[A-Za-z0-9_]*")
_DQ = r'"(?:\\.|[^"\\])*"?'  # an unterminated string runs to the end of the line
_SQ = r"'(?:\\.|[^'\\])*'?"
_CHAR = r"'(?:\\.|[^'\\])'"  # a char literal (a Rust lifetime 'a is not one)
_BACKTICK = r"`[^`]*`?"
_BLOCK = r"/\*.*?(?:\*/|$)"
_STAR_LINE = r"^\s*\*(?:[\s/].*|)$"  # " * text" inside a /** … */ block


@dataclass(frozen=True)
class Language:
    name: str
    keywords: frozenset[str]
    pattern: re.Pattern[str]


def _language(name: str, keywords: str, comments: list[str], strings: list[str]) -> Language:
    pattern = re.compile(
        f"(?P<comment>{'|'.join(comments)})|(?P<string>{'|'.join(strings)})"
        f"|(?P<number>{_NUMBER})|(?P<word>[A-Za-z_$][A-Za-z0-9_$]*)")
    return Language(name, frozenset(keywords.split()), pattern)


_C_COMMENTS = [_STAR_LINE, r"//.*", _BLOCK]

PYTHON = _language(
    "python",
    "False None True and as assert async await break class continue def del elif else except "
    "finally for from global if import in is lambda match case nonlocal not or pass raise return "
    "try while with yield self",
    [r"#.*"], [r"(?:[rRbBuUfF]{1,2})?" + _DQ, r"(?:[rRbBuUfF]{1,2})?" + _SQ])
GO = _language(
    "go",
    "break case chan const continue default defer else fallthrough for func go goto if import "
    "interface map package range return select struct switch type var nil true false iota",
    _C_COMMENTS, [_DQ, _CHAR, _BACKTICK])
RUST = _language(
    "rust",
    "as async await break const continue crate dyn else enum extern false fn for if impl in let "
    "loop match mod move mut pub ref return self Self static struct super trait true type unsafe "
    "use where while",
    _C_COMMENTS, [r"b?" + _DQ, _CHAR])
JAVASCRIPT = _language(
    "javascript",
    "abstract any as async await boolean break case catch class const constructor continue "
    "debugger declare default delete do else enum export extends false finally for from function "
    "get if implements import in instanceof interface let new null number of private protected "
    "public readonly return set static string super switch this throw true try type typeof "
    "undefined var void while with yield",
    _C_COMMENTS, [_DQ, _SQ, _BACKTICK])
JAVA = _language(
    "java",
    "abstract assert boolean break byte case catch char class const continue default do double "
    "else enum extends final finally float for goto if implements import instanceof int interface "
    "long native new package private protected public record return short static strictfp super "
    "switch synchronized this throw throws transient try var void volatile while true false null",
    _C_COMMENTS, [_DQ, _CHAR])
RUBY = _language(
    "ruby",
    "BEGIN END alias and begin break case class def defined do else elsif end ensure false for "
    "if in module next nil not or redo rescue retry return self super then true undef unless "
    "until when while yield require attr_accessor attr_reader private",
    [r"#.*"], [_DQ, _SQ])

_BY_EXTENSION: dict[str, Language] = {
    ".py": PYTHON, ".pyi": PYTHON, ".pyw": PYTHON,
    ".go": GO,
    ".rs": RUST,
    ".ts": JAVASCRIPT, ".tsx": JAVASCRIPT, ".mts": JAVASCRIPT, ".cts": JAVASCRIPT,
    ".js": JAVASCRIPT, ".jsx": JAVASCRIPT, ".mjs": JAVASCRIPT, ".cjs": JAVASCRIPT,
    ".java": JAVA,
    ".rb": RUBY, ".rake": RUBY, ".gemspec": RUBY,
}
_BY_NAME: dict[str, Language] = {"Rakefile": RUBY, "Gemfile": RUBY}


def language_for(path: str) -> Language | None:
    """The language of ``path`` by its extension (``None``: plain text)."""
    pure = PurePosixPath(path)
    return _BY_EXTENSION.get(pure.suffix.lower()) or _BY_NAME.get(pure.name)


def tokenize(language: Language | None, text: str) -> tuple[Token, ...]:
    """The highlighted ranges of one line; plain text between them is not listed."""
    if language is None or not text:
        return ()
    tokens: list[Token] = []
    for match in language.pattern.finditer(text):
        kind = match.lastgroup
        if kind == "word":
            if match.group() in language.keywords:
                tokens.append((match.start(), match.end(), "keyword"))
        elif kind in ("comment", "string", "number"):
            tokens.append((match.start(), match.end(), kind))  # type: ignore[arg-type]
    return tuple(tokens)


class TokenCache:
    """The tokens of recently painted lines (least recently used dropped past ``size``).

    ``computed`` counts how many lines were actually tokenized, so a test can
    tell that only painted lines were.
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self.computed = 0
        self._tokens: OrderedDict[tuple[str, str], tuple[Token, ...]] = OrderedDict()

    def tokens(self, language: Language | None, text: str) -> tuple[Token, ...]:
        if language is None:
            return ()
        key = (language.name, text)
        found = self._tokens.get(key)
        if found is not None:
            self._tokens.move_to_end(key)
            return found
        found = tokenize(language, text)
        self.computed += 1
        self._tokens[key] = found
        if len(self._tokens) > self.size:
            self._tokens.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._tokens)

    def clear(self) -> None:
        self._tokens.clear()
