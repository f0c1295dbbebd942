"""The line scanner shared by Go, Rust, TypeScript/JavaScript and Java.

It reads the blanked text (:mod:`.blank`) line by line, keeping the nesting of ``( [ {``.
A line that starts at nesting 0 and that the language's rules call a declaration opens a
symbol, which ends at the first of:

- the line where a ``{`` block opened by the declaration closes again (a ``{`` right after
  ``:`` is a type, as in TypeScript's ``f(): {a: string} {``, and does not count);
- a ``;`` at nesting 0;
- for declarations that may have no body (Go ``var``/``const``/``type``, TS ``const`` and
  ``type``, ``export default x``): the end of a line at nesting 0 that does not continue on
  the next one (it does not end in an operator, ``,`` or ``(``, and the next line does not
  start with ``.``, ``|``, ``&``, ``?`` or ``:``);
- the line before the next declaration at nesting 0 (a missing brace cannot swallow the file).

Attribute and decorator lines right above (``#[…]``, ``@…``) belong to the symbol; comment
lines above them are its documentation (``Symbol.doc_start``). Go's grouped ``var (…)``,
``const (…)`` and ``type (…)`` give one symbol per name; Java types also list their
methods, constructors and nested types (``Type.member``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.knowledge_scan.baseline.blank import blank
from relay.knowledge.langs.model import Outline, Symbol

_OPEN, _CLOSE = "([{", ")]}"
_CONTINUES = ("=", ",", "(", "[", "{", "=>", "+", "-", "*", "/", "&&", "||", "?", ":", "|", "&",
              ".", "<")
_CONTINUED_BY = (".", "|", "&", "?", ":", "=>", "+")
_GROUP_NAME = re.compile(r"\s*([A-Za-z_]\w*)\b")


@dataclass(frozen=True, slots=True)
class Decl:
    """A declaration a language rule found at the start of a line."""

    name: str
    kind: str
    #: may end at the end of a line without ``;`` or a block
    bodyless: bool = False
    #: Go's ``var (`` / ``const (`` / ``type (``: one symbol per name inside
    group: bool = False
    #: Java types: scan their members too
    members: bool = False


Matcher = Callable[[str], Decl | None]


@dataclass(frozen=True, slots=True)
class Source:
    """A file as the scanner sees it: original and blanked lines, nesting at each start."""

    lines: list[str]
    clean: list[str]
    nest: list[int]
    attribute: str

    def is_blank(self, k: int) -> bool:
        return not self.clean[k].strip()

    def is_comment(self, k: int) -> bool:
        return self.is_blank(k) and bool(self.lines[k].strip())


def prepare(lang: str, text: str, attribute: str) -> Source:
    clean_text = blank(text, lang)
    lines, clean = text.split("\n"), clean_text.split("\n")
    nest, level = [], 0
    for line in clean:
        nest.append(level)
        for ch in line:
            if ch in _OPEN:
                level += 1
            elif ch in _CLOSE:
                level = max(level - 1, 0)
    return Source(lines, clean, nest, attribute)


def outline(lang: str, text: str) -> Outline:
    """The outline of a Go, Rust, TypeScript/JavaScript or Java file."""
    from benchmarks.knowledge_scan.baseline import clike  # the rules import this module's types

    rules = clike.RULES[lang]
    src = prepare(lang, text, rules.attribute)
    symbols: list[Symbol] = []
    k = 0
    while k < len(src.clean):
        decl = rules.declaration(src.clean[k]) if src.nest[k] == 0 else None
        if decl is None:
            k += 1
            continue
        end = find_end(src, k, decl, 0, rules.declaration)
        if decl.group:
            symbols += _group(src, k, end, decl.kind)
        else:
            symbols.append(symbol(src, decl, k, end))
            if decl.members and rules.member is not None:
                symbols += _members(src, k, end, decl.name, rules.member)
        k = end + 1
    imports, header_end = rules.imports(src)
    return Outline(symbols=symbols, imports=imports, header_end=header_end)


def symbol(src: Source, decl: Decl, start: int, end: int, prefix: str = "") -> Symbol:
    """A :class:`Symbol` for lines ``start..end`` (0-based), attributes and docs above added."""
    first = start
    while first > 0 and src.lines[first - 1].strip().startswith(src.attribute) \
            and src.attribute and src.nest[first - 1] == src.nest[start]:
        first -= 1
    doc = first
    while doc > 0 and src.is_comment(doc - 1):
        doc -= 1
    return Symbol(prefix + decl.name, decl.kind, first + 1, end + 1, doc + 1)


def find_end(src: Source, start: int, decl: Decl, base: int, matcher: Matcher) -> int:
    """The last line (0-based) of the declaration at ``start``; ``base`` is its nesting."""
    level, block, last = base, False, ""
    for j in range(start, len(src.clean)):
        if j > start and src.nest[j] == base and matcher(src.clean[j]) is not None:
            return _before(src, j - 1, start)
        for ch in src.clean[j]:
            if ch in _OPEN:
                if ch == "{" and level == base and last != ":":
                    block = True
                level += 1
            elif ch in _CLOSE:
                level = max(level - 1, base)
                if level == base and (block or decl.group):
                    return j
            elif ch == ";" and level == base:
                return j
            if not ch.isspace():
                last = ch
        if level == base and decl.bodyless and not _continues(src, j):
            return j
    return _before(src, len(src.clean) - 1, start)


def _continues(src: Source, j: int) -> bool:
    line = src.clean[j].rstrip()
    if not line or line.endswith(_CONTINUES):
        return True
    following = next((src.clean[k].lstrip() for k in range(j + 1, len(src.clean))
                      if not src.is_blank(k)), "")
    return following.startswith(_CONTINUED_BY)


def _before(src: Source, j: int, floor: int) -> int:
    """``j``, moved up over blank lines and the next declaration's attributes and docs."""
    while j > floor and (src.is_blank(j) or (
            src.attribute and src.lines[j].strip().startswith(src.attribute))):
        j -= 1
    return j


def _group(src: Source, start: int, end: int, kind: str) -> list[Symbol]:
    """One symbol per name of a Go ``var (…)`` / ``const (…)`` / ``type (…)`` group."""
    out = []
    k = start + 1
    while k < end:
        match = _GROUP_NAME.match(src.clean[k]) if src.nest[k] == 1 else None
        if match is None or match.group(1) == "_":
            k += 1
            continue
        last = k
        while last + 1 < end and src.nest[last + 1] > 1:
            last += 1
        out.append(symbol(src, Decl(match.group(1), kind), k, last))
        k = last + 1
    return out


def _members(src: Source, start: int, end: int, owner: str, matcher: Matcher) -> list[Symbol]:
    """A Java type's members: the declarations at nesting 1 inside its body."""
    out = []
    k = start + 1
    while k < end:
        decl = matcher(src.clean[k]) if src.nest[k] == 1 else None
        if decl is None:
            k += 1
            continue
        last = min(find_end(src, k, decl, 1, matcher), end)
        out.append(symbol(src, decl, k, last, prefix=f"{owner}."))
        k = last + 1
    return out
