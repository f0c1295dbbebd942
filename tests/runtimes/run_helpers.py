"""What the adapter tests share: run an adapter to its end, pick events by type, check the
single SessionEnded, read a fake's invocation log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from relay.core.events import AgentEvent, SessionEnded
from relay.runtimes.base import RunRequest, RuntimeAdapter


async def collect(adapter: RuntimeAdapter, request: RunRequest) -> list[AgentEvent]:
    return [event async for event in adapter.run(request)]


def only(events: list[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def ended(events: list[AgentEvent]) -> SessionEnded:
    """The run's one SessionEnded, which is its last event."""
    assert len(only(events, SessionEnded)) == 1
    last = events[-1]
    assert isinstance(last, SessionEnded)
    return last


def invocations(log: Path) -> list[dict[str, Any]]:
    """The fakes' RELAY_FAKE_LOG lines (argv, cwd, …)."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
