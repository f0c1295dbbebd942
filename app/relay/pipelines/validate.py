"""The rules every graph passes before it runs — hand-written, planned or drawn.

Each :class:`Problem` names the node and the field; a cycle names its nodes in order.
The designer shows the same problems inline, the CLI prints them, and a run never
starts with one.

Validation is linear in the size of the pipeline: the graph is walked once in
topological order (Kahn's), which both finds the nodes on cycles (only those are then
searched for the cycles to name) and gives each node its ancestors, as one bit set per
node, for the template check; a did-you-mean is offered for the first
``SUGGESTIONS`` unknown names only.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from relay.core.errors import PipelineInvalidError
from relay.core.pipeline_model import Pipeline
from relay.pipelines.graph import kahn
from relay.pipelines.templates import Ref, references
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


#: unknown names that get a did-you-mean (each compares the name with every known one)
SUGGESTIONS = 20
#: cycles named, at most (each is written out node by node)
CYCLES_SHOWN = 20


class _Suggester:
    """Did-you-means for the first :data:`SUGGESTIONS` unknown names, then none."""

    def __init__(self) -> None:
        self.left = SUGGESTIONS

    def __call__(self, name: str, known: Iterable[str]) -> str:
        if self.left <= 0:
            return ""
        self.left -= 1
        close = difflib.get_close_matches(name, list(known), n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""


def find_cycles(deps: Mapping[str, Sequence[str]],
                limit: int = CYCLES_SHOWN) -> list[tuple[str, ...]]:
    """Distinct cycles (at most ``limit``), each as ``(a, b, c, a)`` where a depends on b…

    An iterative DFS over the nodes Kahn's pass could not order (the others are on no
    cycle); a node's place on the current path is a dict lookup, never a search.
    """
    order = set(kahn(deps)[0])
    color: dict[str, int] = {n: 2 for n in order}
    cycles: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for root in deps:
        if color.get(root) or len(cycles) >= limit:
            continue
        path: list[str] = [root]
        where: dict[str, int] = {root: 0}
        stack: list[Iterator[str]] = [iter(deps.get(root, ()))]
        color[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                done = path.pop()
                del where[done]
                color[done] = 2
                stack.pop()
                continue
            if nxt not in deps:
                continue  # an unknown reference is reported on its own
            state = color.get(nxt, 0)
            if state == 1 and len(cycles) < limit:
                loop = (*path[where[nxt]:], nxt)
                key = frozenset(loop)
                if key not in seen:
                    seen.add(key)
                    cycles.append(loop)
            elif state == 0:
                color[nxt] = 1
                where[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(deps.get(nxt, ())))
    return cycles


class _Ancestors:
    """Whether one node depends on another, directly or not: the ancestors of every node
    as a bit set, built in one topological pass the first time a question needs it."""

    def __init__(self, deps: Mapping[str, Sequence[str]]) -> None:
        self._deps = deps
        self._direct = {n: set(ds) for n, ds in deps.items()}
        self._bits: dict[str, int] | None = None
        self._index = {n: i for i, n in enumerate(deps)}

    def of(self, node: str, ancestor: str) -> bool:
        if ancestor in self._direct.get(node, ()):
            return True  # the usual case: a direct dependency
        if self._bits is None:
            self._bits = {}
            order, _ = kahn(self._deps)
            for n in order:
                bits = 0
                for d in self._deps[n]:
                    if d in self._bits:
                        bits |= self._bits[d] | (1 << self._index[d])
                self._bits[n] = bits
        if node not in self._bits:
            return True  # on a cycle, or after one: the cycle is the problem named
        return bool(self._bits[node] >> self._index[ancestor] & 1)


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
    ancestors = _Ancestors(deps)
    suggest = _Suggester()
    for node in pipeline.nodes:
        out.extend(_node_problems(pipeline, node.id, ids, ancestors, runtimes, suggest))
    for cycle in find_cycles(deps):
        out.append(Problem(cycle[0], "dependsOn", "cycle: " + " → ".join(cycle)
                           + " (each waits for the next; remove one dependency)", cycle))
    return out


def _node_problems(pipeline: Pipeline, node_id: str, ids: dict[str, int],
                   ancestors: _Ancestors, runtimes: list[str],
                   suggest: _Suggester) -> list[Problem]:
    node = pipeline.nodes[ids[node_id]]
    out: list[Problem] = []

    def bad(field: str, message: str) -> None:
        out.append(Problem(node.id, field, message))

    provider, _, account = node.provider.partition(":")
    if provider not in runtimes:
        bad("provider", f"unknown provider {provider!r}{suggest(provider, runtimes)}; "
                        f"one of {', '.join(runtimes)}")
    if account and node.account:
        bad("account", f"the provider already names account {account!r}")
    chain = {node.entry}
    for i, entry in enumerate(node.fallback):
        runtime = entry.partition(":")[0]
        if runtime not in runtimes:
            bad(f"fallback[{i}]", f"unknown provider {runtime!r}{suggest(runtime, runtimes)}")
        if entry in chain:
            bad(f"fallback[{i}]", f"{entry!r} is already in the chain")
        chain.add(entry)
    listed: set[str] = set()
    for i, dep in enumerate(node.depends_on):
        if dep == node.id:
            continue  # reported as a cycle
        if dep not in ids:
            bad(f"dependsOn[{i}]", f"unknown node {dep!r}{suggest(dep, ids)}")
        elif dep in listed:
            bad(f"dependsOn[{i}]", f"{dep!r} is listed twice")
        listed.add(dep)
    refs, template_problems = references(node.task)
    for message in template_problems:
        bad("task", message)
    ref: Ref
    for ref in refs:
        if ref.node not in ids:
            bad("task", f"{{{{{ref.node}.{ref.field}}}}} refers to unknown node {ref.node!r}"
                        f"{suggest(ref.node, ids)}")
        elif ref.node == node.id or not ancestors.of(node.id, ref.node):
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
