"""Pure graph questions the scheduler asks of a validated pipeline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from relay.core.pipeline_model import Pipeline


@dataclass(frozen=True)
class Graph:
    """Dependencies both ways, computed once per run."""

    deps: dict[str, tuple[str, ...]]
    dependents: dict[str, tuple[str, ...]]
    order: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, pipeline: Pipeline) -> Graph:
        ids = {n.id for n in pipeline.nodes}  # an unknown dependency is validation's to report
        deps = {n.id: tuple(d for d in dict.fromkeys(n.depends_on) if d in ids)
                for n in pipeline.nodes}
        out: dict[str, list[str]] = {n: [] for n in deps}
        for node, before in deps.items():
            for dep in before:
                out[dep].append(node)
        return cls(deps, {k: tuple(v) for k, v in out.items()}, topological(deps))

    def downstream(self, node: str) -> list[str]:
        """Every node that depends on ``node``, directly or not (topological order)."""
        return self._reach(node, self.dependents)

    def upstream(self, node: str) -> list[str]:
        """Every node ``node`` depends on, directly or not (topological order)."""
        return self._reach(node, self.deps)

    def _reach(self, node: str, edges: Mapping[str, Sequence[str]]) -> list[str]:
        seen = reach(node, edges)
        return [n for n in self.order if n in seen]

    def sinks(self) -> list[str]:
        return [n for n in self.order if not self.dependents[n]]

    def layers(self) -> list[list[str]]:
        """Nodes by depth (longest path from a root): the designer's auto-layout."""
        depth: dict[str, int] = {}
        for node in self.order:
            depth[node] = max((depth[d] + 1 for d in self.deps[node]), default=0)
        out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
        for node in self.order:
            out[depth[node]].append(node)
        return out


def reach(node: str, edges: Mapping[str, Sequence[str]]) -> set[str]:
    """Every node reachable from ``node`` along ``edges`` (names not in ``edges`` ignored)."""
    seen: set[str] = set()
    todo = [n for n in edges.get(node, ()) if n in edges]
    while todo:
        cur = todo.pop()
        if cur not in seen:
            seen.add(cur)
            todo.extend(n for n in edges[cur] if n in edges)
    return seen


def topological(deps: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Kahn's order, stable in declaration order (nodes on a cycle are left out)."""
    return kahn(deps)[0]


def kahn(deps: Mapping[str, Sequence[str]]) -> tuple[tuple[str, ...], list[str]]:
    """One pass of Kahn's algorithm: the nodes in topological order (stable in declaration
    order), and the nodes left out — on a cycle or after one. Each dependency is looked at
    once; names not in ``deps`` are ignored."""
    remaining = {n: sum(1 for d in ds if d in deps) for n, ds in deps.items()}
    dependents: dict[str, list[str]] = {n: [] for n in deps}
    for node, ds in deps.items():
        for d in ds:
            if d in dependents:
                dependents[d].append(node)
    queue = [n for n in deps if remaining[n] == 0]
    i = 0
    while i < len(queue):
        node = queue[i]
        i += 1
        for nxt in dependents[node]:
            remaining[nxt] -= 1
            if remaining[nxt] == 0:
                queue.append(nxt)
    ordered = set(queue)
    return tuple(queue), [n for n in deps if n not in ordered]
