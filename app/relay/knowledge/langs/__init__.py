"""Outlines of source files: their symbols with line ranges, and their imports.

Every language is parsed by tree-sitter with its grammar from PyPI and outlined by one
query (:mod:`.grammars`, run by :mod:`.outliner`):

==========  =================================  ============================================
language    extensions                         symbols (``Container.member`` inside types)
==========  =================================  ============================================
python      .py .pyi                           classes (nested too), functions, methods,
                                               module variables, class attributes
go          .go                                func, method (``Recv.Name``), struct,
                                               interface, type, var, const (grouped each)
rust        .rs                                fn, struct, enum, union, trait, mod, type,
                                               const, static, macro_rules, impl
                                               (``impl T for U``), methods (``U::m``)
typescript  .ts .mts .cts, .tsx (TSX grammar)  function, class, interface, type, enum,
                                               namespace, const/let/var, ``export default``,
                                               class members (method, property, getter,
                                               setter), interface members
javascript  .js .jsx .mjs .cjs                 the same without the types; ``module.exports``
                                               and ``exports.x``
java        .java                              class, interface, enum, record, annotation,
                                               methods and constructors, fields, nested types
ruby        .rb .rake, Rakefile, Gemfile       module, class (``A::B``), methods (``A::B#m``,
                                               ``A::B.m``), top-level ``def``
==========  =================================  ============================================

Imports: Python ``import``/``from`` (relative ones keep their dots), Go import specs, Rust
``use`` and ``extern crate``, TS/JS ``import``, ``export … from``, ``require()`` and
``import()``, Java ``import`` (``static`` too), Ruby ``require``/``require_relative``.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from relay.knowledge.langs.model import Outline, Symbol

__all__ = ["LANGUAGES", "Outline", "Symbol", "language_of", "outline"]

_BY_EXTENSION = {
    ".py": "python", ".pyi": "python", ".go": "go", ".rs": "rust",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".java": "java", ".rb": "ruby", ".rake": "ruby",
}
_BY_NAME = {"Rakefile": "ruby", "Gemfile": "ruby"}
LANGUAGES = frozenset(_BY_EXTENSION.values())


def language_of(path: str) -> str | None:
    """The language of a source file by its name, or None for anything else."""
    pure = PurePosixPath(path)
    return _BY_NAME.get(pure.name) or _BY_EXTENSION.get(pure.suffix.lower())


def outline(lang: str, text: str, path: str = "") -> Outline:
    """The outline of ``text`` written in ``lang`` (one of :data:`LANGUAGES`); ``path``
    picks a dialect (``.tsx`` files are parsed with the TSX grammar). Never raises for what
    the text holds: a syntax error gives what parses, marked ``damaged``.

    Raises:
        KeyError: ``lang`` is not one of :data:`LANGUAGES`.
    """
    from relay.knowledge.langs.grammars import GRAMMARS
    from relay.knowledge.langs.outliner import outline as parse_outline

    if lang not in LANGUAGES:
        raise KeyError(lang)
    name = "tsx" if lang == "typescript" and path.lower().endswith(".tsx") else lang
    return parse_outline(GRAMMARS[name], text)
