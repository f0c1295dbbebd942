"""Python through the standard library's :mod:`ast`.

Symbols: top-level functions (``function``), classes (``class``) and their methods
(``Class.method``, ``method``), and names assigned at the top level (``variable``). A
decorated definition starts at its first decorator. Imports: ``import a.b`` gives ``a.b``;
``from .x import y`` gives ``.x`` (a relative import keeps its dots; ``from . import y``
gives ``.y``). A file that does not parse (Python 2, a half-written edit) gets no symbols
and is marked damaged.
"""

from __future__ import annotations

import ast
import warnings

from relay.knowledge.langs.model import Outline, Symbol

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def outline(text: str) -> Outline:
    try:
        with warnings.catch_warnings():  # invalid escape sequences in the scanned code
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Outline(damaged=True)
    lines = text.split("\n")
    symbols: list[Symbol] = []
    imports: list[str] = []
    header_end = _docstring_end(tree)
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports += _imported(node)
            header_end = max(header_end, node.end_lineno or node.lineno)
        elif isinstance(node, _Definition):
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            symbols.append(_symbol(node, node.name, kind, lines))
            if isinstance(node, ast.ClassDef):
                symbols += [_symbol(item, f"{node.name}.{item.name}", "method", lines)
                            for item in node.body if isinstance(item, _Definition)
                            and not isinstance(item, ast.ClassDef)]
        else:
            symbols += [Symbol(name, "variable", node.lineno, node.end_lineno or node.lineno,
                               _doc_start(node.lineno, lines))
                        for name in _assigned(node)]
    return Outline(symbols=symbols, imports=list(dict.fromkeys(imports)), header_end=header_end)


def _symbol(node: _Definition, name: str, kind: str, lines: list[str]) -> Symbol:
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return Symbol(name, kind, start, node.end_lineno or node.lineno, _doc_start(start, lines))


def _doc_start(start: int, lines: list[str]) -> int:
    """The first of the ``#`` comment lines right above line ``start`` (1-based)."""
    first = start
    while first > 1 and lines[first - 2].lstrip().startswith("#"):
        first -= 1
    return first


def _assigned(node: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    names: list[str] = []
    for target in targets:
        elements = target.elts if isinstance(target, ast.Tuple) else [target]
        names += [e.id for e in elements if isinstance(e, ast.Name)]
    return names


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    dots = "." * node.level
    if node.module:
        return [dots + node.module]
    return [dots + alias.name for alias in node.names]


def _docstring_end(tree: ast.Module) -> int:
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
            and isinstance(first.value.value, str):
        return first.end_lineno or first.lineno
    return 0
