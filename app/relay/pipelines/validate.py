"""The rules every graph passes before it runs — hand-written, planned or drawn.

Each :class:`Problem` names the node and the field; a cycle names its nodes in order.
The designer shows the same problems inline, the CLI prints them, and a run never
starts with one.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from relay.core.errors import PipelineInvalidError
from relay.core.pipeline_model import Pipeline
from relay.pipelines.graph import reach
from relay.pipelines.templates import references
from relay.runtimes.registry import available_runtimes


@dataclass(frozen=True)
class Problem:
    """One broken rule: where (node, field) and what."""

    node: str | None
    field: str
    message: str
    #: for a cycle: its nodes in dependency order (the first repeated at the end)
    cycle: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"node {self.node!r} field {self.field}" if self.node else f"pipeline field {self.field}"
        return f"{where}: {self.message}"


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def find_cycles(deps: Mapping[str, Sequence[str]]) -> list[tuple[str, ...]]:
    """Each distinct cycle once, as ``(a, b, c, a)`` where a depends on b… (iterative DFS)."""
    color: dict[str, int] = {}
    cycles: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for root in deps:
        if color.get(root):
            continue
        path: list[str] = [root]
        stack: list[Iterable[str]] = [iter(deps.get(root, ()))]
        color[root] = 1
        while stack:
            nxt = next(stack[-1], None)  # type: ignore[call-overload]
            if nxt is None:
                color[path.pop()] = 2
                stack.pop()
                continue
            if nxt not in deps:
                continue  # an unknown reference is reported on its own
            state = color.get(nxt, 0)
            if state == 1:
                loop = (*tuple(path[path.index(nxt):]), nxt)
                key = frozenset(loop)
                if key not in seen:
                    seen.add(key)
                    cycles.append(loop)
            elif state == 0:
                color[nxt] = 1
                path.append(nxt)
                stack.append(iter(deps.get(nxt, ())))
    return cycles


def problems(pipeline: Pipeline, runtimes: Sequence[str] | None = None) -> list[Problem]:
    """Everything wrong with ``pipeline`` (empty: it may run)."""
    runtimes = list(runtimes if runtimes is not None else available_runtimes())
    out: list[Problem] = []
    if not pipeline.nodes:
        out.append(Problem(None, "nodes", "the pipeline has no nodes"))
    ids: dict[str, int] = {}
    for index, node in enumerate(pipeline.nodes):
        if node.id in ids:
            out.append(Problem(node.id, "id", f"duplicate id (nodes[{ids[node.id]}] and "
                                              f"nodes[{index}])"))
        ids.setdefault(node.id, index)
    deps = {n.id: list(n.depends_on) for n in pipeline.nodes}
    for node in pipeline.nodes:
        out.extend(_node_problems(pipeline, node.id, ids, deps, runtimes))
    for cycle in find_cycles(deps):
        out.append(Problem(cycle[0], "dependsOn", "cycle: " + " → ".join(cycle)
                           + " (each waits for the next; remove one dependency)", cycle))
    return out


def _node_problems(pipeline: Pipeline, node_id: str, ids: dict[str, int],
                   deps: dict[str, list[str]], runtimes: list[str]) -> list[Problem]:
    node = pipeline.nodes[ids[node_id]]
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(node.id, field, message))

    provider, _, account = node.provider.partition(":")
    if provider not in runtimes:
        bad("provider", f"unknown provider {provider!r}{_suggest(provider, runtimes)}; "
                        f"one of {', '.join(runtimes)}")
    if account and node.account:
        bad("account", f"the provider already names account {account!r}")
    for i, entry in enumerate(node.fallback):
        runtime = entry.partition(":")[0]
        if runtime not in runtimes:
            bad(f"fallback[{i}]", f"unknown provider {runtime!r}{_suggest(runtime, runtimes)}")
        if entry == node.entry or entry in node.fallback[:i]:
            bad(f"fallback[{i}]", f"{entry!r} is already in the chain")
    for i, dep in enumerate(node.depends_on):
        if dep == node.id:
            continue  # reported as a cycle
        if dep not in ids:
            bad(f"dependsOn[{i}]", f"unknown node {dep!r}{_suggest(dep, ids)}")
        elif dep in node.depends_on[:i]:
            bad(f"dependsOn[{i}]", f"{dep!r} is listed twice")
    refs, template_problems = references(node.task)
    for message in template_problems:
        bad("task", message)
    reachable = reach(node.id, deps)
    for ref in refs:
        if ref.node not in ids:
            bad("task", f"{{{{{ref.node}.{ref.field}}}}} refers to unknown node {ref.node!r}"
                        f"{_suggest(ref.node, ids)}")
        elif ref.node == node.id or ref.node not in reachable:
            bad("task", f"{{{{{ref.node}.{ref.field}}}}}: {node.id!r} does not depend on "
                        f"{ref.node!r}, so its result may not exist yet (add it to dependsOn)")
    for i, line in enumerate(node.verify):
        try:
            if not shlex.split(line):
                bad(f"verify[{i}]", "empty command")
        except ValueError as exc:
            bad(f"verify[{i}]", f"cannot split {line!r}: {exc}")
    return out


def check(pipeline: Pipeline, runtimes: Sequence[str] | None = None) -> Pipeline:
    """``pipeline`` if it may run; else :class:`PipelineInvalidError` listing every problem."""
    found = problems(pipeline, runtimes)
    if found:
        raise PipelineInvalidError(f"Pipeline {pipeline.name!r} is not valid "
                                   f"({len(found)} problem{'s' if len(found) > 1 else ''}).",
                                   [str(p) for p in found])
    return pipeline
