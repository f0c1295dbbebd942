"""A pipeline run's timeline: its lease log (claims, saves, takeovers, refused writes) joined
with the timelines of the sessions its steps ran."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from relay.core.store.db import from_ms
from relay.history.model import Timeline, TimelineEntry


class RunSource(Protocol):
    """What the time machine reads from the pipelines service."""

    def status(self, run_id: str) -> tuple[Any, Sequence[Any]]: ...
    def log(self, run_id: str, after_id: int = 0) -> Sequence[Any]: ...


@dataclass(frozen=True)
class StepLine:
    node_id: str
    state: str
    attempt: int
    session_id: str | None
    commit: str | None
    error: str | None


@dataclass(frozen=True)
class RunTimeline:
    run_id: str
    name: str
    state: str
    reason: str | None
    repo: str
    base_sha: str | None
    result_sha: str | None
    result_branch: str | None
    steps: list[StepLine]
    entries: list[TimelineEntry]


async def run_timeline(source: RunSource, run_id: str,
                       session_timeline: Callable[[str], Awaitable[Timeline]]) -> RunTimeline:
    run, steps = source.status(run_id)
    entries: list[TimelineEntry] = []
    for item in source.log(run.id):
        who = f" by {item.owner}" if item.owner else ""
        epoch = f" (epoch {item.epoch})" if item.epoch is not None else ""
        entries.append(TimelineEntry(
            at=from_ms(item.ts_ms), kind="pipeline", title=f"{item.node_id or 'run'}: {item.kind}",
            detail=f"{item.detail or ''}{who}{epoch}".strip()))
    lines = []
    for step in steps:
        lines.append(StepLine(step.node_id, step.state, step.attempt, step.session_id,
                              step.outputs.commit, step.error))
        if step.session_id:
            line = await session_timeline(step.session_id)
            entries.extend(dataclasses.replace(e, title=f"[{step.node_id}] {e.title}")
                           for e in line.entries)
    entries.sort(key=lambda e: e.at)
    succeeded = run.state == "succeeded"
    return RunTimeline(run_id=run.id, name=run.name, state=run.state, reason=run.reason,
                       repo=run.repo, base_sha=run.base_commit, result_sha=run.result_commit,
                       result_branch=f"relay/pipeline-{run.id}" if succeeded else None,
                       steps=lines, entries=entries)
