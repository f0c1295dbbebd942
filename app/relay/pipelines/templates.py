"""``{{node.field}}`` references in a node's task, resolved from saved step results.

Fields: ``output`` (the step's final answer), ``files`` (the files it changed, comma
separated), ``commit`` (its result commit), ``branch`` (its session branch) and
``session`` (its Relay session id). A node may refer to any node it depends on,
directly or through others: their results are saved before it starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

FIELDS = ("output", "files", "commit", "branch", "session")
_REF = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
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


def references(text: str) -> tuple[list[Ref], list[str]]:
    """The references in ``text`` and what is wrong with the malformed ones."""
    refs: list[Ref] = []
    problems: list[str] = []
    for match in _REF.finditer(text):
        inner = match.group(1)
        name = _NAME.match(inner)
        if name is None:
            problems.append(f"{match.group(0)!r} is not a reference; write {{{{node.field}}}} "
                            f"with field one of {', '.join(FIELDS)}")
        elif name.group(2) not in FIELDS:
            problems.append(f"{match.group(0)!r}: unknown field {name.group(2)!r} "
                            f"(one of {', '.join(FIELDS)})")
        else:
            refs.append(Ref(name.group(1), name.group(2)))
    rest = _REF.sub("", text)
    if "{{" in rest:
        problems.append("'{{' is never closed with '}}'")
    elif "}}" in rest:
        problems.append("'}}' has no opening '{{'")
    return refs, problems


def render(text: str, results: Mapping[str, StepOutputs]) -> str:
    """``text`` with every reference replaced (validation guarantees they resolve)."""
    def one(match: re.Match[str]) -> str:
        name = _NAME.match(match.group(1))
        if name is None or name.group(1) not in results:
            return match.group(0)
        return results[name.group(1)].value(name.group(2))
    return _REF.sub(one, text)
