"""Ruby: a keyword scan that matches each ``end`` to what it closes.

The text is blanked first (:func:`blank_ruby`): ``#`` comments, ``=begin``/``=end`` blocks,
everything after ``__END__``, strings (``#{…}`` inside double quotes stays code), heredocs
(``<<~ID``, ``<<-ID``, ``<<ID``, quoted ids too), percent literals (``%w[…]``, ``%q(…)``,
``%r{…}`` …) and regex literals where an expression may start.

Then ``module``, ``class``, ``def``, ``do``, ``begin``, ``case``, ``for`` and — at the
start of a statement, not as modifiers (``return x if y``) — ``if``, ``unless``, ``while``
and ``until`` open a block that an ``end`` closes; ``while x do`` opens one. A word after
``.`` or ``:``, or followed by ``:`` (``if:`` keys), is not a keyword. Endless methods
(``def x = 1``) close at once.

Symbols: modules and classes at any depth inside modules and classes (``A::B``), methods
directly inside them (``A::B#m``, ``A::B.m`` for ``def self.m``) and top-level ``def``.
Imports: ``require`` and ``require_relative``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.knowledge_scan.baseline.braces import Source
from relay.knowledge.langs.model import Outline, Symbol

#: blanks ``text[a:b]`` in the output being built
Wipe = Callable[[int, int], None]
_HEREDOC = re.compile(r"<<([~-]?)([\"'`]?)([A-Za-z_]\w*)\2")
_PERCENT = re.compile(r"%([qQwWiIrsx]?)([(\[{<|!/^])")
_PAIRS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_REGEX_AFTER = frozenset("(,=~!&|?{;[")
_REGEX_WORDS = frozenset({"if", "unless", "when", "and", "or", "not", "return", "elsif", "while",
                          "until", "puts"})


def blank_ruby(text: str) -> str:
    """``text`` with comments and literal contents blanked (see the module docstring)."""
    out, i, n = list(text), 0, len(text)
    pending: list[tuple[str, str]] = []  # heredocs opened on the current line
    interp: list[int] = []  # brace depth at each open ``#{``
    depth = 0
    last, word = "", ""

    def wipe(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] not in "\n\r":
                out[k] = " "

    while i < n:
        c = text[i]
        line_start = i == 0 or text[i - 1] == "\n"
        if line_start and text.startswith("=begin", i):
            end = text.find("\n=end", i)
            end = n if end < 0 else end + 5
            wipe(i, end)
            i = end
            continue
        if line_start and text.startswith("__END__", i):
            wipe(i, n)
            break
        if c == "\n" and pending:
            i = _skip_heredocs(text, i + 1, pending, wipe)
            pending.clear()
            continue
        if c == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
            continue
        if c in "\"'`":
            i = _string(text, i, c, wipe, interp, depth)
            last, word = "a", ""
            continue
        if c == "}" and interp and depth == interp[-1]:
            interp.pop()
            i = _string(text, i, '"', wipe, interp, depth, resume=True)
            continue
        if c == "<" and (m := _HEREDOC.match(text, i)) and (m.group(1) or m.group(2)
                                                             or m.group(3).isupper()):
            pending.append((m.group(1), m.group(3)))
            i = m.end()
            last, word = "a", ""
            continue
        if c == "%" and (m := _PERCENT.match(text, i)) and (m.group(1) or not (
                last.isalnum() or last in "_)]")):
            i = _delimited(text, m.end() - 1, wipe)
            last, word = "a", ""
            continue
        if c == "/" and (last in _REGEX_AFTER or last == "" or word in _REGEX_WORDS):
            after = _regex(text, i)
            if after is not None:
                wipe(i + 1, after - 1)
                i, last, word = after, "a", ""
                continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c.isalnum() or c == "_":
            word = word + c if last.isalnum() or last == "_" else c
        elif not c.isspace():
            word = ""
        if not c.isspace():
            last = c
        i += 1
    return "".join(out)


def _string(text: str, i: int, quote: str, wipe: Wipe, interp: list[int], depth: int,
            resume: bool = False) -> int:
    """Scan a string from its quote at ``i`` (or, ``resume``, from the ``}`` ending an
    interpolation); returns where code goes on."""
    k = i + 1
    start = i if resume else i + 1
    while k < len(text):
        ch = text[k]
        if ch == "\\":
            k += 2
            continue
        if ch == quote:
            wipe(start, k)
            return k + 1
        if quote != "'" and ch == "#" and text[k + 1:k + 2] == "{":
            wipe(start, k + 2)
            interp.append(depth)
            return k + 2
        k += 1
    wipe(start, k)
    return k


def _skip_heredocs(text: str, k: int, pending: list[tuple[str, str]], wipe: Wipe) -> int:
    """Blank the bodies of the heredocs opened on the line before ``k``; where code goes on."""
    for flavour, ident in pending:
        while k < len(text):
            end = text.find("\n", k)
            end = len(text) if end < 0 else end
            line = text[k:end]
            done = (line.strip() if flavour else line.rstrip("\r")) == ident
            if not done:
                wipe(k, end)
            k = end + 1
            if done:
                break
    return min(k, len(text))


def _delimited(text: str, k: int, wipe: Wipe) -> int:
    """A percent literal whose opening delimiter is at ``k``; the index after it."""
    opener = text[k]
    closer = _PAIRS.get(opener, opener)
    level, j = 1, k + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == closer:
            level -= 1
            if level == 0:
                wipe(k + 1, j)
                return j + 1
        elif ch == opener and closer != opener:
            level += 1
        j += 1
    wipe(k + 1, j)
    return j


def _regex(text: str, i: int) -> int | None:
    j = i + 1
    while j < len(text) and text[j] != "\n":
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "/":
            return j + 1 if j > i + 1 else None
        j += 1
    return None


# --- the keyword scan ---------------------------------------------------------------------

_TOKEN = re.compile(r"(?<![\w.:$@])(module|class|def|if|unless|while|until|case|for|begin|do|end)"
                    r"\b(?![?!]|:(?!:))|;")
_NAME = re.compile(r"\s+([A-Z]\w*(?:::[A-Z]\w*)*)")
_DEF = re.compile(r"\s+(self\.)?([A-Za-z_]\w*[?!=]?|\[\]=?|[-+*/%<>=!~^&|]+@?)")
_ENDLESS = re.compile(r"\s*(?:\([^)]*\))?\s*=(?![=~>])")
_STARTERS = frozenset("=(;,[{|&!")
_START_WORDS = frozenset({"return", "and", "or", "not", "then", "else", "in", "do"})
_LOOPS = frozenset({"while", "until", "for"})
_REQUIRE = re.compile(r"(?<![\w.])(?:require|require_relative)\b\s*\(?\s*(?=[\"'])")


@dataclass
class _Open:
    kind: str  # "module", "class", "def", "block"
    name: str
    line: int
    owner: str = ""  # the qualified name of the module/class it is in


def outline(text: str) -> Outline:
    lines = text.split("\n")
    clean = blank_ruby(text).split("\n")
    src = Source(lines, clean, [0] * len(lines), "")
    stack: list[_Open] = []
    symbols: list[Symbol] = []
    for k, line in enumerate(clean):
        loop_open = False
        segment = 0
        for m in _TOKEN.finditer(line):
            word = m.group(1)
            if word is None:  # ``;``: a new statement starts
                segment = m.end()
                continue
            if word == "end":
                if stack:
                    _close(stack.pop(), k, stack, src, symbols)
                continue
            if word == "do" and loop_open:
                loop_open = False
                continue
            if word in ("if", "unless", "while", "until", "case", "begin", "for") \
                    and not _statement_start(line[segment:m.start()]):
                continue
            opened = _open(word, line, m.end(), k, stack)
            if opened is None:  # an endless method: one line
                name = _DEF.match(line, m.end())
                if name and _defined_in(stack) is not None:
                    _record_def(name, _defined_in(stack) or "", k, k, src, symbols)
                continue
            stack.append(opened)
            loop_open = word in _LOOPS
    damaged = bool(stack)
    while stack:
        _close(stack.pop(), len(clean) - 1, stack, src, symbols)
    symbols.sort(key=lambda s: s.start)
    imports, header_end = _requires(src)
    return Outline(symbols=symbols, imports=imports, header_end=header_end, damaged=damaged)


def _statement_start(before: str) -> bool:
    before = before.rstrip()
    if not before or before[-1] in _STARTERS:
        return True
    words = before.split()
    return bool(words) and words[-1] in _START_WORDS


def _owner(stack: list[_Open]) -> str:
    return "::".join(o.name for o in stack if o.kind in ("module", "class") and o.name)


def _defined_in(stack: list[_Open]) -> str | None:
    """Where a ``def`` here belongs: a module/class name, "" at the top level, None
    inside a method or a block."""
    if not stack:
        return ""
    top = stack[-1]
    return _owner(stack) if top.kind in ("module", "class") and top.name else None


def _open(word: str, line: str, at: int, k: int, stack: list[_Open]) -> _Open | None:
    if word in ("module", "class"):
        named = _NAME.match(line, at)
        return _Open(word, named.group(1) if named else "", k, _owner(stack))
    if word == "def":
        name = _DEF.match(line, at)
        if name and _ENDLESS.match(line, name.end()):
            return None
        owner = _defined_in(stack)
        label = ((name.group(1) or "") + name.group(2)) if name else ""
        return _Open("def" if owner is not None and name else "block", label, k,
                     owner or "")
    return _Open("block", "", k)


def _close(item: _Open, end: int, stack: list[_Open], src: Source, symbols: list[Symbol]) -> None:
    if item.kind in ("module", "class") and item.name:
        name = f"{item.owner}::{item.name}" if item.owner else item.name
        symbols.append(_symbol(src, name, item.kind, item.line, end))
    elif item.kind == "def":
        is_static = item.name.startswith("self.")
        method = item.name.removeprefix("self.")
        if item.owner:
            name = f"{item.owner}{'.' if is_static else '#'}{method}"
            symbols.append(_symbol(src, name, "method", item.line, end))
        else:
            symbols.append(_symbol(src, method, "def", item.line, end))


def _record_def(name: re.Match[str], owner: str, start: int, end: int, src: Source,
                symbols: list[Symbol]) -> None:
    _close(_Open("def", (name.group(1) or "") + name.group(2), start, owner), end, [], src, symbols)


def _symbol(src: Source, name: str, kind: str, start: int, end: int) -> Symbol:
    doc = start
    while doc > 0 and src.is_comment(doc - 1):
        doc -= 1
    return Symbol(name, kind, start + 1, end + 1, doc + 1)


def _requires(src: Source) -> tuple[list[str], int]:
    out, last = [], 0
    for k, line in enumerate(src.clean):
        for m in _REQUIRE.finditer(line):
            quote_at = m.end()
            close = line.find(line[quote_at], quote_at + 1)
            if close > quote_at:
                out.append(src.lines[k][quote_at + 1:close])
                if not line[:m.start()].strip():
                    last = k + 1
    return list(dict.fromkeys(out)), last
