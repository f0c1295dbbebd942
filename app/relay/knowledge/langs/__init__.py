"""Outlines of source files: the top-level symbols with their line ranges, and the imports.

One outliner per language, each a pure function ``outline(text) -> Outline``:

=========  ==================================  ===========================================
language   extensions                          how
=========  ==================================  ===========================================
python     .py .pyi                            the standard library's :mod:`ast`
go         .go                                 line scan over :mod:`.blank`'s cleaned text
rust       .rs                                 line scan (braces, ``;``, attributes)
ts / js    .ts .tsx .mts .cts / .js .jsx .mjs  line scan (template literals and regexes
           .cjs                                blanked)
java       .java                               line scan; methods of top-level types too
ruby       .rb .rake, Rakefile, Gemfile        keyword scan matching ``end`` (heredocs and
                                               ``=begin`` blocks blanked)
=========  ==================================  ===========================================

The line scanners work on a copy of the text whose comments and string contents are
replaced by spaces, character for character (:mod:`.blank`), so a brace or keyword inside a
string never counts, and an import's module name is read from the original text at the
same offsets.
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


def outline(lang: str, text: str) -> Outline:
    """The outline of ``text`` written in ``lang`` (one of :data:`LANGUAGES`)."""
    if lang == "python":
        from relay.knowledge.langs.python import outline as python_outline

        return python_outline(text)
    if lang == "ruby":
        from relay.knowledge.langs.ruby import outline as ruby_outline

        return ruby_outline(text)
    from relay.knowledge.langs.braces import outline as braces_outline

    return braces_outline(lang, text)
