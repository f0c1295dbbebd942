"""What counts as a declaration and an import in Go, Rust, TypeScript/JavaScript and Java.

Each rule sees one blanked line (strings' contents are spaces) that starts at nesting 0 —
or, for Java members, at nesting 1 inside a type. Imports are read from the original text
at the offsets the blanked text gives.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.knowledge_scan.baseline.braces import Decl, Matcher, Source

Imports = Callable[[Source], tuple[list[str], int]]


@dataclass(frozen=True, slots=True)
class Rules:
    declaration: Matcher
    imports: Imports
    #: lines starting with this right above a declaration belong to it
    attribute: str = ""
    member: Matcher | None = None


def _quoted(src: Source, k: int, start: int = 0) -> list[str]:
    """The string literals on line ``k`` from column ``start``, read from the original."""
    clean, line, col = src.clean[k], src.lines[k], start
    out: list[str] = []
    while True:
        found = [i for i in (clean.find(q, col) for q in "\"'`") if i >= 0]
        if not found:
            return out
        open_at = min(found)
        close_at = clean.find(clean[open_at], open_at + 1)
        if close_at < 0:
            return out
        out.append(line[open_at + 1:close_at])
        col = close_at + 1


# --- Go -------------------------------------------------------------------------------------

_GO_METHOD = re.compile(r"func\s*\(\s*(?:\w+\s+)?\*?\s*(\w+)(?:\[[^\]]*\])?\s*\)\s*(\w+)")
_GO_FUNC = re.compile(r"func\s+(\w+)")
_GO_TYPE = re.compile(r"type\s+(\w+)(?:\[[^\]]*\])?\s*(=)?\s*(struct|interface)?")
_GO_VALUE = re.compile(r"(var|const)\s+(\w+)")
_GO_GROUP = re.compile(r"(var|const|type)\s*\(")


def _go_decl(line: str) -> Decl | None:
    if m := _GO_METHOD.match(line):
        return Decl(f"{m.group(1)}.{m.group(2)}", "method")
    if m := _GO_FUNC.match(line):
        return Decl(m.group(1), "func")
    if m := _GO_GROUP.match(line):
        return Decl(m.group(1), m.group(1), group=True)
    if m := _GO_TYPE.match(line):
        return Decl(m.group(1), m.group(3) or "type", bodyless=True)
    if (m := _GO_VALUE.match(line)) and m.group(2) != "_":
        return Decl(m.group(2), m.group(1), bodyless=True)
    return None


def _go_imports(src: Source) -> tuple[list[str], int]:
    out, last, k = [], 0, 0
    while k < len(src.clean):
        line = src.clean[k]
        if src.nest[k] == 0 and re.match(r"import\b", line):
            if re.match(r"import\s*\(", line):
                while k < len(src.clean):
                    out += _quoted(src, k)
                    if ")" in src.clean[k]:
                        break
                    k += 1
            else:
                out += _quoted(src, k)[:1]
            last = k + 1
        elif src.nest[k] == 0 and line.startswith("package "):
            last = max(last, k + 1)
        k += 1
    return out, last


# --- Rust -----------------------------------------------------------------------------------

_RS_VIS = r"(?:pub(?:\s*\([^)]*\))?\s+)?(?:default\s+)?"
_RS_FN = re.compile(_RS_VIS + r"(?:(?:const|async|unsafe)\s+)*(?:extern\s+(?:\"\s*\"\s*)?)?fn\s+(\w+)")
_RS_ITEM = re.compile(_RS_VIS + r"(?:unsafe\s+)?(struct|enum|trait|union|mod|type|const|static)\s+"
                      r"(?:mut\s+)?(\w+)")
_RS_IMPL = re.compile(_RS_VIS + r"(?:unsafe\s+)?impl\b(?:\s*<[^{]*?>)?\s*([^{;]*?)\s*(?:\bwhere\b|\{|$)")
_RS_MACRO = re.compile(r"(?:#\[macro_export\]\s*)?macro_rules!\s*(\w+)")
_RS_USE = re.compile(_RS_VIS + r"use\s+([^;]+);")
_RS_CRATE = re.compile(r"extern\s+crate\s+(\w+)")


def _rust_decl(line: str) -> Decl | None:
    if m := _RS_FN.match(line):
        return Decl(m.group(1), "fn")
    if (m := _RS_ITEM.match(line)) and m.group(2) != "_":
        return Decl(m.group(2), m.group(1), bodyless=m.group(1) in ("type", "const", "static"))
    if m := _RS_IMPL.match(line):
        return Decl("impl " + " ".join(m.group(1).split()), "impl")
    if m := _RS_MACRO.match(line):
        return Decl(m.group(1), "macro")
    return None


def _rust_imports(src: Source) -> tuple[list[str], int]:
    out, last, k = [], 0, 0
    while k < len(src.clean):
        if src.nest[k] == 0 and re.match(_RS_VIS + r"use\b", src.clean[k]):
            stop = k
            while stop + 1 < len(src.clean) and ";" not in src.clean[stop]:
                stop += 1
            joined = " ".join(src.clean[k:stop + 1])
            if m := _RS_USE.match(joined):
                path = re.sub(r"\s+", "", m.group(1)).replace(",}", "}")
                out.append(path.replace(",", ", "))
            last, k = stop + 1, stop
        elif src.nest[k] == 0 and (m := _RS_CRATE.match(src.clean[k])):
            out.append(m.group(1))
            last = k + 1
        k += 1
    return out, last


# --- TypeScript / JavaScript ------------------------------------------------------------------

_TS_PREFIX = r"(?:export\s+(?P<default>default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
_TS_NAMED = re.compile(_TS_PREFIX + r"(?P<kind>function\s*\*?\s*|(?:class|interface|type|(?:const\s+)?enum"
                       r"|namespace|module)(?:\s+|(?=\{)))(?P<name>[A-Za-z_$][\w$.]*)?")
_TS_VALUE = re.compile(r"(?:export\s+)?(?:declare\s+)?(?P<kind>const|let|var)\s+(?P<name>[A-Za-z_$][\w$]*)")
_TS_DEFAULT = re.compile(r"export\s+default\b")
_TS_CJS = re.compile(r"(module\.exports|exports\.([A-Za-z_$][\w$]*))\s*=[^=]")
_TS_KINDS = {"function": "function", "class": "class", "interface": "interface", "type": "type",
             "enum": "enum", "namespace": "namespace", "module": "namespace"}


def _ts_decl(line: str) -> Decl | None:
    if m := _TS_NAMED.match(line):
        word = m.group("kind").split()[-1].rstrip("*").strip()
        kind = _TS_KINDS.get(word, word)
        name = m.group("name")
        if name is None and not m.group("default"):
            return None if kind in ("type", "namespace") else Decl("(anonymous)", kind)
        if kind in ("type", "namespace") and name is None:
            return None
        return Decl(name or "default", kind, bodyless=kind == "type")
    if m := _TS_VALUE.match(line):
        return Decl(m.group("name"), m.group("kind"), bodyless=True)
    if _TS_DEFAULT.match(line):
        return Decl("default", "default", bodyless=True)
    if m := _TS_CJS.match(line):
        return Decl(m.group(2) or m.group(1), "export", bodyless=True)
    return None


_TS_FROM = re.compile(r"(?P<static>\bfrom|^\s*import)\s*(?=[\"'`])|\b(?:import|require)\s*\(\s*(?=[\"'`])")
_TS_STATEMENT = re.compile(r"\s*(?:import|export)\b|\s*(?:const|let|var)\s[^=]*=\s*require\s*\(")


def _ts_imports(src: Source) -> tuple[list[str], int]:
    out, last = [], 0
    for k, line in enumerate(src.clean):
        for m in _TS_FROM.finditer(line):
            names = _quoted(src, k, m.end())
            if not names:
                continue
            out.append(names[0])
            if _top_level_import(src, k, static=m.group("static") is not None):
                last = max(last, k + 1)
    return list(dict.fromkeys(out)), last


def _top_level_import(src: Source, k: int, *, static: bool) -> bool:
    """Line ``k`` ends a top-level ``import … from``/``export … from``/``require`` statement."""
    j = k
    while j > 0 and src.nest[j] > 0:
        j -= 1
    statement = _TS_STATEMENT.match(src.clean[j])
    if statement is None:
        return False
    return static or "require" in statement.group(0)


# --- Java -----------------------------------------------------------------------------------

_JAVA_MODS = (r"(?:(?:public|protected|private|static|final|abstract|sealed|non-sealed|strictfp"
              r"|synchronized|native|default|transient|volatile)\s+)*")
_JAVA_ANNOT = r"(?:@[\w.]+(?:\([^)]*\))?\s+)*"
_JAVA_TYPE = re.compile(_JAVA_ANNOT + _JAVA_MODS + r"(class|interface|enum|record|@interface)\s+(\w+)")
_JAVA_METHOD = re.compile(_JAVA_ANNOT + _JAVA_MODS + r"(?:<[^>]*>\s*)?(?:[\w.$]+(?:<.*>)?(?:\[\])*\s+)?"
                          r"([A-Za-z_$][\w$]*)\s*\(")
_JAVA_NOT_METHODS = frozenset({"if", "for", "while", "switch", "catch", "return", "new", "throw",
                               "else", "synchronized", "try", "do", "super", "this", "assert"})


def _java_decl(line: str) -> Decl | None:
    if m := _JAVA_TYPE.match(line.strip()):
        kind = "annotation" if m.group(1) == "@interface" else m.group(1)
        return Decl(m.group(2), kind, members=True)
    return None


def _java_member(line: str) -> Decl | None:
    text = line.strip()
    if decl := _java_decl(text):
        return Decl(decl.name, decl.kind)
    m = _JAVA_METHOD.match(text)
    if m is None or m.group(1) in _JAVA_NOT_METHODS or "=" in text[:m.start(1)]:
        return None
    return Decl(m.group(1), "method")


def _java_imports(src: Source) -> tuple[list[str], int]:
    out, last = [], 0
    for k, line in enumerate(src.clean):
        if src.nest[k]:
            continue
        if m := re.match(r"\s*import\s+(?:static\s+)?([\w.*]+)\s*;", line):
            out.append(m.group(1))
            last = k + 1
        elif re.match(r"\s*package\s+[\w.]+\s*;", line):
            last = max(last, k + 1)
    return out, last


RULES: dict[str, Rules] = {
    "go": Rules(_go_decl, _go_imports),
    "rust": Rules(_rust_decl, _rust_imports, attribute="#["),
    "typescript": Rules(_ts_decl, _ts_imports, attribute="@"),
    "javascript": Rules(_ts_decl, _ts_imports, attribute="@"),
    "java": Rules(_java_decl, _java_imports, attribute="@", member=_java_member),
}
