"""Pipelines for tests, and an executor whose steps the test releases."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from relay.core.pipeline_model import Node, Pipeline
from relay.pipelines.scheduler import StepFailure, StepWork
from relay.pipelines.templates import StepOutputs


def graph(name: str, edges: dict[str, list[str]], **extra: object) -> Pipeline:
    """A pipeline of demo nodes: ``{"b": ["a"]}`` means b depends on a."""
    nodes = [Node(id=n, provider="demo", task=f"do {n}", depends_on=deps)
             for n, deps in edges.items()]
    return Pipeline.model_validate({"name": name, "nodes": [n.model_dump(by_alias=True)
                                                           for n in nodes], **extra})


@dataclass
class Gate:
    """A step that runs until the test opens its gate (or fails it)."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    failure: str | None = None


@dataclass
class GatedExecutor:
    """Steps wait on their gate unless ``auto``; records what ran, in order, and peaks."""

    auto: set[str] = field(default_factory=set)
    gates: dict[str, Gate] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    prompts: dict[str, str] = field(default_factory=dict)
    fail_first: dict[str, int] = field(default_factory=dict)
    running: int = 0
    peak: int = 0
    cost: float | None = None

    def gate(self, node: str) -> Gate:
        return self.gates.setdefault(node, Gate())

    async def execute(self, work: StepWork) -> tuple[StepOutputs, float | None]:
        node = work.node.id
        self.started.append(node)
        self.prompts[node] = work.prompt
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            if self.fail_first.get(node, 0) > 0:
                self.fail_first[node] -= 1
                raise StepFailure(f"{node} failed on purpose")
            if node not in self.auto:
                gate = self.gate(node)
                gate.started.set()
                await gate.release.wait()
                if gate.failure:
                    raise StepFailure(gate.failure)
            self.finished.append(node)
            self.gate(node).done.set()
            return StepOutputs(output=f"output of {node}", files=(f"{node}.txt",)), self.cost
        finally:
            self.running -= 1
