"""A file's outline from its tree-sitter syntax tree and its language's query.

``outline(grammar, text)`` parses the text (tree-sitter recovers from syntax errors: what
parses is still outlined, and the outline is marked ``damaged``), runs the grammar's query
once (:mod:`.grammars` documents the captures) and turns the matches into symbols:

- **names**: a definition inside a container is ``Container<sep>name`` (containers nest:
  ``Outer.Inner.method``); one inside another definition or a blocking node is local and
  left out;
- **lines**: the definition's node, widened to a wrapper it is the only declaration of
  (``export``, decorators, ``var``); sibling attributes right above (Rust ``#[…]``, TS
  member decorators) belong to it; the comment lines right above are its documentation
  (``Symbol.doc_start``). A node that ends at column 0 ends on the line before;
- **imports**: every import in the file, in source order, each once;
- **header**: the last line of the top-level header statements.

Parsers are per thread (a parser is not thread-safe); queries are compiled once.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from relay.knowledge.langs.grammars import Grammar, load_language
from relay.knowledge.langs.model import Outline, Symbol

_compiled: dict[str, tuple[Language, Query]] = {}
_compile_lock = threading.Lock()
_local = threading.local()


def compiled(grammar: Grammar) -> tuple[Language, Query]:
    """The grammar's language and query (compiled on first use)."""
    found = _compiled.get(grammar.name)
    if found is None:
        with _compile_lock:
            found = _compiled.get(grammar.name)
            if found is None:
                language = Language(load_language(grammar.name))
                found = (language, Query(language, grammar.query))
                _compiled[grammar.name] = found
    return found


def _parser(grammar: Grammar, language: Language) -> Parser:
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(grammar.name)
    if parser is None:
        parser = parsers[grammar.name] = Parser(language)
    return parser


@dataclass(slots=True)
class _Def:
    node: Node
    kind: str
    #: the name's text ("" for none)
    name: str
    owner: Node | None
    pattern: int
    start: int
    end: int


def outline(grammar: Grammar, text: str) -> Outline:
    """The outline of ``text`` (see the module docstring); never raises on bad input."""
    source = text.encode("utf-8", errors="replace")
    language, query = compiled(grammar)
    tree = _parser(grammar, language).parse(source)
    root = tree.root_node
    return _Extract(grammar, source, root).run(QueryCursor(query).matches(root))


class _Extract:
    def __init__(self, grammar: Grammar, source: bytes, root: Node) -> None:
        self.g = grammar
        self.source = source
        self.root = root
        self.lines = source.split(b"\n")
        self.transparent = grammar.comments | grammar.attributes | {"decorator"}
        #: pattern index → its ``def.KIND`` capture ("" for patterns of imports and headers)
        self.roles: dict[int, str] = {}

    def text(self, node: Node) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", errors="replace")

    def run(self, matches: list[tuple[int, dict[str, list[Node]]]]) -> Outline:
        defs: dict[tuple[int, str], _Def] = {}
        imports: list[tuple[int, str]] = []
        header = 0
        roles = self.roles
        for pattern, caps in matches:
            role = roles.get(pattern)
            if role is None:
                role = roles[pattern] = next((c for c in caps if c.startswith("def.")), "")
            if role:
                self._add_defs(defs, pattern, role, caps)
                continue
            for node in caps.get("import", ()):
                names = (self.g.import_text(node, self.text) if self.g.import_text
                         else [self.text(node)])
                imports += [(node.start_byte, n) for n in names if n]
            for node in caps.get("header", ()):
                header = max(header, _last_row(node) + 1)
        imports.sort(key=lambda item: item[0])
        return Outline(symbols=self._symbols(defs), imports=list(dict.fromkeys(n for _, n in imports)),
                       header_end=header, damaged=self.root.has_error)

    def _add_defs(self, defs: dict[tuple[int, str], _Def], pattern: int, role: str,
                  caps: dict[str, list[Node]]) -> None:
        node = caps[role][0]
        kind = self.text(caps["kind"][0]) if "kind" in caps else role[4:]
        owner = caps["owner"][0] if "owner" in caps else None
        found = caps.get("name")
        node_id = node.id
        for name in [self.text(n) for n in found] if found else [""]:
            if name == "_":
                continue
            key = (node_id, name)
            known = defs.get(key)
            if known is None or pattern < known.pattern:
                defs[key] = _Def(node, kind, name, owner, pattern, node.start_byte, node.end_byte)

    def _symbols(self, defs: dict[tuple[int, str], _Def]) -> list[Symbol]:
        g = self.g
        ordered = sorted(defs.values(), key=lambda d: (d.start, -d.end, d.pattern))
        is_def = {d.node.id for d in ordered}
        #: a kept container's node → (its qualified name, its kind); outer ones come first
        scopes: dict[int, tuple[str, str]] = {}
        out: list[tuple[int, Symbol]] = []
        for d in ordered:
            found = self._enclosing(d.node, is_def, scopes)
            if found is None:
                continue
            scope, container = found
            kind = d.kind
            if kind in g.functions and container in g.method_containers:
                kind = "method"
            if kind in g.custom_names:
                own, own_scope = g.custom_names[kind](d.node, self.text)
            else:
                own = _clean_name(d.name) if d.name else "default"
                if d.owner is not None:
                    own = f"{_clean_name(self.text(d.owner))}{g.separator}{own}"
                own_scope = own
            name = self._qualify(scope, own, kind, d.node) if scope else own
            if kind in g.containers and d.node.id not in scopes:
                qualified = self._qualify(scope, own_scope, kind, d.node) if scope else own_scope
                scopes[d.node.id] = (qualified, kind)
            out.append((d.start, self._symbol(name, kind, d.node)))
        out.sort(key=lambda item: item[0])
        return [s for _, s in out]

    def _qualify(self, scope: str, own: str, kind: str, node: Node) -> str:
        if self.g.qualify is not None:
            return self.g.qualify(scope, own, kind, node)
        return f"{scope}{self.g.separator}{own}"

    def _enclosing(self, node: Node, is_def: set[int],
                   scopes: dict[int, tuple[str, str]]) -> tuple[str, str] | None:
        """``(scope, container kind)`` of the nearest container around ``node`` (``("", "")``
        at the top level), or None when the definition is local: inside another definition
        that is not a kept container, or inside a blocking node."""
        parent = node.parent
        while parent is not None:
            if parent.id in is_def:
                return scopes.get(parent.id)
            if parent.type in self.g.blocking:
                return None
            parent = parent.parent
        return "", ""

    def _symbol(self, name: str, kind: str, node: Node) -> Symbol:
        span = self._span(node)
        start = span.start_point.row
        end = _code_end(span, self.g.comments) if self.g.trailing_comments else _last_row(span)
        start = self._attributes_above(span, start)
        return Symbol(name, kind, start + 1, max(end, start) + 1, self._doc_above(start) + 1)

    def _span(self, node: Node) -> Node:
        """``node``, or the wrapper it is the only declaration of (repeatedly)."""
        while (parent := node.parent) is not None and parent.type in self.g.wrappers:
            if any(c.id != node.id and c.type not in self.transparent
                   for c in parent.named_children):
                break
            node = parent
        return node

    def _attributes_above(self, node: Node, start: int) -> int:
        """The first line of the attributes right above ``node`` (comments between them
        allowed), else ``start``."""
        if not self.g.attributes:
            return start
        top, sibling = start, node.prev_named_sibling
        while sibling is not None and _last_row(sibling) >= top - 1:
            if sibling.type in self.g.attributes:
                top = start = sibling.start_point.row
            elif sibling.type in self.g.comments:
                top = sibling.start_point.row
            else:
                break
            sibling = sibling.prev_named_sibling
        return start

    def _doc_above(self, start: int) -> int:
        """The first of the comment-only lines right above line ``start`` (0-based)."""
        top, row = start, start - 1
        while row >= 0:
            line = self.lines[row]
            stripped = line.lstrip()
            if not stripped.strip():
                break
            col = len(line) - len(stripped)
            node: Node | None = self.root.named_descendant_for_point_range((row, col), (row, col))
            if node is not None and node.type not in self.g.comments:
                node = node.parent
            if node is None or node.type not in self.g.comments \
                    or node.start_point.row > row or node.start_point.row < 0:
                break
            first = node.start_point.row
            if self.lines[first][:node.start_point.column].strip():
                break  # the comment follows code on its first line
            top, row = first, first - 1
        return top


def _last_row(node: Node) -> int:
    """The last line (0-based) a node covers: one ending at column 0 ends on the line before."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


def _code_end(node: Node, comments: frozenset[str]) -> int:
    """The last line of ``node``'s code, trailing comments inside it left out."""
    while node.child_count:
        last: Node | None = node.child(node.child_count - 1)
        while last is not None and last.type in comments:
            last = last.prev_sibling
        if last is None:
            break
        node = last
    return _last_row(node)


def _clean_name(name: str) -> str:
    """A name as it is read: quotes off a string name (``declare module "x"``), spaces out."""
    name = "".join(name.split())
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'`":
        return name[1:-1]
    return name
