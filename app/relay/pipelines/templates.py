"""``{{node.field}}`` references in a node's task, resolved from saved step results.

Fields: ``output`` (the step's final answer), ``files`` (the files it changed, comma
separated), ``commit`` (its result commit), ``branch`` (its session branch) and
``session`` (its Relay session id). A node may refer to any node it depends on,
directly or through others: their results are saved before it starts.

The text is read by :func:`tokens`, one left-to-right scan: each ``{{`` is closed by the
first ``}}`` after it (what the text inside means is checked afterwards), and the search
for a closer never goes back, so a task of any size costs its length once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

FIELDS = ("output", "files", "commit", "branch", "session")
_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_-]*)\.([A-Za-z]+)\s*$")


@dataclass(frozen=True)
class Ref:
    node: str
    field: str


@dataclass(frozen=True)
class StepOutputs:
    """What a finished step left for the steps after it."""

    output: str = ""
    files: tuple[str, ...] = ()
    commit: str | None = None
    branch: str | None = None
    session: str | None = None

    def value(self, field: str) -> str:
        if field == "files":
            return ", ".join(self.files) if self.files else "(no files changed)"
        value = getattr(self, field)
        return str(value) if value else f"(no {field})"


@dataclass(frozen=True)
class Token:
    """A piece of a task: plain ``text``, or a ``{{…}}`` (``inner`` is what is between)."""

    text: str
    inner: str | None = None


def tokens(text: str) -> Iterator[Token]:
    """``text`` as plain pieces and ``{{…}}`` pieces, in order; joined they are ``text``.

    One scan: the next ``{{`` and the next ``}}`` are each searched for from where the
    last search ended, never again from an earlier place. A ``{{`` with no ``}}`` after
    it ends the scan (the rest is plain text).
    """
    pos = 0
    close = text.find("}}")
    while True:
        start = text.find("{{", pos)
        if start < 0:
            break
        if close < start + 2:
            close = text.find("}}", start + 2) if close >= 0 else -1
        if close < 0:
            break  # no closer after this opener, so none after any later one
        if start > pos:
            yield Token(text[pos:start])
        yield Token(text[start:close + 2], text[start + 2:close])
        pos = close + 2
        close = text.find("}}", pos)
    if pos < len(text):
        yield Token(text[pos:])


def references(text: str) -> tuple[list[Ref], list[str]]:
    """The references in ``text`` and what is wrong with the malformed ones."""
    if "{{" not in text and "}}" not in text:
        return [], []
    refs: list[Ref] = []
    problems: list[str] = []
    unclosed = unopened = False
    for token in tokens(text):
        if token.inner is None:
            unclosed = unclosed or "{{" in token.text
            unopened = unopened or "}}" in token.text
            continue
        name = _NAME.match(token.inner)
        if name is None:
            problems.append(f"{token.text!r} is not a reference; write {{{{node.field}}}} "
                            f"with field one of {', '.join(FIELDS)}")
        elif name.group(2) not in FIELDS:
            problems.append(f"{token.text!r}: unknown field {name.group(2)!r} "
                            f"(one of {', '.join(FIELDS)})")
        else:
            refs.append(Ref(name.group(1), name.group(2)))
    if unclosed:
        problems.append("'{{' is never closed with '}}'")
    elif unopened:
        problems.append("'}}' has no opening '{{'")
    return refs, problems


def render(text: str, results: Mapping[str, StepOutputs]) -> str:
    """``text`` with every reference replaced (validation guarantees they resolve)."""
    if "{{" not in text:
        return text
    out: list[str] = []
    for token in tokens(text):
        name = _NAME.match(token.inner) if token.inner is not None else None
        if name is None or name.group(1) not in results or name.group(2) not in FIELDS:
            out.append(token.text)  # not a reference (validation reports it): kept as is
        else:
            out.append(results[name.group(1)].value(name.group(2)))
    return "".join(out)
