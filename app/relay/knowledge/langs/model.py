"""What an outliner returns."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Symbol:
    """A named declaration; lines are 1-based and inclusive.

    ``start`` is the first line of the declaration, attributes, annotations and decorators
    included; ``doc_start`` (≤ ``start``) also takes in the comment lines right above it,
    which the symbol's chunk shows.
    """

    name: str
    kind: str
    start: int
    end: int
    doc_start: int = 0

    @property
    def chunk_start(self) -> int:
        return self.doc_start or self.start


@dataclass(frozen=True, slots=True)
class Outline:
    """A file's symbols (in source order), its imports and the last line of its header."""

    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    #: the header (module docstring, package line, imports) ends here; 0 when there is none
    header_end: int = 0
    #: the file could not be parsed (symbols may be missing)
    damaged: bool = False
