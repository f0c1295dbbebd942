"""The baseline: the knowledge graph's hand-written outliners as they were before tree-sitter.

Copied from ``relay/knowledge/langs/`` at the commit before they were replaced (python.py:
:mod:`ast`; blank.py + braces.py + clike.py: line scans over comment- and string-blanked
text for Go, Rust, TS/JS and Java; ruby.py: a keyword scan matching ``end``), only their
imports changed, so ``bench_knowledge_scan`` can run the old and the new scanner in one run.
Nothing in ``relay`` imports this; it returns the same :class:`~relay.knowledge.langs.Outline`.
"""

from __future__ import annotations

from relay.knowledge.langs.model import Outline


def outline(lang: str, text: str) -> Outline:
    """The outline of ``text`` written in ``lang``, the hand-written way."""
    if lang == "python":
        from benchmarks.knowledge_scan.baseline.python import outline as python_outline

        return python_outline(text)
    if lang == "ruby":
        from benchmarks.knowledge_scan.baseline.ruby import outline as ruby_outline

        return ruby_outline(text)
    from benchmarks.knowledge_scan.baseline.braces import outline as braces_outline

    return braces_outline(lang, text)
